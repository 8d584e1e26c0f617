// AES-128-GMAC through OpenSSL's EVP interface: GCM with the frame as
// additional data and no plaintext. EVP picks the AES-NI/PCLMULQDQ (or
// VAES/VPCLMULQDQ) code paths where the CPU has them.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/auth.h"

namespace ibbcast {
namespace {

class GmacAuth final : public FrameAuth {
 public:
  explicit GmacAuth(EVP_CIPHER_CTX* ctx) : ctx_(ctx) {}
  ~GmacAuth() override { EVP_CIPHER_CTX_free(ctx_); }
  GmacAuth(const GmacAuth&) = delete;
  GmacAuth& operator=(const GmacAuth&) = delete;

  void tag(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
           std::span<const std::byte> payload, std::span<std::byte, kAuthTagSize> out) override {
    if (!compute(n, header, payload, out.data())) out_fill_invalid(out);
  }

  bool verify(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
              std::span<const std::byte> payload,
              std::span<const std::byte, kAuthTagSize> tag) override {
    std::byte want[kAuthTagSize];
    if (!compute(n, header, payload, want)) return false;
    return CRYPTO_memcmp(want, tag.data(), kAuthTagSize) == 0;
  }

 private:
  static void out_fill_invalid(std::span<std::byte, kAuthTagSize> out) {
    // A tag that cannot be computed must not verify anywhere: all-zero is as
    // likely as any value, so a failure is made visible by the receiver's
    // bad_tag counter rather than by a crash here.
    for (auto& b : out)
      b = std::byte{0};
  }

  bool compute(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
               std::span<const std::byte> payload, std::byte* out) {
    const auto iv = auth_iv(n);
    int len = 0;
    // The key schedule stays in ctx_; only the IV changes per frame.
    if (EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr,
                           reinterpret_cast<const unsigned char*>(iv.data())) != 1) {
      return false;
    }
    if (EVP_EncryptUpdate(ctx_, nullptr, &len,
                          reinterpret_cast<const unsigned char*>(header.data()),
                          static_cast<int>(header.size())) != 1) {
      return false;
    }
    if (!payload.empty() &&
        EVP_EncryptUpdate(ctx_, nullptr, &len,
                          reinterpret_cast<const unsigned char*>(payload.data()),
                          static_cast<int>(payload.size())) != 1) {
      return false;
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

Result<std::unique_ptr<FrameAuth>> make_frame_auth(const AuthKey& key) {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return make_error(Errc::kNoResource, "EVP_CIPHER_CTX_new failed");
  if (EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), nullptr,
                         reinterpret_cast<const unsigned char*>(key.data()), nullptr) != 1) {
    EVP_CIPHER_CTX_free(ctx);
    return make_error(Errc::kInternal, "OpenSSL refused the AES-128-GCM key");
  }
  return std::unique_ptr<FrameAuth>(new GmacAuth(ctx));
}

}  // namespace ibbcast
