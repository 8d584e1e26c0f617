#pragma once
// Framed, deadline-bounded socket I/O for the TCP bootstrap. A frame is
// [u32 length | error flag][u32 sequence][payload], big-endian, so hosts of
// either byte order may share a job; an error frame's payload is
// [u8 Errc][message], so a rank learns why the job failed, not only that its
// connection closed. Every socket is non-blocking and every wait a poll().

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/status.h"

namespace ibbcast::tcp::io {

using Clock = std::chrono::steady_clock;
inline constexpr uint32_t kMaxFrame = 0x7fffffffu;

/// "rank 0 (the bootstrap root)", "rank 3": how errors name a rank.
std::string rank_name(uint32_t r);
/// "rank 2" or "ranks 2, 4".
std::string ranks_text(const std::vector<uint32_t>& ranks);
/// Milliseconds left until `deadline`, at most `cap_ms` (a poll slice).
int wait_ms(Clock::time_point deadline, int cap_ms);

struct Frame {
  uint32_t seq = 0;
  bool error = false;
  std::vector<std::byte> payload;
};

/// Splits "host:port" / "[v6]:port"; kInvalidArgument otherwise.
Status split_host_port(const std::string& text, std::string* host, std::string* port);
/// A listening, non-blocking socket on `text` (SO_REUSEADDR: a job may reuse
/// the port of one that just ended, whose connections sit in TIME_WAIT).
/// Port 0 takes an ephemeral port; `bound_port` says which.
Result<int> listen_on(const std::string& text, int backlog);
/// The local port of a bound socket (0 on failure).
uint16_t bound_port(int fd);
/// One pending connection, non-blocking with TCP_NODELAY; -1 when none.
int accept_one(int listen_fd);
/// Connects to `text` ("host:port", or several, comma-separated, tried in
/// order), retrying refusals (the root may not listen yet) with
/// a short backoff until `deadline`; each attempt is itself bounded by it,
/// so an unreachable host cannot hold a rank in the kernel's SYN retries.
Result<int> connect_to(const std::string& text, Clock::time_point deadline);

Status send_frame(int fd, uint32_t seq, std::span<const std::byte> payload,
                  Clock::time_point deadline, const std::string& who);
Status send_error(int fd, uint32_t seq, const Status& st);
/// Receives one whole frame of at most `limit` bytes. `while_waiting`, when
/// given, is called about every millisecond while nothing arrives.
Result<Frame> recv_frame(int fd, Clock::time_point deadline, const std::string& who,
                         std::size_t limit, const std::function<void()>* while_waiting = nullptr);
/// The Status an error frame carries.
Status error_of(const Frame& f, const std::string& who);

/// Incremental reader for polling several sockets at once (the root's gather).
struct Reader {
  int fd = -1;
  /// A longer data frame is a kMismatch, refused before anything is
  /// allocated for it (a stranger's bytes may announce gigabytes).
  std::size_t limit = kMaxFrame;
  std::byte header[8] = {};
  std::size_t got = 0;
  bool parsed = false;  ///< the header was decoded into `frame`
  Frame frame;
  /// Reads what is available. Returns true once the frame is complete; an
  /// error when the peer closed or the socket failed.
  Result<bool> step(const std::string& who);
};

}  // namespace ibbcast::tcp::io
