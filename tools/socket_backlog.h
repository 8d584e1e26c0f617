#pragma once
// What this process's sockets still hold for the network: the bytes a TCP socket has sent
// or queued without their acknowledgement, and the datagrams a UDP socket has queued (in its
// send buffer or a qdisc in front of a link, a shaped link's included), as Linux shows them
// in /proc/net. `bench` waits until there are none before each cell: the traffic a cell
// leaves behind (a two-stage root's ring copies go on after every receiver had the
// datagrams) would otherwise queue the next algorithm's first messages behind it.

#include <chrono>
#include <cstdint>
#include <string_view>
#include <unordered_set>

namespace ibbcast::tool {

/// The tx_queue column summed over the rows of a /proc/net/{tcp,tcp6,udp,udp6} text whose
/// inode is in `mine` (the header and malformed rows count nothing).
uint64_t queued_bytes(std::string_view proc_net_text, const std::unordered_set<uint64_t>& mine);

/// Bytes still queued in this process's TCP and UDP sockets; 0 where /proc shows none.
uint64_t own_queued_bytes();

/// Waits until own_queued_bytes() reads 0 twice a millisecond apart (a channel's helper
/// thread may still hand its buffered bytes to a socket), or `limit` has passed. Returns
/// whether the sockets drained.
bool wait_sockets_drained(std::chrono::milliseconds limit);

}  // namespace ibbcast::tool
