#include "transports/shm/node_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

namespace ibbcast::shm {

using Nanos = std::chrono::nanoseconds;

// In the segment, before the ring. Lock-free atomics are address-free, so
// they work across the processes that map the segment.
struct NodeSegment::Header {
  static constexpr uint32_t kMagic = 0x5342424e;  // "NBBS"
  uint32_t magic = kMagic;
  uint32_t members = 0;
  uint64_t capacity = 0;
  std::atomic<uint64_t> published{0};      ///< bytes the leader appended so far
  std::atomic<uint32_t> published_seq{0};  ///< futex word: the leader appended or failed
  std::atomic<uint32_t> consumed_seq{0};   ///< futex word: a member copied or joined
  std::atomic<uint32_t> joined{0};
  std::atomic<uint32_t> failed{0};
  char why[256] = {};
  std::atomic<int32_t> member_pid[kMaxMembers] = {};
  std::atomic<uint64_t> consumed[kMaxMembers] = {};
};

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHeaderBytes = kPage;  // Header fits: create() asserts it
// How long one futex wait lasts before the peers' pidfds are looked at again.
constexpr Nanos kSlice = std::chrono::milliseconds(100);

Status sys_error(Errc code, const std::string& what) {
  return make_error(code, what + ": " + std::strerror(errno));
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, Nanos max) {
  const timespec ts{static_cast<time_t>(max.count() / 1000000000),
                    static_cast<long>(max.count() % 1000000000)};
  (void)::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>* word) {
  (void)::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr,
                  nullptr, 0);
}

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// A pidfd turns readable when its process has exited.
bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

void copy_in(std::byte* ring, std::size_t cap, uint64_t at, const std::byte* src, std::size_t n) {
  const std::size_t off = static_cast<std::size_t>(at % cap);
  const std::size_t first = std::min(n, cap - off);
  std::memcpy(ring + off, src, first);
  std::memcpy(ring, src + first, n - first);
}

void copy_out(const std::byte* ring, std::size_t cap, uint64_t at, std::byte* dst, std::size_t n) {
  const std::size_t off = static_cast<std::size_t>(at % cap);
  const std::size_t first = std::min(n, cap - off);
  std::memcpy(dst, ring + off, first);
  std::memcpy(dst + first, ring, n - first);
}

// Counts time without progress, for the optional timeout.
class Deadline {
 public:
  explicit Deadline(Nanos timeout) : timeout_(timeout) {}
  void progressed() { waited_ = Nanos(0); }
  bool expired(Nanos slept) {
    waited_ += slept;
    return timeout_.count() > 0 && waited_ >= timeout_;
  }

 private:
  Nanos timeout_, waited_{0};
};

}  // namespace

NodeSegment::~NodeSegment() {
  if (ring_ != nullptr || header_ != nullptr) ::munmap(header_, mapped_);
  for (int fd : member_pidfds_)
    if (fd >= 0) ::close(fd);
  if (leader_pidfd_ >= 0) ::close(leader_pidfd_);
  if (fd_ >= 0) ::close(fd_);
}

Status NodeSegment::map(int fd, std::size_t capacity) {
  fd_ = fd;
  capacity_ = capacity;
  mapped_ = kHeaderBytes + capacity;
  void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return sys_error(Errc::kNoResource, "node segment: mmap");
  header_ = static_cast<Header*>(p);
  ring_ = static_cast<std::byte*>(p) + kHeaderBytes;
  return Status::ok();
}

Result<std::unique_ptr<NodeSegment>> NodeSegment::create(uint32_t members, std::size_t capacity) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  if (members > kMaxMembers)
    return make_error(Errc::kInvalidArgument, "node segment: more than 255 ranks on one node");
  capacity = std::max<std::size_t>((capacity + kPage - 1) / kPage * kPage, kPage);
  const int fd = static_cast<int>(::syscall(SYS_memfd_create, "ibbcast-node", MFD_CLOEXEC));
  if (fd < 0) return sys_error(Errc::kNoResource, "node segment: memfd_create");
  std::unique_ptr<NodeSegment> s(new NodeSegment());
  if (::ftruncate(fd, static_cast<off_t>(kHeaderBytes + capacity)) != 0) {
    ::close(fd);
    return sys_error(Errc::kNoResource, "node segment: ftruncate");
  }
  IBBCAST_RETURN_IF_ERROR(s->map(fd, capacity));
  Header* h = new (s->header_) Header();
  h->members = members;
  h->capacity = capacity;
  s->leader_ = true;
  s->member_pidfds_.assign(members, -1);
  return s;
}

Result<std::unique_ptr<NodeSegment>> NodeSegment::open(const SegmentAddress& leader,
                                                       uint32_t index) {
  const std::string path =
      "/proc/" + std::to_string(leader.pid) + "/fd/" + std::to_string(leader.fd);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return sys_error(Errc::kPeerFailed, "node segment: open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) <= kHeaderBytes) {
    ::close(fd);
    return make_error(Errc::kCorrupt, "node segment: " + path + " is not a segment");
  }
  std::unique_ptr<NodeSegment> s(new NodeSegment());
  IBBCAST_RETURN_IF_ERROR(s->map(fd, static_cast<std::size_t>(st.st_size) - kHeaderBytes));
  Header* h = s->header_;
  if (h->magic != Header::kMagic || h->capacity != s->capacity_ || index >= h->members)
    return make_error(Errc::kCorrupt, "node segment: " + path + " is not a segment for member " +
                                          std::to_string(index));
  s->index_ = index;
  s->leader_pidfd_ = pidfd_open(leader.pid);
  if (s->leader_pidfd_ < 0) return sys_error(Errc::kPeerFailed, "node segment: pidfd_open leader");
  h->member_pid[index].store(static_cast<int32_t>(::getpid()), std::memory_order_release);
  h->joined.fetch_add(1, std::memory_order_acq_rel);
  h->consumed_seq.fetch_add(1, std::memory_order_release);
  futex_wake(&h->consumed_seq);
  return s;
}

SegmentAddress NodeSegment::address() const {
  return {static_cast<int32_t>(::getpid()), fd_};
}

Status NodeSegment::check_members_alive(uint64_t published) const {
  for (uint32_t i = 0; i < header_->members; ++i) {
    const int32_t pid = header_->member_pid[i].load(std::memory_order_acquire);
    if (pid == 0) continue;
    if (member_pidfds_[i] < 0) member_pidfds_[i] = pidfd_open(pid);
    // A member that left having copied everything is done, not dead.
    if (member_pidfds_[i] < 0 || exited(member_pidfds_[i])) {
      if (header_->consumed[i].load(std::memory_order_acquire) >= published) continue;
      return make_error(Errc::kPeerFailed, "node segment: member " + std::to_string(i) + " (pid " +
                                               std::to_string(pid) + ") died");
    }
  }
  return Status::ok();
}

Status NodeSegment::check_leader_alive() const {
  if (exited(leader_pidfd_))
    return make_error(Errc::kPeerFailed, "node segment: the node's leader died");
  return Status::ok();
}

Status NodeSegment::wait_members(Nanos timeout) {
  Deadline deadline(timeout);
  for (;;) {
    const uint32_t seq = header_->consumed_seq.load(std::memory_order_acquire);
    if (header_->joined.load(std::memory_order_acquire) >= header_->members) return Status::ok();
    futex_wait(&header_->consumed_seq, seq, kSlice);
    if (deadline.expired(kSlice))
      return make_error(Errc::kTimedOut, "node segment: not every member opened the segment");
  }
}

Status NodeSegment::publish(std::span<const std::byte> bytes, Nanos timeout) {
  Deadline deadline(timeout);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const uint32_t seq = header_->consumed_seq.load(std::memory_order_acquire);
    const uint64_t pub = header_->published.load(std::memory_order_relaxed);
    uint64_t slowest = pub;
    for (uint32_t i = 0; i < header_->members; ++i)
      slowest = std::min(slowest, header_->consumed[i].load(std::memory_order_acquire));
    const std::size_t room = capacity_ - static_cast<std::size_t>(pub - slowest);
    if (room == 0) {
      IBBCAST_RETURN_IF_ERROR(check_members_alive(pub));
      futex_wait(&header_->consumed_seq, seq, kSlice);
      if (deadline.expired(kSlice))
        return make_error(Errc::kTimedOut, "node segment: a member copies nothing");
      continue;
    }
    const std::size_t n = std::min(room, bytes.size() - done);
    copy_in(ring_, capacity_, pub, bytes.data() + done, n);
    header_->published.store(pub + n, std::memory_order_release);
    header_->published_seq.fetch_add(1, std::memory_order_release);
    futex_wake(&header_->published_seq);
    done += n;
    deadline.progressed();
  }
  return Status::ok();
}

Status NodeSegment::wait_drained(Nanos timeout) {
  Deadline deadline(timeout);
  for (;;) {
    const uint32_t seq = header_->consumed_seq.load(std::memory_order_acquire);
    const uint64_t pub = header_->published.load(std::memory_order_relaxed);
    bool all = true;
    for (uint32_t i = 0; i < header_->members && all; ++i)
      all = header_->consumed[i].load(std::memory_order_acquire) == pub;
    if (all) return Status::ok();
    IBBCAST_RETURN_IF_ERROR(check_members_alive(pub));
    futex_wait(&header_->consumed_seq, seq, kSlice);
    if (deadline.expired(kSlice))
      return make_error(Errc::kTimedOut, "node segment: members did not copy everything");
  }
}

void NodeSegment::fail(const std::string& why) {
  std::snprintf(header_->why, sizeof header_->why, "%s", why.c_str());
  header_->failed.store(1, std::memory_order_release);
  header_->published_seq.fetch_add(1, std::memory_order_release);
  futex_wake(&header_->published_seq);
}

Status NodeSegment::receive(std::span<std::byte> out, Nanos timeout) {
  Deadline deadline(timeout);
  std::atomic<uint64_t>& mine = header_->consumed[index_];
  uint64_t at = mine.load(std::memory_order_relaxed);
  std::size_t done = 0;
  while (done < out.size()) {
    const uint32_t seq = header_->published_seq.load(std::memory_order_acquire);
    if (header_->failed.load(std::memory_order_acquire) != 0) {
      char why[sizeof header_->why];
      std::memcpy(why, header_->why, sizeof why);
      why[sizeof why - 1] = '\0';
      return make_error(Errc::kPeerFailed, std::string("node's leader: ") + why);
    }
    const uint64_t pub = header_->published.load(std::memory_order_acquire);
    if (pub == at) {
      IBBCAST_RETURN_IF_ERROR(check_leader_alive());
      futex_wait(&header_->published_seq, seq, kSlice);
      if (deadline.expired(kSlice))
        return make_error(Errc::kTimedOut, "node segment: the leader publishes nothing");
      continue;
    }
    const std::size_t n = std::min(static_cast<std::size_t>(pub - at), out.size() - done);
    copy_out(ring_, capacity_, at, out.data() + done, n);
    at += n;
    mine.store(at, std::memory_order_release);
    header_->consumed_seq.fetch_add(1, std::memory_order_release);
    futex_wake(&header_->consumed_seq);
    done += n;
    deadline.progressed();
  }
  return Status::ok();
}

}  // namespace ibbcast::shm
