#pragma once
// Per-rank results of `ibbcast run`, gathered to rank 0 over the bootstrap as
// fixed-size records and printed as one table.

#include <array>
#include <cstdint>
#include <vector>

#include "core/protocol/stats.h"
#include "core/runtime/transport.h"
#include "tools/cli.h"

namespace ibbcast::tool {

struct RankReport {
  uint32_t ok = 0;
  uint32_t multicast = 0;
  uint32_t algorithm = 0;
  uint32_t nodes = 0, node_aware = 0, leader = 0;
  double median_us = 0;
  double last_us = 0;  ///< the last broadcast, until success or error
  uint64_t datagrams_sent = 0, datagrams_received = 0, datagrams_useful = 0;
  uint64_t datagrams_duplicate = 0, rejected = 0, repaired = 0, messages_late = 0;
  uint64_t foreign = 0;                          ///< datagrams of another group on the same address
  uint64_t copies = 0, zero_copy_receives = 0;   ///< received fragments copied / put in place
  std::array<uint64_t, kRejectCount> reasons{};  ///< rejected frames by reason
  char error[160] = {};
  char counters[400] = {};  ///< the transport's counters, "name=value ..." (nonzero ones)
};

void fill_stats(RankReport& r, const GroupStats& s);
/// The transport's nonzero counters, then `more`'s (the groups' reliable channels).
void fill_counters(RankReport& r, const Transport& t, const std::vector<TransportCounter>& more);
Status gather_reports(Bootstrap& boot, const RankReport& mine, std::vector<RankReport>& all);
void print_reports(const Args& args, const std::vector<RankReport>& all);

}  // namespace ibbcast::tool
