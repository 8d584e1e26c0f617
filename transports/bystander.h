#pragma once
// The reliable channel of a rank outside P2pOptions::members: it took part in
// opening the channel (a collective) and has no peers on it.

#include <memory>
#include <string>

#include "core/runtime/transport.h"

namespace ibbcast {

class BystanderChannel final : public P2pChannel {
 public:
  explicit BystanderChannel(std::string backend) : backend_(std::move(backend)) {}
  Result<bool> send(uint32_t peer, const Gather& /*frame*/, uint64_t /*token*/) override {
    return make_error(Errc::kInvalidArgument, backend_ +
                                                  ": this rank is not a member of its channel; "
                                                  "no sends to rank " +
                                                  std::to_string(peer));
  }
  std::size_t poll(std::span<P2pEvent> /*out*/) override { return 0; }
  void release(const RecvView& /*view*/) override {}
  void hand_off() override {}
  void depart(bool /*clean*/, Nanos /*linger*/) override {}

 private:
  std::string backend_;
};

}  // namespace ibbcast
