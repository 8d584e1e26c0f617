#include "transports/tcp_bootstrap.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "transports/tcp_io.h"

namespace ibbcast::tcp {
namespace {

using io::Clock;
constexpr char kMagic[4] = {'I', 'B', 'B', 'T'};

std::string rank_name(uint32_t r) {
  return r == 0 ? "rank 0 (the bootstrap root)" : "rank " + std::to_string(r);
}

std::string list(const std::vector<uint32_t>& ranks) {
  std::string s;
  for (uint32_t r : ranks)
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(const Options& opt) {
  if (opt.size == 0 || opt.rank >= opt.size) {
    return make_error(Errc::kInvalidArgument, "bootstrap: rank " + std::to_string(opt.rank) +
                                                  " is not below size " + std::to_string(opt.size));
  }
  if (opt.root.empty() && opt.size > 1) {
    return make_error(Errc::kInvalidArgument, "bootstrap: no root address (bootstrap_root)");
  }
  std::unique_ptr<Bootstrap> b(new Bootstrap(opt));
  IBBCAST_RETURN_IF_ERROR(b->connect_job());
  return b;
}

Bootstrap::~Bootstrap() {
  for (int fd : peers_)
    if (fd >= 0) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

Status Bootstrap::connect_job() {
  const auto deadline = Clock::now() + opt_.timeout;
  if (opt_.size == 1) return Status::ok();
  if (opt_.rank != 0) {
    auto fd = io::connect_to(opt_.root, deadline);
    if (!fd) return fd.status();
    peers_.push_back(*fd);
    std::vector<std::byte> hello(12 + opt_.job.size());
    std::memcpy(hello.data(), kMagic, 4);
    std::memcpy(hello.data() + 4, &opt_.rank, 4);
    std::memcpy(hello.data() + 8, &opt_.size, 4);
    std::memcpy(hello.data() + 12, opt_.job.data(), opt_.job.size());
    const std::string root = rank_name(0) + " at " + opt_.root;
    IBBCAST_RETURN_IF_ERROR(io::send_frame(*fd, 0, hello, deadline, root));
    auto welcome = io::recv_frame(*fd, deadline, root);
    if (!welcome) return welcome.status();
    return welcome->error ? io::error_of(*welcome, root) : Status::ok();
  }
  auto lfd = io::listen_on(opt_.root, static_cast<int>(opt_.size));
  if (!lfd) return lfd.status();
  listen_fd_ = *lfd;
  peers_.assign(opt_.size, -1);
  uint32_t joined = 1;
  while (joined < opt_.size) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (Clock::now() >= deadline) {
      std::vector<uint32_t> missing;
      for (uint32_t r = 1; r < opt_.size; ++r)
        if (peers_[r] < 0) missing.push_back(r);
      return broadcast_error(make_error(
          Errc::kTimedOut, "ranks " + list(missing) + " never reached the bootstrap root at " +
                               opt_.root + " within the bootstrap timeout"));
    }
    ::poll(&p, 1, 100);
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) continue;
    // A stranger gets a few seconds to say who it is, not the whole timeout.
    auto hello = io::recv_frame(fd, std::min(deadline, Clock::now() + std::chrono::seconds(5)),
                                "a connecting rank");
    std::string why;
    uint32_t rank = 0, size = 0;
    if (!hello || hello->payload.size() < 12 ||
        std::memcmp(hello->payload.data(), kMagic, 4) != 0) {
      why = "not an ibbcast bootstrap hello";
    } else {
      std::memcpy(&rank, hello->payload.data() + 4, 4);
      std::memcpy(&size, hello->payload.data() + 8, 4);
      const std::string job(reinterpret_cast<const char*>(hello->payload.data()) + 12,
                            hello->payload.size() - 12);
      if (job != opt_.job) {
        why = "job token '" + job + "' is not this job's ('" + opt_.job + "')";
      } else if (size != opt_.size) {
        why = "size " + std::to_string(size) + " differs from the root's " +
              std::to_string(opt_.size);
      } else if (rank == 0 || rank >= opt_.size || peers_[rank] >= 0) {
        why = "rank " + std::to_string(rank) + " is taken or out of range";
      }
    }
    if (!why.empty()) {
      // Refused, and the job goes on: the right rank may still come.
      (void)io::send_error(fd, 0, make_error(Errc::kMismatch, "bootstrap refused: " + why));
      ::close(fd);
      continue;
    }
    peers_[rank] = fd;
    ++joined;
  }
  // The job is complete: later connections are refused by the kernel, and
  // the port is free for the next job.
  ::close(listen_fd_);
  listen_fd_ = -1;
  for (uint32_t r = 1; r < opt_.size; ++r) {
    IBBCAST_RETURN_IF_ERROR(io::send_frame(peers_[r], 0, {}, deadline, rank_name(r)));
  }
  return Status::ok();
}

Status Bootstrap::broadcast_error(const Status& st) {
  for (uint32_t r = 1; r < peers_.size(); ++r)
    if (peers_[r] >= 0) (void)io::send_error(peers_[r], seq_, st);
  broken_ = st;
  return st;
}

Status Bootstrap::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  return exchange(mine, all, nullptr);
}

Status Bootstrap::progressing_barrier(const std::function<void()>& while_waiting) {
  return exchange({}, {}, &while_waiting);
}

Status Bootstrap::exchange(std::span<const std::byte> mine, std::span<std::byte> all,
                           const std::function<void()>* while_waiting) {
  if (!broken_.is_ok()) return broken_;
  if (all.size() != mine.size() * opt_.size) {
    return make_error(Errc::kInvalidArgument, "allgather: output is not size() * input");
  }
  ++seq_;
  const auto deadline = Clock::now() + opt_.timeout;
  if (opt_.size == 1) {
    std::copy(mine.begin(), mine.end(), all.begin());
    return Status::ok();
  }
  if (opt_.rank != 0) {
    const std::string root = rank_name(0);
    Status st = io::send_frame(peers_[0], seq_, mine, deadline, root);
    auto f = st ? io::recv_frame(peers_[0], deadline, root, while_waiting) : Result<io::Frame>(st);
    if (!f) return broken_ = f.status();
    if (f->error) return broken_ = io::error_of(*f, root);
    if (f->seq != seq_ || f->payload.size() != all.size()) {
      return broken_ =
                 make_error(Errc::kMismatch, "bootstrap: the root answered another collective");
    }
    std::copy(f->payload.begin(), f->payload.end(), all.begin());
    return Status::ok();
  }
  // The root gathers from every rank at once, so a dead rank is noticed at
  // once and every missing rank is named on a timeout.
  std::vector<io::Reader> readers(opt_.size);
  std::vector<pollfd> pfds;
  std::copy(mine.begin(), mine.end(), all.begin());
  uint32_t pending = opt_.size - 1;
  for (uint32_t r = 1; r < opt_.size; ++r)
    readers[r].fd = peers_[r];
  while (pending > 0) {
    pfds.clear();
    for (uint32_t r = 1; r < opt_.size; ++r) {
      if (readers[r].fd < 0) continue;
      auto done = readers[r].step(rank_name(r));
      if (!done) return broadcast_error(done.status());
      if (!*done) {
        pfds.push_back({readers[r].fd, POLLIN, 0});
        continue;
      }
      const io::Frame& f = readers[r].frame;
      if (f.error || f.seq != seq_ || f.payload.size() != mine.size()) {
        return broadcast_error(make_error(
            Errc::kMismatch, "allgather: rank " + std::to_string(r) + " contributed " +
                                 std::to_string(f.payload.size()) + " bytes, rank 0 " +
                                 std::to_string(mine.size()) + " (or another collective)"));
      }
      std::copy(f.payload.begin(), f.payload.end(), all.begin() + r * mine.size());
      readers[r].fd = -1;
      --pending;
    }
    if (pending == 0) break;
    if (Clock::now() >= deadline) {
      std::vector<uint32_t> missing;
      for (uint32_t r = 1; r < opt_.size; ++r)
        if (readers[r].fd >= 0) missing.push_back(r);
      return broadcast_error(make_error(
          Errc::kTimedOut, "bootstrap collective: ranks " + list(missing) + " did not arrive"));
    }
    ::poll(pfds.data(), pfds.size(), while_waiting != nullptr ? 1 : 100);
    if (while_waiting != nullptr) (*while_waiting)();
  }
  for (uint32_t r = 1; r < opt_.size; ++r) {
    Status st = io::send_frame(peers_[r], seq_, all, deadline, rank_name(r));
    if (!st) return broadcast_error(st);
  }
  return Status::ok();
}

}  // namespace ibbcast::tcp
