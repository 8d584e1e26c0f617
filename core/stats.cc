#include "core/stats.h"

#include <sstream>

namespace ibbcast {

uint64_t GroupStats::rejected_total() const {
  uint64_t t = 0;
  for (uint64_t v : rejected)
    t += v;
  return t;
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
    << " copies=" << copies << " errors=" << errors << '\n';
  return o.str();
}

}  // namespace ibbcast
