#pragma once
// The one little-endian codec of every format ibbcast defines: the multicast
// frame (wire.h), reliable-datagram segments (core/runtime/rdgram_wire.h),
// the staging tool's blocks and the fuzzers' inputs. Fixed-width put/get at
// a pointer compile to one unaligned load or store (memcpy keeps it defined)
// and swap on big-endian hosts; Writer and Reader stream fields of any width
// up to 8 bytes, the Reader remembering an overrun for the caller to check
// once instead of failing each call.

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace ibbcast::le {

template <std::unsigned_integral T>
constexpr T swap_to_native(T v) {
  if constexpr (std::endian::native == std::endian::big && sizeof(T) == 2)
    return __builtin_bswap16(v);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) == 4)
    return __builtin_bswap32(v);
  if constexpr (std::endian::native == std::endian::big && sizeof(T) == 8)
    return __builtin_bswap64(v);
  return v;
}

/// Writes v at p (sizeof(T) bytes, any alignment).
template <std::unsigned_integral T>
inline void put(std::byte* p, T v) {
  v = swap_to_native(v);
  std::memcpy(p, &v, sizeof v);
}

/// Reads sizeof(T) bytes at p (any alignment).
template <std::unsigned_integral T>
inline T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return swap_to_native(v);
}

/// Appends fields to a byte vector.
class Writer {
 public:
  explicit Writer(std::vector<std::byte>& out) : out_(out) {}
  /// The low `bytes` bytes of v (1..8).
  void put(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out_.push_back(static_cast<std::byte>(v >> (8 * i)));
  }
  void put_bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }

 private:
  std::vector<std::byte>& out_;
};

/// Reads fields from a span; past its end every read returns 0 (or false)
/// and short_read() becomes true.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  /// `bytes` bytes (1..8) as an unsigned value.
  uint64_t get(int bytes) {
    if (pos_ + static_cast<std::size_t>(bytes) > in_.size()) {
      short_ = true;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= static_cast<uint64_t>(in_[pos_ + static_cast<std::size_t>(i)]) << (8 * i);
    pos_ += static_cast<std::size_t>(bytes);
    return v;
  }
  bool get_bytes(void* p, std::size_t n) {
    if (pos_ + n > in_.size()) return !(short_ = true);
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool short_read() const { return short_; }
  std::size_t left() const { return in_.size() - pos_; }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  bool short_ = false;
};

}  // namespace ibbcast::le
