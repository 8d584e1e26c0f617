#include "tools/run_report.h"

#include <cstdio>
#include <string>

namespace ibbcast::tool {

void fill_stats(RankReport& r, const GroupStats& s) {
  r.datagrams_sent = s.datagrams_sent;
  r.datagrams_received = s.datagrams_received;
  r.datagrams_useful = s.datagrams_useful;
  r.datagrams_duplicate = s.datagrams_duplicate;
  r.rejected = s.rejected_total();
  r.reasons = s.rejected;
  r.repaired = s.fragments_repaired;
  r.messages_late = s.messages_late;
  r.copies = s.copies;
  r.zero_copy_receives = s.zero_copy_receives;
}

void fill_counters(RankReport& r, const Transport& t, const std::vector<TransportCounter>& more) {
  std::string text;
  for (const auto& list : {t.counters(), more}) {
    for (const auto& c : list) {
      if (c.value != 0) text += (text.empty() ? "" : " ") + c.name + "=" + std::to_string(c.value);
    }
  }
  std::snprintf(r.counters, sizeof r.counters, "%s", text.c_str());
}

Status gather_reports(Bootstrap& boot, const RankReport& mine, std::vector<RankReport>& all) {
  all.resize(boot.size());
  return boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
}

void print_reports(const Args& args, const std::vector<RankReport>& all) {
  const std::string transport = option(args, "transport", "udp");
  const std::string stage2 = transport == "dpdk"    ? args.dpdk.value().reliable
                             : transport == "verbs" ? args.verbs.value().reliable
                                                    : "ucx";
  std::printf("ibbcast run: %zu ranks, %s bytes, root %s, %s iterations, %s multicast + %s\n",
              all.size(), option(args, "size", "256k").c_str(), option(args, "root", "0").c_str(),
              option(args, "iterations", "20").c_str(), transport.c_str(), stage2.c_str());
  if (!all.empty() && all[0].node_aware != 0) {
    std::string leaders;
    for (std::size_t r = 0; r < all.size(); ++r)
      if (all[r].leader != 0) leaders += (leaders.empty() ? "" : ",") + std::to_string(r);
    std::printf("node-aware: %u nodes, leaders (multicast and ring) ranks %s\n", all[0].nodes,
                leaders.c_str());
  }
  std::printf("%4s %-17s %4s %11s %8s %8s %8s %8s %8s %s\n", "rank", "algorithm", "mc", "median_us",
              "dg_sent", "dg_rx", "useful", "dup", "repair", "result");
  uint64_t sent = 0, rx = 0, useful = 0, rejected = 0, repaired = 0, foreign = 0;
  int bad = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const RankReport& x = all[r];
    bad += x.ok ? 0 : 1;
    sent += x.datagrams_sent;
    rx += x.datagrams_received;
    useful += x.datagrams_useful;
    rejected += x.rejected;
    repaired += x.repaired;
    foreign += x.foreign;
    std::printf("%4zu %-17s %4s %11.1f %8llu %8llu %8llu %8llu %8llu %s\n", r,
                std::string(algorithm_name(static_cast<Algorithm>(x.algorithm))).c_str(),
                x.multicast ? "on" : "off", x.median_us,
                static_cast<unsigned long long>(x.datagrams_sent),
                static_cast<unsigned long long>(x.datagrams_received),
                static_cast<unsigned long long>(x.datagrams_useful),
                static_cast<unsigned long long>(x.datagrams_duplicate),
                static_cast<unsigned long long>(x.repaired), x.ok ? "ok" : x.error);
  }
  std::printf(
      "datagrams: sent=%llu received=%llu useful=%llu rejected=%llu foreign=%llu; repaired=%llu\n",
      static_cast<unsigned long long>(sent), static_cast<unsigned long long>(rx),
      static_cast<unsigned long long>(useful), static_cast<unsigned long long>(rejected),
      static_cast<unsigned long long>(foreign), static_cast<unsigned long long>(repaired));
  // By reason, summed over ranks: what a forger's traffic or a fault cost.
  std::string reasons;
  for (std::size_t i = 0; i < kRejectCount; ++i) {
    uint64_t n = 0;
    for (const RankReport& x : all)
      n += x.reasons[i];
    if (n != 0) {
      reasons += " " + std::string(reject_name(static_cast<Reject>(i))) + "=" + std::to_string(n);
    }
  }
  if (!reasons.empty()) std::printf("rejected:%s\n", reasons.c_str());
  // Copies per received fragment: 0 where the NIC put them in place.
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].copies + all[r].zero_copy_receives == 0) continue;
    std::printf("rank %zu receives: copies=%llu zero_copy=%llu\n", r,
                static_cast<unsigned long long>(all[r].copies),
                static_cast<unsigned long long>(all[r].zero_copy_receives));
  }
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].counters[0] != '\0')
      std::printf("rank %zu %s: %s\n", r, transport.c_str(), all[r].counters);
  }
  std::printf("%s: %s\n", bad == 0 ? "PASS" : "FAIL",
              bad == 0 ? "every rank holds the root's bytes after every broadcast"
                       : "some ranks failed (see result column)");
}

}  // namespace ibbcast::tool
