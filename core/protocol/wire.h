#pragma once
// The datagram codec (docs/protocol.md has the byte layout and the rules).
// One frame format serves both channels: a multicast datagram and a reliable
// stage-2/point-to-point message are the same header + payload, so the engine
// has one validating decoder. Everything is little-endian on the wire.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/protocol/status.h"

namespace ibbcast {

inline constexpr uint16_t kWireMagic = 0xB1BC;
inline constexpr uint8_t kWireVersion = 1;
inline constexpr std::size_t kHeaderSize = 48;
inline constexpr std::size_t kCrcSize = 4;
inline constexpr std::size_t kAuthTagSize = 16;
/// Largest message the format carries: 2^32 - 1 fragments of the smallest
/// fragment size, so every fragment count fits the 32-bit field.
inline constexpr uint64_t kMaxMessageSize = uint64_t{0xffffffff} * 256;
/// Bytes a transport must allow beyond fragment_size for one frame.
inline constexpr std::size_t kFrameOverhead = kHeaderSize + kCrcSize + kAuthTagSize;

enum FrameFlags : uint8_t {
  kFlagCrc = 1u << 0,       ///< a CRC32C of header+payload follows the payload
  kFlagAuthTag = 1u << 1,   ///< a 16-byte authentication tag follows (core/protocol/auth.h)
  kFlagReliable = 1u << 2,  ///< sent over the reliable channel (stage 2 or p2p algorithm)
  /// A reliable frame that carries a run: the consecutive fragments from
  /// frag_index whose bytes payload_len covers (two or more), and with
  /// kFlagAuthTag one tag per fragment, in order. Never with kFlagCrc.
  kFlagRun = 1u << 3,
};
inline constexpr uint8_t kKnownFlags = kFlagCrc | kFlagAuthTag | kFlagReliable | kFlagRun;

/// Why a frame was rejected; also the index of the statistics counter.
enum class Reject : uint8_t {
  kTruncated = 0,    ///< shorter than the header or than its own length fields
  kBadMagic,         ///< not ours
  kBadVersion,       ///< another protocol version
  kBadFlags,         ///< unknown flag bits, or an auth tag we cannot check
  kBadLength,        ///< payload_len disagrees with the datagram length or the fragment
  kBadFragment,      ///< index/count/size/total inconsistent
  kBadChecksum,      ///< CRC32C mismatch
  kForeignSession,   ///< another group's datagram (address collision)
  kBadRoot,          ///< root rank out of range
  kStale,            ///< broadcast already completed here
  kMismatch,         ///< disagrees with the local call (root, length, fragment size)
  kTooEarly,         ///< too far ahead of this rank, or the early buffer is full
  kUnauthenticated,  ///< no auth tag, but the group authenticates its frames
  kBadTag,           ///< the auth tag does not match: forged, altered or another key
};
inline constexpr std::size_t kRejectCount = 14;
std::string_view reject_name(Reject r);

struct FrameHeader {
  uint8_t flags = 0;
  uint8_t algorithm = 0;
  uint64_t session = 0;
  uint32_t bid = 0;  ///< broadcast id, compared with serial-number arithmetic
  uint32_t root = 0;
  uint32_t frag_index = 0;
  uint32_t frag_count = 0;
  uint64_t total_len = 0;
  uint32_t fragment_size = 0;
  uint32_t payload_len = 0;
};

/// Fragments of an n-byte message: ceil(n / fragment_size).
inline uint32_t fragment_count(uint64_t n, uint32_t fragment_size) {
  return static_cast<uint32_t>((n + fragment_size - 1) / fragment_size);
}
/// Payload bytes of fragment i.
inline uint32_t fragment_length(uint64_t n, uint32_t fragment_size, uint32_t i) {
  uint64_t off = uint64_t{i} * fragment_size;
  uint64_t rest = n - off;
  return static_cast<uint32_t>(rest < fragment_size ? rest : fragment_size);
}

/// Payload bytes of the k fragments from `first` (contiguous in the message).
inline uint64_t run_length(uint64_t n, uint32_t fragment_size, uint32_t first, uint32_t k) {
  const uint64_t begin = uint64_t{first} * fragment_size;
  const uint64_t end = begin + uint64_t{k} * fragment_size;
  return (end < n ? end : n) - begin;
}

/// Writes the 48-byte header.
void encode_header(const FrameHeader& h, std::span<std::byte, kHeaderSize> out);

/// Rewrites the per-fragment fields of an encoded header (flags, index,
/// payload length): senders encode one template per broadcast and patch it.
void patch_header(std::span<std::byte, kHeaderSize> header, uint8_t flags, uint32_t frag_index,
                  uint32_t payload_len);

/// The CRC32C trailer value for a header and its payload.
uint32_t frame_crc(std::span<const std::byte, kHeaderSize> header,
                   std::span<const std::byte> payload);
/// Writes the CRC32C trailer of a header and its payload.
void encode_crc_trailer(std::span<const std::byte, kHeaderSize> header,
                        std::span<const std::byte> payload, std::span<std::byte, kCrcSize> out);

/// A decoded, self-consistent frame: `payload` and `tag` point into the input.
/// Where an arriving reliable frame's payload belongs (Engine::placement,
/// P2pChannel::Placer): its place in a posted broadcast's buffer, or
/// nothing (an empty span: the usual copy).
struct Placement {
  std::span<std::byte> place;
  /// Every fragment the payload carries is held there already: the payload
  /// need not be copied at all (a ring copy behind its datagrams).
  bool present = false;
};

struct Frame {
  FrameHeader header;
  std::span<const std::byte> payload;
  std::span<const std::byte> tag;         ///< kAuthTagSize bytes when flags has kFlagAuthTag
  std::span<const std::byte> raw_header;  ///< the kHeaderSize input bytes (what the tag covers)
  /// Fragments the frame carries: 1, or the run's length with kFlagRun (then
  /// `tag` holds one tag per fragment).
  uint32_t fragments = 1;
};

/// Validates every field that needs no group knowledge (length, magic, version,
/// flags, fragment arithmetic, checksum) and returns the frame or the reason.
/// `keyed`: the group authenticates, so a frame must carry a tag (checked by
/// the caller, who knows the nonce); otherwise a tag is an unknown flag.
/// Never reads outside `bytes`. On success every field of `*out` is written
/// (the engine decodes into one Frame it keeps); on failure `*out` is not
/// meaningful.
bool decode_frame(std::span<const std::byte> bytes, Frame* out, Reject* why, bool keyed = false);
/// The same checks for a frame received in three pieces (a zero-copy receive
/// puts the payload straight in the user's buffer): each piece must have
/// exactly the size the header implies.
bool decode_frame_parts(std::span<const std::byte> head, std::span<const std::byte> payload,
                        std::span<const std::byte> trailer, Frame* out, Reject* why,
                        bool keyed = false);
/// The header alone (exactly kHeaderSize bytes): magic, version, flags and
/// fields, as the decoders check them; nothing about the payload.
bool decode_head(std::span<const std::byte> head, FrameHeader* out, bool keyed = false);
/// The broadcast id and fragment index a frame claims, unchecked: enough for
/// a driver to see where it would go, never to trust it. `last`, when given:
/// the last fragment it claims (frag, or the end of a run).
bool peek_fragment(std::span<const std::byte> head, uint32_t* bid, uint32_t* frag,
                   uint32_t* last = nullptr);

/// serial-number comparison (RFC 1982) of 32-bit broadcast ids: a before b.
inline bool bid_before(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) < 0;
}

}  // namespace ibbcast
