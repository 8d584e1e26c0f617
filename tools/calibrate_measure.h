#pragma once
// `ibbcast bench --calibrate`: measures, between ranks 0 and 1 of the fabric (and 0-2), every
// parameter of the simulator's parameter file (core/model/machine_params.h) and, with
// --params-out FILE, writes it on rank 0:
//  - the reliable channel's LogGP (tools/loggp_measure.h);
//  - the multicast path: one datagram's one-way time, a burst's gap per datagram and its
//    send and receive cost per datagram, at several sizes, over the transport's own
//    multicast channel (answered by a pong on a UCX channel, half its round trip taken off);
//  - the fixed cost of a broadcast: a 1-byte linear broadcast timed at rank 1 by the per-node
//    method, less a hop; with three ranks or more, its share paid at a rank's wake-up
//    (engine.bcast_wake_share): the one with which the simulator reproduces a 1-byte chain
//    of three timed at rank 2; and its share that burns a core (engine.bcast_cpu_share):
//    rank 1's CPU time in its broadcast calls, less the receive the simulator charges;
//    with more than three ranks, the fixed cost refitted to every rank: the value with which
//    the simulator reproduces a 1-byte linear broadcast of all ranks timed at the last
//    (core/model/machine_fit.h);
//  - CPU per byte at each end (getrusage over large linear broadcasts);
//  - the engine's run size (engine config), to model runs of fragments;
//  - the cores of rank 0's host.
// The link rate is not measured: --link-mbit gives it (a tbf-shaped fabric's rate is known).
// The engine's work per fragment and per byte come from engine_bench (scripts/validate_sim.sh
// puts them in with --fragment-ns and --byte-ns).

#include <memory>
#include <string>

#include "core/runtime/transport.h"
#include "tools/cli.h"

namespace ibbcast::tool {

/// The jobs a calibration runs in, made from a launcher's job of two or more ranks: ranks 0
/// and 1 as a job of their own (the pair; the machine's parameters, timed alone as a 2-rank
/// broadcast is: inside a larger group rank 1 would wait for the cores the other ranks'
/// wake-ups take), and with three or more ranks ranks 0-2 as another (the trio; a 2-hop
/// chain, which splits the fixed cost between a rank's wake-up and its return). Null on the
/// ranks outside each. With more than three ranks the launcher's whole job refits the fixed
/// cost to a broadcast of every rank (see above).
struct CalibrationJobs {
  std::unique_ptr<Bootstrap> pair, trio;
};

/// Collective over `boot`.
Result<CalibrationJobs> make_calibration_jobs(Bootstrap& boot);

/// Collective over `boot`, the job `jobs` came from: the parameter file's text in *text on
/// rank 0; with `print` the LogGP and multicast tables on stdout as it goes (`bench
/// --calibrate-rounds` runs it between the rounds of a sweep, without). Ranks outside the
/// pair and the trio wait in a barrier, then every rank takes part in the fixed cost's refit.
Status measure_machine(const Args& args, Bootstrap& boot, CalibrationJobs& jobs, std::string* text,
                       bool print);

/// Collective over every rank of `boot`: measures, prints the parameter file on rank 0 and
/// writes it to --params-out.
Status run_calibrate(const Args& args, Bootstrap& boot);

/// Writes a parameter file; kInvalidArgument naming the path when it cannot.
Status write_params(const std::string& path, const std::string& text);

}  // namespace ibbcast::tool
