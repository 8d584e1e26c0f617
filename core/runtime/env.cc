#include "core/runtime/env.h"

#include <cstdlib>

namespace ibbcast {

std::optional<std::string> process_env(std::string_view name) {
  std::string key(name);
  const char* v = std::getenv(key.c_str());  // the one getenv of the project
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace ibbcast
