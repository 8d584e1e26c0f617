#pragma once
// Status and Result<T>: the error vocabulary of every call of ibbcast's C++
// API (<ibbcast/ibbcast.hpp> includes this). No exception crosses the API,
// so every fallible call returns one of these. Codes are grouped by what the
// caller must rebuild: the operation, the group, or the transport.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

// The library is built with hidden symbols; what the API declares with this
// is what libibbcast.so exports.
#ifndef IBBCAST_EXPORT
#define IBBCAST_EXPORT __attribute__((visibility("default")))
#endif

namespace ibbcast {

enum class Errc : uint8_t {
  kOk = 0,
  // The operation: retry or fix the call.
  kAgain,            ///< transient back-pressure; call again
  kInvalidArgument,  ///< caller error (bad size, root, config value)
  kTruncated,        ///< input shorter than its header says
  kCorrupt,          ///< checksum or field validation failed
  kUnsupported,      ///< feature not available on this transport/build
  // The group: rebuild the group.
  kTimedOut,    ///< no progress within the configured timeout
  kPeerFailed,  ///< a peer died or became unreachable
  kMismatch,    ///< ranks disagree (root, length, algorithm)
  // The transport: rebuild the transport.
  kDeviceLost,  ///< NIC/socket/device failed
  kNoResource,  ///< memory, memlock, membership limit
  kInternal,    ///< a bug: please report
};

/// Stable lower_snake name of a code ("timed_out"), for logs and tests.
IBBCAST_EXPORT std::string_view errc_name(Errc c);

/// A code plus a human message that says what failed and, where known, a hint.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == Errc::kOk; }
  explicit operator bool() const { return is_ok(); }
  Errc code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "timed_out: rank 3 made no progress for 2s" (or "ok").
  IBBCAST_EXPORT std::string to_string() const;

 private:
  Errc code_ = Errc::kOk;
  std::string message_;
};

inline Status make_error(Errc code, std::string message) {
  return {code, std::move(message)};
}

/// A value or a non-ok Status. GCC 12 has no std::expected, so this is the
/// small subset we need.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  /// Precondition: is_ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  /// The error; an ok Status when a value is held.
  Status status() const { return is_ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ibbcast
