#pragma once
// Which backends this build has and whether each can run here, decided at run
// time (no static-initializer self-registration): the tools list it in
// `ibbcast info` and pick a backend by name.

#include <string>
#include <vector>

namespace ibbcast {

struct BackendInfo {
  std::string name;
  bool built = false;      ///< compiled into this library
  bool available = false;  ///< can run on this machine now
  std::string detail;      ///< why not, or what it found
};

std::vector<BackendInfo> list_backends();

}  // namespace ibbcast
