// libFuzzer target for the decoders of what `ibbcast stage` receives from the
// root (tools/stage/stage_protocol.h): the start block, the manifest and the header
// of every data broadcast. The first input byte picks what the rest is:
//
//   0  a chunk header        (decode_chunk_header)
//   1  a manifest            (decode_manifest)
//   2  a start block         (decode_start)
//   3  parameters: a start block, a manifest and chunk headers are built from
//      them, encoded, decoded, then cut short and given a changed byte.
//
// Raw inputs (0-2) are decoded as they are and as a "repaired" copy whose
// magic and version are made valid, so the fuzzer reaches the field checks
// behind them.
//
// Invariants beyond "no crash":
//  - Whatever a decoder accepts re-encodes to the input's bytes (the start
//    block: to the same fields and bytes up to its message; the padding after
//    the message is not read) and is in range: a chunk header has only known
//    flags, a file index below kMaxEntries, a length up to kMaxChunkSize and
//    no overflowing end; a manifest's paths are relative, non-empty, without
//    "." or ".." components or NUL, each there once and none below a symlink
//    entry; modes are permission bits; only files have a size, only symlinks
//    a target; and every file's chunks, at any chunk size, are at least one,
//    tile the file and lie within it (chunk_count, the schedule's arithmetic).
//  - A rejection is kTruncated (input too short) or kCorrupt, with a message.
//  - A value built from parameters decodes exactly when it is valid by the
//    rules above (checked here independently of the decoder), to itself; a
//    strict prefix of an encoded manifest never decodes.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "tools/stage/stage_protocol.h"

namespace {

using namespace ibbcast;
using namespace ibbcast::tool::stage;
using fuzz::check;
using Bytes = std::vector<std::byte>;

constexpr uint32_t kManifestMagic = 0x4d534249;  // "IBSM"
constexpr uint32_t kStartMagic = 0x53534249;     // "IBSS"
constexpr uint64_t kMaxFileSize = INT64_MAX;     // an off_t
constexpr uint32_t kMaxCode = static_cast<uint32_t>(Errc::kInternal);

void rejected(const Status& st, bool truncated) {
  check(!st.message().empty());
  if (truncated) {
    check(st.code() == Errc::kTruncated);
  } else {
    check(st.code() == Errc::kTruncated || st.code() == Errc::kCorrupt);
  }
}

// --- chunk headers ---

bool valid_chunk(const ChunkHeader& h) {
  return (h.flags & ~kChunkFlagAbort) == 0 && h.file_index < kMaxEntries &&
         h.length <= kMaxChunkSize && h.offset <= UINT64_MAX - h.length;
}

bool same_chunk(const ChunkHeader& a, const ChunkHeader& b) {
  return a.flags == b.flags && a.file_index == b.file_index && a.chunk_index == b.chunk_index &&
         a.offset == b.offset && a.length == b.length && a.crc32c == b.crc32c;
}

std::array<std::byte, kChunkHeaderSize> encoded(const ChunkHeader& h) {
  std::array<std::byte, kChunkHeaderSize> out{};
  encode_chunk_header(h, out);
  return out;
}

void check_chunk(std::span<const std::byte> in) {
  auto h = decode_chunk_header(in);
  if (!h) {
    rejected(h.status(), in.size() < kChunkHeaderSize);
    check(in.size() < kChunkHeaderSize || h.status().code() == Errc::kCorrupt);
    return;
  }
  check(in.size() >= kChunkHeaderSize && valid_chunk(*h));
  check(std::memcmp(encoded(*h).data(), in.data(), kChunkHeaderSize) == 0);
}

// --- manifests, checked without the decoder's own helpers ---

bool safe_path(const std::string& p) {
  if (p.empty() || p.size() > kMaxPath || p[0] == '/' || p.find('\0') != std::string::npos)
    return false;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(p.find('/', begin), p.size());
    const std::string part = p.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == p.size()) return true;
    begin = end + 1;
  }
}

// The rules decode_manifest promises (its header comment and stage_protocol.h's).
bool valid_manifest(const Manifest& m) {
  const auto dk = static_cast<uint16_t>(m.digest_kind);
  if ((dk != 1 && dk != 2) || m.entries.size() > kMaxEntries) return false;
  uint64_t total = 0;
  for (const Entry& e : m.entries) {
    const auto k = static_cast<uint8_t>(e.kind);
    if (k < 1 || k > 3 || (e.mode & ~07777u) != 0 || !safe_path(e.path)) return false;
    if (e.kind != EntryKind::kFile && e.size != 0) return false;
    if ((e.kind == EntryKind::kSymlink) == e.target.empty()) return false;
    if (e.target.find('\0') != std::string::npos) return false;
    if (e.size > kMaxFileSize - total) return false;
    total += e.size;
  }
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    for (std::size_t j = 0; j < m.entries.size(); ++j) {
      const std::string& a = m.entries[i].path;
      const std::string& b = m.entries[j].path;
      if (i != j && a == b) return false;
      // b below the symlink a
      if (m.entries[i].kind == EntryKind::kSymlink && b.size() > a.size() &&
          b.compare(0, a.size(), a) == 0 && b[a.size()] == '/')
        return false;
    }
  }
  return true;
}

bool same_manifest(const Manifest& a, const Manifest& b) {
  if (a.digest_kind != b.digest_kind || a.entries.size() != b.entries.size()) return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const Entry& x = a.entries[i];
    const Entry& y = b.entries[i];
    if (x.kind != y.kind || x.mode != y.mode || x.uid != y.uid || x.gid != y.gid ||
        x.size != y.size || x.mtime_ns != y.mtime_ns || x.digest != y.digest || x.path != y.path ||
        x.target != y.target)
      return false;
  }
  return true;
}

// The schedule of tools/stage/stage_pipeline.cc (for_each_chunk) at `chunk` bytes:
// every file has at least one chunk; chunk k starts at k * chunk; the chunks
// lie within the file, are not empty unless the file is, and end where it
// ends; each one's header encodes and decodes to itself.
void check_schedule(const Manifest& m, uint32_t chunk, uint64_t pick) {
  if (chunk == 0 || chunk > kMaxChunkSize) return;
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    const uint64_t size = m.entries[i].size;
    const uint64_t n = chunk_count(size, chunk);
    check(n >= 1 && n - 1 <= size / chunk);
    for (const uint64_t k : {uint64_t{0}, pick % n, n - 1}) {
      const uint64_t off = k * chunk;
      check(off <= size && (off < size || size == 0));
      const auto len = static_cast<uint32_t>(std::min<uint64_t>(chunk, size - off));
      check(len <= chunk && (len > 0 || size == 0) && off + len <= size);
      if (k == n - 1) check(off + len == size);
      ChunkHeader h;
      h.file_index = static_cast<uint32_t>(i);
      h.chunk_index = static_cast<uint32_t>(k);
      h.offset = off;
      h.length = len;
      h.crc32c = static_cast<uint32_t>(pick);
      const auto bytes = encoded(h);
      auto d = decode_chunk_header(bytes);
      check(d && same_chunk(*d, h));
    }
  }
}

void check_manifest(std::span<const std::byte> in) {
  auto m = decode_manifest(in);
  if (!m) {
    rejected(m.status(), false);
    return;
  }
  check(valid_manifest(*m));
  for (const Entry& e : m->entries)
    check(safe_relative_path(e.path));
  const Bytes again = encode_manifest(*m);
  check(again.size() == in.size() && std::memcmp(again.data(), in.data(), in.size()) == 0);
  check_schedule(*m, kMaxChunkSize, in.size());
  check_schedule(*m, 4096, in.size() * 7919);
  check_schedule(*m, 1, in.size());
}

// --- start blocks ---

bool valid_start(const Start& s) {
  return s.entries < kMaxEntries && s.error_code <= kMaxCode &&
         (s.error_code != 0 || (s.chunk_size > 0 && s.chunk_size <= kMaxChunkSize));
}

bool same_start(const Start& a, const Start& b) {
  return a.force == b.force && a.preserve == b.preserve && a.pack == b.pack &&
         a.checksum == b.checksum && a.dry_run == b.dry_run && a.chunk_size == b.chunk_size &&
         a.manifest_len == b.manifest_len && a.entries == b.entries &&
         a.error_code == b.error_code && a.message == b.message;
}

constexpr std::size_t kStartFixed = kStartSize - kStartMessageSize;  // before the message

void check_start(std::span<const std::byte> in) {
  auto s = decode_start(in);
  if (!s) {
    rejected(s.status(), in.size() != kStartSize);
    check(in.size() != kStartSize || s.status().code() == Errc::kCorrupt);
    return;
  }
  check(in.size() == kStartSize && valid_start(*s) && s->message.size() <= kStartMessageSize);
  std::array<std::byte, kStartSize> again{};
  encode_start(*s, again);
  check(std::memcmp(again.data(), in.data(), kStartFixed + s->message.size()) == 0);
  auto twice = decode_start(again);
  check(twice && same_start(*twice, *s));
}

// --- values built from parameters ---

std::string text(fuzz::Input& in) {
  return in.text_until('\n');
}

void built(fuzz::Input& in) {
  // Start block.
  Start s;
  const auto sflags = in.take<uint8_t>();
  s.force = (sflags & 1) != 0;
  s.preserve = (sflags & 2) != 0;
  s.chunk_size = (sflags & 4) ? in.take<uint32_t>() : 4096u << (in.take<uint8_t>() % 16);
  s.error_code = (sflags & 8) ? in.take<uint8_t>() : 0;
  s.manifest_len = in.take<uint64_t>();
  s.entries = (sflags & 16) ? in.take<uint32_t>() : in.take<uint8_t>();
  if (sflags & 32) s.message = text(in);
  s.pack = (sflags & 64) == 0;
  s.checksum = (sflags & 128) != 0;
  s.dry_run = (in.take<uint8_t>() & 1) != 0;
  std::array<std::byte, kStartSize> block{};
  encode_start(s, block);
  check_start(block);
  auto ds = decode_start(block);
  check(ds.is_ok() == valid_start(s));
  if (ds) {
    Start want = s;
    want.message.resize(std::min(want.message.size(), kStartMessageSize));
    check(same_start(*ds, want));
  } else {
    rejected(ds.status(), false);
    check(ds.status().code() == Errc::kCorrupt);
  }

  // Chunk header.
  ChunkHeader h;
  h.flags = in.take<uint8_t>();
  h.file_index = in.take<uint32_t>();
  h.chunk_index = in.take<uint32_t>();
  h.offset = in.take<uint64_t>();
  h.length = in.take<uint32_t>();
  h.crc32c = in.take<uint32_t>();
  auto hb = encoded(h);
  auto dh = decode_chunk_header(hb);
  check(dh.is_ok() == valid_chunk(h));
  if (dh) check(same_chunk(*dh, h));
  check_chunk(hb);
  check_chunk(std::span<const std::byte>(hb).first(in.take<uint8_t>() % kChunkHeaderSize));

  // Manifest: [digest kind][count], then per entry [shape][mode u16][size]
  // [mtime u64][digest byte] path\n [target\n].
  Manifest m;
  const auto mk = in.take<uint8_t>();
  m.digest_kind = static_cast<DigestKind>((mk & 0x80) ? mk & 3 : 1 + (mk & 1));
  const std::size_t count = in.take<uint8_t>() % 16;
  for (std::size_t i = 0; i < count && !in.empty(); ++i) {
    Entry e;
    const auto shape = in.take<uint8_t>();
    e.kind = static_cast<EntryKind>((shape & 0x80) ? shape & 3 : 1 + (shape & 3) % 3);
    e.mode = in.take<uint16_t>() & ((shape & 0x40) ? 0xffff : 07777);
    if (shape & 0x20) {
      e.size = in.take<uint64_t>();
    } else if (e.kind == EntryKind::kFile || (shape & 0x10)) {
      e.size = in.take<uint16_t>();
    }
    e.mtime_ns = static_cast<int64_t>(in.take<uint64_t>());
    e.uid = in.take<uint32_t>();
    e.gid = in.take<uint32_t>();
    e.digest.fill(std::byte{in.take<uint8_t>()});
    e.path = text(in);
    if (e.kind == EntryKind::kSymlink || (shape & 0x08)) e.target = text(in);
    // Lengths are 16-bit fields; the encoder's precondition.
    if (e.path.size() > 0xffff || e.target.size() > 0xffff) return;
    check(safe_relative_path(e.path) == safe_path(e.path));
    m.entries.push_back(std::move(e));
  }
  const Bytes bytes = encode_manifest(m);
  auto dm = decode_manifest(bytes);
  check(dm.is_ok() == valid_manifest(m));
  if (dm) {
    check(same_manifest(*dm, m));
    check_schedule(*dm, s.chunk_size, in.take<uint64_t>());
  } else {
    rejected(dm.status(), false);
    check(dm.status().code() == Errc::kCorrupt);
  }
  check_manifest(bytes);
  // A strict prefix never decodes; a changed byte decodes to something valid or not at all.
  const std::size_t cut = in.take<uint16_t>() % bytes.size();
  const Bytes prefix(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
  check(!decode_manifest(prefix));
  check_manifest(prefix);
  Bytes changed = bytes;
  changed[in.take<uint16_t>() % changed.size()] ^= std::byte{in.take<uint8_t>()};
  check_manifest(changed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  // Exact-size heap copies, so ASan sees any read past their end.
  Bytes fixed(in.begin(), in.end());
  switch (data[0] % 4) {
    case 0:
      check_chunk(fixed);
      if (fixed.size() >= 8) {
        le::put(fixed.data(), kChunkMagic);
        fixed[4] = std::byte{kChunkVersion};
        check_chunk(fixed);
      }
      break;
    case 1:
      check_manifest(fixed);
      if (fixed.size() >= 8) {
        le::put(fixed.data(), kManifestMagic);
        le::put(fixed.data() + 4, kStageVersion);
        check_manifest(fixed);
      }
      break;
    case 2:
      check_start(fixed);
      fixed.resize(kStartSize);
      le::put(fixed.data(), kStartMagic);
      le::put(fixed.data() + 4, kStageVersion);
      check_start(fixed);
      break;
    case 3: {
      fuzz::Input params(data + 1, size - 1);
      built(params);
      break;
    }
  }
  return 0;
}
