#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI,
// ext4 and SCTP: crc32c("123456789") == 0xE3069283.

#include <cstddef>
#include <cstdint>
#include <span>

namespace ibbcast {

/// Extend a CRC32C: crc32c_extend(0, data) is the CRC of data; crc32c_extend(crc32c(a), b) ==
/// crc32c(a+b). Thread-safe, no allocation. Uses SSE4.2 when the CPU has it (checked once at run
/// time), else a table.
uint32_t crc32c_extend(uint32_t crc, const void* data, std::size_t len);
inline uint32_t crc32c(const void* data, std::size_t len) {
  return crc32c_extend(0, data, len);
}

/// The portable table implementation, exposed so tests can compare both paths.
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, std::size_t len);

/// True when the hardware path is used.
bool crc32c_has_hardware();

}  // namespace ibbcast
