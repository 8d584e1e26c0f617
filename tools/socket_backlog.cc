#include "tools/socket_backlog.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace ibbcast::tool {
namespace {

std::string_view next_field(std::string_view& line) {
  const std::size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  const std::size_t end = line.find_first_of(" \t");
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end == std::string_view::npos ? line.size() : end);
  return field;
}

template <typename T>
bool parse(std::string_view s, int base, T* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Inodes of this process's sockets: /proc/self/fd/N -> "socket:[INODE]".
std::unordered_set<uint64_t> own_socket_inodes() {
  std::unordered_set<uint64_t> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int self = ::dirfd(dir);
  char target[64];
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const ssize_t n = ::readlinkat(self, e->d_name, target, sizeof(target) - 1);
    if (n <= 0) continue;
    std::string_view t(target, static_cast<std::size_t>(n));
    constexpr std::string_view kPrefix = "socket:[";
    if (!t.starts_with(kPrefix) || !t.ends_with(']')) continue;
    t = t.substr(kPrefix.size(), t.size() - kPrefix.size() - 1);
    uint64_t inode = 0;
    if (parse(t, 10, &inode)) out.insert(inode);
  }
  ::closedir(dir);
  return out;
}

}  // namespace

uint64_t queued_bytes(std::string_view text, const std::unordered_set<uint64_t>& mine) {
  uint64_t total = 0;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::string_view f[10];
    for (auto& field : f)
      field = next_field(line);
    const std::size_t colon = f[4].find(':');
    uint64_t tx = 0, inode = 0;
    if (colon == std::string_view::npos || !parse(f[4].substr(0, colon), 16, &tx) ||
        !parse(f[9], 10, &inode)) {
      continue;  // the header, or a row this parser does not know
    }
    if (mine.contains(inode)) total += tx;
  }
  return total;
}

uint64_t own_queued_bytes() {
  const auto mine = own_socket_inodes();
  if (mine.empty()) return 0;
  uint64_t total = 0;
  for (const char* path :
       {"/proc/self/net/tcp", "/proc/self/net/tcp6", "/proc/self/net/udp", "/proc/self/net/udp6"}) {
    std::ifstream in(path);
    if (!in) continue;
    std::ostringstream text;
    text << in.rdbuf();
    total += queued_bytes(text.str(), mine);
  }
  return total;
}

bool wait_sockets_drained(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  bool drained_once = false;
  for (;;) {
    const bool drained = own_queued_bytes() == 0;
    if (drained && drained_once) return true;
    drained_once = drained;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace ibbcast::tool
