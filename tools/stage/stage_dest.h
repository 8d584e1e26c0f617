#pragma once
// A rank's side of `ibbcast stage` on its DEST: preparing it, deciding which
// files it needs, and writing a file so that its final name only ever holds
// the complete, verified bytes (partial name, pwrite, verify, fsync, rename).

#include <string>

#include "core/protocol/status.h"
#include "tools/stage/stage_digest.h"
#include "tools/stage/stage_protocol.h"

namespace ibbcast::tool::stage {

/// The file system DEST is (or would be made) on.
struct DestSpace {
  uint64_t block = 4096;  ///< what a file's size is rounded up to
  uint64_t free = 0;      ///< bytes an unprivileged writer may still use
  /// The folder that exists (DEST or its nearest ancestor): with the boot
  /// id, two ranks with equal values write into one folder.
  uint64_t dev = 0, ino = 0;
  /// A network or parallel file system (NFS, Lustre, GPFS, BeeGFS, CephFS,
  /// ...): ranks on other machines may see the same folder under DEST.
  bool network = false;
};
/// Whether DEST is a writable directory, or could be made in one, and its
/// file system's space; writes nothing (the checks of every rank pass
/// before any rank writes).
Result<DestSpace> check_dest(const std::string& dest);
/// Creates DEST and its parents.
Status make_dest(const std::string& dest);
/// Creates the manifest's directories and symlinks (a symlink is made under a
/// temporary name and renamed, so it too appears whole).
Status make_dirs_and_links(const std::string& dest, const Manifest& m, bool preserve);
/// Whether this rank must receive a file: false when DEST holds a regular
/// file with the same size, mode and mtime (staged files get the source's),
/// or with `checksum` the same size, mode and digest (reads the file).
Result<bool> needs_file(const std::string& dest, const Entry& e, DigestKind kind, bool checksum);
/// DEST/dir/.name.ibbcast-partial
std::string partial_path(const std::string& dest, const std::string& rel);
/// Removes a partial left by an interrupted run (no error if there is none).
void remove_partial(const std::string& dest, const std::string& rel);

/// Writes one file; not thread-safe (the writer thread owns it).
/// From here on SIGINT, SIGTERM and SIGHUP remove the partial being written
/// before the process dies of the signal, so an interrupted run leaves no
/// hidden file behind (only SIGKILL can; the next run clears those).
void remove_partials_on_signals();

class FileWriter {
 public:
  FileWriter(std::string dest, DigestKind kind) : dest_(std::move(dest)), kind_(kind) {}
  ~FileWriter() { discard(); }
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  Status open(const Entry& e);
  /// Chunks come in order: the digest is computed as they are written.
  Status write(uint64_t offset, const void* data, std::size_t n);
  /// Verifies the whole-file digest, sets the source's mode and mtime,
  /// fsyncs, renames.
  Status finish();
  /// Closes and removes the partial, if one is open.
  void discard();
  bool is_open() const { return fd_ >= 0; }

 private:
  void write_behind(uint64_t end);

  std::string dest_;
  DigestKind kind_;
  const Entry* entry_ = nullptr;
  std::string partial_;
  int fd_ = -1;
  uint64_t started_ = 0;  ///< writeback started for [0, started_)
  uint64_t waited_ = 0;   ///< and done for [0, waited_)
  std::unique_ptr<FileDigest> digest_;
};

}  // namespace ibbcast::tool::stage
