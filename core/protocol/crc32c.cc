#include "core/protocol/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ibbcast {
namespace {

// Reflected representation: bit 31 holds the coefficient of x^0 and bit 0 that of x^31, so a
// right shift multiplies by x. The CRC register without the pre/post inversion is linear in this
// representation, which is what both the slicing tables and the stream combination rely on.
constexpr uint32_t kPoly = 0x82F63B78u;

using Table = std::array<uint32_t, 256>;

// a * b mod P in the reflected representation (shift-and-add over GF(2)).
constexpr uint32_t MulModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8 * n) mod P: the factor that appending n zero bytes multiplies the register by.
constexpr uint32_t XPow8N(std::size_t n) {
  uint32_t result = 1u << 31;  // x^0
  uint32_t square = 1u << 23;  // x^8
  for (; n != 0; n >>= 1) {
    if (n & 1) result = MulModP(result, square);
    square = MulModP(square, square);
  }
  return result;
}

// Slicing-by-8: slice[k][b] is the register contribution of byte b followed by k zero bytes,
// so eight input bytes cost eight independent lookups instead of a serial chain of eight.
constexpr std::array<Table, 8> MakeSliceTables() {
  std::array<Table, 8> slice{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int i = 0; i < 8; ++i) {
      crc = (crc & 1) ? (crc >> 1) ^ kPoly : crc >> 1;
    }
    slice[0][b] = crc;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t b = 0; b < 256; ++b) {
      slice[k][b] = (slice[k - 1][b] >> 8) ^ slice[0][slice[k - 1][b] & 0xFF];
    }
  }
  return slice;
}

constexpr std::array<Table, 8> kSlice = MakeSliceTables();

// Little-endian load assembled from bytes: alignment- and endian-agnostic, and GCC/Clang fold
// the pattern into a single load on little-endian targets.
inline uint32_t Load32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint32_t PortableRaw(uint32_t crc, const uint8_t* p, std::size_t len) {
  for (; len >= 8; len -= 8, p += 8) {
    const uint32_t lo = crc ^ Load32(p);
    const uint32_t hi = Load32(p + 4);
    crc = kSlice[7][lo & 0xFF] ^ kSlice[6][(lo >> 8) & 0xFF] ^ kSlice[5][(lo >> 16) & 0xFF] ^
          kSlice[4][lo >> 24] ^ kSlice[3][hi & 0xFF] ^ kSlice[2][(hi >> 8) & 0xFF] ^
          kSlice[1][(hi >> 16) & 0xFF] ^ kSlice[0][hi >> 24];
  }
  for (; len != 0; --len, ++p) {
    crc = (crc >> 8) ^ kSlice[0][(crc ^ *p) & 0xFF];
  }
  return crc;
}

#if defined(__x86_64__)

// Shifting a register over n zero bytes is multiplication by x^(8n) mod P, a linear map, so it
// splits into four per-byte lookups. One table per stream length used by the 3-way loop.
struct ShiftTable {
  std::array<Table, 4> byte;

  uint32_t Apply(uint32_t crc) const {
    return byte[0][crc & 0xFF] ^ byte[1][(crc >> 8) & 0xFF] ^ byte[2][(crc >> 16) & 0xFF] ^
           byte[3][crc >> 24];
  }
};

constexpr ShiftTable MakeShiftTable(std::size_t zero_bytes) {
  ShiftTable t{};
  const uint32_t factor = XPow8N(zero_bytes);
  for (uint32_t k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      t.byte[k][b] = MulModP(factor, b << (8 * k));
    }
  }
  return t;
}

// The crc32 instruction has a latency of 3 cycles but a throughput of one per cycle, so three
// independent streams keep it busy. Long streams amortise the combination (8 lookups); the short
// tier keeps the serial tail below 3 * kShortStream bytes.
constexpr std::size_t kLongStream = 4096;
constexpr std::size_t kShortStream = 256;
constexpr ShiftTable kShiftLong = MakeShiftTable(kLongStream);
constexpr ShiftTable kShiftShort = MakeShiftTable(kShortStream);

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));  // x86 is little-endian; memcpy keeps unaligned loads defined.
  return v;
}

__attribute__((target("sse4.2"))) uint32_t Crc3Way(uint32_t crc, const uint8_t*& p,
                                                   std::size_t& len, std::size_t stream,
                                                   const ShiftTable& shift) {
  for (; len >= 3 * stream; len -= 3 * stream, p += 3 * stream) {
    uint64_t a = crc, b = 0, c = 0;
    for (std::size_t i = 0; i < stream; i += 8) {
      a = _mm_crc32_u64(a, Load64(p + i));
      b = _mm_crc32_u64(b, Load64(p + stream + i));
      c = _mm_crc32_u64(c, Load64(p + 2 * stream + i));
    }
    // crc(A|B|C) = shift(shift(crcA) ^ crcB) ^ crcC, with B and C started from zero.
    crc = shift.Apply(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
    crc = shift.Apply(crc) ^ static_cast<uint32_t>(c);
  }
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t HardwareRaw(uint32_t crc, const uint8_t* p,
                                                       std::size_t len) {
  // Align to 8 so the bulk loads never straddle a cache line.
  for (; len != 0 && (reinterpret_cast<std::uintptr_t>(p) & 7) != 0; --len, ++p) {
    crc = _mm_crc32_u8(crc, *p);
  }
  crc = Crc3Way(crc, p, len, kLongStream, kShiftLong);
  crc = Crc3Way(crc, p, len, kShortStream, kShiftShort);
  uint64_t crc64 = crc;
  for (; len >= 8; len -= 8, p += 8) {
    crc64 = _mm_crc32_u64(crc64, Load64(p));
  }
  crc = static_cast<uint32_t>(crc64);
  for (; len != 0; --len, ++p) {
    crc = _mm_crc32_u8(crc, *p);
  }
  return crc;
}

bool DetectHardware() {
  __builtin_cpu_init();  // Needed if we are first called from another static initialiser.
  return __builtin_cpu_supports("sse4.2");
}

#endif  // __x86_64__

}  // namespace

bool crc32c_has_hardware() {
#if defined(__x86_64__)
  static const bool has_hardware = DetectHardware();
  return has_hardware;
#else
  return false;
#endif
}

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, std::size_t len) {
  return ~PortableRaw(~crc, static_cast<const uint8_t*>(data), len);
}

uint32_t crc32c_extend(uint32_t crc, const void* data, std::size_t len) {
#if defined(__x86_64__)
  if (crc32c_has_hardware()) return ~HardwareRaw(~crc, static_cast<const uint8_t*>(data), len);
#endif
  return crc32c_extend_portable(crc, data, len);
}

}  // namespace ibbcast
