// libFuzzer target for the TCP bootstrap's framing (transports/bootstrap/tcp_io.h): the
// bytes a connecting process or a rank sends to the root and back. Fuzzed
// through the public API only, io::Reader and io::recv_frame on one end of a
// socketpair whose other end writes the input: the parser keeps its state
// across partial reads, so the input also chooses where the stream is cut.
//
// Invariants: a complete frame is exactly what the header announced (an
// independent decode of [u32 length | error flag][u32 seq], big-endian) and
// within the reader's limit (64 KiB for an error frame); every failure is
// kMismatch (too long, refused before allocating) or kPeerFailed (closed
// early), with a message; a reader never reports "nothing yet" once the peer
// has closed; error_of maps every code byte to a real error with a message.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "transports/bootstrap/tcp_io.h"

namespace {

using namespace ibbcast;
using fuzz::check;
namespace io = tcp::io;

constexpr std::size_t kMaxError = 64 * 1024;  // tcp_io.cc's bound on an error frame

uint32_t be32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v = (v << 8) | std::to_integer<uint8_t>(p[i]);
  return v;
}

// What the stream should give, frame by frame, decoded independently.
struct Oracle {
  std::vector<std::byte> stream;
  std::size_t pos = 0;
  std::size_t limit = 0;

  // Checks one frame the reader completed against the next one in the stream.
  void frame(const io::Frame& f) {
    check(stream.size() - pos >= 8);
    const uint32_t word = be32(&stream[pos]);
    const std::size_t len = word & io::kMaxFrame;
    check(f.error == ((word & 0x80000000u) != 0));
    check(f.seq == be32(&stream[pos + 4]));
    check(len <= (f.error ? kMaxError : limit));
    check(f.payload.size() == len && stream.size() - pos - 8 >= len);
    check(std::equal(f.payload.begin(), f.payload.end(), stream.begin() + pos + 8));
    pos += 8 + len;
    if (f.error) {
      const Status st = io::error_of(f, "rank 1");
      check(!st.is_ok() && st.code() <= Errc::kInternal);
      check(!st.message().empty() || f.payload.size() == 1);
    }
  }

  // Checks a reader's failure: too long, or the stream ended inside a frame.
  void failure(const Status& st, bool closed) {
    check(!st.is_ok() && !st.message().empty());
    if (st.code() == Errc::kPeerFailed) {
      check(closed);
      return;
    }
    check(st.code() == Errc::kMismatch && stream.size() - pos >= 8);
    const uint32_t word = be32(&stream[pos]);
    check((word & io::kMaxFrame) > ((word & 0x80000000u) ? kMaxError : limit));
  }
};

// Feeds the stream in input-chosen pieces, stepping a Reader after each.
void incremental(int w, int r, Oracle& o, fuzz::Input& cuts) {
  io::Reader rd;
  rd.fd = r;
  rd.limit = o.limit;
  std::size_t written = 0;
  bool closed = false;
  for (;;) {
    auto done = rd.step("rank 1");
    if (!done) {
      o.failure(done.status(), closed);
      return;
    }
    if (*done) {
      o.frame(rd.frame);
      rd = io::Reader{};
      rd.fd = r;
      rd.limit = o.limit;
      continue;
    }
    check(!closed);  // a closed peer is an error, never "nothing yet"
    if (written == o.stream.size()) {
      ::shutdown(w, SHUT_WR);
      closed = true;
      continue;
    }
    const std::size_t piece = 1 + std::size_t{cuts.take<uint8_t>()} * (cuts.take<uint8_t>() % 8);
    const std::size_t n = std::min(piece, o.stream.size() - written);
    check(::write(w, o.stream.data() + written, n) == static_cast<ssize_t>(n));
    written += n;
  }
}

// The whole stream at once, then recv_frame until the end.
void blocking(int w, int r, Oracle& o) {
  if (!o.stream.empty()) {
    check(::write(w, o.stream.data(), o.stream.size()) == static_cast<ssize_t>(o.stream.size()));
  }
  ::shutdown(w, SHUT_WR);
  const auto deadline = io::Clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto f = io::recv_frame(r, deadline, "rank 1", o.limit);
    if (!f) {
      o.failure(f.status(), true);
      return;
    }
    o.frame(*f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  Oracle o;
  // The limits the bootstrap uses: 0 (the welcome), small (hello, allgather
  // of a few words) and large.
  const uint16_t lim = in.take<uint16_t>();
  o.limit = mode & 2 ? lim : std::size_t{lim} << 4;
  const std::size_t n_cuts = mode >> 2;
  auto cuts_bytes = in.bytes(n_cuts);
  o.stream = in.bytes(in.size());
  fuzz::Input cuts(reinterpret_cast<const uint8_t*>(cuts_bytes.data()), cuts_bytes.size());

  int fds[2];
  check(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  if (mode & 1) {
    incremental(fds[0], fds[1], o, cuts);
  } else {
    blocking(fds[0], fds[1], o);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}
