#include "core/runtime/config.h"

#include <cctype>

namespace ibbcast {

std::string_view config_origin_name(ConfigOrigin o) {
  switch (o) {
    case ConfigOrigin::kDefault:
      return "default";
    case ConfigOrigin::kEnv:
      return "env";
    case ConfigOrigin::kFlag:
      return "flag";
    case ConfigOrigin::kApi:
      return "api";
  }
  return "unknown";
}

std::string env_name(std::string_view field) {
  std::string out = "IBBCAST_";
  for (char c : field)
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

std::string flag_name(std::string_view field) {
  std::string out(field);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

}  // namespace ibbcast
