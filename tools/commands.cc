#include "tools/commands.h"

#include <array>
#include <string>

#include "ibbcast_build.h"

namespace ibbcast::tool {
namespace {

constexpr uint32_t kAny = UINT32_MAX;

// The commands that run ranks across processes need the UCX channel; in a
// build without it they are listed and say so.
#if IBBCAST_HAVE_UCX
constexpr auto kRun = cmd_run;
constexpr auto kBench = cmd_bench;
constexpr auto kStage = cmd_stage;
#else
constexpr int (*kRun)(int, char**) = nullptr;
constexpr int (*kBench)(int, char**) = nullptr;
constexpr int (*kStage)(int, char**) = nullptr;
#endif
constexpr std::string_view kNoUcx = "this build has no UCX (install libucx-dev and rebuild)";

constexpr OptionDoc kDemo[] = {
    {"ranks", "N", "ranks, as threads of this process (8)"},
    {"size", "BYTES", "bytes per broadcast (256k)"},
    {"root", "RANK", "the broadcasting rank (0)"},
    {"iterations", "N", "broadcasts (20)"},
    {"faults", "SPEC",
     "fault decorator on every rank (rank=R: on R only), e.g. drop=5%,dup=1% (none)"},
};

constexpr OptionDoc kRunOptions[] = {
    {"transport", "NAME", "multicast backend: udp, dpdk or verbs (udp)"},
    {"size", "BYTES", "bytes per broadcast (256k)"},
    {"iterations", "N", "broadcasts (20)"},
    {"root", "RANK", "the broadcasting rank (0)"},
    {"groups", "N", "groups used in turn (1)"},
    {"group-algorithms", "LIST", "an algorithm per group, comma-separated"},
    {"faults", "SPEC", "fault decorator over the transport, e.g. drop=5%"},
    {"kill-rank", "RANK", "this rank exits during the run; the others must fail, not hang"},
    {"late-rank", "RANK", "this rank enters its broadcasts late; every rank must still pass"},
    {"late", "DURATION", "how late (3s)"},
    {"late-how", "HOW", "sleep, busy or stop (sleep)"},
};

constexpr OptionDoc kBenchOptions[] = {
    {"transport", "NAME", "multicast backend: udp, dpdk or verbs (udp)"},
    {"sizes", "LIST", "message sizes (1,1k,64k,1m,16m)"},
    {"algorithms", "LIST", "algorithms to measure (every one)"},
    {"iterations", "N|LIST",
     "measured broadcasts per cell, or one count per size, e.g. 200,200,50,20,20 (20)"},
    {"warmup", "N", "unmeasured broadcasts per cell (3)"},
    {"root", "RANK", "the broadcasting rank (0)"},
    {"rounds", "N", "passes over the sweep, each cell's iterations split over them (1)"},
    {"calibrate-rounds", "PREFIX", "also --calibrate between rounds, into PREFIX.ROUND"},
    {"calibrate-every", "N", "with --calibrate-rounds: after every N-th round only (1)"},
    {"max-only", "", "only the max-over-ranks method (the per-node method takes p-1 times longer)"},
    {"per-node-clock", "HOW",
     "per-node method: one (the target's completion on the clock every rank reads), "
     "round-trip (until its pong, half a round trip off) or auto: one where the clock is "
     "shared (auto)"},
    {"stream", "", "also one UCX point-to-point stream, rank 0 to 1, per size"},
    {"loggp", "", "measure the UCX channel's LogGP parameters instead"},
    {"loggp-sizes", "LIST", "sizes of the LogGP measurement (1,1k,4k,16k,64k)"},
    {"loggp-n", "N", "messages per LogGP burst (16)"},
    {"loggp-out", "FILE", "write the LogGP parameters for the loggp knob"},
    {"calibrate", "", "measure the simulator's parameter file (LogGP, multicast, engine)"},
    {"params-out", "FILE", "write that parameter file (ibbcast sim --params FILE)"},
    {"link-mbit", "N", "with --calibrate: each link's rate, Mbit/s, if shaped (0)"},
    {"fragment-ns", "NS", "with --calibrate: the engine's ns per fragment (engine_bench)"},
    {"byte-ns", "NS", "with --calibrate: the engine's ns per byte (default: a memcpy here)"},
    {"compare", "mpi", "MPI_Bcast through the adapter against the MPI's own"},
};

constexpr OptionDoc kStageOptions[] = {
    {"force", "", "rewrite files DEST already holds unchanged"},
    {"preserve", "", "give folders the source's modes too (files always get its mode and mtime)"},
    {"checksum", "",
     "tell unchanged files by their digest, not by size and mtime (reads them all)"},
    {"exclude", "GLOBS", "leave out what matches (name or path below DEST), e.g. '*.o,.git'"},
    {"dry-run", "", "check every rank and say what would be sent; write nothing"},
    {"quiet", "", "no progress, summary or warnings: only failures"},
    {"json", "FILE", "rank 0 also writes the summary there as JSON"},
    {"chunk-size", "BYTES", "bytes per broadcast; read, broadcast and write overlap (512k)"},
    {"no-pack", "", "a broadcast per chunk (by default small files share broadcasts)"},
    {"digest", "NAME",
     "whole-file check: crc32c, or sha256 (with OpenSSL; the default with --checksum or "
     "--no-auth)"},
    {"progress", "MODE", "auto, tty, plain or none: the root's progress line on stderr (auto)"},
    {"no-auth", "", "unauthenticated frames (CRC32C only); needed without OpenSSL"},
    {"transport", "NAME", "multicast backend: udp, dpdk or verbs (udp)"},
    {"test-fault", "SPEC", "for tests: fail a chosen rank at a chosen step"},
};

constexpr OptionDoc kSimOptions[] = {
    {"ranks", "LIST", "group sizes (8,64,512,4k,32k,256k)"},
    {"algorithms", "LIST", "algorithms (every one)"},
    {"size", "BYTES", "message size (1k)"},
    {"losses", "LIST", "multicast loss rates, 0..1 (0)"},
    {"root-delays", "LIST", "root delays (0)"},
    {"skew", "KIND", "none, uniform or exponential arrival skew (none)"},
    {"skew-scale", "DURATION", "scale of the skew (0)"},
    {"seed", "N", "random seed (1)"},
    {"loggp", "L,o,g,G|FILE", "LogGP parameters in us and us/byte (5,1.5,2,0.0008)"},
    {"params", "FILE", "a machine's parameter file (bench --calibrate); overrides --loggp"},
    {"early-drop", "", "drop datagrams of broadcasts not yet entered"},
    {"ranks-per-node", "N",
     "node-aware groups: the algorithm among ranks / N node leaders, then each node's segment "
     "(1: flat)"},
    {"csv", "FILE", "write the CSV here instead of stdout"},
    {"svg", "FILE", "also plot the results"},
    {"derive-auto", "",
     "instead, auto's crossovers and auto_table derived by the simulator from --params, and "
     "auto's pick per size (--sizes) under the default, LogGP-calibrated and derived knobs and "
     "the table (its knob on stderr)"},
    {"fit-node-us", "US",
     "instead, engine.bcast_node_us fitted to a measured 1-byte node-aware linear broadcast of "
     "--ranks ranks on one host, its slowest rank US (needs --params)"},
    {"sizes", "LIST", "with --derive-auto: message sizes (1,1k,64k,1m,16m)"},
    {"margin", "FRACTION",
     "with --derive-auto: move a threshold only where the other side wins by more (0.15)"},
    {"table-margin", "FRACTION",
     "with --derive-auto: the auto_table keeps the pick of the size before while within this "
     "fraction of the best (0)"},
    {"torus", "XxY", "the torus multicast models instead, e.g. 8x8"},
    {"partitions", "LIST", "torus partitions (with --torus)"},
};

constexpr OptionDoc kPlotOptions[] = {
    {"svg", "FILE", "the plot to write (required)"},
    {"size", "BYTES", "the message size of the vs-ranks panel"},
};

constexpr OptionDoc kInfoOptions[] = {
    {"config", "", "every knob with its value, origin and meaning"},
};

constexpr OptionDoc kCompletionOptions[] = {
    {"shell", "bash", "the shell (bash)"},
};

const std::array kCommands = {
    Command{"demo", "[options]",
            "broadcasts among ranks that are threads of this process (the loopback fabric)",
            "Every rank checks its bytes after every broadcast; the table gives per-rank "
            "completion times and datagram statistics.",
            kDemo, 0, 0, true, cmd_demo, ""},
    Command{"run", "[options]", "one rank of a broadcast job across processes",
            "Start one process per rank with mpirun or srun (PMIx), or give each "
            "IBBCAST_BOOTSTRAP_ROOT=host:port, IBBCAST_BOOTSTRAP_RANK and IBBCAST_BOOTSTRAP_SIZE. "
            "Multicast over the chosen backend, stage 2 over UCX; every rank checks every byte "
            "and rank 0 prints the per-rank table. Exit status 0 only when every rank passed.",
            kRunOptions, 0, 0, true, kRun, kNoUcx},
    Command{"bench", "[options]", "broadcast times per algorithm and size, as CSV",
            "Per-node (the thesis's method) and max-over-ranks times, under mpirun or srun.",
            kBenchOptions, 0, 0, true, kBench, kNoUcx},
    Command{"stage", "[options] SRC... DEST", "copies files and trees from rank 0 to every rank",
            "Chunked, pipelined, verified and atomic, one process per node under mpirun or "
            "srun. DEST may contain {rank}, replaced by the rank (several ranks on one file "
            "system). See docs/stage.md.",
            kStageOptions, 2, kAny, true, kStage, kNoUcx},
    Command{"sim", "[options]", "the LogGP simulator and models, up to a million ranks, as CSV", "",
            kSimOptions, 0, 0, true, cmd_sim, ""},
    Command{"plot", "CSV... --svg FILE [options]", "an SVG of `bench` CSVs",
            "Latency against size and against ranks, and the per-rank spread, from one run or "
            "a sweep; - reads stdin.",
            kPlotOptions, 1, kAny, false, cmd_plot, ""},
    Command{"info", "[--config]", "the backends of this build and whether each can run here", "",
            kInfoOptions, 0, 0, true, cmd_info, ""},
    Command{"config-doc",
            "",
            "writes docs/config.md from the config tables",
            "",
            {},
            0,
            0,
            false,
            cmd_config_doc,
            ""},
    Command{"man-page",
            "",
            "writes the man page ibbcast(1) from these tables",
            "",
            {},
            0,
            0,
            false,
            cmd_man_page,
            ""},
    Command{"completion", "[--shell bash]", "writes a bash completion script for ibbcast", "",
            kCompletionOptions, 0, 0, false, cmd_completion, ""},
};

}  // namespace

std::span<const Command> commands() {
  return kCommands;
}

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

void print_overview(std::FILE* out) {
  std::fputs("usage: ibbcast <command> [options]   (ibbcast <command> --help for its options)\n",
             out);
  for (const Command& c : kCommands)
    std::fprintf(out, "  %-11s %.*s\n", std::string(c.name).c_str(),
                 static_cast<int>(c.summary.size()), c.summary.data());
  std::fputs(
      "Every knob of the library is also a flag (--algorithm two_stage --fragment-size 4k) and an\n"
      "environment variable (IBBCAST_ALGORITHM=two_stage); ibbcast info --config lists them.\n"
      "ibbcast --version prints the version.\n",
      out);
}

void print_help(const Command& c, std::FILE* out) {
  const std::string name(c.name);
  std::fprintf(out, "usage: ibbcast %s %.*s\n%.*s\n", name.c_str(),
               static_cast<int>(c.synopsis.size()), c.synopsis.data(),
               static_cast<int>(c.summary.size()), c.summary.data());
  if (!c.details.empty())
    std::fprintf(out, "\n%.*s\n", static_cast<int>(c.details.size()), c.details.data());
  if (!c.options.empty()) std::fputs("\noptions:\n", out);
  for (const OptionDoc& o : c.options) {
    std::string flag = "--" + std::string(o.name);
    if (!o.value.empty()) flag += " " + std::string(o.value);
    std::fprintf(out, "  %-26s %.*s\n", flag.c_str(), static_cast<int>(o.doc.size()), o.doc.data());
  }
  if (c.takes_knobs) {
    std::fputs(
        "\nEvery knob is also a flag: --algorithm two_stage --fragment-size 4k --udp-interface "
        "eth0 ...\n(ibbcast info --config lists them; IBBCAST_<NAME> sets the same).\n",
        out);
  }
  if (c.run == nullptr)
    std::fprintf(out, "\nNot available: %.*s\n", static_cast<int>(c.missing.size()),
                 c.missing.data());
}

}  // namespace ibbcast::tool
