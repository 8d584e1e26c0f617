#pragma once
// ibbcast's C++ API in one include: <ibbcast/ibbcast.hpp> with
// `pkg-config --cflags --libs ibbcast`. (C programs: <ibbcast/ibbcast.h>.)
//
//   make_bootstrap()   how the ranks of a job find each other, from the
//                      environment: PMIx under mpirun/srun, else TCP through
//                      rank 0 (IBBCAST_BOOTSTRAP_ROOT, _RANK, _SIZE)
//   make_transport()   "auto" | "udp" | "dpdk" | "verbs", knobs from IBBCAST_*
//   Group              core/runtime/group.h: create (collective), bcast,
//                      ibcast / test / wait, stats
//   EngineConfig       core/protocol/engine_config.h: the broadcast's knobs;
//                      engine_config_from_env() or Config<T> for any layer
//   in-process         transports/loopback/loopback.h: ranks as threads of
//                      one process (examples/bcast_threads.cc)
//
// Every call returns Status or Result<T> (core/protocol/status.h); no
// exception crosses the API.

#include <memory>
#include <string>

#include "core/protocol/engine_config.h"
#include "core/protocol/status.h"
#include "core/runtime/config.h"
#include "core/runtime/engine_config_table.h"
#include "core/runtime/group.h"
#include "core/runtime/transport.h"
#include "transports/bootstrap/bootstrap_config.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"
#include "transports/loopback/loopback.h"

namespace ibbcast {

/// The bootstrap the environment describes (IBBCAST_BOOTSTRAP_* and the
/// launcher's PMIx variables): PMIx when a PMIx launcher started the process,
/// TCP when IBBCAST_BOOTSTRAP_ROOT is set, else kUnsupported naming both.
/// The TCP one connects the whole job before it returns.
Result<std::unique_ptr<Bootstrap>> make_bootstrap();

/// A fabric transport with its reliable channel, opened collectively over
/// `boot` (which must outlive it). `name` "auto" picks the same backend on
/// every rank (verbs where every rank has an active RDMA port, else udp);
/// "udp", "dpdk" or "verbs" is that one or an error saying why not. Knobs
/// come from IBBCAST_* variables; a bad value is an error naming it.
Result<std::unique_ptr<Transport>> make_transport(const std::string& name, Bootstrap& boot);

/// The engine's knobs: defaults, then IBBCAST_* variables.
Result<EngineConfig> engine_config_from_env();

}  // namespace ibbcast
