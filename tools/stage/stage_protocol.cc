#include "tools/stage/stage_protocol.h"

#include <cstring>
#include <set>
#include <string_view>

#include "core/protocol/le.h"

namespace ibbcast::tool::stage {
namespace {

constexpr uint32_t kManifestMagic = 0x4d534249;  // "IBSM"
constexpr uint32_t kStartMagic = 0x53534249;     // "IBSS"
constexpr uint16_t kVersion = kStageVersion;

using le::Reader;
using le::Writer;

Status corrupt(const std::string& what) {
  return make_error(Errc::kCorrupt, what);
}

}  // namespace

void encode_chunk_header(const ChunkHeader& h, std::span<std::byte, kChunkHeaderSize> out) {
  std::vector<std::byte> v;
  v.reserve(kChunkHeaderSize);
  Writer w(v);
  w.put(kChunkMagic, 4);
  w.put(kChunkVersion, 1);
  w.put(h.flags, 1);
  w.put(0, 2);
  w.put(h.file_index, 4);
  w.put(h.chunk_index, 4);
  w.put(h.offset, 8);
  w.put(h.length, 4);
  w.put(h.crc32c, 4);
  std::memcpy(out.data(), v.data(), kChunkHeaderSize);
}

Result<ChunkHeader> decode_chunk_header(std::span<const std::byte> in) {
  if (in.size() < kChunkHeaderSize) return make_error(Errc::kTruncated, "chunk header truncated");
  Reader r(in.first(kChunkHeaderSize));
  if (r.get(4) != kChunkMagic) return corrupt("chunk header: bad magic");
  if (r.get(1) != kChunkVersion) return corrupt("chunk header: unknown version");
  ChunkHeader h;
  h.flags = static_cast<uint8_t>(r.get(1));
  if ((h.flags & ~kChunkFlagAbort) != 0) return corrupt("chunk header: unknown flags");
  if (r.get(2) != 0) return corrupt("chunk header: reserved bytes not zero");
  h.file_index = static_cast<uint32_t>(r.get(4));
  h.chunk_index = static_cast<uint32_t>(r.get(4));
  h.offset = r.get(8);
  h.length = static_cast<uint32_t>(r.get(4));
  h.crc32c = static_cast<uint32_t>(r.get(4));
  if (h.file_index >= kMaxEntries) return corrupt("chunk header: file index out of range");
  if (h.length > kMaxChunkSize) return corrupt("chunk header: length above the maximum chunk");
  if (h.offset > UINT64_MAX - h.length) return corrupt("chunk header: offset overflows");
  return h;
}

bool safe_relative_path(const std::string& p) {
  if (p.empty() || p.size() > kMaxPath || p.front() == '/') return false;
  if (p.find('\0') != std::string::npos) return false;
  std::size_t begin = 0;
  while (begin <= p.size()) {
    std::size_t end = p.find('/', begin);
    if (end == std::string::npos) end = p.size();
    const std::string part = p.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

std::vector<std::byte> encode_manifest(const Manifest& m) {
  std::vector<std::byte> out;
  Writer w(out);
  w.put(kManifestMagic, 4);
  w.put(kVersion, 2);
  w.put(static_cast<uint16_t>(m.digest_kind), 2);
  w.put(m.entries.size(), 4);
  for (const Entry& e : m.entries) {
    w.put(static_cast<uint8_t>(e.kind), 1);
    w.put(0, 1);
    w.put(e.path.size(), 2);
    w.put(e.mode, 4);
    w.put(e.uid, 4);
    w.put(e.gid, 4);
    w.put(e.size, 8);
    w.put(static_cast<uint64_t>(e.mtime_ns), 8);
    w.put_bytes(e.digest.data(), e.digest.size());
    w.put(e.target.size(), 2);
    w.put_bytes(e.path.data(), e.path.size());
    w.put_bytes(e.target.data(), e.target.size());
  }
  return out;
}

Result<Manifest> decode_manifest(std::span<const std::byte> in) {
  Reader r(in);
  if (r.get(4) != kManifestMagic) return corrupt("manifest: bad magic");
  if (r.get(2) != kVersion) return corrupt("manifest: unknown version");
  Manifest m;
  const uint64_t kind = r.get(2);
  if (kind != 1 && kind != 2) return corrupt("manifest: unknown digest kind");
  m.digest_kind = static_cast<DigestKind>(kind);
  const uint64_t count = r.get(4);
  if (r.short_read()) return make_error(Errc::kTruncated, "manifest truncated");
  // Each entry takes at least 59 bytes (58 of fields, a path of one or more):
  // a count the input cannot hold is a lie.
  if (count > kMaxEntries || count > r.left() / 59) return corrupt("manifest: bad entry count");
  m.entries.resize(count);
  uint64_t total = 0;
  for (Entry& e : m.entries) {
    const uint64_t k = r.get(1);
    if (k < 1 || k > 3) return corrupt("manifest: unknown entry kind");
    e.kind = static_cast<EntryKind>(k);
    if (r.get(1) != 0) return corrupt("manifest: reserved byte not zero");
    const std::size_t path_len = r.get(2);
    e.mode = static_cast<uint32_t>(r.get(4));
    e.uid = static_cast<uint32_t>(r.get(4));
    e.gid = static_cast<uint32_t>(r.get(4));
    e.size = r.get(8);
    e.mtime_ns = static_cast<int64_t>(r.get(8));
    r.get_bytes(e.digest.data(), e.digest.size());
    const std::size_t target_len = r.get(2);
    if (r.short_read() || path_len > r.left())
      return make_error(Errc::kTruncated, "manifest truncated");
    e.path.resize(path_len);
    r.get_bytes(e.path.data(), path_len);
    e.target.resize(target_len);
    if (!r.get_bytes(e.target.data(), target_len)) {
      return make_error(Errc::kTruncated, "manifest truncated");
    }
    if ((e.mode & ~07777u) != 0) return corrupt("manifest: mode has more than permission bits");
    if (!safe_relative_path(e.path)) return corrupt("manifest: unsafe path '" + e.path + "'");
    if (e.kind != EntryKind::kFile && e.size != 0) return corrupt("manifest: size of a non-file");
    // Sizes, and their sum, fit an off_t: beyond, chunk_count and the space
    // check would wrap.
    if (e.size > static_cast<uint64_t>(INT64_MAX) - total) {
      return corrupt("manifest: file size out of range on '" + e.path + "'");
    }
    total += e.size;
    if ((e.kind == EntryKind::kSymlink) != !e.target.empty()) {
      return corrupt("manifest: symlink target on '" + e.path + "'");
    }
    if (e.target.find('\0') != std::string::npos) return corrupt("manifest: NUL in a target");
  }
  if (r.left() != 0) return corrupt("manifest: trailing bytes");
  // Two entries for one path, or a path below a symlink of the manifest,
  // would let a manifest write through a link it made: refused.
  std::set<std::string_view> paths, links;
  for (const Entry& e : m.entries) {
    if (!paths.insert(e.path).second) return corrupt("manifest: '" + e.path + "' twice");
    if (e.kind == EntryKind::kSymlink) links.insert(e.path);
  }
  for (const Entry& e : m.entries) {
    for (std::size_t p = e.path.find('/'); p != std::string::npos; p = e.path.find('/', p + 1)) {
      if (links.count(std::string_view(e.path).substr(0, p)) != 0) {
        return corrupt("manifest: '" + e.path + "' lies below a symlink");
      }
    }
  }
  return m;
}

void encode_start(const Start& s, std::span<std::byte, kStartSize> out) {
  std::vector<std::byte> v;
  Writer w(v);
  const std::size_t n = std::min(s.message.size(), kStartMessageSize);
  w.put(kStartMagic, 4);
  w.put(kVersion, 2);
  w.put((s.force ? 1u : 0u) | (s.preserve ? 2u : 0u) | (s.pack ? 0u : 4u) | (s.checksum ? 8u : 0u) |
            (s.dry_run ? 16u : 0u),
        2);
  w.put(s.chunk_size, 4);
  w.put(s.error_code, 4);
  w.put(s.manifest_len, 8);
  w.put(s.entries, 4);
  w.put(n, 4);
  w.put_bytes(s.message.data(), n);
  v.resize(kStartSize);
  std::memcpy(out.data(), v.data(), kStartSize);
}

Result<Start> decode_start(std::span<const std::byte> in) {
  if (in.size() != kStartSize) return make_error(Errc::kTruncated, "start block: wrong size");
  Reader r(in);
  if (r.get(4) != kStartMagic) return corrupt("start block: bad magic");
  if (r.get(2) != kVersion) return corrupt("start block: unknown version");
  Start s;
  const uint64_t flags = r.get(2);
  if ((flags & ~31u) != 0) return corrupt("start block: unknown flags");
  s.force = (flags & 1) != 0;
  s.preserve = (flags & 2) != 0;
  s.pack = (flags & 4) == 0;
  s.checksum = (flags & 8) != 0;
  s.dry_run = (flags & 16) != 0;
  s.chunk_size = static_cast<uint32_t>(r.get(4));
  s.error_code = static_cast<uint32_t>(r.get(4));
  s.manifest_len = r.get(8);
  s.entries = static_cast<uint32_t>(r.get(4));
  if (s.entries >= kMaxEntries) return corrupt("start block: too many entries");
  const std::size_t n = r.get(4);
  if (n > kStartMessageSize) return corrupt("start block: message too long");
  s.message.resize(n);
  r.get_bytes(s.message.data(), n);
  if (s.error_code == 0 && (s.chunk_size == 0 || s.chunk_size > kMaxChunkSize)) {
    return corrupt("start block: bad chunk size");
  }
  if (s.error_code > static_cast<uint32_t>(Errc::kInternal))
    return corrupt("start block: bad code");
  return s;
}

}  // namespace ibbcast::tool::stage
