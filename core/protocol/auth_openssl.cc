// AES-128-GMAC through OpenSSL's EVP interface: GCM with the bytes as
// additional data and no plaintext. EVP picks the AES-NI/PCLMULQDQ (or
// VAES/VPCLMULQDQ) code paths where the CPU has them.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>

#include "core/protocol/auth.h"

namespace ibbcast {
namespace {

const unsigned char* uc(const std::byte* p) {
  return reinterpret_cast<const unsigned char*>(p);
}

class OpenSslGmac final : public Gmac {
 public:
  explicit OpenSslGmac(EVP_CIPHER_CTX* ctx) : ctx_(ctx) {}
  ~OpenSslGmac() override { EVP_CIPHER_CTX_free(ctx_); }
  OpenSslGmac(const OpenSslGmac&) = delete;
  OpenSslGmac& operator=(const OpenSslGmac&) = delete;

  bool tag(const Iv& iv, std::span<const std::span<const std::byte>> parts,
           std::span<std::byte, kAuthTagSize> out) override {
    if (compute(iv, parts, out.data())) return true;
    // A tag that cannot be computed must not verify anywhere: all-zero is as
    // likely as any value, so a failure is made visible by the receiver's
    // rejection counter rather than by a crash here.
    std::memset(out.data(), 0, out.size());
    return false;
  }

  bool verify(const Iv& iv, std::span<const std::span<const std::byte>> parts,
              std::span<const std::byte, kAuthTagSize> tag) override {
    std::byte want[kAuthTagSize];
    if (!compute(iv, parts, want)) return false;
    return CRYPTO_memcmp(want, tag.data(), kAuthTagSize) == 0;
  }

 private:
  bool compute(const Iv& iv, std::span<const std::span<const std::byte>> parts, std::byte* out) {
    int len = 0;
    // The key schedule stays in ctx_; only the IV changes per call.
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, uc(iv.data())) != 1) return false;
    for (const auto& part : parts) {
      if (!part.empty() && EVP_EncryptUpdate(ctx_, nullptr, &len, uc(part.data()),
                                             static_cast<int>(part.size())) != 1) {
        return false;
      }
    }
    unsigned char none[16];
    if (EVP_EncryptFinal_ex(ctx_, none, &len) != 1) return false;
    return EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kAuthTagSize), out) ==
           1;
  }

  EVP_CIPHER_CTX* ctx_;
};

}  // namespace

bool auth_available() {
  return true;
}

Result<std::unique_ptr<Gmac>> make_gmac(const AuthKey& key) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return make_error(Errc::kNoResource, "EVP_CIPHER_CTX_new failed");
  if (EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nullptr, uc(key.data()), nullptr) != 1) {
    EVP_CIPHER_CTX_free(ctx);
    return make_error(Errc::kInternal, "OpenSSL refused the AES-128-GCM key");
  }
  return std::unique_ptr<Gmac>(new OpenSslGmac(ctx));
}

Result<AuthKey> derive_auth_key(const AuthKey& key, const std::array<std::byte, 16>& label) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return make_error(Errc::kNoResource, "EVP_CIPHER_CTX_new failed");
  AuthKey out{};
  int len = 0, tail = 0;
  // One block in ECB mode, no padding: the block cipher itself.
  const bool ok =
      EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), nullptr, uc(key.data()), nullptr) == 1 &&
      EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 &&
      EVP_EncryptUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &len, uc(label.data()),
                        static_cast<int>(label.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx, reinterpret_cast<unsigned char*>(out.data()) + len, &tail) == 1 &&
      len + tail == static_cast<int>(out.size());
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) return make_error(Errc::kInternal, "OpenSSL failed to derive a subkey (AES-128)");
  return out;
}

}  // namespace ibbcast
