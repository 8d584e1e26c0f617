#include "transports/wait_set.h"

#include <sys/epoll.h>
#include <unistd.h>

namespace ibbcast {

WaitSet::WaitSet() : epfd_(::epoll_create1(EPOLL_CLOEXEC)) {}

WaitSet::~WaitSet() {
  if (epfd_ >= 0) ::close(epfd_);
}

void WaitSet::add(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void WaitSet::remove(int fd) {
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
}

class WatchedP2p final : public P2pChannel {
 public:
  WatchedP2p(std::unique_ptr<P2pChannel> inner, std::shared_ptr<WaitSet> set)
      : inner_(std::move(inner)), set_(std::move(set)) {
    if (inner_->event_fd() >= 0) set_->add(inner_->event_fd());
  }
  ~WatchedP2p() override {
    if (inner_->event_fd() >= 0) set_->remove(inner_->event_fd());
  }
  Result<bool> send(uint32_t peer, const Gather& f, uint64_t token) override {
    return inner_->send(peer, f, token);
  }
  std::size_t poll(std::span<P2pEvent> out) override { return inner_->poll(out); }
  void release(const RecvView& v) override { inner_->release(v); }
  int event_fd() const override { return inner_->event_fd(); }
  uint32_t max_message() const override { return inner_->max_message(); }
  Status arm() override { return inner_->arm(); }
  void hand_off() override { inner_->hand_off(); }
  void abandon(uint64_t token) override { inner_->abandon(token); }
  void depart(bool clean, Nanos linger) override { inner_->depart(clean, linger); }
  Result<MemoryRegion> register_memory(std::span<std::byte> r) override {
    return inner_->register_memory(r);
  }
  std::vector<TransportCounter> counters() const override { return inner_->counters(); }
  void set_placer(Placer placer) override { inner_->set_placer(std::move(placer)); }

 private:
  std::unique_ptr<P2pChannel> inner_;
  std::shared_ptr<WaitSet> set_;
};

std::unique_ptr<P2pChannel> watch_p2p(std::unique_ptr<P2pChannel> inner,
                                      std::shared_ptr<WaitSet> set) {
  return std::make_unique<WatchedP2p>(std::move(inner), std::move(set));
}

}  // namespace ibbcast
