#pragma once
// The verbs backend's control path: which RDMA device and port, its
// protection domain and limits, and the local IP address that librdmacm
// binds multicast joins to. Every failure says which call failed and what to
// do about it ("rdma_rxe not loaded", "port DOWN", the memlock limit).

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "verbs/verbs_config.h"

namespace ibbcast::verbs {

/// One opened device port, shared by a transport's channels. Holds a bound
/// rdma_cm id for its whole life: librdmacm keeps the device context open
/// while an id uses it.
class Device {
 public:
  static Result<std::shared_ptr<Device>> open(const VerbsConfig& cfg);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return anchor_->verbs; }
  ibv_pd* pd() const { return pd_; }
  uint8_t port() const { return port_; }
  const std::string& name() const { return name_; }
  const std::string& netdev() const { return netdev_; }
  /// Largest UD payload: the port's active MTU (a larger send "succeeds" on
  /// rxe and is silently not sent, so the backend never posts one).
  uint32_t mtu() const { return mtu_; }
  uint32_t max_qp_wr() const { return max_qp_wr_; }
  uint32_t max_cqe() const { return max_cqe_; }
  bool ethernet() const { return ethernet_; }
  /// Our GID index for unicast address handles: verbs_gid_index, else on
  /// RoCE the RoCE v2 entry of the bound IPv4 address (IPv4-mapped), else 0.
  uint8_t gid_index() const { return gid_index_; }
  /// The bound local address (joins bind the same one).
  const sockaddr_storage& local_address() const { return local_; }
  const VerbsConfig& config() const { return cfg_; }

  /// Registers `len` bytes at `addr` for local access. On failure, the error
  /// names the memlock limit when that is the likely cause.
  Result<ibv_mr*> register_local(void* addr, std::size_t len, int access) const;

  /// User memory registered for a broadcast's zero-copy sends; the send path
  /// looks its payloads up here.
  void add_user_region(const std::byte* begin, std::size_t len, uint32_t lkey);
  void remove_user_region(const std::byte* begin);
  /// The lkey of a region holding all of [p, p + n), if any.
  std::optional<uint32_t> user_lkey(const std::byte* p, std::size_t n) const;

  /// Stalled send queues woken by a post (UdQueue::kick_if_stalled), over
  /// every queue of the device: the multicast channels' and the UD channel's.
  void count_send_kick() { send_kicks_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t send_kicks() const { return send_kicks_.load(std::memory_order_relaxed); }

 private:
  explicit Device(const VerbsConfig& cfg) : cfg_(cfg) {}
  Status init();

  VerbsConfig cfg_;
  rdma_event_channel* events_ = nullptr;
  rdma_cm_id* anchor_ = nullptr;
  ibv_pd* pd_ = nullptr;
  uint8_t port_ = 1;
  std::string name_;
  std::string netdev_;
  uint32_t mtu_ = 0;
  uint32_t max_qp_wr_ = 0;
  uint32_t max_cqe_ = 0;
  bool ethernet_ = false;
  uint8_t gid_index_ = 0;
  sockaddr_storage local_{};
  struct UserRegion {
    const std::byte* begin;
    const std::byte* end;
    uint32_t lkey;
  };
  mutable std::mutex regions_mu_;
  std::vector<UserRegion> regions_;  ///< few: one per broadcast in flight
  std::atomic<uint64_t> send_kicks_{0};
};

/// "why no device" for the user: no devices at all, rdma_rxe loaded without a
/// link, or the named device missing (with the names that exist).
std::string explain_missing_device(const std::string& wanted);

/// One line per device port for `ibbcast info`: name, port state, active
/// MTU, link layer, netdev, multicast limits. `any_active` says whether one
/// port can carry the backend.
std::vector<std::string> describe_devices(bool* any_active);

/// The kernel netdev behind `device`'s `port` (from sysfs), or empty.
std::string netdev_of(const std::string& device, uint32_t port);

}  // namespace ibbcast::verbs
