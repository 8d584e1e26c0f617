#pragma once
// Helpers shared by the fuzz targets: an invariant check that traps (libFuzzer
// reports a trap as a crash and saves the input), little-endian fields, and a
// cursor that takes typed values and byte strings from the fuzzer's input,
// yielding zeros once it is used up, so every input is a valid program.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/le.h"

namespace ibbcast::fuzz {

inline void check(bool ok) {
  if (!ok) __builtin_trap();
}

class Input {
 public:
  Input(const uint8_t* data, std::size_t size)
      : rest_(reinterpret_cast<const std::byte*>(data), size) {}
  bool empty() const { return rest_.empty(); }
  std::size_t size() const { return rest_.size(); }

  template <typename T>
  T take() {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T) && !rest_.empty(); ++i) {
      v = static_cast<T>(
          v | static_cast<T>(static_cast<T>(std::to_integer<uint8_t>(rest_[0])) << (8 * i)));
      rest_ = rest_.subspan(1);
    }
    return v;
  }

  /// Up to `n` bytes (fewer when the input ends).
  std::vector<std::byte> bytes(std::size_t n) {
    const auto part = rest_.first(std::min(n, rest_.size()));
    rest_ = rest_.subspan(part.size());
    return {part.begin(), part.end()};
  }

  /// Everything up to the next `sep` (consumed, not returned), or the rest.
  std::string text_until(char sep) {
    std::string s;
    while (!rest_.empty()) {
      const char c = static_cast<char>(std::to_integer<uint8_t>(rest_[0]));
      rest_ = rest_.subspan(1);
      if (c == sep) break;
      s.push_back(c);
    }
    return s;
  }

  std::string rest_text() {
    std::string s(reinterpret_cast<const char*>(rest_.data()), rest_.size());
    rest_ = {};
    return s;
  }

 private:
  std::span<const std::byte> rest_;
};

}  // namespace ibbcast::fuzz
