#pragma once
// The whole-file digest of `ibbcast stage`: SHA-256 when the build has
// OpenSSL's libcrypto, else CRC32C (which catches corruption, not a
// deliberate change; the manifest says which one a run used).

#include <cstddef>
#include <memory>
#include <string>

#include "core/protocol/status.h"
#include "tools/stage/stage_protocol.h"

namespace ibbcast::tool::stage {

/// The digest this build computes.
DigestKind build_digest_kind();
const char* digest_name(DigestKind k);

/// Incremental digest of a byte stream. Not thread-safe; one per stream.
class FileDigest {
 public:
  explicit FileDigest(DigestKind kind);
  ~FileDigest();
  FileDigest(const FileDigest&) = delete;
  FileDigest& operator=(const FileDigest&) = delete;
  void update(const void* data, std::size_t n);
  Digest finish();

 private:
  DigestKind kind_;
  uint32_t crc_ = 0;
  void* sha_ = nullptr;  ///< EVP_MD_CTX* when kind_ is kSha256
};

/// The digest of a whole file (read in 1 MiB pieces).
Result<Digest> digest_file(const std::string& path, DigestKind kind);

}  // namespace ibbcast::tool::stage
