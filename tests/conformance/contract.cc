#include "tests/conformance/contract.h"

#include <poll.h>

#include <array>
#include <cstring>
#include <random>
#include <thread>

#include "core/runtime/group.h"
#include "testing/local_ranks.h"

namespace ibbcast::conformance {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(20);

Gather gather(const std::vector<std::byte>& v) {
  return Gather{{v, {}, {}}};
}

Status fail(Errc code, const std::string& what) {
  return make_error(code, what);
}

// Rank 0's choice, made known to every rank through the bootstrap.
Result<std::string> agree_on_address(Transport& transport, Bootstrap& boot) {
  std::array<char, 128> mine{};
  if (boot.rank() == 0) {
    const std::string a = transport.choose_multicast_address(std::random_device{}());
    if (a.size() >= mine.size()) return make_error(Errc::kInternal, "address too long: " + a);
    std::memcpy(mine.data(), a.data(), a.size());
  }
  std::vector<char> all(mine.size() * boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all))));
  return std::string(all.data());
}

// Polls `ch` until `done` or the patience runs out; sleeps briefly when idle
// so that ranks sharing two cores do not starve each other.
template <typename Done>
Status drain(P2pChannel& ch, std::vector<P2pEvent>& seen, Done done) {
  const auto end = Clock::now() + kPatience;
  while (!done()) {
    if (Clock::now() > end) return fail(Errc::kTimedOut, "reliable channel: no progress");
    std::array<P2pEvent, 16> ev;
    const std::size_t n = ch.poll(ev);
    for (std::size_t i = 0; i < n; ++i) {
      if (ev[i].kind == P2pEvent::Kind::kPeerFailed) {
        return fail(Errc::kPeerFailed, "peer " + std::to_string(ev[i].peer) + ": " + ev[i].reason);
      }
      seen.push_back(std::move(ev[i]));
    }
    if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Status::ok();
}

// The end of a check: nobody closes a channel a peer still reads from.
Status finish(Bootstrap& boot, P2pChannel& ch) {
  ch.hand_off();
  return boot.progressing_barrier([&ch] {
    std::array<P2pEvent, 16> ev;
    const std::size_t n = ch.poll(ev);
    for (std::size_t i = 0; i < n; ++i)
      if (ev[i].kind == P2pEvent::Kind::kMessage) ch.release(ev[i].message);
  });
}

}  // namespace

Status multicast_reaches_every_member(Transport& transport, Bootstrap& boot) {
  auto addr = agree_on_address(transport, boot);
  if (!addr) return addr.status();
  auto ch = transport.open_multicast(*addr, {});
  if (!ch) return ch.status();
  IBBCAST_RETURN_IF_ERROR(boot.barrier());  // every member joined before the first send
  const uint32_t max = transport.capabilities().max_datagram;
  const std::vector<std::vector<std::byte>> sent = {local::pattern(1, 1), local::pattern(max, 2)};
  Status result = Status::ok();
  if (boot.rank() == 0) {
    for (const auto& s : sent)
      IBBCAST_RETURN_IF_ERROR((*ch)->send(gather(s)));
    auto too_big = local::pattern(max + 1, 3);
    if ((*ch)->send(gather(too_big)).is_ok()) {
      result = fail(Errc::kInternal, "a datagram of max_datagram + 1 bytes was accepted");
    }
  } else {
    std::vector<std::vector<std::byte>> got;
    const auto end = Clock::now() + kPatience;
    while (got.size() < sent.size() && Clock::now() < end) {
      std::array<RecvView, 8> v;
      const std::size_t n = (*ch)->poll(v);
      for (std::size_t i = 0; i < n; ++i)
        got.emplace_back(v[i].bytes.begin(), v[i].bytes.end());
      (*ch)->release(std::span(v.data(), n));
      if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (got != sent) {
      std::string sizes;
      for (const auto& g : got)
        sizes += " " + std::to_string(g.size());
      result = fail(Errc::kCorrupt, "rank " + std::to_string(boot.rank()) +
                                        " expected datagrams of 1 and " + std::to_string(max) +
                                        " bytes, got" + (sizes.empty() ? " none" : sizes));
    }
  }
  Status b = boot.barrier();
  return result.is_ok() ? b : result;
}

Status reliable_channel_is_ordered(Transport& transport, Bootstrap& boot) {
  auto ch = transport.open_p2p({});
  if (!ch) return ch.status();
  P2pChannel& c = **ch;
  const uint32_t n = boot.size(), me = boot.rank();
  if (n < 2) return fail(Errc::kInvalidArgument, "needs 2 ranks or more");
  const uint32_t succ = (me + 1) % n, pred = (me + n - 1) % n;
  constexpr int kCount = 500;
  auto message = [](uint32_t from, int i) {
    return local::pattern(1 + static_cast<std::size_t>(i) * 7, from * 1000ull + i);
  };
  std::vector<std::vector<std::byte>> out;
  for (int i = 0; i < kCount; ++i)
    out.push_back(message(me, i));
  int sent = 0, pending = 0, next = 0;
  Status st = Status::ok();
  const auto end = Clock::now() + kPatience;
  while (st && (sent < kCount || next < kCount || pending > 0)) {
    if (Clock::now() > end) {
      st = fail(Errc::kTimedOut, "rank " + std::to_string(me) + ": sent " + std::to_string(sent) +
                                     ", received " + std::to_string(next) + " of " +
                                     std::to_string(kCount) + " within the patience");
      break;
    }
    bool busy = false;
    while (st && sent < kCount) {
      auto r = c.send(succ, gather(out[static_cast<std::size_t>(sent)]), 0);
      if (!r && r.status().code() == Errc::kAgain) break;
      if (!r) st = r.status();
      if (!st) break;
      pending += *r ? 0 : 1;
      ++sent;
      busy = true;
    }
    std::array<P2pEvent, 16> ev;
    const std::size_t got = st ? c.poll(ev) : 0;
    for (std::size_t i = 0; i < got && st; ++i) {
      busy = true;
      if (ev[i].kind == P2pEvent::Kind::kPeerFailed) {
        st = fail(Errc::kPeerFailed, "peer " + std::to_string(ev[i].peer) + ": " + ev[i].reason);
      } else if (ev[i].kind == P2pEvent::Kind::kSendComplete) {
        --pending;
      } else {
        const auto want = message(pred, next);
        const auto b = frame_bytes(ev[i].message);  // one span, also when split
        const bool same =
            ev[i].peer == pred && std::equal(want.begin(), want.end(), b.begin(), b.end());
        c.release(ev[i].message);
        if (!same) {
          st = fail(Errc::kCorrupt, "rank " + std::to_string(me) + ": message " +
                                        std::to_string(next) + " from rank " +
                                        std::to_string(ev[i].peer) + " is not the expected one");
        }
        ++next;
      }
    }
    if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  Status f = finish(boot, c);
  return st.is_ok() ? f : st;
}

Status event_fd_wakes_a_sleeper(Transport& transport, Bootstrap& boot) {
  const int fd = transport.event_fd();
  if (fd < 0) return fail(Errc::kUnsupported, transport.capabilities().name + " has no event fd");
  // Two reliable channels, as two groups on one transport have: the message
  // comes on the first, so a transport that armed only the channel opened
  // last left this one's owner asleep.
  auto ch = transport.open_p2p({});
  if (!ch) return ch.status();
  auto later = transport.open_p2p({});
  if (!later) return later.status();
  P2pChannel& c = **ch;
  // Each owner arms its own channels (this rank owns both: the later one's
  // fd, once signalled, stays readable in the shared set until armed); the
  // transport arms what is its own.
  auto arm = [&] {
    for (Status st : {c.arm(), (*later)->arm(), transport.arm()})
      if (!st.is_ok()) return st;
    return Status::ok();
  };
  Status result = Status::ok();
  if (boot.rank() == 1) {
    // Whatever set-up traffic is pending is consumed until arming succeeds.
    // Other ranks' set-up traffic (UCX wire-up on a loaded machine) may
    // still arrive right after: a real event, so arm again. A broken arm
    // leaves the fd readable however often it is re-armed.
    int readable = 0;
    for (int round = 0; round < 20; ++round) {
      Status armed = arm();
      for (int i = 0; i < 1000 && armed.code() == Errc::kAgain; ++i) {
        std::array<P2pEvent, 16> ev;
        (void)c.poll(ev);
        (void)(*later)->poll(ev);
        armed = arm();
      }
      IBBCAST_RETURN_IF_ERROR(armed);
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) == 0) {
        readable = 0;
        break;
      }
      ++readable;
      std::array<P2pEvent, 16> ev;
      (void)c.poll(ev);
      (void)(*later)->poll(ev);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (readable != 0) {
      result = fail(Errc::kInternal, "armed fd readable with no event, 20 times in a row");
    }
  }
  IBBCAST_RETURN_IF_ERROR(boot.barrier());
  const auto m = local::pattern(64, 9);
  if (boot.rank() == 0) {
    auto r = c.send(1, gather(m), 7);
    if (!r) return r.status();
    std::vector<P2pEvent> seen;
    if (!*r) IBBCAST_RETURN_IF_ERROR(drain(c, seen, [&] { return !seen.empty(); }));
  } else if (boot.rank() == 1 && result) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) {
      result = fail(Errc::kTimedOut, "a message did not wake the sleeper within 10 s");
    } else if (Status again = arm(); again.code() != Errc::kAgain) {
      // A backend may accept the arming only if the fd stays readable, so
      // that the next sleep returns at once instead of losing the wake-up.
      if (!again.is_ok()) {
        result = again;
      } else if (::poll(&p, 1, 0) != 1) {
        result = fail(Errc::kInternal,
                      "armed with an event pending, and the fd no longer readable: lost wake-up");
      }
    }
    std::vector<P2pEvent> seen;
    Status got = drain(c, seen, [&] { return !seen.empty(); });
    if (got && (seen[0].kind != P2pEvent::Kind::kMessage || frame_bytes(seen[0].message) != m)) {
      got = fail(Errc::kCorrupt, "the waking message is not the one sent");
    }
    if (got && seen[0].kind == P2pEvent::Kind::kMessage) c.release(seen[0].message);
    if (result) result = got;
  }
  Status f = finish(boot, c);
  Status g = finish(boot, **later);
  if (!result.is_ok()) return result;
  return f.is_ok() ? g : f;
}

std::span<const Check> contract() {
  static constexpr Check kChecks[] = {
      {"MulticastReachesEveryMemberByteExact", 3, false, multicast_reaches_every_member},
      {"ReliableChannelIsOrderedPerPeerAndByteExact", 3, false, reliable_channel_is_ordered},
      {"EventFdWakesASleepingRank", 2, true, event_fd_wakes_a_sleeper},
      {"EventFdSleepIgnoresAnIdleGroup", 2, true, event_fd_sleep_ignores_an_idle_group},
      {"EveryAlgorithmBroadcastsByteExact", 5, false, every_algorithm_broadcasts},
      {"AuthenticatedBroadcastsByteExact", 4, false, authenticated_broadcasts},
      {"LargeBroadcastThenForeignCollective", 3, false, large_broadcast_then_foreign_collective},
      {"GroupCyclesLeaveNothingBehind", 3, false, group_cycles_leave_nothing},
      {"NodeAwareBroadcastsByteExact", 5, false, node_aware_broadcasts},
  };
  return kChecks;
}

}  // namespace ibbcast::conformance
