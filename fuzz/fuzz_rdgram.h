#pragma once
// The harness of fuzz_rdgram (what it drives and checks: fuzz_rdgram.cc),
// shared by its two files: fuzz_rdgram.cc (the link, the honest ranks'
// traffic, the lossless drain and the fuzzer's entry point) and
// fuzz_rdgram_inject.cc (foreign datagrams: raw, well-formed, forged or
// altered, and the check that every one was dropped and counted).

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/runtime/rdgram.h"
#include "fuzz/fuzz_input.h"

namespace ibbcast::fuzz::rdgram {

using Bytes = std::vector<std::byte>;

inline constexpr uint32_t kChannel = 0x1bbc5d01;
inline constexpr uint32_t kPhantom = 2;  // a member that never answers

struct Wire {
  std::deque<Bytes> in_flight[2];  // sent by rank r, not yet in the inbox of 1 - r
  std::deque<Bytes> inbox[2];
  uint32_t max = 0;
};

struct Side {
  std::unique_ptr<DatagramP2p> ch;
  std::deque<Bytes> expected;  // sent to this side, not yet delivered (from the other)
  std::deque<Bytes> to_self;   // sent to itself
  uint64_t sent = 0;
  bool peer_failed = false;
};

struct Harness {
  Wire wire;
  Nanos now{0};
  Side side[2];
  bool keyed = false;
  uint64_t injected = 0;

  Harness(uint32_t max, uint32_t window, uint32_t max_queued, bool with_key);

  // fuzz_rdgram.cc
  void poll(uint32_t r);
  void send(uint32_t r, uint32_t to, std::size_t size);
  void drain();

  // fuzz_rdgram_inject.cc
  void inject(uint32_t r, Bytes b);
  void inject_segment(uint32_t r, fuzz::Input& in);
  void tamper(uint32_t r, fuzz::Input& in);
  void check_drops();
};

}  // namespace ibbcast::fuzz::rdgram
