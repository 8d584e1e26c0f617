#include "core/protocol/stats.h"

#include <sstream>

namespace ibbcast {

uint64_t GroupStats::rejected_total() const {
  uint64_t t = 0;
  for (uint64_t v : rejected)
    t += v;
  return t;
}

GroupStats& GroupStats::operator+=(const GroupStats& o) {
  for (std::size_t i = 0; i < broadcasts.size(); ++i)
    broadcasts[i] += o.broadcasts[i];
  for (std::size_t i = 0; i < rejected.size(); ++i)
    rejected[i] += o.rejected[i];
  for (auto [mine, theirs] : {std::pair{&datagrams_sent, &o.datagrams_sent},
                              {&datagrams_received, &o.datagrams_received},
                              {&datagrams_useful, &o.datagrams_useful},
                              {&datagrams_duplicate, &o.datagrams_duplicate},
                              {&datagrams_self, &o.datagrams_self},
                              {&messages_sent, &o.messages_sent},
                              {&messages_received, &o.messages_received},
                              {&messages_duplicate, &o.messages_duplicate},
                              {&messages_late, &o.messages_late},
                              {&fragments_repaired, &o.fragments_repaired},
                              {&early_buffered, &o.early_buffered},
                              {&early_dropped, &o.early_dropped},
                              {&bytes_delivered, &o.bytes_delivered},
                              {&copies, &o.copies},
                              {&zero_copy_receives, &o.zero_copy_receives},
                              {&errors, &o.errors}}) {
    *mine += *theirs;
  }
  return *this;
}

std::string GroupStats::to_string() const {
  std::ostringstream o;
  o << "broadcasts:";
  for (int i = 0; i < kAlgorithmCount; ++i) {
    if (broadcasts[static_cast<std::size_t>(i)] != 0) {
      o << ' ' << algorithm_name(static_cast<Algorithm>(i)) << '='
        << broadcasts[static_cast<std::size_t>(i)];
    }
  }
  o << "\ndatagrams: sent=" << datagrams_sent << " received=" << datagrams_received
    << " useful=" << datagrams_useful << " duplicate=" << datagrams_duplicate
    << " self=" << datagrams_self << " rejected=" << rejected_total();
  for (std::size_t i = 0; i < kRejectCount; ++i) {
    if (rejected[i] != 0) o << ' ' << reject_name(static_cast<Reject>(i)) << '=' << rejected[i];
  }
  o << "\nreliable: sent=" << messages_sent << " received=" << messages_received
    << " duplicate=" << messages_duplicate << " late=" << messages_late
    << " repaired=" << fragments_repaired << "\nearly: buffered=" << early_buffered
    << " dropped=" << early_dropped << "\nbytes_delivered=" << bytes_delivered
    << " copies=" << copies << " zero_copy_receives=" << zero_copy_receives << " errors=" << errors
    << '\n';
  return o.str();
}

}  // namespace ibbcast
