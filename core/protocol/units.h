#pragma once
// Parsing and printing of the values config tables accept: sizes ("64k",
// "1m"), durations ("10ms", "30s", "250us"), booleans ("on", "1", "true").
// Sizes are binary (k = 1024) because fragment and buffer sizes are.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/protocol/status.h"

namespace ibbcast {

using Duration = std::chrono::nanoseconds;
/// Monotonic time in nanoseconds since an arbitrary origin (drivers supply it).
using Nanos = std::chrono::nanoseconds;

/// "4096", "64k", "1m", "2g" (case-insensitive, optional trailing "b"/"ib").
Result<uint64_t> parse_size(std::string_view s);
/// "10ms", "30s", "250us", "100ns", "2m" (minutes); a bare number is microseconds.
Result<Duration> parse_duration(std::string_view s);
/// on/off, true/false, yes/no, 1/0.
Result<bool> parse_bool(std::string_view s);
/// Plain unsigned integer (no suffix).
Result<uint64_t> parse_uint(std::string_view s);

/// The shortest exact form: 65536 → "64k", 1000 → "1000".
std::string format_size(uint64_t v);
/// The shortest exact form: 30s, 10ms, 250us, 100ns.
std::string format_duration(Duration d);
inline std::string format_bool(bool b) {
  return b ? "on" : "off";
}

}  // namespace ibbcast
