#include "core/runtime/host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace ibbcast {

namespace {

thread_local uint64_t thread_key = 0;

uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (const char c : s)
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

uint64_t namespace_inode(const char* path) {
  struct stat st {};
  return stat(path, &st) == 0 ? uint64_t{st.st_ino} : 0;
}

std::string boot_id() {
  char boot[64] = {};
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "re")) {
    if (std::fgets(boot, sizeof boot, f) == nullptr) boot[0] = '\0';
    std::fclose(f);
  }
  return boot;
}

}  // namespace

void set_thread_node_key(uint64_t key) {
  thread_key = key;
}

uint64_t node_key() {
  if (thread_key != 0) return thread_key;
  // Shared memory is reached through /proc/<pid>: ranks in separate PID
  // namespaces (containers) are separate nodes even on one network stack.
  return host_key() ^ (namespace_inode("/proc/self/ns/pid") * 0x9e3779b97f4a7c15ull);
}

uint64_t host_key() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  uint64_t h = fnv1a(1469598103934665603ull, name);
  // The boot id tells machines apart that share a host name (cloned guests)
  // and, with it, the inode of their initial network namespace.
  h = fnv1a(h, boot_id().c_str());
  if (const uint64_t net = namespace_inode("/proc/self/ns/net"); net != 0) h ^= (net << 1) | 1;
  return h;
}

uint64_t clock_key() {
  // A time namespace offsets CLOCK_MONOTONIC; without the boot id every
  // machine's first namespace would look alike.
  return fnv1a(1469598103934665603ull, boot_id().c_str()) ^
         (namespace_inode("/proc/self/ns/time") * 0x9e3779b97f4a7c15ull);
}

}  // namespace ibbcast
