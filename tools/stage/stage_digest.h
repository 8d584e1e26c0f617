#pragma once
// The whole-file digest of `ibbcast stage`: CRC32C, which catches corruption,
// not a deliberate change (the frames' authentication keeps those out), or
// SHA-256 when the build has OpenSSL's libcrypto (the default where frames are
// not authenticated or --checksum compares local files); the manifest says
// which one a run used.

#include <cstddef>
#include <memory>
#include <string>

#include "core/protocol/status.h"
#include "tools/stage/stage_protocol.h"

namespace ibbcast::tool::stage {

/// The strongest digest this build computes: SHA-256 with libcrypto, else CRC32C.
DigestKind build_digest_kind();
/// `--digest`: "sha256" (with libcrypto), "crc32c" (about 10x faster per byte: a check
/// against corruption, while the frames' authentication keeps forgeries out), or "" for
/// build_digest_kind(). kInvalidArgument names what is wrong.
Result<DigestKind> parse_digest_kind(const std::string& name);
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
