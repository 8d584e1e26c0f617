#pragma once
// `ibbcast stage SRC... DEST`: what goes over the group, and why (issue 7).
//
// Every rank runs the same sequence of collectives, so that the number and
// sizes of broadcasts match everywhere without a side channel:
//
//  1. Start (one broadcast of kStartSize bytes from rank 0). The root walks
//     SRC (regular files, directories, symlinks kept as symlinks; sockets,
//     FIFOs and devices are refused by name), digests every file and puts
//     the run's parameters (chunk size, --force, --preserve) or its error
//     (missing source, unreadable file, special file) into the start block.
//     An error there ends the run on every rank with the root's message,
//     before anything is written.
//  2. Manifest (one broadcast of manifest_len bytes): per entry its kind,
//     path relative to DEST, mode, owner, group, size, mtime (ns), symlink target and a
//     content digest of the whole file (CRC32C, or SHA-256 where the build
//     has OpenSSL and --checksum, --no-auth or --digest asks for it; the kind is
//     in the manifest). decode_manifest validates
//     every field: a path is relative, non-empty and has no "." or ".."
//     component, so a manifest cannot write outside DEST.
//  3. Agreement (one bootstrap allgather): every rank checks, writing
//     nothing, that DEST is a writable folder or can be made in one, decides
//     per file whether it needs it (skip when DEST already holds a regular
//     file with the same size, mode and mtime — with --checksum the same
//     size, mode and digest — unless --force), sums the blocks it needs and
//     compares them with statvfs. Each rank contributes a fixed status
//     record plus a bitmap of needed files. Any failed rank ends the run on
//     every rank (named, with its reason) before data moves; otherwise every
//     rank makes DEST, its folders and links, and a file is sent when any
//     rank needs it, so the schedule is the same everywhere.
//  4. Data: every sent file is cut into ceil(size / chunk) pieces (one for
//     an empty file), each a ChunkHeader followed by its bytes; consecutive
//     pieces share a broadcast while they fit in one chunk
//     (tools/stage/stage_schedule.h), so small files do not cost a broadcast each.
//     The header's crc32c is checked on every rank before pwrite; the
//     whole-file digest after the last piece. The root's reader thread fills
//     broadcast k+1 while k is on the wire; every rank's writer thread
//     pwrites broadcast k's pieces while k+1 arrives (tools/stage/stage_pipeline.h). A rank that
//     does not need a file still takes part in its broadcasts and drops the bytes.
//  5. Verdict (one bootstrap allgather of fixed per-rank reports): every rank
//     learns every rank's result, prints the failed ones, and exits non-zero
//     if any failed; rank 0 prints the summary table.
//
// Files are written to DEST/dir/.name.ibbcast-partial, verified (every chunk's
// CRC32C, then the whole-file digest), fsynced, given the source's mode and
// mtime, and renamed into place: a final name only ever holds a
// complete, verified file. On an error the partial is removed. A run killed
// mid-transfer may leave partials; the next run removes them and, since
// completed files are unchanged, sends only what is missing (resume is
// per file; resuming inside a file is not implemented).
//
// All integers are little-endian; encode/decode are pure functions over
// bytes that validate every field (the fuzz targets of issue 9 use them).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/status.h"

namespace ibbcast::tool::stage {

inline constexpr uint32_t kChunkMagic = 0x43534249;  // "IBSC"
inline constexpr uint8_t kChunkVersion = 1;
/// Of the start block and the manifest (2: entries carry owner and group).
inline constexpr uint16_t kStageVersion = 2;
inline constexpr std::size_t kChunkHeaderSize = 32;
inline constexpr uint8_t kChunkFlagAbort = 1;  ///< the root could not read this file
inline constexpr uint32_t kMaxChunkSize = 64u << 20;
inline constexpr std::size_t kMaxPath = 4096;
inline constexpr uint32_t kMaxEntries = 1u << 24;
inline constexpr std::size_t kDigestSize = 32;
inline constexpr std::size_t kStartSize = 256;
inline constexpr std::size_t kStartMessageSize = 224;

/// One data broadcast's header: which bytes of which file, and their CRC32C.
struct ChunkHeader {
  uint8_t flags = 0;
  uint32_t file_index = 0;
  uint32_t chunk_index = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint32_t crc32c = 0;
};

/// Writes the 32-byte header (magic, version, flags, reserved, fields).
void encode_chunk_header(const ChunkHeader& h, std::span<std::byte, kChunkHeaderSize> out);
/// Decodes and validates: magic, version, only known flags, zero reserved
/// bytes, length <= kMaxChunkSize, offset + length without overflow. kCorrupt
/// names the bad field.
Result<ChunkHeader> decode_chunk_header(std::span<const std::byte> in);

enum class DigestKind : uint16_t { kCrc32c = 1, kSha256 = 2 };
enum class EntryKind : uint8_t { kFile = 1, kDir = 2, kSymlink = 3 };
using Digest = std::array<std::byte, kDigestSize>;

struct Entry {
  EntryKind kind = EntryKind::kFile;
  uint32_t mode = 0;          ///< permission bits (07777)
  uint32_t uid = 0, gid = 0;  ///< the source's owner and group (kept when staging as root)
  uint64_t size = 0;          ///< 0 unless a file
  int64_t mtime_ns = 0;
  Digest digest{};
  std::string path;    ///< relative to DEST
  std::string target;  ///< symlinks only
};

struct Manifest {
  DigestKind digest_kind = DigestKind::kCrc32c;
  std::vector<Entry> entries;
};

std::vector<std::byte> encode_manifest(const Manifest& m);
/// Validates every entry (kind, mode, path shape, sizes of non-files, lengths)
/// and the whole: no path twice, none below a symlink entry, file sizes that
/// sum to at most INT64_MAX (an off_t).
Result<Manifest> decode_manifest(std::span<const std::byte> in);
/// True for a relative path of non-empty components, none "." or "..".
bool safe_relative_path(const std::string& p);

/// The first broadcast: the run's parameters, or the root's error.
struct Start {
  bool force = false;
  bool preserve = false;
  bool pack = true;       ///< small files share broadcasts (wire: flag 4 = not packed)
  bool checksum = false;  ///< unchanged by content, not size and mtime (wire: flag 8)
  bool dry_run = false;   ///< stop after the agreement, nothing written (wire: flag 16)
  uint32_t chunk_size = 0;
  uint64_t manifest_len = 0;
  uint32_t entries = 0;     ///< manifest entries (sizes the agreement's bitmap)
  uint32_t error_code = 0;  ///< an Errc; 0 = ok
  std::string message;      ///< the root's error, at most kStartMessageSize bytes
};
void encode_start(const Start& s, std::span<std::byte, kStartSize> out);
Result<Start> decode_start(std::span<const std::byte> in);

/// The number of data broadcasts of a file of `size` bytes (>= 1).
inline uint64_t chunk_count(uint64_t size, uint32_t chunk) {
  return size == 0 ? 1 : (size + chunk - 1) / chunk;
}

}  // namespace ibbcast::tool::stage
