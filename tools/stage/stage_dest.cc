#include "tools/stage/stage_dest.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ibbcast::tool::stage {
namespace {

Status sys_error(Errc code, const std::string& what, int err) {
  // No space and permission get their own words: they are what users hit.
  const Errc c = err == ENOSPC || err == EDQUOT ? Errc::kNoResource : code;
  return make_error(c, what + ": " + std::strerror(err));
}

Status make_parents(const std::string& path) {
  for (std::size_t pos = 1; pos != std::string::npos && pos < path.size();) {
    pos = path.find('/', pos);
    const std::string prefix = pos == std::string::npos ? path : path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return sys_error(Errc::kInvalidArgument, "cannot create " + prefix, errno);
    }
    if (pos != std::string::npos) ++pos;
  }
  return Status::ok();
}

std::string parent_of(const std::string& p) {
  const std::size_t s = p.rfind('/');
  return s == std::string::npos ? "." : p.substr(0, s);
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// Only root may give files away; anyone else stages them as their own.
bool keep_owner() {
  return ::geteuid() == 0;
}

timespec to_timespec(int64_t ns) {
  return {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

}  // namespace

Result<DestSpace> check_dest(const std::string& dest) {
  // DEST or, when it does not exist yet, the folder it would be made in:
  // checked without writing anything.
  std::filesystem::path up(dest);
  struct stat st {};
  while (::stat(up.c_str(), &st) != 0) {
    if (errno != ENOENT || up == "." || up == up.root_path())
      return sys_error(Errc::kInvalidArgument, "DEST " + dest + ": cannot reach " + up.string(),
                       errno);
    up = up.has_parent_path() && up.parent_path() != up ? up.parent_path()
                                                        : std::filesystem::path(".");
  }
  const std::string at = up.string();
  if (!S_ISDIR(st.st_mode)) {
    return make_error(Errc::kInvalidArgument,
                      at == dest ? "DEST " + dest + " is not a directory"
                                 : "DEST " + dest + ": " + at + " is not a directory");
  }
  if (::access(at.c_str(), W_OK | X_OK) != 0)
    return sys_error(Errc::kInvalidArgument, "DEST " + dest + " is not writable", errno);
  struct statvfs vfs {};
  if (::statvfs(at.c_str(), &vfs) != 0) return sys_error(Errc::kInvalidArgument, at, errno);
  DestSpace s;
  s.block = std::max<uint64_t>(vfs.f_bsize, 1);
  s.free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  struct statfs fs {};
  if (::statfs(at.c_str(), &fs) == 0) {
    constexpr uint32_t kNetwork[] = {
        0x6969,      // NFS
        0x517b,      // SMB
        0xff534d42,  // CIFS
        0xfe534d42,  // SMB2
        0x0bd00bd0,  // Lustre
        0x47504653,  // GPFS
        0x19830326,  // BeeGFS
        0x00c36400,  // CephFS
        0x01021997,  // 9p
        0x5346414f,  // AFS
        0x01161970,  // GFS2
        0x7461636f,  // OCFS2
        0xaad7aaea,  // PanFS
    };
    const auto type = static_cast<uint32_t>(fs.f_type);
    s.network = std::find(std::begin(kNetwork), std::end(kNetwork), type) != std::end(kNetwork);
  }
  return s;
}

Status make_dest(const std::string& dest) {
  return make_parents(dest);
}

Status make_dirs_and_links(const std::string& dest, const Manifest& m, bool preserve) {
  for (const Entry& e : m.entries) {
    const std::string path = dest + "/" + e.path;
    if (e.kind == EntryKind::kDir) {
      IBBCAST_RETURN_IF_ERROR(make_parents(path));
      if (keep_owner() && ::chown(path.c_str(), e.uid, e.gid) != 0)
        return sys_error(Errc::kInvalidArgument, "chown " + path, errno);
      if (preserve && ::chmod(path.c_str(), e.mode | 0700) != 0) {
        return sys_error(Errc::kInvalidArgument, "chmod " + path, errno);
      }
    } else if (e.kind == EntryKind::kSymlink) {
      IBBCAST_RETURN_IF_ERROR(make_parents(parent_of(path)));
      char have[kMaxPath + 1];
      const ssize_t n = ::readlink(path.c_str(), have, kMaxPath);
      if (n >= 0 && std::string(have, static_cast<std::size_t>(n)) == e.target) continue;
      const std::string tmp = partial_path(dest, e.path);
      ::unlink(tmp.c_str());
      if (::symlink(e.target.c_str(), tmp.c_str()) != 0 ||
          (keep_owner() && ::lchown(tmp.c_str(), e.uid, e.gid) != 0) ||
          ::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return sys_error(Errc::kInvalidArgument, "symlink " + path, err);
      }
    }
  }
  return Status::ok();
}

std::string partial_path(const std::string& dest, const std::string& rel) {
  const std::size_t s = rel.rfind('/');
  const std::string dir = s == std::string::npos ? "" : rel.substr(0, s + 1);
  const std::string name = s == std::string::npos ? rel : rel.substr(s + 1);
  return dest + "/" + dir + "." + name + ".ibbcast-partial";
}

void remove_partial(const std::string& dest, const std::string& rel) {
  ::unlink(partial_path(dest, rel).c_str());
}

namespace {

// The partial being written, for the signal handler: all it may do is
// unlink a path already in static storage. One FileWriter writes at a time.
char g_partial[4096];
std::atomic<bool> g_partial_set{false};

void remove_partial_and_die(int sig) {
  if (g_partial_set.load()) ::unlink(g_partial);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void track_partial(const std::string& path) {
  g_partial_set = false;
  if (path.size() >= sizeof g_partial) return;  // not tracked; the next run clears it
  std::memcpy(g_partial, path.c_str(), path.size() + 1);
  g_partial_set = true;
}

}  // namespace

void remove_partials_on_signals() {
  struct sigaction sa {};
  sa.sa_handler = remove_partial_and_die;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::sigaction(sig, &sa, nullptr);
}

Result<bool> needs_file(const std::string& dest, const Entry& e, DigestKind kind, bool checksum) {
  struct stat st {};
  const std::string path = dest + "/" + e.path;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return true;
  if (static_cast<uint64_t>(st.st_size) != e.size) return true;
  if ((st.st_mode & 07777) != e.mode) return true;
  if (keep_owner() && (st.st_uid != e.uid || st.st_gid != e.gid)) return true;
  // A staged file has the source's mtime: unchanged size and time say
  // unchanged, as rsync's quick check, without reading it on every rank.
  if (!checksum) return mtime_ns(st) != e.mtime_ns;
  auto d = digest_file(path, kind);
  if (!d) return true;  // unreadable here: rewrite it (the rename replaces it)
  return *d != e.digest;
}

Status FileWriter::open(const Entry& e) {
  discard();
  entry_ = &e;
  const std::string final_path = dest_ + "/" + e.path;
  IBBCAST_RETURN_IF_ERROR(make_parents(parent_of(final_path)));
  partial_ = partial_path(dest_, e.path);
  fd_ = ::open(partial_.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) return sys_error(Errc::kInvalidArgument, "cannot create " + partial_, errno);
  track_partial(partial_);
  digest_ = std::make_unique<FileDigest>(kind_);
  started_ = waited_ = 0;
  return Status::ok();
}

// The kernel holds written bytes dirty in its page cache up to a threshold (a tenth of memory
// by default) and leaves the file's share to its final fsync: with several ranks on one host
// that was gigabytes flushed after the last byte arrived. Starting each range's writeback as it is
// written, and waiting for it only a window later, flushes while the broadcast runs and leaves
// fsync little; the wait falls in the writer thread, beside the broadcasts (they wait for it
// only when every chunk buffer waits to be written: when the disk is the bottleneck).
void FileWriter::write_behind(uint64_t end) {
  constexpr uint64_t kStep = 8u << 20;     // writeback is started per this many bytes
  constexpr uint64_t kWindow = 32u << 20;  // and waited for this far behind the writes
  if (end < started_ + kStep) return;
  // Advisory: the final fsync reports what this would have.
  (void)::sync_file_range(fd_, static_cast<off_t>(started_), static_cast<off_t>(end - started_),
                          SYNC_FILE_RANGE_WRITE);
  started_ = end;
  if (started_ < waited_ + kWindow + kStep) return;
  const uint64_t upto = started_ - kWindow;
  (void)::sync_file_range(
      fd_, static_cast<off_t>(waited_), static_cast<off_t>(upto - waited_),
      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
  waited_ = upto;
}

Status FileWriter::write(uint64_t offset, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  for (std::size_t done = 0; done < n;) {
    const ssize_t w = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return sys_error(Errc::kInvalidArgument, "write " + partial_, w < 0 ? errno : EIO);
    done += static_cast<std::size_t>(w);
  }
  write_behind(offset + n);
  digest_->update(data, n);
  return Status::ok();
}

Status FileWriter::finish() {
  const Entry& e = *entry_;
  if (digest_->finish() != e.digest) {
    return make_error(Errc::kCorrupt, e.path +
                                          ": whole-file digest differs from the root's (did the "
                                          "source change on the root during the run?)");
  }
  // Owner first: chown clears set-user-ID bits that the mode then restores.
  if (keep_owner() && ::fchown(fd_, e.uid, e.gid) != 0)
    return sys_error(Errc::kInvalidArgument, "chown " + partial_, errno);
  if (::fchmod(fd_, e.mode) != 0)
    return sys_error(Errc::kInvalidArgument, "chmod " + partial_, errno);
  // Always the source's mtime: the next run's quick check (needs_file) reads it.
  const timespec times[2] = {to_timespec(e.mtime_ns), to_timespec(e.mtime_ns)};
  if (::futimens(fd_, times) != 0)
    return sys_error(Errc::kInvalidArgument, "utimes " + partial_, errno);
  if (::fsync(fd_) != 0) return sys_error(Errc::kInvalidArgument, "fsync " + partial_, errno);
  ::close(fd_);
  fd_ = -1;
  const std::string final_path = dest_ + "/" + e.path;
  if (::rename(partial_.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(partial_.c_str());
    g_partial_set = false;
    return sys_error(Errc::kInvalidArgument, "rename to " + final_path, err);
  }
  g_partial_set = false;  // after the rename: a signal before it still removes the partial
  return Status::ok();
}

void FileWriter::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(partial_.c_str());
  g_partial_set = false;
}

}  // namespace ibbcast::tool::stage
