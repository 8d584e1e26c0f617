#include "core/protocol/units.h"

#include <cctype>
#include <charconv>
#include <limits>

namespace ibbcast {
namespace {

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// Splits "64k" into 64 and "k"; rejects empty numbers and trailing junk inside the number.
Result<uint64_t> leading_number(std::string_view s, std::string_view* rest) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) {
    return make_error(Errc::kInvalidArgument, "expected a number, got '" + std::string(s) + "'");
  }
  *rest = s.substr(static_cast<std::size_t>(ptr - s.data()));
  return v;
}

Result<uint64_t> scaled(uint64_t v, uint64_t mul, std::string_view what) {
  if (mul != 0 && v > std::numeric_limits<uint64_t>::max() / mul) {
    return make_error(Errc::kInvalidArgument, "value out of range: '" + std::string(what) + "'");
  }
  return v * mul;
}

}  // namespace

Result<uint64_t> parse_uint(std::string_view s) {
  std::string_view rest;
  auto v = leading_number(s, &rest);
  if (!v) return v;
  if (!rest.empty()) {
    return make_error(Errc::kInvalidArgument, "expected an integer, got '" + std::string(s) + "'");
  }
  return v;
}

Result<uint64_t> parse_size(std::string_view s) {
  std::string l = lower(s);
  std::string_view rest;
  auto v = leading_number(l, &rest);
  if (!v) return v;
  // Accept "k", "kb", "kib" (and bare "b"), nothing else.
  if (rest == "b") {
    rest = "";
  } else if (rest.size() == 3 && rest.ends_with("ib")) {
    rest.remove_suffix(2);
  } else if (rest.size() == 2 && rest[1] == 'b') {
    rest.remove_suffix(1);
  }
  uint64_t mul = 0;
  if (rest.empty()) mul = 1;
  if (rest == "k") mul = uint64_t{1} << 10;
  if (rest == "m") mul = uint64_t{1} << 20;
  if (rest == "g") mul = uint64_t{1} << 30;
  if (mul == 0) {
    return make_error(Errc::kInvalidArgument,
                      "bad size '" + std::string(s) + "' (use e.g. 4096, 64k, 1m, 2g)");
  }
  return scaled(*v, mul, s);
}

Result<Duration> parse_duration(std::string_view s) {
  std::string l = lower(s);
  std::string_view rest;
  auto v = leading_number(l, &rest);
  if (!v) return v.status();
  uint64_t ns_per = 0;
  if (rest.empty() || rest == "us") ns_per = 1000;
  if (rest == "ns") ns_per = 1;
  if (rest == "ms") ns_per = 1000 * 1000;
  if (rest == "s") ns_per = 1000 * 1000 * 1000;
  if (rest == "m" || rest == "min") ns_per = 60ull * 1000 * 1000 * 1000;
  if (ns_per == 0) {
    return make_error(Errc::kInvalidArgument,
                      "bad duration '" + std::string(s) + "' (use e.g. 250us, 10ms, 30s)");
  }
  auto ns = scaled(*v, ns_per, s);
  if (!ns) return ns.status();
  if (*ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return make_error(Errc::kInvalidArgument, "duration out of range: '" + std::string(s) + "'");
  }
  return Duration(static_cast<int64_t>(*ns));
}

Result<bool> parse_bool(std::string_view s) {
  std::string l = lower(s);
  if (l == "1" || l == "on" || l == "true" || l == "yes") return true;
  if (l == "0" || l == "off" || l == "false" || l == "no") return false;
  return make_error(Errc::kInvalidArgument, "bad boolean '" + std::string(s) + "' (use on/off)");
}

std::string format_size(uint64_t v) {
  if (v != 0 && v % (uint64_t{1} << 30) == 0) return std::to_string(v >> 30) + "g";
  if (v != 0 && v % (uint64_t{1} << 20) == 0) return std::to_string(v >> 20) + "m";
  if (v != 0 && v % (uint64_t{1} << 10) == 0) return std::to_string(v >> 10) + "k";
  return std::to_string(v);
}

std::string format_duration(Duration d) {
  auto ns = static_cast<uint64_t>(d.count() < 0 ? 0 : d.count());
  if (ns != 0 && ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + "s";
  if (ns != 0 && ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace ibbcast
