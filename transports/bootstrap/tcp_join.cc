// Joining a TCP bootstrap job: rank 0 accepts one connection per rank and
// checks who it is (job token, size, rank) before the job starts; the others
// connect, introduce themselves and wait for the root's welcome.
#include "transports/bootstrap/tcp_bootstrap.h"

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "core/protocol/units.h"
#include "transports/bootstrap/tcp_io.h"

namespace ibbcast::tcp {
namespace {

using io::Clock;
constexpr char kMagic[4] = {'I', 'B', 'B', 'T'};
constexpr std::size_t kHelloHead = 12;  // magic, rank, size; then the job token
constexpr std::size_t kMaxHello = 4096;
// A connecting stranger gets this long to say who it is, not the whole timeout.
constexpr auto kHelloWait = std::chrono::seconds(5);

std::vector<std::byte> hello_of(const Options& o) {
  std::array<std::byte, kHelloHead> head{};
  const uint32_t words[2] = {htonl(o.rank), htonl(o.size)};
  std::memcpy(head.data(), kMagic, sizeof kMagic);
  std::memcpy(head.data() + sizeof kMagic, words, sizeof words);
  std::vector<std::byte> h(head.begin(), head.end());
  const auto* job = reinterpret_cast<const std::byte*>(o.job.data());
  h.insert(h.end(), job, job + o.job.size());
  return h;
}

// The root's verdict on a connecting process: ok with its rank, or why not.
Status check_hello(const Options& opt, const std::vector<int>& peers,
                   const Result<io::Frame>& hello, uint32_t* rank) {
  if (!hello) return make_error(Errc::kMismatch, "no hello: " + hello.status().message());
  const std::vector<std::byte>& p = hello->payload;
  if (hello->error || p.size() < kHelloHead || std::memcmp(p.data(), kMagic, 4) != 0) {
    return make_error(Errc::kMismatch, "not an ibbcast bootstrap hello");
  }
  uint32_t words[2];
  std::memcpy(words, p.data() + 4, sizeof words);
  *rank = ntohl(words[0]);
  const uint32_t size = ntohl(words[1]);
  const std::string job(reinterpret_cast<const char*>(p.data()) + kHelloHead,
                        p.size() - kHelloHead);
  const std::string who = "rank " + std::to_string(*rank);
  if (job != opt.job) {
    return make_error(Errc::kMismatch, who + " has job token '" + job + "' but the root at " +
                                           opt.root + " runs job '" + opt.job +
                                           "': two jobs share this address");
  }
  if (size != opt.size) {
    return make_error(Errc::kMismatch, who + " says the job has " + std::to_string(size) +
                                           " ranks, the root " + std::to_string(opt.size));
  }
  if (*rank == 0 || *rank >= opt.size) {
    return make_error(Errc::kInvalidArgument, who + " cannot join a job of " +
                                                  std::to_string(opt.size) + " through rank 0");
  }
  if (peers[*rank] >= 0) {
    return make_error(Errc::kInvalidArgument, who + " has joined already (duplicate rank)");
  }
  return Status::ok();
}

}  // namespace

Status Bootstrap::join_job() {
  const auto start = Clock::now();
  auto fd = io::connect_to(opt_.root, start + opt_.timeout);
  if (!fd) return fd.status();
  peers_.push_back(*fd);
  const std::string root = io::rank_name(0) + " at " + opt_.root;
  const auto deadline = start + patience();
  IBBCAST_RETURN_IF_ERROR(io::send_frame(*fd, 0, hello_of(opt_), deadline, root));
  // The welcome comes once every rank has joined, or the root's refusal.
  auto welcome = io::recv_frame(*fd, deadline, root, 0);
  if (!welcome) return welcome.status();
  return welcome->error ? io::error_of(*welcome, root) : Status::ok();
}

Status Bootstrap::accept_job() {
  const auto deadline = Clock::now() + opt_.timeout;
  if (listen_fd_ < 0) {  // else the caller's, taken over in create()
    auto lfd = io::listen_on(opt_.root, static_cast<int>(opt_.size));
    if (!lfd) return lfd.status();
    listen_fd_ = *lfd;
  }
  peers_.assign(opt_.size, -1);
  for (uint32_t joined = 1; joined < opt_.size;) {
    if (Clock::now() >= deadline) {
      std::vector<uint32_t> missing;
      for (uint32_t r = 1; r < opt_.size; ++r)
        if (peers_[r] < 0) missing.push_back(r);
      return broadcast_error(
          make_error(Errc::kTimedOut, "tcp bootstrap: " + io::ranks_text(missing) +
                                          " never reached the root at " + opt_.root + " within " +
                                          format_duration(opt_.timeout)));
    }
    pollfd p{listen_fd_, POLLIN, 0};
    ::poll(&p, 1, io::wait_ms(deadline, 100));
    const int fd = io::accept_one(listen_fd_);
    if (fd < 0) continue;
    auto hello = io::recv_frame(fd, std::min(deadline, Clock::now() + kHelloWait),
                                "a connecting process", kMaxHello);
    uint32_t rank = 0;
    if (Status why = check_hello(opt_, peers_, hello, &rank); !why) {
      // Refused, and the job goes on: the right process may still come.
      (void)io::send_error(fd, 0,
                           make_error(why.code(), "tcp bootstrap: refused by the root at " +
                                                      opt_.root + ": " + why.message()));
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
  const auto welcome_by = Clock::now() + opt_.timeout;
  for (uint32_t r = 1; r < opt_.size; ++r) {
    if (Status st = io::send_frame(peers_[r], 0, {}, welcome_by, io::rank_name(r)); !st) {
      return broadcast_error(make_error(st.code(), "tcp bootstrap: " + st.message()));
    }
  }
  return Status::ok();
}

}  // namespace ibbcast::tcp
