#pragma once
// ibbcast's public API in one include: <ibbcast/ibbcast.h> with
// `pkg-config --cflags --libs ibbcast`.
//
//   Group          core/group.h: create (collective), bcast / ibcast / wait
//   EngineConfig   core/engine_config.h: the broadcast's knobs; Config<T>
//                  (core/config.h) fills any layer's knobs from IBBCAST_*
//   Transport      transports/factory.h: make_fabric_transport("udp" | "dpdk"
//                  | "verbs", FabricConfigs, bootstrap), with UCX for stage 2
//   Bootstrap      transports/bootstrap_select.h: make_bootstrap (PMIx under
//                  a launcher, or TCP through rank 0)
//   in-process     transports/loopback.h: a fabric of threads, for tests and
//                  a first program (examples/bcast_threads.cc)
//
// Every call returns Status or Result<T> (core/status.h); no exception
// crosses the API.

#include "core/config.h"
#include "core/engine_config.h"
#include "core/group.h"
#include "core/status.h"
#include "core/transport.h"
#include "transports/bootstrap_config.h"
#include "transports/bootstrap_select.h"
#include "transports/factory.h"
#include "transports/loopback.h"
