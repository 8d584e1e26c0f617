#pragma once
// The UCX reliable channel as a backend's stage 2: what the udp, dpdk and
// verbs rows pass their transport. In a build without UCX it is a factory
// that fails saying so.

#include "core/runtime/transport.h"
#include "transports/ucx/ucx_config.h"

namespace ibbcast::ucx {

/// Creates the channel collectively over `boot` (which must outlive it) when
/// the transport asks for it; payloads are taken where UCX received them
/// (RecvView::split), as groups do.
P2pFactory channel_factory(Bootstrap& boot, const UcxConfig& config);

}  // namespace ibbcast::ucx
