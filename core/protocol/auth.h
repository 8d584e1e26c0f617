#pragma once
// Authenticated frames (issue 9, docs/protocol.md "Authentication"): a 16-byte
// AES-128-GMAC tag over header and payload, keyed per group. The key is made
// by rank 0 at group setup and travels only over the bootstrap. GMAC needs a
// nonce that never repeats for different bytes under one key; it is not sent
// but derived from what identifies a frame: the broadcast's 64-bit sequence
// number (the wire's 32-bit bid plus the epoch both sides know), the fragment,
// the sending rank and the channel. Replays of old broadcasts fail the stale
// check, replays across a bid wrap fail the tag.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/protocol/status.h"
#include "core/protocol/wire.h"

namespace ibbcast {

inline constexpr std::size_t kAuthKeySize = 16;
using AuthKey = std::array<std::byte, kAuthKeySize>;

/// The nonce's bit budget: 40 bits of broadcast sequence, 32 of fragment
/// index, 24 of root rank.
inline constexpr uint64_t kAuthMaxBroadcasts = uint64_t{1} << 40;
inline constexpr uint32_t kAuthMaxRanks = 1u << 24;

/// What a tag is bound to besides the frame's bytes.
struct AuthNonce {
  uint64_t seq = 0;   ///< broadcast sequence number (< kAuthMaxBroadcasts)
  uint32_t frag = 0;  ///< fragment index
  uint32_t root = 0;  ///< the broadcast's root (< kAuthMaxRanks)
};

/// The header bytes a tag covers: the frame's, with the channel bit
/// (kFlagReliable) cleared, so that one tag serves both channels.
std::array<std::byte, kHeaderSize> auth_header(std::span<const std::byte, kHeaderSize> header);

/// The 96-bit GCM IV of a nonce (exposed for tests that pin the layout).
std::array<std::byte, 12> auth_iv(const AuthNonce& n);

/// One group's key and cipher state. Not thread-safe: one per engine.
class FrameAuth {
 public:
  virtual ~FrameAuth() = default;
  /// The tag of header || payload under `n`.
  virtual void tag(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
                   std::span<const std::byte> payload, std::span<std::byte, kAuthTagSize> out) = 0;
  /// True when `tag` is the tag of header || payload under `n` (constant time).
  virtual bool verify(const AuthNonce& n, std::span<const std::byte, kHeaderSize> header,
                      std::span<const std::byte> payload,
                      std::span<const std::byte, kAuthTagSize> tag) = 0;
};

/// AES-128-GMAC with a nonce the caller lays out: for channels other than the
/// engine's frames (core/rdgram), each under a subkey of its own
/// (derive_auth_key), so no nonce of theirs can meet one of the engine's.
class Gmac {
 public:
  static constexpr std::size_t kIvSize = 12;
  using Iv = std::array<std::byte, kIvSize>;
  virtual ~Gmac() = default;
  /// The tag of the concatenation of `parts`; false if the library failed
  /// (then `out` is zero, which verifies nowhere but by chance).
  virtual bool tag(const Iv& iv, std::span<const std::span<const std::byte>> parts,
                   std::span<std::byte, kAuthTagSize> out) = 0;
  /// True when `tag` is the tag of `parts` under `iv` (constant time).
  virtual bool verify(const Iv& iv, std::span<const std::span<const std::byte>> parts,
                      std::span<const std::byte, kAuthTagSize> tag) = 0;
};

/// A FrameAuth for `key`; kUnsupported when the build has no crypto library.
Result<std::unique_ptr<FrameAuth>> make_frame_auth(const AuthKey& key);
/// A Gmac for `key`; kUnsupported when the build has no crypto library.
Result<std::unique_ptr<Gmac>> make_gmac(const AuthKey& key);
/// A subkey for one use of the group key: AES-128 of the 16-byte `label`
/// under `key` (AES as a pseudo-random function, one block). The label must
/// be no block GCM enciphers under `key` for the engine's tags, which have no
/// plaintext: neither the zero block (GCM's hash key) nor IV || 00000001 (the
/// tag's mask). A label not ending in 00 00 00 01 is none of them.
Result<AuthKey> derive_auth_key(const AuthKey& key, const std::array<std::byte, 16>& label);
/// Whether this build can authenticate frames.
bool auth_available();

}  // namespace ibbcast
