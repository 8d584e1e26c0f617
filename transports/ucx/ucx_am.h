#pragma once
// Inside the UCX channel: the callbacks UCX calls (Channel::Glue) and the
// active-message header that sends write and arrivals read. Shared by
// ucx_channel.cc (endpoints), ucx_send.cc, ucx_recv.cc and ucx_departure.cc;
// unlike ucx_channel.h it needs UCX's headers.
#include <ucp/api/ucp.h>

#include <cstdint>

#include "transports/ucx/ucx_channel.h"

namespace ibbcast::ucx {

/// Our part of the UCX AM header; the frame's header and trailer follow it.
struct AmHeader {
  uint32_t from;
  uint32_t head_len;
  uint32_t tail_len;
  uint32_t reserved;
  uint64_t seq;  ///< per (sender, receiver): restores order after rendezvous
};

struct Channel::Glue {
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void on_send_done(void* request, ucs_status_t status, void* user_data);
  /// A rendezvous receive ended: deliver its message or fail the peer.
  static void finish_recv(RecvOp* op, ucs_status_t status);
  static void on_recv_done(void* request, ucs_status_t status, size_t length, void* user_data);
  /// Every frame's arrival: copied, kept in UCX's buffer, or fetched by rendezvous.
  static ucs_status_t on_am(void* arg, const void* header, size_t header_length, void* data,
                            size_t length, const ucp_am_recv_param_t* param);
};

}  // namespace ibbcast::ucx
