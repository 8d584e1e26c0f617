#include "core/runtime/log.h"

#include <cstdio>
#include <string>

namespace ibbcast {
namespace {

void emit(std::string_view level, std::string_view message) {
  // One fwrite per line so lines of concurrent ranks do not interleave.
  std::string line = "ibbcast ";
  line += level;
  line += ": ";
  line += message;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

void log_warning(std::string_view message) {
  emit("warning", message);
}
void log_info(std::string_view message) {
  emit("info", message);
}

}  // namespace ibbcast
