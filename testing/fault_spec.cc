// Text form of FaultSpec, for tools (--faults) and test logs.
#include <cstdlib>
#include <sstream>
#include <string>

#include "testing/fault.h"

namespace ibbcast {
namespace {

Result<double> parse_probability(std::string_view key, std::string_view v) {
  std::string s(v);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  bool percent = end != nullptr && *end == '%';
  if (end == s.c_str() || (end != nullptr && *end != '\0' && !(percent && end[1] == '\0'))) {
    return make_error(Errc::kInvalidArgument,
                      "fault " + std::string(key) + ": bad number '" + s + "'");
  }
  if (percent) d /= 100.0;
  if (d < 0 || d > 1) {
    return make_error(Errc::kInvalidArgument,
                      "fault " + std::string(key) + ": probability must be 0..1 or 0..100%");
  }
  return d;
}

}  // namespace

Result<FaultSpec> FaultSpec::parse(std::string_view text) {
  FaultSpec f;
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return make_error(Errc::kInvalidArgument,
                        "fault '" + std::string(item) + "': want key=value");
    }
    std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
    double* prob = k == "drop"        ? &f.drop
                   : k == "dup"       ? &f.duplicate
                   : k == "duplicate" ? &f.duplicate
                   : k == "reorder"   ? &f.reorder
                   : k == "corrupt"   ? &f.corrupt
                   : k == "truncate"  ? &f.truncate
                                      : nullptr;
    if (prob != nullptr) {
      auto p = parse_probability(k, v);
      if (!p) return p.status();
      *prob = *p;
    } else if (k == "burst" || k == "seed" || k == "kill_after" || k == "send_error_after" ||
               k == "mcast_stall_after" || k == "p2p_stall_after") {
      auto u = parse_uint(v);
      if (!u) return u.status();
      if (k == "burst") f.burst = static_cast<uint32_t>(*u == 0 ? 1 : *u);
      if (k == "seed") f.seed = *u;
      if (k == "kill_after") f.kill_after = *u;
      if (k == "send_error_after") f.send_error_after = *u;
      if (k == "mcast_stall_after") f.mcast_stall_after = *u;
      if (k == "p2p_stall_after") f.p2p_stall_after = *u;
    } else if (k == "rank") {
      auto u = parse_uint(v);
      if (!u) return u.status();
      f.rank = static_cast<int64_t>(*u);
    } else if (k == "delay") {
      auto d = parse_duration(v);
      if (!d) return d.status();
      f.delay = *d;
    } else {
      return make_error(Errc::kInvalidArgument,
                        "unknown fault '" + std::string(k) +
                            "' (drop, burst, dup, reorder, corrupt, truncate, delay, kill_after, "
                            "send_error_after, mcast_stall_after, p2p_stall_after, rank, seed)");
    }
  }
  return f;
}

std::string FaultSpec::to_string() const {
  std::ostringstream o;
  o << "seed=" << seed << ",drop=" << drop << ",burst=" << burst << ",dup=" << duplicate
    << ",reorder=" << reorder << ",corrupt=" << corrupt << ",truncate=" << truncate
    << ",delay=" << format_duration(delay) << ",kill_after=" << kill_after
    << ",send_error_after=" << send_error_after << ",mcast_stall_after=" << mcast_stall_after
    << ",p2p_stall_after=" << p2p_stall_after;
  if (rank >= 0) o << ",rank=" << rank;
  return o.str();
}

}  // namespace ibbcast
