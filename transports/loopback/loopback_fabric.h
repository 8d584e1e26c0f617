#pragma once
// Shared state of the loopback fabric (internal to transports/).

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "transports/loopback/loopback.h"

namespace ibbcast::loopback {

struct Packet {
  uint32_t from = 0;
  std::vector<std::byte> bytes;
};

struct Message {
  P2pEvent::Kind kind = P2pEvent::Kind::kMessage;
  uint32_t peer = 0;
  std::vector<std::byte> bytes;
  std::string reason;
};

// One joined multicast channel's receive queue (like one socket's buffer).
struct McastQueue {
  uint32_t rank = 0;
  std::deque<Packet> datagrams;
};

struct Mailbox {
  // Reliable channels pair up by the order ranks open them (group creation is
  // collective), so the k-th channel of every rank forms one group's mesh.
  std::vector<std::deque<Message>> messages;
  std::size_t p2p_opened = 0;
  std::vector<McastQueue*> joined;  // this rank's multicast queues
  int efd = -1;                     // eventfd, written on every enqueue
  bool dead = false;
  uint32_t groups = 0;
};

class Fabric {
 public:
  Fabric(uint32_t ranks, const FabricOptions& options);
  ~Fabric();

  const FabricOptions options;
  const uint32_t ranks;
  std::mutex mu;
  std::vector<Mailbox> boxes;
  std::map<std::string, std::set<McastQueue*>> groups;  // address → members

  // Bootstrap state: generation-counted rendezvous.
  std::condition_variable cv;
  uint64_t generation = 0;
  uint32_t arrived = 0;
  uint32_t leaving = 0;
  std::vector<std::byte> gather;

  void wake(uint32_t rank);   // caller holds mu
  void drain(uint32_t rank);  // resets the rank's eventfd before sleeping
};

}  // namespace ibbcast::loopback
