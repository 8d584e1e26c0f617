// ibbcast: thin mains over the public API, dispatched from the command table
// (tools/commands.h), which also gives every command its --help.
#include <cstdio>
#include <string_view>

#include "include/ibbcast/ibbcast.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  using ibbcast::tool::Command;
  using ibbcast::tool::find_command;
  if (argc < 2) {
    ibbcast::tool::print_overview(stderr);
    return 2;
  }
  const std::string_view first = argv[1];
  if (first == "-h" || first == "--help") {
    ibbcast::tool::print_overview(stdout);
    return 0;
  }
  if (first == "--version" || first == "version") {
    std::printf("ibbcast %s\n", ibbcast_version());
    return 0;
  }
  if (first == "help") {
    if (argc == 2) {
      ibbcast::tool::print_overview(stdout);
      return 0;
    }
    const Command* c = find_command(argv[2]);
    if (c == nullptr || argc > 3) {
      std::fprintf(stderr, "ibbcast help: %s '%s' (ibbcast --help lists the commands)\n",
                   c == nullptr ? "no command" : "unexpected argument", argv[c == nullptr ? 2 : 3]);
      return 2;
    }
    ibbcast::tool::print_help(*c, stdout);
    return 0;
  }
  const Command* c = find_command(first);
  if (c == nullptr) {
    std::fprintf(stderr, "ibbcast: unknown command '%s' (ibbcast --help lists the commands)\n",
                 argv[1]);
    return 2;
  }
  // Help wins wherever it stands, before anything runs.
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      ibbcast::tool::print_help(*c, stdout);
      return 0;
    }
  }
  if (c->run == nullptr) {
    std::fprintf(stderr, "ibbcast %s: %.*s\n", argv[1], static_cast<int>(c->missing.size()),
                 c->missing.data());
    return 2;
  }
  return c->run(argc - 2, argv + 2);
}
