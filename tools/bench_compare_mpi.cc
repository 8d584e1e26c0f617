// `ibbcast bench --compare mpi`: under mpirun, each rank becomes the MPI
// benchmark program (bench/mpi_bcast_bench.cc) with the adapter preloaded,
// which times MPI_Bcast through ibbcast against the MPI's own PMPI_Bcast in
// the same run. The tool itself links no MPI (one binary serves both MPIs and
// none), so it execs the program built for the MPI that launched it; the
// launcher's environment (PMIx / PMI) goes along unchanged.
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/runtime/env.h"
#include "tools/bench_compare_mpi.h"

namespace ibbcast::tool {
namespace {

// Which MPI's launcher started this process.
std::string launcher_mpi() {
  if (process_env("OMPI_COMM_WORLD_RANK")) return "openmpi";
  if (process_env("PMI_RANK") || process_env("MPI_LOCALRANKID")) return "mpich";
  return "";
}

bool usable(const std::string& path) {
  return access(path.c_str(), R_OK) == 0;
}

// The sanitizer runtimes this process runs with (a sanitized build): they
// must come first in the uninstrumented MPI program too, before the adapter
// that needs them (as tests/support/mpi_launch.sh does for the tests).
std::string sanitizer_runtimes() {
  std::string out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (name.find("libasan.so") != std::string::npos ||
            name.find("libubsan.so") != std::string::npos) {
          auto* list = static_cast<std::string*>(data);
          *list += (list->empty() ? "" : ":") + name;
        }
        return 0;
      },
      &out);
  return out;
}

}  // namespace

Status exec_mpi_compare(const std::string& sizes, const std::string& iterations,
                        const std::string& root) {
  const std::string impl = launcher_mpi();
  if (impl.empty()) {
    return make_error(Errc::kInvalidArgument,
                      "--compare mpi runs under mpirun (Open MPI) or mpiexec (MPICH): no MPI "
                      "launcher's rank in the environment");
  }
  // The build tree first (where the tests run it), then the installation.
  const std::string program_name = "mpi_bcast_bench_" + impl,
                    lib_name = "libibbcast_mpi_" + impl + ".so";
  std::string program, lib;
  for (const auto& [p, l] :
       {std::pair<std::string, std::string>{IBBCAST_BUILD_ROOT "/bench/" + program_name,
                                            IBBCAST_BUILD_ROOT "/mpi-adapter/" + lib_name},
        {IBBCAST_LIBEXECDIR "/" + program_name, IBBCAST_LIBDIR "/" + lib_name}}) {
    if (usable(p) && usable(l)) {
      program = p, lib = l;
      break;
    }
  }
  if (program.empty()) {
    return make_error(Errc::kUnsupported, "--compare mpi needs " + program_name + " and " +
                                              lib_name + " (built when " + impl +
                                              "'s development files are installed)");
  }
  std::string preload = lib;
  if (const std::string rt = sanitizer_runtimes(); !rt.empty()) {
    preload = rt + ":" + preload;
    // The MPI's own allocations are not ours to report (a later option wins).
    const auto asan = process_env("ASAN_OPTIONS");
    setenv("ASAN_OPTIONS", ((asan ? *asan + ":" : "") + "detect_leaks=0").c_str(), 1);
  }
  if (auto old = process_env("LD_PRELOAD"); old && !old->empty()) preload += ":" + *old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  std::vector<std::string> args = {program};
  for (std::size_t start = 0; start <= sizes.size();) {
    std::size_t comma = sizes.find(',', start);
    if (comma == std::string::npos) comma = sizes.size();
    if (comma > start) args.push_back(sizes.substr(start, comma - start));
    start = comma + 1;
  }
  args.insert(args.end(), {"-i", iterations, "-r", root});
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  return make_error(Errc::kInternal, "exec " + program + " failed");
}

}  // namespace ibbcast::tool
