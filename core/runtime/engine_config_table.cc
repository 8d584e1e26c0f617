#include "core/runtime/engine_config_table.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/model/loggp_fit.h"
#include "core/protocol/decide.h"
#include "core/runtime/config_fields.h"

namespace ibbcast {
namespace {

using namespace config_detail;

Status parse_algo(EngineConfig& c, std::string_view t) {
  auto a = parse_algorithm(t);
  if (!a) {
    return make_error(Errc::kInvalidArgument,
                      "unknown algorithm '" + std::string(t) +
                          "' (auto, two_stage, linear, chain, fragmented_chain, binary, binomial, "
                          "knomial, split_binary, scatter_allgather, fibo_tree)");
  }
  c.algorithm = *a;
  return Status::ok();
}

Status parse_fragment(EngineConfig& c, std::string_view t) {
  auto v = parse_size(t);
  if (!v) return v.status();
  if (*v != 0 && (*v < kMinFragmentSize || *v > kMaxFragmentSize)) {
    return make_error(Errc::kInvalidArgument, "fragment_size must be 0 (auto) or " +
                                                  std::to_string(kMinFragmentSize) + ".." +
                                                  std::to_string(kMaxFragmentSize));
  }
  c.fragment_size = static_cast<uint32_t>(*v);
  return Status::ok();
}

// A size, or "any" (no limit).
Status parse_multicast_max(EngineConfig& c, std::string_view t) {
  if (t == "any") {
    c.multicast_max_size = kAnySize;
    return Status::ok();
  }
  auto v = parse_size(t);
  if (!v) return make_error(Errc::kInvalidArgument, v.status().message() + " or 'any'");
  c.multicast_max_size = *v;
  return Status::ok();
}

std::string format_multicast_max(const EngineConfig& c) {
  return c.multicast_max_size == kAnySize ? "any" : format_size(c.multicast_max_size);
}

Status parse_radix(EngineConfig& c, std::string_view t) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v < 2 || *v > 64) return make_error(Errc::kInvalidArgument, "knomial_radix must be 2..64");
  c.knomial_radix = static_cast<uint32_t>(*v);
  return Status::ok();
}

Status parse_fibo_s(EngineConfig& c, std::string_view t) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v < 1 || *v > 1000) return make_error(Errc::kInvalidArgument, "fibo_s must be 1..1000");
  c.fibo_s = static_cast<uint32_t>(*v);
  return Status::ok();
}

Status parse_table(EngineConfig& c, std::string_view t) {
  auto table = parse_auto_table(t);
  if (!table) return table.status();
  c.auto_table = std::move(*table);
  return Status::ok();
}

// Inline parameters are one data line of the parameter file's format, so one
// parser (parse_loggp_csv) reads both.
Status parse_loggp(EngineConfig& c, std::string_view t) {
  if (t.empty()) {
    c.loggp.clear();
    c.loggp_params.reset();
    return Status::ok();
  }
  std::string text(t);
  if (t.find(',') == std::string_view::npos) {
    // A parameter file is a few lines: refuse devices and pipes (which could
    // block or never end) and anything large.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(text, ec) ||
        std::filesystem::file_size(text, ec) > 65536) {
      return make_error(Errc::kInvalidArgument, "loggp: cannot read the file " + text +
                                                    " (a regular file of up to 64 KiB)");
    }
    std::ifstream f(text);
    if (!f) return make_error(Errc::kInvalidArgument, "loggp: cannot read the file " + text);
    std::ostringstream all;
    all << f.rdbuf();
    text = all.str();
  } else if (std::count(t.begin(), t.end(), ',') != 3) {
    return make_error(
        Errc::kInvalidArgument,
        "loggp: expected L,o,g,G (us, us, us, us/byte) or a file, not '" + std::string(t) + "'");
  }
  auto m = parse_loggp_csv(text);
  if (!m) return make_error(Errc::kInvalidArgument, "loggp: " + m.status().message());
  c.loggp = std::string(t);
  c.loggp_params = std::array<double, 4>{m->L, m->o, m->g, m->G};
  return Status::ok();
}

Status parse_node_aware(EngineConfig& c, std::string_view t) {
  if (t == "auto") {
    c.node_aware = NodeAware::kAuto;
    return Status::ok();
  }
  auto v = parse_bool(t);
  if (!v) return make_error(Errc::kInvalidArgument, "node_aware: auto, on or off");
  c.node_aware = *v ? NodeAware::kOn : NodeAware::kOff;
  return Status::ok();
}

std::string format_node_aware(const EngineConfig& c) {
  switch (c.node_aware) {
    case NodeAware::kOn:
      return "on";
    case NodeAware::kOff:
      return "off";
    case NodeAware::kAuto:
      break;
  }
  return "auto";
}

const std::array<ConfigField<EngineConfig>, 22> kTable = {{
    {"algorithm", "auto", "broadcast algorithm; auto applies the decision function", parse_algo,
     [](const EngineConfig& c) { return std::string(algorithm_name(c.algorithm)); }},
    bool_field<&EngineConfig::multicast>("multicast", "on",
                                         "use multicast when the transport has it"),
    uint_field<&EngineConfig::crossover_nodes>("crossover_nodes", "4",
                                               "groups smaller than this use the linear broadcast"),
    size_field<&EngineConfig::crossover_size>("crossover_size", "1m",
                                              "messages larger than this use the fragmented chain"),
    {"multicast_max_size", "any",
     "with multicast, messages larger than this (up to crossover_size) use the point-to-point "
     "choice instead of two-stage; any = no limit",
     parse_multicast_max, format_multicast_max},
    size_field<&EngineConfig::scatter_size>(
        "scatter_size", "16k",
        "the point-to-point choice: binomial up to this size, scatter-allgather above"),
    {"auto_table", "",
     "auto per group and message size, RANKS:SIZE=ALGORITHM,...;RANKS:... (`ibbcast sim "
     "--derive-auto` prints one): a group takes the row of the most ranks not above its size, "
     "the first entry not below the message; the thresholds above decide the rest",
     parse_table, [](const EngineConfig& c) { return format_auto_table(c.auto_table); }},
    {"fragment_size", "0", "payload bytes per fragment, 256..65000; 0 = transport maximum",
     parse_fragment, [](const EngineConfig& c) { return format_size(c.fragment_size); }},
    duration_field<&EngineConfig::root_delay>(
        "root_delay", "0us", "root waits this long before multicasting (late receivers)"),
    bool_field<&EngineConfig::checksum>("checksum", "on", "CRC32C on multicast datagrams"),
    bool_field<&EngineConfig::auth>(
        "auth", "off",
        "AES-GMAC tag on every frame, key per group over the bootstrap (replaces the CRC)"),
    bool_field<&EngineConfig::print_statistics>("print_statistics", "off",
                                                "print per-group statistics at teardown"),
    duration_field<&EngineConfig::timeout>(
        "timeout", "0us",
        "a broadcast that gets nothing from a live peer this long fails; 0 = no deadline (a dead "
        "peer fails it anyway)"),
    uint_field<&EngineConfig::early_datagrams>(
        "early_datagrams", "4096", "multicast datagrams kept for broadcasts not yet entered"),
    size_field<&EngineConfig::run_size>(
        "run_size", "256k",
        "consecutive fragments for one peer go as one reliable message of up to this size, "
        "never held back to fill it; 0 = a message per fragment"),
    size_field<&EngineConfig::run_min>(
        "run_min", "32k",
        "where ranks forward fragment by fragment (fragmented chain, split binary, allgather), "
        "the smallest run a message is split into to pipeline the hops; less suits slow links"),
    {"knomial_radix", "4", "radix of the k-nomial tree, 2..64", parse_radix,
     [](const EngineConfig& c) { return std::to_string(c.knomial_radix); }},
    {"fibo_s", "1", "Fibo-tree send cost in model units", parse_fibo_s,
     [](const EngineConfig& c) { return std::to_string(c.fibo_s); }},
    uint_field<&EngineConfig::fibo_r>("fibo_r", "3", "Fibo-tree receive cost in model units"),
    {"loggp", "",
     "measured LogGP (L,o,g,G or a `bench --loggp-out` file): rank 0's set crossover_nodes, "
     "crossover_size, multicast_max_size, scatter_size and fibo_s/r at group creation",
     parse_loggp, [](const EngineConfig& c) { return c.loggp; }},
    {"node_aware", "auto",
     "one rank per node (its leader) joins the multicast group and the ring, and hands the "
     "bytes to the node's other ranks through shared memory; auto: on when the group spans "
     "several nodes and some node has several ranks",
     parse_node_aware, format_node_aware},
    size_field<&EngineConfig::node_buffer>(
        "node_buffer", "4m",
        "bytes of a node's shared ring (node-aware groups); larger broadcasts flow through it"),
}};

}  // namespace

std::span<const ConfigField<EngineConfig>> engine_config_table() {
  return kTable;
}

}  // namespace ibbcast
