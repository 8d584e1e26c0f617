#pragma once
// The ibbcast command's subcommands as one table: name, synopsis, options
// and the function that runs it. From it come the dispatch, `-h/--help` of
// every command, `ibbcast help CMD`, the option checks of parse_args, the man
// page (`ibbcast man-page`) and bash completion (`ibbcast completion`).

#include <cstdint>
#include <cstdio>
#include <span>
#include <string_view>

namespace ibbcast::tool {

struct OptionDoc {
  std::string_view name;   ///< without "--"
  std::string_view value;  ///< "" for a flag that takes no value
  std::string_view doc;
};

struct Command {
  std::string_view name;
  std::string_view synopsis;  ///< what follows "ibbcast <name>"
  std::string_view summary;   ///< one line
  std::string_view details;   ///< a paragraph for help and the man page ("" for none)
  std::span<const OptionDoc> options;
  uint32_t min_positional = 0, max_positional = 0;
  /// Whether every engine and fabric knob is accepted as a flag.
  bool takes_knobs = true;
  /// Null when this build lacks what the command needs; then `missing` says what.
  int (*run)(int argc, char** argv) = nullptr;
  std::string_view missing;
};

/// Every subcommand, in the order help lists them.
std::span<const Command> commands();
/// The named subcommand, or null.
const Command* find_command(std::string_view name);

/// `ibbcast --help`: every command, one line each.
void print_overview(std::FILE* out);
/// `ibbcast CMD --help`: synopsis, what it does, its options, and the knobs.
void print_help(const Command& cmd, std::FILE* out);

int cmd_demo(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_stage(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_sim(int argc, char** argv);
int cmd_plot(int argc, char** argv);
int cmd_config_doc(int argc, char** argv);
int cmd_man_page(int argc, char** argv);
int cmd_completion(int argc, char** argv);

}  // namespace ibbcast::tool
