#pragma once
// Where rank 0 of a TCP bootstrap can be reached when nobody told it a
// host:port: it listens on an ephemeral port of every address and publishes
// them (the PMIx wire-up); the others try them in order.

#include <string>

#include "core/protocol/status.h"

namespace ibbcast::tcp {

struct Listener {
  int fd = -1;            ///< listening, non-blocking; the caller owns it
  std::string endpoints;  ///< "a:port,[v6]:port,...": the host's addresses, loopback last
};

/// Listens on port 0 of the wildcard address (IPv6 dual stack, else IPv4)
/// and lists every address of the host's up interfaces with the port.
Result<Listener> listen_anywhere(int backlog);

/// The endpoints to try from a rank: loopback first when it shares the
/// root's host (no route needed, and nothing leaves the machine), dropped
/// otherwise (another host's loopback is this host's).
std::string order_endpoints(const std::string& endpoints, bool same_host);

/// A random job token (128 bits in hex, from the kernel's entropy) for tcp::Options::job,
/// published only to the job's members: a stranger who found the port cannot take a rank.
std::string random_job_token();

}  // namespace ibbcast::tcp
