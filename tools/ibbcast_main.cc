// ibbcast: thin mains over the public API.
#include <cstdio>
#include <cstring>
#include <string>

#include "ibbcast_build.h"
#include "tools/commands.h"

namespace {

void usage() {
  std::fputs(
      "usage: ibbcast <command> [options]\n"
      "  demo        local multi-rank broadcast over the loopback fabric: per-rank\n"
      "              completion times, datagram statistics, byte check\n"
      "              --ranks 8 --size 1m --root 0 --iterations 20 --faults drop=5%\n"
      "  run         one rank of a multi-process broadcast (start with mpirun/srun, or\n"
      "              give each IBBCAST_BOOTSTRAP_ROOT=host:port, _RANK and _SIZE):\n"
      "              --transport udp|dpdk|verbs (multicast) + UCX; --size --iterations --root "
      "--faults\n"
      "  bench       per-node (thesis) and max-over-ranks broadcast times as CSV, under\n"
      "              mpirun: --sizes 1,4k,1m --algorithms two_stage,binomial --iterations 20\n"
      "              --transport udp|dpdk|verbs\n"
      "              --stream adds one UCX point-to-point stream (rank 0 -> 1) per size\n"
      "              --max-only skips the per-node method (p-1 times longer)\n"
      "              --loggp: LogGP of the UCX channel (rank 0 -> 1) instead, --loggp-out FILE\n"
      "              --compare mpi: MPI_Bcast through the adapter against the MPI's own\n"
      "  stage       SRC... DEST: files and trees from rank 0 to every rank's DEST,\n"
      "              chunked, pipelined, verified, atomic (under mpirun/srun; docs/stage.md)\n"
      "              --force --preserve --chunk-size 512k --progress auto --no-auth\n"
      "  sim         LogGP simulator and model, up to 1m ranks, CSV (+ --svg FILE plots):\n"
      "              --ranks 8,64,1m --algorithms two_stage,binomial --size 1k --losses 0,0.1\n"
      "              --root-delays 0,20us --skew uniform --skew-scale 50us --loggp L,o,g,G|FILE\n"
      "              --torus 8x8 --partitions 8,16: the torus multicast models instead\n"
      "  plot        CSV... --svg FILE [--size S]: latency vs size, vs ranks and the\n"
      "              per-rank spread from `bench` CSVs (a run or a sweep; - is stdin)\n"
      "  info        backends of this build; --config: every knob, value, origin\n"
      "  config-doc  docs/config.md, generated from the config tables\n"
      "engine knobs work as flags everywhere: --algorithm two_stage --fragment-size 4k ...\n"
      "(IBBCAST_<NAME> environment variables set the same knobs)\n",
      stderr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "demo") return ibbcast::tool::cmd_demo(argc - 2, argv + 2);
  if (cmd == "bench") {
#if IBBCAST_HAVE_UCX
    return ibbcast::tool::cmd_bench(argc - 2, argv + 2);
#else
    std::fputs("ibbcast bench: this build has no UCX (install libucx-dev)\n", stderr);
    return 2;
#endif
  }
  if (cmd == "run") {
#if IBBCAST_HAVE_UCX
    return ibbcast::tool::cmd_run(argc - 2, argv + 2);
#else
    std::fputs("ibbcast run: this build has no UCX (install libucx-dev)\n", stderr);
    return 2;
#endif
  }
  if (cmd == "stage") {
#if IBBCAST_HAVE_UCX
    return ibbcast::tool::cmd_stage(argc - 2, argv + 2);
#else
    std::fputs("ibbcast stage: this build has no UCX (install libucx-dev)\n", stderr);
    return 2;
#endif
  }
  if (cmd == "sim") return ibbcast::tool::cmd_sim(argc - 2, argv + 2);
  if (cmd == "plot") return ibbcast::tool::cmd_plot(argc - 2, argv + 2);
  if (cmd == "info") return ibbcast::tool::cmd_info(argc - 2, argv + 2);
  if (cmd == "config-doc") return ibbcast::tool::cmd_config_doc(argc - 2, argv + 2);
  std::fprintf(stderr, "ibbcast: unknown command '%s'\n", cmd.c_str());
  usage();
  return 2;
}
