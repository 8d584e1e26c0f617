#include "core/runtime/host.h"

#include <sys/stat.h>
#include <unistd.h>

namespace ibbcast {

namespace {
thread_local uint64_t thread_key = 0;
}  // namespace

void set_thread_node_key(uint64_t key) {
  thread_key = key;
}

uint64_t node_key() {
  return thread_key != 0 ? thread_key : host_key();
}

uint64_t host_key() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char* c = name; *c != '\0'; ++c)
    h = (h ^ static_cast<uint8_t>(*c)) * 1099511628211ull;
  struct stat st {};
  if (stat("/proc/self/ns/net", &st) == 0) h ^= (uint64_t{st.st_ino} << 1) | 1;
  return h;
}

}  // namespace ibbcast
