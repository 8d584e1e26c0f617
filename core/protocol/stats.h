#pragma once
// Per-group statistics (thesis: "print statistics"). Plain counters, updated on
// the engine's single thread; copy them out to read.

#include <array>
#include <cstdint>
#include <string>

#include "core/protocol/algorithm.h"
#include "core/protocol/wire.h"

namespace ibbcast {

struct GroupStats {
  std::array<uint64_t, kAlgorithmCount> broadcasts{};  ///< by algorithm actually run
  uint64_t datagrams_sent = 0;                    ///< multicast datagrams handed to the transport
  uint64_t datagrams_received = 0;                ///< multicast datagrams seen (valid or not)
  uint64_t datagrams_useful = 0;                  ///< gave this rank a fragment it lacked
  uint64_t datagrams_duplicate = 0;               ///< valid, but the fragment was owned already
  uint64_t datagrams_self = 0;                    ///< our own multicast looped back, dropped
  std::array<uint64_t, kRejectCount> rejected{};  ///< invalid frames by reason
  uint64_t messages_sent = 0;                     ///< reliable frames sent
  uint64_t messages_received = 0;                 ///< reliable frames received
  uint64_t messages_duplicate = 0;  ///< reliable copy of an owned fragment (normal in stage 2)
  uint64_t messages_late = 0;       ///< reliable copy for a finished broadcast, discarded
  uint64_t fragments_repaired = 0;  ///< two-stage: first owned through stage 2
  uint64_t early_buffered = 0;      ///< frames kept for a broadcast not yet entered
  uint64_t early_dropped = 0;       ///< multicast frames dropped: early buffer full
  uint64_t bytes_delivered = 0;     ///< payload bytes written into user buffers
  uint64_t copies = 0;              ///< payload copies made (received fragments)
  uint64_t zero_copy_receives = 0;  ///< fragments the NIC put in place: no copy (verbs)
  uint64_t errors = 0;              ///< broadcasts that ended in an error

  uint64_t rejected_total() const;
  /// Adds every counter of `o` (several groups of one process, or ranks).
  GroupStats& operator+=(const GroupStats& o);
  /// Multi-line human summary (for print_statistics and the tools).
  std::string to_string() const;
};

}  // namespace ibbcast
