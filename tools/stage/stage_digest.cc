#include "tools/stage/stage_digest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/protocol/crc32c.h"

#if IBBCAST_STAGE_SHA256
#include <openssl/evp.h>
#endif

namespace ibbcast::tool::stage {

DigestKind build_digest_kind() {
  return IBBCAST_STAGE_SHA256 ? DigestKind::kSha256 : DigestKind::kCrc32c;
}

Result<DigestKind> parse_digest_kind(const std::string& name) {
  if (name.empty()) return build_digest_kind();
  if (name == "crc32c") return DigestKind::kCrc32c;
  if (name == "sha256") {
    if (IBBCAST_STAGE_SHA256) return DigestKind::kSha256;
    return make_error(Errc::kInvalidArgument,
                      "--digest sha256: this build has no OpenSSL libcrypto (crc32c only)");
  }
  return make_error(Errc::kInvalidArgument,
                    "--digest must be sha256 or crc32c, got '" + name + "'");
}

const char* digest_name(DigestKind k) {
  return k == DigestKind::kSha256 ? "sha256" : "crc32c";
}

FileDigest::FileDigest(DigestKind kind) : kind_(kind) {
#if IBBCAST_STAGE_SHA256
  if (kind_ == DigestKind::kSha256) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1) {
      sha_ = ctx;
    } else {
      EVP_MD_CTX_free(ctx);
    }
  }
#endif
}

FileDigest::~FileDigest() {
#if IBBCAST_STAGE_SHA256
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(sha_));
#endif
}

void FileDigest::update(const void* data, std::size_t n) {
  if (kind_ == DigestKind::kCrc32c) {
    crc_ = crc32c_extend(crc_, data, n);
    return;
  }
#if IBBCAST_STAGE_SHA256
  if (sha_ != nullptr) (void)EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(sha_), data, n);
#endif
}

Digest FileDigest::finish() {
  Digest d{};
  if (kind_ == DigestKind::kCrc32c) {
    for (int i = 0; i < 4; ++i)
      d[static_cast<std::size_t>(i)] = static_cast<std::byte>(crc_ >> (8 * i));
    return d;
  }
#if IBBCAST_STAGE_SHA256
  unsigned int len = 0;
  unsigned char out[EVP_MAX_MD_SIZE];
  // A failed context gives an all-zero digest, which then mismatches: an
  // error is reported as a digest error rather than passing silently.
  if (sha_ != nullptr && EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(sha_), out, &len) == 1 &&
      len == kDigestSize) {
    std::memcpy(d.data(), out, kDigestSize);
  }
#endif
  return d;
}

Result<Digest> digest_file(const std::string& path, DigestKind kind) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(Errc::kInvalidArgument, "cannot read " + path + ": " + std::strerror(errno));
  }
  FileDigest d(kind);
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return make_error(Errc::kInvalidArgument, "cannot read " + path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    d.update(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return d.finish();
}

}  // namespace ibbcast::tool::stage
