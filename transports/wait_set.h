#pragma once
// One epoll set per transport covering its multicast channels' descriptors
// and the reliable channel's, so a waiting rank sleeps on a single fd
// (Transport::event_fd) instead of spinning. Shared by the udp and verbs
// backends; channels hold it by shared_ptr since they may outlive nothing
// but must unregister in any destruction order.

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
  /// The reliable channel while it is open (set by watch_p2p), for arming.
  P2pChannel* p2p() const { return p2p_; }
  /// Arms the reliable channel if one is open.
  Status arm_p2p() { return p2p_ != nullptr ? p2p_->arm() : Status::ok(); }

 private:
  friend class WatchedP2p;
  int epfd_ = -1;
  P2pChannel* p2p_ = nullptr;
};

/// Wraps `inner` so that its event fd is in `set` for as long as it lives.
std::unique_ptr<P2pChannel> watch_p2p(std::unique_ptr<P2pChannel> inner,
                                      std::shared_ptr<WaitSet> set);

}  // namespace ibbcast
