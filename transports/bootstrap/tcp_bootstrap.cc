#include "transports/bootstrap/tcp_bootstrap.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>

#include "core/protocol/units.h"
#include "transports/bootstrap/tcp_io.h"

namespace ibbcast::tcp {

using io::Clock;

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(const Options& opt) {
  // Owns the caller's listener from here on, so every error path closes it.
  std::unique_ptr<Bootstrap> b(new Bootstrap(opt));
  b->listen_fd_ = opt.listen_fd;
  if (opt.size == 0 || opt.rank >= opt.size) {
    return make_error(Errc::kInvalidArgument, "tcp bootstrap: rank " + std::to_string(opt.rank) +
                                                  " is not below the job size " +
                                                  std::to_string(opt.size));
  }
  if (opt.timeout.count() <= 0) {
    return make_error(Errc::kInvalidArgument, "tcp bootstrap: the timeout must be positive");
  }
  if (opt.root.empty() && opt.size > 1) {
    return make_error(Errc::kInvalidArgument, "tcp bootstrap: no root address (host:port)");
  }
  if (opt.size > 1) IBBCAST_RETURN_IF_ERROR(opt.rank == 0 ? b->accept_job() : b->join_job());
  return b;
}

Bootstrap::~Bootstrap() {
  for (int fd : peers_)
    if (fd >= 0) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::chrono::nanoseconds Bootstrap::patience() const {
  return opt_.timeout + std::min<std::chrono::nanoseconds>(opt_.timeout / 2, kVerdictGrace);
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

Status Bootstrap::progressing_allgather(std::span<const std::byte> mine, std::span<std::byte> all,
                                        const std::function<void()>& while_waiting) {
  return exchange(mine, all, &while_waiting);
}

Status Bootstrap::exchange(std::span<const std::byte> mine, std::span<std::byte> all,
                           const std::function<void()>* while_waiting) {
  if (!broken_.is_ok()) return broken_;
  if (all.size() != mine.size() * opt_.size) {
    return make_error(Errc::kInvalidArgument, "tcp bootstrap: allgather output is not size() * " +
                                                  std::to_string(mine.size()) + " bytes");
  }
  ++seq_;
  if (opt_.size == 1) {
    std::copy(mine.begin(), mine.end(), all.begin());
    return Status::ok();
  }
  if (opt_.rank == 0) return gather_at_root(mine, all, while_waiting);
  const auto deadline = Clock::now() + patience();
  const std::string root = io::rank_name(0);
  Status st = io::send_frame(peers_[0], seq_, mine, deadline, root);
  if (!st) {
    // The root may have said why before it closed: that reason is the news.
    auto said = io::recv_frame(peers_[0], Clock::now(), root, all.size());
    return broken_ = said && said->error ? io::error_of(*said, root) : st;
  }
  auto f = io::recv_frame(peers_[0], deadline, root, all.size(), while_waiting);
  if (!f) return broken_ = f.status();
  if (f->error) return broken_ = io::error_of(*f, root);
  if (f->seq != seq_ || f->payload.size() != all.size()) {
    return broken_ = make_error(Errc::kMismatch, "tcp bootstrap: the root answered call #" +
                                                     std::to_string(f->seq) + ", this rank's is #" +
                                                     std::to_string(seq_));
  }
  std::copy(f->payload.begin(), f->payload.end(), all.begin());
  return Status::ok();
}

Status Bootstrap::gather_at_root(std::span<const std::byte> mine, std::span<std::byte> all,
                                 const std::function<void()>* while_waiting) {
  const auto deadline = Clock::now() + opt_.timeout;
  const std::string call = "tcp bootstrap allgather #" + std::to_string(seq_) + ": ";
  // Every rank is read at once, so a dead one is noticed at once and every
  // missing one is named on a timeout.
  std::vector<io::Reader> readers(opt_.size);
  std::vector<pollfd> pfds;
  std::copy(mine.begin(), mine.end(), all.begin());
  for (uint32_t r = 1; r < opt_.size; ++r) {
    readers[r].fd = peers_[r];
    readers[r].limit = mine.size();
  }
  for (uint32_t pending = opt_.size - 1; pending > 0;) {
    pfds.clear();
    for (uint32_t r = 1; r < opt_.size; ++r) {
      io::Reader& rd = readers[r];
      if (rd.fd < 0) continue;
      auto done = rd.step(io::rank_name(r));
      if (!done)
        return broadcast_error(make_error(done.status().code(), call + done.status().message()));
      if (!*done) {
        pfds.push_back({rd.fd, POLLIN, 0});
        continue;
      }
      if (rd.frame.error || rd.frame.seq != seq_ || rd.frame.payload.size() != mine.size()) {
        return broadcast_error(
            make_error(Errc::kMismatch, call + "rank " + std::to_string(r) + " contributed " +
                                            std::to_string(rd.frame.payload.size()) +
                                            " bytes to call #" + std::to_string(rd.frame.seq) +
                                            ", rank 0 " + std::to_string(mine.size()) + " bytes"));
      }
      std::copy(rd.frame.payload.begin(), rd.frame.payload.end(), all.begin() + r * mine.size());
      rd.fd = -1;
      --pending;
    }
    if (pending == 0) break;
    if (Clock::now() >= deadline) {
      std::vector<uint32_t> missing;
      for (uint32_t r = 1; r < opt_.size; ++r)
        if (readers[r].fd >= 0) missing.push_back(r);
      return broadcast_error(make_error(Errc::kTimedOut, call + io::ranks_text(missing) +
                                                             " did not arrive within " +
                                                             format_duration(opt_.timeout)));
    }
    ::poll(pfds.data(), pfds.size(), io::wait_ms(deadline, while_waiting != nullptr ? 1 : 100));
    if (while_waiting != nullptr) (*while_waiting)();
  }
  // A fresh bound for the replies: a gather that took most of the timeout
  // must not leave the last rank no time to take its copy.
  const auto reply_by = Clock::now() + opt_.timeout;
  for (uint32_t r = 1; r < opt_.size; ++r) {
    if (Status st = io::send_frame(peers_[r], seq_, all, reply_by, io::rank_name(r)); !st) {
      return broadcast_error(make_error(st.code(), call + st.message()));
    }
  }
  return Status::ok();
}

}  // namespace ibbcast::tcp
