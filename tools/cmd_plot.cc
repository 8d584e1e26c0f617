// `ibbcast plot CSV... --svg FILE [--size S]`: the plots of `ibbcast bench`
// output (tools/bench_plot.h) — latency vs size, vs ranks, and the per-rank
// completion spread — from one run or a sweep (scripts/bench_sweep.sh).
// Needs no fabric; "-" reads standard input.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "core/protocol/units.h"
#include "tools/bench_plot.h"
#include "tools/cli.h"
#include "tools/commands.h"

namespace ibbcast::tool {
namespace {

Result<std::string> read_all(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream f(path);
  if (!f) return make_error(Errc::kInvalidArgument, "cannot read " + path);
  text << f.rdbuf();
  return text.str();
}

int fail(const Status& st) {
  std::fprintf(stderr, "ibbcast plot: %s\n", st.to_string().c_str());
  return 2;
}

}  // namespace

int cmd_plot(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("plot"));
  if (!args) return fail(args.status());
  const std::string svg = option(*args, "svg", "");
  if (svg.empty() || args->positional.empty()) {
    return fail(make_error(Errc::kInvalidArgument,
                           "usage: ibbcast plot BENCH.csv... --svg OUT.svg [--size S]"));
  }
  uint64_t size = 0;
  if (const std::string s = option(*args, "size", ""); !s.empty()) {
    auto v = parse_size(s);
    if (!v) return fail(v.status());
    size = *v;
  }
  std::string text;
  for (const std::string& path : args->positional) {
    auto part = read_all(path);
    if (!part) return fail(part.status());
    text += *part + "\n";
  }
  auto rows = parse_bench_csv(text);
  if (!rows) return fail(rows.status());
  // A median of 0 or less is no latency (older per-node CSVs have some):
  // left out of every panel, and said.
  const auto impossible = std::erase_if(*rows, [](const BenchRow& r) { return r.median_us <= 0; });
  if (impossible > 0) {
    std::fprintf(stderr, "ibbcast plot: left out %zu rows whose median is 0 or negative\n",
                 static_cast<std::size_t>(impossible));
  }
  if (rows->empty()) return fail(make_error(Errc::kInvalidArgument, "no row with a latency"));
  if (size != 0 && std::none_of(rows->begin(), rows->end(),
                                [size](const BenchRow& r) { return r.size == size; })) {
    // Otherwise two of the three panels are empty, without a word.
    std::set<uint64_t> sizes;
    for (const BenchRow& r : *rows)
      sizes.insert(r.size);
    std::string have;
    for (uint64_t v : sizes)
      have += (have.empty() ? "" : ", ") + format_size(v);
    return fail(make_error(
        Errc::kInvalidArgument,
        "--size " + format_size(size) + ": the CSV has no row of that size; it has " + have));
  }
  if (Status st = write_text_file(svg, svg_document(bench_panels(*rows, size), 2)); !st) {
    return fail(st);
  }
  std::fprintf(stderr, "ibbcast plot: %zu rows -> %s\n", rows->size(), svg.c_str());
  return 0;
}

}  // namespace ibbcast::tool
