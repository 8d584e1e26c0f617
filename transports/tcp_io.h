#pragma once
// Framed, deadline-bounded socket I/O for the TCP bootstrap. A frame is
// [u32 length | error flag][u32 sequence][payload]; an error frame's payload
// is [u8 Errc][message], so a rank learns why the job failed, not only that
// its connection closed.

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace ibbcast::tcp::io {

using Clock = std::chrono::steady_clock;

struct Frame {
  uint32_t seq = 0;
  bool error = false;
  std::vector<std::byte> payload;
};

/// Splits "host:port" / "[v6]:port"; kInvalidArgument otherwise.
Status split_host_port(const std::string& text, std::string* host, std::string* port);
/// A listening, non-blocking socket on `text`.
Result<int> listen_on(const std::string& text, int backlog);
/// Connects to `text`, retrying refusals (the root may not listen yet) until `deadline`.
Result<int> connect_to(const std::string& text, Clock::time_point deadline);

Status send_frame(int fd, uint32_t seq, std::span<const std::byte> payload,
                  Clock::time_point deadline, const std::string& who);
Status send_error(int fd, uint32_t seq, const Status& st);
/// Receives one whole frame. `while_waiting`, when given, is called about
/// every millisecond while nothing arrives.
Result<Frame> recv_frame(int fd, Clock::time_point deadline, const std::string& who,
                         const std::function<void()>* while_waiting = nullptr);
/// The Status an error frame carries.
Status error_of(const Frame& f, const std::string& who);

/// Incremental reader for polling several sockets at once (the root's gather).
struct Reader {
  int fd = -1;
  std::byte header[8] = {};
  std::size_t got = 0;
  bool parsed = false;  ///< the header was decoded into `frame`
  Frame frame;
  /// Reads what is available. Returns true once the frame is complete; an
  /// error when the peer closed or the socket failed.
  Result<bool> step(const std::string& who);
};

}  // namespace ibbcast::tcp::io
