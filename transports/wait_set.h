#pragma once
// One epoll set per transport covering its multicast channels' descriptors
// and its reliable channels' (Transport::event_fd): what a group sleeps on
// when its channels lack descriptors of their own (a group with them sleeps
// on those, so another group's unread traffic cannot wake it). Shared by the
// udp and verbs backends; channels hold it by shared_ptr since they may outlive nothing
// but must unregister in any destruction order. Arming a reliable channel is
// its owner's business (P2pChannel::arm), not the set's: several groups may
// share one transport, and arming UCX's channel for another group would tell
// its hand-off helper that its owner was back.

#include <memory>

#include "core/runtime/transport.h"

namespace ibbcast {

class WaitSet {
 public:
  WaitSet();
  ~WaitSet();
  WaitSet(const WaitSet&) = delete;
  WaitSet& operator=(const WaitSet&) = delete;

  int fd() const { return epfd_; }
  void add(int fd);
  void remove(int fd);

 private:
  int epfd_ = -1;
};

/// Wraps `inner` so that its event fd is in `set` for as long as it lives.
std::unique_ptr<P2pChannel> watch_p2p(std::unique_ptr<P2pChannel> inner,
                                      std::shared_ptr<WaitSet> set);

}  // namespace ibbcast
