// The nonce layout, shared by every FrameAuth backend.
#include "core/protocol/auth.h"

#include <cstring>

namespace ibbcast {

std::array<std::byte, 12> auth_iv(const AuthNonce& n) {
  // Big-endian bit fields: seq[40] | frag[32] | root[24]. The callers keep
  // seq and root in range; masking here means an out-of-range value can only
  // alias, never spill into another field.
  const uint64_t hi = ((n.seq & (kAuthMaxBroadcasts - 1)) << 24) | (n.frag >> 8);
  const uint32_t lo = ((n.frag & 0xffu) << 24) | (n.root & (kAuthMaxRanks - 1));
  std::array<std::byte, 12> iv{};
  for (int i = 0; i < 8; ++i)
    iv[static_cast<std::size_t>(i)] = static_cast<std::byte>(hi >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i)
    iv[static_cast<std::size_t>(8 + i)] = static_cast<std::byte>(lo >> (24 - 8 * i));
  return iv;
}

std::array<std::byte, kHeaderSize> auth_header(std::span<const std::byte, kHeaderSize> header) {
  std::array<std::byte, kHeaderSize> out;
  std::memcpy(out.data(), header.data(), kHeaderSize);
  out[3] &= ~std::byte{kFlagReliable};  // the flags byte (docs/protocol.md)
  return out;
}

namespace {

// The engine's frames: GMAC over the header (channel bit cleared) and the
// payload, under the nonce of auth_iv.
class FrameGmac final : public FrameAuth {
 public:
  explicit FrameGmac(std::unique_ptr<Gmac> gmac) : gmac_(std::move(gmac)) {}
  void tag(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
           std::span<const std::byte> payload, std::span<std::byte, kAuthTagSize> out) override {
    const std::span<const std::byte> parts[] = {header, payload};
    (void)gmac_->tag(auth_iv(n), parts, out);
  }
  bool verify(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
              std::span<const std::byte> payload,
              std::span<const std::byte, kAuthTagSize> tag) override {
    const std::span<const std::byte> parts[] = {header, payload};
    return gmac_->verify(auth_iv(n), parts, tag);
  }

 private:
  std::unique_ptr<Gmac> gmac_;
};

}  // namespace

Result<std::unique_ptr<FrameAuth>> make_frame_auth(const AuthKey& key) {
  auto gmac = make_gmac(key);
  if (!gmac) return gmac.status();
  return std::unique_ptr<FrameAuth>(new FrameGmac(std::move(*gmac)));
}

}  // namespace ibbcast
