#include "core/runtime/node_segment.h"

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

namespace ibbcast {

using Nanos = std::chrono::nanoseconds;

// In the segment, before the ring. Lock-free atomics are address-free, so
// they work across the processes that map the segment.
struct NodeSegment::Header {
  static constexpr uint32_t kMagic = 0x5342424f;  // "OBBS": the layout with sleeper counts
  uint32_t magic = kMagic;
  uint32_t ranks = 0;
  uint64_t capacity = 0;
  std::atomic<uint64_t> written{0};      ///< the stream's end: bytes appended so far
  std::atomic<uint32_t> written_seq{0};  ///< futex word: appended, or failed
  std::atomic<uint32_t> copied_seq{0};   ///< futex word: a rank copied, joined or failed
  // Ranks asleep on each word: a rank that appends or copies makes the wake
  // syscall only when someone sleeps (a writer waits on copied_seq only when
  // the ring is full, so nearly every copy's wake was for nobody).
  std::atomic<uint32_t> written_sleepers{0};
  std::atomic<uint32_t> copied_sleepers{0};
  std::atomic<uint32_t> joined{0};
  std::atomic<uint32_t> failed{0};
  char why[256] = {};
  std::atomic<int32_t> pid[kMaxRanks] = {};
  std::atomic<uint32_t> label[kMaxRanks] = {};
  /// How far each rank has the stream (copied out, or written itself).
  std::atomic<uint64_t> copied[kMaxRanks] = {};
};

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::size_t kHeaderBytes = 3 * kPage;  // Header fits: create() asserts it

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

// Bumps `word` and wakes its sleepers, if any. Sequentially consistent on
// both sides: a sleeper counts itself before the kernel compares the word, a
// waker bumps the word before it reads the count, so one sees the other.
void bump(std::atomic<uint32_t>* word, const std::atomic<uint32_t>& sleepers) {
  word->fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) != 0) futex_wake(word);
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
  if (header_ != nullptr) ::munmap(header_, mapped_);
  for (int fd : pidfds_)
    if (fd >= 0) ::close(fd);
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

Result<std::unique_ptr<NodeSegment>> NodeSegment::create(uint32_t ranks, std::size_t capacity,
                                                         uint32_t label) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  if (ranks == 0 || ranks > kMaxRanks) {
    return make_error(Errc::kInvalidArgument, "node segment: 1.." + std::to_string(kMaxRanks) +
                                                  " ranks on one node, not " +
                                                  std::to_string(ranks));
  }
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
  h->ranks = ranks;
  h->capacity = capacity;
  h->pid[0].store(static_cast<int32_t>(::getpid()), std::memory_order_release);
  h->label[0].store(label, std::memory_order_release);
  h->joined.store(1, std::memory_order_release);
  s->pidfds_.assign(ranks, -1);
  return s;
}

Result<std::unique_ptr<NodeSegment>> NodeSegment::open(const SegmentAddress& leader, uint32_t slot,
                                                       uint32_t label) {
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
  if (h->magic != Header::kMagic || h->capacity != s->capacity_ || slot == 0 || slot >= h->ranks)
    return make_error(Errc::kCorrupt, "node segment: " + path + " is not a segment for slot " +
                                          std::to_string(slot));
  s->slot_ = slot;
  s->pidfds_.assign(h->ranks, -1);
  h->label[slot].store(label, std::memory_order_release);
  h->pid[slot].store(static_cast<int32_t>(::getpid()), std::memory_order_release);
  h->joined.fetch_add(1, std::memory_order_acq_rel);
  bump(&h->copied_seq, h->copied_sleepers);
  return s;
}

SegmentAddress NodeSegment::address() const {
  return {static_cast<int32_t>(::getpid()), fd_};
}

uint32_t NodeSegment::ranks() const {
  return header_->ranks;
}

Status NodeSegment::failure() const {
  if (header_->failed.load(std::memory_order_acquire) == 0) return Status::ok();
  char why[sizeof header_->why];
  std::memcpy(why, header_->why, sizeof why);
  why[sizeof why - 1] = '\0';
  return make_error(Errc::kPeerFailed, why);
}

Status NodeSegment::check_alive(uint64_t need) {
  IBBCAST_RETURN_IF_ERROR(failure());
  for (uint32_t i = 0; i < header_->ranks; ++i) {
    if (i == slot_) continue;
    const int32_t pid = header_->pid[i].load(std::memory_order_acquire);
    if (pid == 0) continue;
    if (pidfds_[i] < 0) pidfds_[i] = pidfd_open(pid);
    // A rank that left having the stream up to what is needed is done, not dead.
    if (pidfds_[i] >= 0 && !exited(pidfds_[i])) continue;
    if (header_->copied[i].load(std::memory_order_acquire) >= need) continue;
    fail("rank " + std::to_string(header_->label[i].load(std::memory_order_acquire)) + " (pid " +
         std::to_string(pid) + ", on this node) died");
    return failure();
  }
  return Status::ok();
}

void NodeSegment::set_idle(std::function<void()> idle, Nanos slice) {
  idle_ = std::move(idle);
  slice_ = slice;
}

void NodeSegment::pause(std::atomic<uint32_t>* word, uint32_t seen) {
  std::atomic<uint32_t>& sleepers =
      word == &header_->written_seq ? header_->written_sleepers : header_->copied_sleepers;
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  futex_wait(word, seen, slice_);
  sleepers.fetch_sub(1, std::memory_order_seq_cst);
  if (idle_) idle_();
}

void NodeSegment::copied(uint64_t upto) {
  header_->copied[slot_].store(upto, std::memory_order_release);
  bump(&header_->copied_seq, header_->copied_sleepers);
}

Status NodeSegment::wait_joined(Nanos timeout) {
  Deadline deadline(timeout);
  for (;;) {
    const uint32_t seq = header_->copied_seq.load(std::memory_order_acquire);
    if (header_->joined.load(std::memory_order_acquire) >= header_->ranks) return Status::ok();
    IBBCAST_RETURN_IF_ERROR(check_alive(0));
    pause(&header_->copied_seq, seq);
    if (deadline.expired(slice_))
      return make_error(Errc::kTimedOut, "node segment: not every rank of the node opened it");
  }
}

Result<std::size_t> NodeSegment::try_write(uint64_t at, std::span<const std::byte> bytes) {
  IBBCAST_RETURN_IF_ERROR(failure());
  if (bytes.empty()) return std::size_t{0};
  const uint64_t end = header_->written.load(std::memory_order_acquire);
  if (end > at)
    return make_error(Errc::kMismatch, "node segment: the stream is past this broadcast");
  if (end < at) return std::size_t{0};  // an earlier broadcast is still being written
  uint64_t slowest = at;
  for (uint32_t i = 0; i < header_->ranks; ++i) {
    if (i != slot_) slowest = std::min(slowest, header_->copied[i].load(std::memory_order_acquire));
  }
  const std::size_t n = std::min(capacity_ - static_cast<std::size_t>(at - slowest), bytes.size());
  if (n == 0) return std::size_t{0};
  copy_in(ring_, capacity_, at, bytes.data(), n);
  header_->copied[slot_].store(at + n, std::memory_order_release);
  header_->written.store(at + n, std::memory_order_release);
  bump(&header_->written_seq, header_->written_sleepers);
  return n;
}

Status NodeSegment::write(uint64_t at, std::span<const std::byte> bytes, Nanos timeout) {
  // Nothing to order: an empty broadcast shares its offset with the next one.
  if (bytes.empty()) return failure();
  Deadline deadline(timeout);
  const uint64_t end = at + bytes.size();
  for (std::size_t done = 0; done < bytes.size();) {
    const uint32_t written_seq = header_->written_seq.load(std::memory_order_acquire);
    const uint32_t copied_seq = header_->copied_seq.load(std::memory_order_acquire);
    auto n = try_write(at + done, bytes.subspan(done));
    if (!n) return n.status();
    if (*n != 0) {
      done += *n;
      deadline.progressed();
      continue;
    }
    if (header_->written.load(std::memory_order_acquire) < at + done) {
      // The broadcasts before this one, written by other ranks of the node.
      IBBCAST_RETURN_IF_ERROR(check_alive(at));
      pause(&header_->written_seq, written_seq);
      if (deadline.expired(slice_))
        return make_error(Errc::kTimedOut, "node segment: an earlier broadcast was not written");
    } else {
      IBBCAST_RETURN_IF_ERROR(check_alive(end));
      pause(&header_->copied_seq, copied_seq);
      if (deadline.expired(slice_))
        return make_error(Errc::kTimedOut, "node segment: a rank of the node copies nothing");
    }
  }
  // A rank that died with room to spare in the ring is found here, not only
  // once the ring fills.
  return check_alive(end);
}

Result<std::size_t> NodeSegment::try_read(uint64_t at, std::span<std::byte> out) {
  IBBCAST_RETURN_IF_ERROR(failure());
  if (out.empty()) return std::size_t{0};  // a broadcast of no bytes: nothing to copy
  const uint64_t end = header_->written.load(std::memory_order_acquire);
  if (end <= at) return std::size_t{0};
  const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(end - at, out.size()));
  copy_out(ring_, capacity_, at, out.data(), n);
  copied(at + n);
  return n;
}

Status NodeSegment::read(uint64_t at, std::span<std::byte> out, Nanos timeout) {
  Deadline deadline(timeout);
  std::size_t done = 0;
  while (done < out.size()) {
    const uint32_t seq = header_->written_seq.load(std::memory_order_acquire);
    auto n = try_read(at + done, out.subspan(done));
    if (!n) return n.status();
    if (*n != 0) {
      done += *n;
      deadline.progressed();
      continue;
    }
    IBBCAST_RETURN_IF_ERROR(check_alive(at + out.size()));
    pause(&header_->written_seq, seq);
    if (deadline.expired(slice_))
      return make_error(Errc::kTimedOut, "node segment: nothing was written to copy");
  }
  return Status::ok();
}

void NodeSegment::fail(const std::string& why) {
  if (header_->failed.load(std::memory_order_acquire) == 0) {
    std::snprintf(header_->why, sizeof header_->why, "%s", why.c_str());
    header_->failed.store(1, std::memory_order_release);
  }
  header_->written_seq.fetch_add(1, std::memory_order_release);
  header_->copied_seq.fetch_add(1, std::memory_order_release);
  futex_wake(&header_->written_seq);
  futex_wake(&header_->copied_seq);
}

}  // namespace ibbcast
