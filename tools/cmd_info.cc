// `ibbcast info`: what this build has, and every knob with its value and origin.
#include <cstdio>

#include "core/protocol/auth.h"
#include "core/protocol/crc32c.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "transports/registry.h"

namespace ibbcast::tool {

int cmd_info(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("info"));
  if (!args) {
    std::fprintf(stderr, "ibbcast info: %s\n", args.status().to_string().c_str());
    return 2;
  }
  if (option(*args, "config", "") == "1") {
    std::printf("%-8s %-18s %-10s %-8s %s\n", "layer", "name", "value", "origin", "doc");
    for (const auto& r : args->rows()) {
      std::printf("%-8s %-18s %-10s %-8s %s\n", r.layer.c_str(), r.name.c_str(), r.value.c_str(),
                  r.origin.c_str(), r.doc.c_str());
    }
    return 0;
  }
  std::printf("ibbcast backends:\n");
  for (const auto& b : list_backends(args->fabric())) {
    std::printf("  %-9s %-13s %s\n", b.name.c_str(),
                b.available ? "available" : (b.built ? "unavailable" : "not built"),
                b.detail.c_str());
  }
  std::printf("crc32c: %s\n", crc32c_has_hardware() ? "sse4.2" : "portable");
  std::printf("auth: %s\n", auth_available() ? "AES-128-GMAC (OpenSSL), IBBCAST_AUTH=on"
                                             : "not built (needs libssl-dev)");
  return 0;
}

}  // namespace ibbcast::tool
