// The simulator against the LogGP model and the thesis's closed forms (Siebert 2006, 1.5):
// exact agreement at zero loss, the E[rounds] of stage 2 under loss, determinism, skew and
// root delay, and a group of 2^20 ranks.
#include "core/model/sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/model/model_loggp.h"
#include "core/model/model_rounds.h"

namespace ibbcast {
namespace {

SimParams params(Algorithm a, uint32_t p, uint64_t n, uint32_t fs = 8192) {
  SimParams sp;
  sp.in.algorithm = a;
  sp.in.p = p;
  sp.in.n = n;
  sp.in.fragment_size = fs;
  return sp;
}

SimResult run(const SimParams& sp) {
  auto r = simulate(sp);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r ? std::move(*r) : SimResult{};
}

constexpr Algorithm kExact[] = {
    Algorithm::kTwoStage, Algorithm::kLinear,   Algorithm::kChain,   Algorithm::kFragmentedChain,
    Algorithm::kBinary,   Algorithm::kBinomial, Algorithm::kKnomial, Algorithm::kFiboTree};

TEST(Sim, MatchesModelWithoutLoss) {
  for (Algorithm a : kExact) {
    for (uint32_t p : {2u, 3u, 7u, 64u, 1000u}) {
      for (uint64_t n : {uint64_t{1}, uint64_t{1000}, uint64_t{65536}, uint64_t{70000}}) {
        SimParams sp = params(a, p, n);
        sp.in.root_delay = 3;
        const Prediction m = predict_loggp(sp.model, sp.in);
        const SimResult s = run(sp);
        ASSERT_TRUE(m.exact);
        EXPECT_NEAR(s.last, m.last, 1e-9 * m.last) << algorithm_name(a) << " p=" << p << " n=" << n;
        EXPECT_NEAR(s.mean, m.mean, 1e-9 * m.mean) << algorithm_name(a) << " p=" << p << " n=" << n;
      }
    }
  }
}

TEST(Sim, ThesisClosedForms) {
  LogGP m;
  m.L = 4, m.o = 1, m.g = 3, m.G = 0.01;  // g >= o, as the thesis assumes
  const double n = 1000, nf = 250, f = 4;
  const uint32_t p = 9;
  // Linear: rank i owns the message at 2 o + L + i (n-1) G + (i-1) g.
  SimParams sp = params(Algorithm::kLinear, p, 1000);
  sp.model = m;
  SimResult s = run(sp);
  for (uint32_t i = 1; i < p; ++i)
    EXPECT_NEAR(s.done[i], 2 * m.o + m.L + i * (n - 1) * m.G + (i - 1) * m.g, 1e-9) << i;
  // Chain: (p-1)(L + 2 o + (n-1) G); fragmented chain:
  // (p-1)(L + 2 o + (n_f-1) G) + (f-1)(g + (n_f-1) G).
  sp.in.algorithm = Algorithm::kChain;
  EXPECT_NEAR(run(sp).last, (p - 1) * (m.L + 2 * m.o + (n - 1) * m.G), 1e-9);
  sp.in.algorithm = Algorithm::kFragmentedChain;
  sp.in.fragment_size = 250;
  EXPECT_NEAR(run(sp).last,
              (p - 1) * (m.L + 2 * m.o + (nf - 1) * m.G) + (f - 1) * (m.g + (nf - 1) * m.G), 1e-9);
  // Binomial: ceil(log2 p) (L + 2 o + (n-1) G), exact for powers of two, a bound otherwise.
  sp.in.algorithm = Algorithm::kBinomial;
  for (uint32_t q : {2u, 8u, 64u, 1024u, 5u, 100u}) {
    sp.in.p = q;
    const double bound = std::ceil(std::log2(q)) * (m.L + 2 * m.o + (n - 1) * m.G);
    if ((q & (q - 1)) == 0) {
      EXPECT_NEAR(run(sp).last, bound, 1e-9) << q;
    } else {
      EXPECT_LE(run(sp).last, bound) << q;
    }
  }
}

TEST(Sim, LowerBoundsForSplitBinaryAndScatterAllgather) {
  for (Algorithm a : {Algorithm::kSplitBinary, Algorithm::kScatterAllgather}) {
    for (uint32_t p : {2u, 5u, 64u, 300u}) {
      for (uint64_t n : {uint64_t{100}, uint64_t{1} << 20}) {
        const SimParams sp = params(a, p, n);
        const Prediction m = predict_loggp(sp.model, sp.in);
        const SimResult s = run(sp);
        EXPECT_FALSE(m.exact);
        EXPECT_GE(s.last, m.last * (1 - 1e-12)) << algorithm_name(a) << " " << p << " " << n;
        EXPECT_GE(s.mean, m.mean * (1 - 1e-12)) << algorithm_name(a) << " " << p << " " << n;
      }
    }
  }
}

TEST(Sim, StageTwoRoundsUnderLoss) {
  // One fragment, q = 0.5: a rank waits on average E[rounds] <= 1 extra reliable hop
  // (thesis 3.2.2), and the model's expectation is what the simulator measures.
  for (double q : {0.1, 0.3, 0.5}) {
    SimParams sp = params(Algorithm::kTwoStage, 200000, 1024);
    sp.in.loss = q;
    sp.seed = 7;
    const SimResult s = run(sp);
    const Prediction m = predict_loggp(sp.model, sp.in);
    const double hop = sp.model.hop(1024);
    const double rounds = (s.mean - hop) / hop;
    EXPECT_NEAR(rounds, expected_rounds_limit(q), 0.02) << q;
    EXPECT_NEAR(s.mean, m.mean, 0.01 * hop) << q;
    EXPECT_NEAR(static_cast<double>(s.lost) / (sp.in.p - 1), q, 0.01) << q;
    EXPECT_EQ(s.repaired, s.lost);  // every lost datagram is repaired over the ring, once
  }
}

TEST(Sim, SendsHashTellsWhichAlgorithmsSendTheSameMessages) {
  // Two ranks: every store-and-forward algorithm sends the root's one message to rank 1.
  const uint64_t one = run(params(Algorithm::kLinear, 2, 1000)).sends_hash;
  EXPECT_NE(one, 0u);
  for (Algorithm a : {Algorithm::kChain, Algorithm::kBinary, Algorithm::kBinomial,
                      Algorithm::kKnomial, Algorithm::kFiboTree}) {
    EXPECT_EQ(run(params(a, 2, 1000)).sends_hash, one) << algorithm_name(a);
  }
  // Two-stage adds the datagram; a pipelined algorithm sends fragments.
  EXPECT_NE(run(params(Algorithm::kTwoStage, 2, 1000)).sends_hash, one);
  EXPECT_NE(run(params(Algorithm::kFragmentedChain, 2, 20000, 8192)).sends_hash,
            run(params(Algorithm::kLinear, 2, 20000, 8192)).sends_hash);
  // Eight ranks: a star, a path and a tree are different messages.
  const uint64_t star = run(params(Algorithm::kLinear, 8, 1000)).sends_hash;
  EXPECT_NE(run(params(Algorithm::kChain, 8, 1000)).sends_hash, star);
  EXPECT_NE(run(params(Algorithm::kBinomial, 8, 1000)).sends_hash, star);
  EXPECT_NE(run(params(Algorithm::kBinomial, 8, 1000)).sends_hash,
            run(params(Algorithm::kChain, 8, 1000)).sends_hash);
}

TEST(Sim, FragmentSizeZeroIsOneByte) {
  // Three one-byte fragments down a chain of 3: each hop costs 2 o + L, the root paces the
  // fragments max(g, o) apart, so rank 2 owns the last at 2 hops + 2 gaps.
  SimParams sp = params(Algorithm::kFragmentedChain, 3, 3, 0);
  const double hop = 2 * sp.model.o + sp.model.L, gap = std::max(sp.model.g, sp.model.o);
  EXPECT_NEAR(run(sp).last, 2 * hop + 2 * gap, 1e-12);
  EXPECT_NEAR(predict_loggp(sp.model, sp.in).last, 2 * hop + 2 * gap, 1e-12);
}

TEST(Sim, DeterministicWithSeed) {
  SimParams sp = params(Algorithm::kTwoStage, 5000, 100000, 4096);
  sp.in.loss = 0.2;
  sp.skew = Skew::kExponential;
  sp.skew_scale = 20;
  sp.seed = 42;
  const SimResult a = run(sp), b = run(sp);
  EXPECT_EQ(a.done, b.done);
  EXPECT_EQ(a.lost, b.lost);
  sp.seed = 43;
  EXPECT_NE(run(sp).done, a.done);
}

TEST(Sim, SkewAndRootDelay) {
  // Early multicast dropped: a root that waits out the skew loses nothing; one that does not
  // loses datagrams to late ranks, which stage 2 repairs.
  SimParams sp = params(Algorithm::kTwoStage, 1000, 1024);
  sp.skew = Skew::kUniform;
  sp.skew_scale = 50;
  sp.early_drop = true;
  sp.in.root_delay = 60;  // > skew scale
  EXPECT_EQ(run(sp).lost, 0u);
  sp.in.root_delay = 0;
  const SimResult late = run(sp);
  EXPECT_GT(late.lost, 0u);
  EXPECT_EQ(late.repaired, late.lost);
  // Nobody completes before it entered, and the chain waits for every late predecessor.
  sp.early_drop = false;
  sp.in.algorithm = Algorithm::kChain;
  const SimResult chain = run(sp);
  const Prediction m = predict_loggp(sp.model, sp.in);
  EXPECT_GT(chain.last, m.last);
  for (uint32_t r = 1; r < sp.in.p; ++r)
    EXPECT_GE(chain.done[r], chain.done[r - 1]) << r;
}

TEST(Sim, MillionRanks) {
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kBinomial, Algorithm::kLinear}) {
    SimParams sp = params(a, kSimMaxRanks, 4096);
    sp.in.loss = 0.05;
    const auto t0 = std::chrono::steady_clock::now();
    const SimResult s = run(sp);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(s.done.size(), kSimMaxRanks);
    EXPECT_GT(s.last, 0);
    std::printf("%s, 2^20 ranks: %.0f ms, %llu events\n", std::string(algorithm_name(a)).c_str(),
                ms, static_cast<unsigned long long>(s.events));
  }
  SimParams too_big = params(Algorithm::kBinomial, kSimMaxRanks + 1, 1);
  EXPECT_FALSE(simulate(too_big).is_ok());
}

}  // namespace
}  // namespace ibbcast
