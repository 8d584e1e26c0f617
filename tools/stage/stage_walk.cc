#include "tools/stage/stage_walk.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "tools/stage/stage_digest.h"

namespace ibbcast::tool::stage {
namespace {

Status bad(const std::string& path, const std::string& why) {
  return make_error(Errc::kInvalidArgument, "source " + path + ": " + why);
}

int64_t mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

class Walker {
 public:
  Walker(SourceTree& tree, DigestKind kind, const WalkOptions& options)
      : tree_(tree), kind_(kind), options_(options) {}

  Status add(const std::string& src, const std::string& rel, bool top) {
    struct stat st {};
    if (::lstat(src.c_str(), &st) != 0) return bad(src, std::strerror(errno));
    if (!top && excluded(rel)) return Status::ok();
    Entry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mtime_ns = mtime_ns(st);
    if (S_ISREG(st.st_mode)) {
      e.kind = EntryKind::kFile;
      e.size = static_cast<uint64_t>(st.st_size);
      auto d = digest_file(src, kind_);
      if (!d) return d.status();
      e.digest = *d;
      tree_.total_bytes += e.size;
      push(std::move(e), src);
      return Status::ok();
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
      const ssize_t n = ::readlink(src.c_str(), target.data(), target.size());
      if (n <= 0 || static_cast<std::size_t>(n) >= target.size()) {
        return bad(src, "cannot read the symlink");
      }
      target.resize(static_cast<std::size_t>(n));
      e.kind = EntryKind::kSymlink;
      e.target = target;
      push(std::move(e), "");
      return Status::ok();
    }
    if (!S_ISDIR(st.st_mode)) {
      if (top) {
        return bad(src,
                   "is a socket, FIFO or device; only files, directories and symlinks are staged");
      }
      const char* what = S_ISFIFO(st.st_mode)   ? "a FIFO"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "a device";
      tree_.skipped.push_back(rel + ": " + what +
                              " (only files, directories and symlinks are staged)");
      return Status::ok();
    }
    e.kind = EntryKind::kDir;
    push(std::move(e), "");
    DIR* dir = ::opendir(src.c_str());
    if (dir == nullptr) return bad(src, std::strerror(errno));
    std::vector<std::string> names;
    while (const dirent* d = ::readdir(dir)) {
      const std::string n = d->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(dir);
    // Sorted, so that two runs over one tree send the same manifest.
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      IBBCAST_RETURN_IF_ERROR(add(src + "/" + n, rel + "/" + n, false));
    }
    return Status::ok();
  }

 private:
  bool excluded(const std::string& rel) const {
    const std::size_t slash = rel.rfind('/');
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    for (const std::string& pattern : options_.exclude) {
      if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0 ||
          ::fnmatch(pattern.c_str(), rel.c_str(), FNM_PATHNAME) == 0)
        return true;
    }
    return false;
  }

  void push(Entry e, const std::string& src) {
    tree_.manifest.entries.push_back(std::move(e));
    tree_.source_paths.push_back(src);
  }

  SourceTree& tree_;
  DigestKind kind_;
  const WalkOptions& options_;
};

}  // namespace

Result<SourceTree> walk_sources(const std::vector<std::string>& sources, DigestKind kind,
                                const WalkOptions& options) {
  SourceTree tree;
  tree.manifest.digest_kind = kind;
  Walker w(tree, kind, options);
  std::set<std::string> tops;
  for (std::string src : sources) {
    while (src.size() > 1 && src.back() == '/')
      src.pop_back();
    const std::size_t slash = src.rfind('/');
    const std::string base = slash == std::string::npos ? src : src.substr(slash + 1);
    if (!safe_relative_path(base)) return bad(src, "has no usable last component");
    if (!tops.insert(base).second) return bad(src, "a second source named '" + base + "'");
    IBBCAST_RETURN_IF_ERROR(w.add(src, base, true));
  }
  if (tree.manifest.entries.size() >= kMaxEntries) {
    return make_error(Errc::kInvalidArgument, "too many entries in the sources");
  }
  return tree;
}

}  // namespace ibbcast::tool::stage
