#include "tools/stage/stage_report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/runtime/group.h"

namespace ibbcast::tool::stage {
namespace {

double mib(uint64_t b) {
  return static_cast<double>(b) / (1024.0 * 1024.0);
}

}  // namespace

void RankRecord::set_status(const Status& st) {
  code = static_cast<uint32_t>(st.code());
  std::snprintf(message, sizeof message, "%s", st.is_ok() ? "" : st.to_string().c_str());
}

Status gather_records(Bootstrap& boot, const RankRecord& mine, const std::vector<uint8_t>& extra,
                      std::vector<RankRecord>& all, std::vector<std::vector<uint8_t>>& extras) {
  const std::size_t one = sizeof(RankRecord) + extra.size();
  std::vector<std::byte> in(one), out(one * boot.size());
  std::memcpy(in.data(), &mine, sizeof mine);
  if (!extra.empty()) std::memcpy(in.data() + sizeof mine, extra.data(), extra.size());
  IBBCAST_RETURN_IF_ERROR(boot.allgather(in, out));
  all.resize(boot.size());
  extras.assign(boot.size(), std::vector<uint8_t>(extra.size()));
  for (std::size_t r = 0; r < boot.size(); ++r) {
    std::memcpy(&all[r], out.data() + r * one, sizeof(RankRecord));
    all[r].message[sizeof all[r].message - 1] = '\0';
    if (!extra.empty())
      std::memcpy(extras[r].data(), out.data() + r * one + sizeof(RankRecord), extra.size());
  }
  return Status::ok();
}

std::string rank_list(const std::vector<uint32_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (i > 0) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

int report_failures(const char* phase, const std::vector<RankRecord>& all, bool print) {
  // Each message once, in the order of its first rank; at 1,000 nodes with
  // one cause that is one line, not a thousand on every rank.
  std::vector<std::pair<std::string, std::vector<uint32_t>>> groups;
  int failed = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].ok()) continue;
    ++failed;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == all[r].message; });
    if (it == groups.end()) it = groups.insert(groups.end(), {all[r].message, {}});
    it->second.push_back(static_cast<uint32_t>(r));
  }
  for (const auto& [message, ranks] : groups) {
    if (print)
      std::fprintf(stderr, "ibbcast stage: %s: %s failed: %s\n", phase, rank_list(ranks).c_str(),
                   message.c_str());
  }
  return failed;
}

void print_summary(const std::vector<RankRecord>& all, uint64_t files, uint64_t bytes,
                   uint64_t files_sent, uint64_t broadcasts, const char* digest,
                   const std::string& how) {
  std::printf(
      "ibbcast stage: %zu ranks, %llu files (%.1f MiB), %llu sent in %llu broadcasts, "
      "digest %s\n",
      all.size(), static_cast<unsigned long long>(files), mib(bytes),
      static_cast<unsigned long long>(files_sent), static_cast<unsigned long long>(broadcasts),
      digest);
  std::printf("ibbcast stage: %s\n", how.c_str());
  std::printf("%4s %8s %8s %12s %9s %9s %9s %9s %s\n", "rank", "written", "skipped", "bytes",
              "seconds", "MB/s", "mc_useful", "repaired", "result");
  int bad = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const RankRecord& x = all[r];
    bad += x.ok() ? 0 : 1;
    const double rate = x.seconds > 0 ? static_cast<double>(x.bytes_written) / 1e6 / x.seconds : 0;
    std::printf("%4zu %8llu %8llu %12llu %9.2f %9.1f %9llu %9llu %s\n", r,
                static_cast<unsigned long long>(x.files_written),
                static_cast<unsigned long long>(x.files_skipped),
                static_cast<unsigned long long>(x.bytes_written), x.seconds, rate,
                static_cast<unsigned long long>(x.datagrams_useful),
                static_cast<unsigned long long>(x.repaired), x.ok() ? "ok" : x.message);
  }
  if (bad == 0) {
    std::printf("PASS: every rank holds every file, verified\n");
  } else {
    std::printf("FAIL: %d of %zu ranks failed\n", bad, all.size());
  }
  std::fflush(stdout);
}

namespace {

std::string json_string(const std::string& in) {
  std::string out = "\"";
  for (const char c : in) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string summary_json(const std::vector<RankRecord>& all, const RunFacts& f) {
  int failed = 0;
  for (const RankRecord& r : all)
    failed += r.ok() ? 0 : 1;
  std::string j = "{\n  \"result\": " + json_string(failed == 0 ? "pass" : "fail") +
                  ",\n  \"ranks\": " + std::to_string(all.size()) +
                  ",\n  \"ranks_failed\": " + std::to_string(failed) +
                  ",\n  \"files\": " + std::to_string(f.files) +
                  ",\n  \"bytes\": " + std::to_string(f.bytes) +
                  ",\n  \"files_sent\": " + std::to_string(f.files_sent) +
                  ",\n  \"broadcasts\": " + std::to_string(f.broadcasts) +
                  ",\n  \"digest\": " + json_string(f.digest) +
                  ",\n  \"transport\": " + json_string(f.transport) +
                  ",\n  \"multicast\": " + (f.multicast ? "true" : "false") +
                  ",\n  \"broadcasts_by_algorithm\": {";
  for (std::size_t i = 0; i < f.algorithms.size(); ++i) {
    j += (i == 0 ? "" : ", ") + json_string(f.algorithms[i].first) + ": " +
         std::to_string(f.algorithms[i].second);
  }
  j += "},\n  \"per_rank\": [";
  for (std::size_t r = 0; r < all.size(); ++r) {
    const RankRecord& x = all[r];
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", x.seconds);
    j += std::string(r == 0 ? "\n" : ",\n") + "    {\"rank\": " + std::to_string(r) +
         ", \"written\": " + std::to_string(x.files_written) +
         ", \"skipped\": " + std::to_string(x.files_skipped) +
         ", \"bytes\": " + std::to_string(x.bytes_written) + ", \"seconds\": " + seconds +
         ", \"multicast_useful\": " + std::to_string(x.datagrams_useful) +
         ", \"repaired\": " + std::to_string(x.repaired) +
         ", \"ok\": " + (x.ok() ? "true" : "false") +
         ", \"error\": " + json_string(x.ok() ? "" : x.message) + "}";
  }
  return j + "\n  ]\n}\n";
}

Progress::Progress(const std::string& mode, uint64_t total_bytes) : total_(total_bytes) {
  start_ns_ = monotonic_now().count();
  last_ns_ = start_ns_;
  if (mode == "none") enabled_ = false;
  tty_ = mode == "tty" || (mode == "auto" && ::isatty(STDERR_FILENO) == 1);
}

void Progress::update(uint64_t bytes) {
  if (!enabled_) return;
  const int64_t now = monotonic_now().count();
  // A terminal gets 5 redraws a second; a log a line every 2 s.
  const int64_t every = tty_ ? 200000000 : 2000000000;
  if (now - last_ns_ < every) return;
  last_ns_ = now;
  print(bytes, false);
}

void Progress::done(uint64_t bytes) {
  if (enabled_) print(bytes, true);
}

void Progress::print(uint64_t bytes, bool final_line) {
  const double secs = static_cast<double>(monotonic_now().count() - start_ns_) / 1e9;
  const double rate = secs > 0 ? static_cast<double>(bytes) / secs : 0;
  const double pct =
      total_ > 0 ? 100.0 * static_cast<double>(bytes) / static_cast<double>(total_) : 100;
  const double eta = rate > 0 ? static_cast<double>(total_ - std::min(bytes, total_)) / rate : 0;
  // A terminal gets a bar; a log file gets the same numbers without one.
  std::string bar;
  if (tty_) {
    const auto filled = static_cast<std::size_t>(pct / 5);
    bar = "[" + std::string(std::min<std::size_t>(filled, 20), '#') +
          std::string(20 - std::min<std::size_t>(filled, 20), '.') + "] ";
  }
  std::fprintf(stderr, "%sstage: %s%.1f / %.1f MiB (%5.1f%%) %.1f MB/s ETA %.0fs%s",
               tty_ ? "\r" : "", bar.c_str(), mib(bytes), mib(total_), pct, rate / 1e6, eta,
               tty_ && !final_line ? "   " : "\n");
  std::fflush(stderr);
}

}  // namespace ibbcast::tool::stage
