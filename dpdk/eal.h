#pragma once
// The process's DPDK environment: one EAL and one port per process, shared by
// every group and transport of the process. DPDK's EAL cannot be started
// again once cleaned up, so it lives until exit (an atexit handler stops the
// port, cleans the EAL up and removes its runtime files; SIGINT/SIGTERM do
// the file removal too when the application installed no handler of its own).

#include <cstdint>
#include <string>

#include "core/protocol/status.h"
#include "dpdk/dpdk_config.h"

namespace ibbcast::dpdk {

class Port;

class Eal {
 public:
  /// The EAL and port for `cfg`: started on first use with dpdk_eal=own
  /// (unless the application already started the EAL: then it is adopted and
  /// never cleaned up by us), adopted with dpdk_eal=app. Later calls return
  /// the same objects; a later config naming another vdev or interface is an
  /// error (one port per process). Thread-safe.
  static Result<Port*> acquire_port(const DpdkConfig& cfg);

  /// The EAL arguments `cfg` yields (for `ibbcast info` and error messages).
  static std::string eal_command_line(const DpdkConfig& cfg);
  /// "--lcores=0@(<every CPU this process may use>)": lcore 0 floats over
  /// them, so the EAL does not pin the calling thread (an MPI may have bound
  /// it already).
  static std::string lcores_argument();
};

}  // namespace ibbcast::dpdk
