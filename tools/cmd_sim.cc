// `ibbcast sim`: sweeps the discrete-event simulator (core/model/sim.h) over group sizes,
// algorithms, loss rates and root delays, next to the LogGP model (core/model/model_loggp.h).
// CSV to stdout or --csv FILE; --svg FILE draws latency vs ranks, the per-rank completion
// spread, and the effect of loss and of root delay at the largest group. --torus KxK instead
// projects the torus multicast models (tools/sim_torus.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/model/calibrate_machine.h"
#include "core/model/loggp_fit.h"
#include "core/model/machine_fit.h"
#include "core/model/machine_params.h"
#include "core/model/sim.h"
#include "core/protocol/decide.h"
#include "core/protocol/units.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/sim_torus.h"
#include "tools/svg_plot.h"

namespace ibbcast::tool {
namespace {

struct SimSetup {
  std::vector<uint32_t> ranks;
  std::vector<Algorithm> algorithms;
  std::vector<double> losses, delays;  // delays in us
  SimParams base;
  std::string csv, svg;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

double micros(Duration d) {
  return static_cast<double>(d.count()) / 1000.0;
}

Result<std::string> read_whole(const std::string& path, const std::string& option_name) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) return make_error(Errc::kInvalidArgument, option_name + ": cannot read " + path);
  return text.str();
}

Status read_lists(const Args& a, SimSetup& s) {
  for (const auto& r : split(option(a, "ranks", "8,64,512,4k,32k,256k"))) {
    auto v = parse_size(r);  // "1m" = 1,048,576 ranks
    IBBCAST_RETURN_IF_ERROR(v.status());
    if (*v < 2 || *v > kSimMaxRanks)
      return make_error(Errc::kInvalidArgument, "--ranks: 2..1m, got " + r);
    s.ranks.push_back(static_cast<uint32_t>(*v));
  }
  const std::string all =
      "two_stage,linear,chain,fragmented_chain,binary,binomial,knomial,"
      "split_binary,scatter_allgather,fibo_tree";
  for (const auto& name : split(option(a, "algorithms", all))) {
    auto alg = parse_algorithm(name);
    if (!alg || *alg == Algorithm::kAuto)
      return make_error(Errc::kInvalidArgument, "--algorithms: unknown '" + name + "'");
    s.algorithms.push_back(*alg);
  }
  for (const auto& l : split(option(a, "losses", "0"))) {
    auto v = parse_real(l.back() == '%' ? l.substr(0, l.size() - 1) : l);
    IBBCAST_RETURN_IF_ERROR(v.status());
    const double q = l.back() == '%' ? *v / 100 : *v;
    if (!(q >= 0 && q <= 1)) return make_error(Errc::kInvalidArgument, "--losses: 0..1 or %");
    s.losses.push_back(q);
  }
  const std::string delay = format_duration(a.engine.value().root_delay);
  for (const auto& d : split(option(a, "root-delays", delay))) {
    auto v = parse_duration(d);
    IBBCAST_RETURN_IF_ERROR(v.status());
    s.delays.push_back(micros(*v));
  }
  if (s.ranks.empty() || s.algorithms.empty() || s.losses.empty() || s.delays.empty())
    return make_error(Errc::kInvalidArgument, "empty list");
  return Status::ok();
}

Result<SimSetup> read_setup(const Args& a) {
  SimSetup s;
  IBBCAST_RETURN_IF_ERROR(read_lists(a, s));
  const EngineConfig& e = a.engine.value();
  ModelInput& in = s.base.in;
  auto size = parse_size(option(a, "size", "1k"));
  auto seed = parse_uint(option(a, "seed", "1"));
  auto scale = parse_duration(option(a, "skew-scale", "0"));
  for (const Status& st : {size.status(), seed.status(), scale.status()})
    IBBCAST_RETURN_IF_ERROR(st);
  in.n = *size;
  // 0 is "the transport's maximum" for the engine; the simulator has no transport: 8 KiB.
  in.fragment_size = e.fragment_size == 0 ? 8192 : e.fragment_size;
  in.knomial_radix = e.knomial_radix;
  in.fibo_s = e.fibo_s;
  in.fibo_r = e.fibo_r;
  s.base.seed = *seed;
  s.base.skew_scale = micros(*scale);
  const std::string skew = option(a, "skew", "none");
  if (skew == "none") {
    s.base.skew = Skew::kNone;
  } else if (skew == "uniform") {
    s.base.skew = Skew::kUniform;
  } else if (skew == "exponential") {
    s.base.skew = Skew::kExponential;
  } else {
    return make_error(Errc::kInvalidArgument, "--skew none|uniform|exponential");
  }
  s.base.early_drop = option(a, "early-drop", "0") == "1";
  auto ppn = parse_uint(option(a, "ranks-per-node", "1"));
  IBBCAST_RETURN_IF_ERROR(ppn.status());
  if (*ppn < 1 || *ppn > kSimMaxRanks)
    return make_error(Errc::kInvalidArgument, "--ranks-per-node: 1..1m");
  s.base.ranks_per_node = static_cast<uint32_t>(*ppn);
  const std::string loggp_arg = option(a, "loggp", "5,1.5,2,0.0008");
  if (loggp_arg.find(',') == std::string::npos) {
    // A parameter file, as `ibbcast bench --loggp --loggp-out FILE` writes it.
    auto text = read_whole(loggp_arg, "--loggp");
    IBBCAST_RETURN_IF_ERROR(text.status());
    auto m = parse_loggp_csv(*text);
    IBBCAST_RETURN_IF_ERROR(m.status());
    s.base.model = *m;
  } else {
    const auto loggp = split(loggp_arg);
    if (loggp.size() != 4)
      return make_error(Errc::kInvalidArgument, "--loggp L,o,g,G (us, us/B) or FILE");
    double* field[] = {&s.base.model.L, &s.base.model.o, &s.base.model.g, &s.base.model.G};
    for (int i = 0; i < 4; ++i) {
      auto v = parse_real(loggp[i]);
      IBBCAST_RETURN_IF_ERROR(v.status());
      if (*v < 0) return make_error(Errc::kInvalidArgument, "--loggp values must be >= 0");
      *field[i] = *v;
    }
  }
  if (const std::string file = option(a, "params", ""); !file.empty()) {
    // A machine's parameter file, as `ibbcast bench --calibrate` writes it.
    auto text = read_whole(file, "--params");
    IBBCAST_RETURN_IF_ERROR(text.status());
    auto p = parse_model_params(*text);
    IBBCAST_RETURN_IF_ERROR(p.status());
    s.base.model = p->reliable;
    s.base.machine = p->machine;
  }
  s.csv = option(a, "csv", "");
  s.svg = option(a, "svg", "");
  return s;
}

struct Row {
  SimParams sp;
  SimResult r;
  Prediction m;
  double p50 = 0, p99 = 0, wall_ms = 0;
};

double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

/// The per-rank completion times of a run, sorted, as a CDF of at most 200 points.
std::vector<std::pair<double, double>> cdf(std::vector<double> done) {
  done.erase(done.begin());  // the root
  std::sort(done.begin(), done.end());
  std::vector<std::pair<double, double>> pts;
  const std::size_t n = done.size();
  for (std::size_t k = 0; k <= 200 && n > 0; ++k) {
    const std::size_t i = std::min(n - 1, k * (n - 1) / 200);
    pts.emplace_back(done[i], static_cast<double>(i + 1) / static_cast<double>(n));
  }
  return pts;
}

void write_csv(std::FILE* f, const std::vector<Row>& rows) {
  std::fputs(
      "algorithm,ranks,bytes,fragment_size,loss,root_delay_us,skew,skew_scale_us,seed,"
      "sim_last_us,sim_mean_us,sim_p50_us,sim_p99_us,model_last_us,model_mean_us,model_exact,"
      "lost,repaired,events,wall_ms,sends_hash,ranks_per_node\n",
      f);
  static constexpr const char* kSkew[] = {"none", "uniform", "exponential"};
  for (const Row& w : rows) {
    const ModelInput& in = w.sp.in;
    std::fprintf(
        f,
        "%s,%u,%llu,%u,%g,%g,%s,%g,%llu,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%llu,%llu,%llu,%.1f,"
        "%016llx,%u\n",
        std::string(algorithm_name(in.algorithm)).c_str(), in.p,
        static_cast<unsigned long long>(in.n), in.fragment_size, in.loss, in.root_delay,
        kSkew[static_cast<int>(w.sp.skew)], w.sp.skew_scale,
        static_cast<unsigned long long>(w.sp.seed), w.r.last, w.r.mean, w.p50, w.p99, w.m.last,
        w.m.mean, w.m.exact ? 1 : 0, static_cast<unsigned long long>(w.r.lost),
        static_cast<unsigned long long>(w.r.repaired), static_cast<unsigned long long>(w.r.events),
        w.wall_ms, static_cast<unsigned long long>(w.r.sends_hash), w.sp.ranks_per_node);
  }
}

std::vector<Panel> plots(const SimSetup& s, const std::vector<Row>& rows,
                         const std::map<Algorithm, std::vector<double>>& spread) {
  const uint32_t big = *std::max_element(s.ranks.begin(), s.ranks.end());
  const std::string at = ", " + tick_label(big) + " ranks";
  // Log axes where algorithms differ by orders of magnitude (linear and chains vs trees).
  Panel vs_ranks{"Latency vs ranks (last rank)", "ranks", "us", true, true, {}};
  Panel cdf_panel{"Per-rank completion" + at, "us", "fraction done", true, false, {}};
  Panel loss{"two_stage vs multicast loss" + at, "loss", "us", false, false, {}};
  Panel delay{"Effect of root delay" + at, "root delay (us)", "us", false, true, {}};
  Series loss_last{"sim last", {}}, loss_mean{"sim mean", {}},
      loss_model{"model (no skew)", {}, true};
  for (Algorithm a : s.algorithms) {
    const std::string name(algorithm_name(a));
    Series lat{name, {}}, del{name, {}};
    for (const Row& w : rows) {
      if (w.sp.in.algorithm != a) continue;
      const bool first_loss = w.sp.in.loss == s.losses[0];
      const bool first_delay = w.sp.in.root_delay == s.delays[0];
      if (first_loss && first_delay) lat.points.emplace_back(w.sp.in.p, w.r.last);
      if (w.sp.in.p == big && first_loss) del.points.emplace_back(w.sp.in.root_delay, w.r.last);
      if (w.sp.in.p == big && first_delay && a == Algorithm::kTwoStage) {
        loss_last.points.emplace_back(w.sp.in.loss, w.r.last);
        loss_mean.points.emplace_back(w.sp.in.loss, w.r.mean);
        loss_model.points.emplace_back(w.sp.in.loss, w.m.mean);
      }
    }
    vs_ranks.series.push_back(std::move(lat));
    delay.series.push_back(std::move(del));
    if (auto it = spread.find(a); it != spread.end())
      cdf_panel.series.push_back({name, cdf(it->second)});
  }
  loss.series = {loss_last, loss_mean, loss_model};
  return {vs_ranks, cdf_panel, loss, delay};
}

// --derive-auto: per group size, the knobs of `auto` derived by the simulator from the
// machine's parameter file, and what auto picks per size under the default knobs, under
// knobs calibrated by the closed-form LogGP of the same file (what the `loggp` knob does at
// group creation) and under the derived ones. CSV on stdout (or --csv).
int derive_auto(const Args& a, const SimSetup& s) {
  if (option(a, "params", "").empty()) {
    std::fprintf(stderr, "ibbcast sim: --derive-auto needs --params FILE (bench --calibrate)\n");
    return 2;
  }
  std::vector<uint64_t> sizes;
  for (const auto& item : split(option(a, "sizes", "1,1k,64k,1m,16m"))) {
    auto v = parse_size(item);
    if (!v) {
      std::fprintf(stderr, "ibbcast sim: --sizes: %s\n", v.status().to_string().c_str());
      return 2;
    }
    sizes.push_back(*v);
  }
  const EngineConfig& defaults = a.engine.value();
  const ModelParams params{s.base.model, s.base.machine};
  auto margin_arg = parse_real(option(a, "margin", "0.15"));
  if (!margin_arg || *margin_arg < 0) {
    std::fprintf(stderr, "ibbcast sim: --margin: a fraction >= 0\n");
    return 2;
  }
  const double margin = *margin_arg;
  auto table_margin_arg = parse_real(option(a, "table-margin", "0"));
  if (!table_margin_arg || *table_margin_arg < 0) {
    std::fprintf(stderr, "ibbcast sim: --table-margin: a fraction >= 0\n");
    return 2;
  }
  const double table_margin = *table_margin_arg;
  std::vector<AutoTableRow> table;
  std::FILE* out = s.csv.empty() ? stdout : std::fopen(s.csv.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "ibbcast sim: cannot write %s\n", s.csv.c_str());
    return 2;
  }
  std::fputs(
      "ranks,multicast,crossover_nodes,crossover_size,multicast_max_size,scatter_size,fibo_s,"
      "fibo_r,size,auto_default,auto_loggp,auto_model,auto_table\n",
      out);
  for (uint32_t p : s.ranks) {
    CalibrationInput in;
    in.p = p;
    in.fragment_size = s.base.in.fragment_size;
    in.multicast = defaults.multicast;
    in.margin = margin;
    in.linear_check_max = *std::max_element(sizes.begin(), sizes.end());
    // Only this group's side of crossover_nodes matters: p + 1 is "linear here".
    in.max_nodes = p;
    // The thresholds matter here only up to the largest size asked about.
    auto derived = calibrate_machine(params, in, in.linear_check_max);
    if (!derived) {
      std::fprintf(stderr, "ibbcast sim: %s\n", derived.status().to_string().c_str());
      if (out != stdout) std::fclose(out);
      return 2;
    }
    // The table is decided at every power of two up to the largest size (and at the sizes
    // asked about), with the engine's own radix and Fibo-tree: what the sweep measures.
    AutoTableInput ti;
    ti.p = p;
    ti.fragment_size = in.fragment_size;
    ti.multicast = in.multicast;
    ti.knomial_radix = defaults.knomial_radix;
    ti.fibo_s = defaults.fibo_s;
    ti.fibo_r = defaults.fibo_r;
    ti.margin = table_margin;
    for (uint64_t n = 1; n < in.linear_check_max; n *= 2)
      ti.sizes.push_back(n);
    ti.sizes.insert(ti.sizes.end(), sizes.begin(), sizes.end());
    std::sort(ti.sizes.begin(), ti.sizes.end());
    ti.sizes.erase(std::unique(ti.sizes.begin(), ti.sizes.end()), ti.sizes.end());
    auto row = derive_auto_row_machine(params, ti);
    if (!row) {
      std::fprintf(stderr, "ibbcast sim: %s\n", row.status().to_string().c_str());
      if (out != stdout) std::fclose(out);
      return 2;
    }
    table.push_back(*row);
    const Calibration loggp = calibrate(params.reliable, in);
    auto with = [&](const Calibration& c) {
      EngineConfig cfg = defaults;
      cfg.crossover_nodes = c.crossover_nodes;
      cfg.crossover_size = c.crossover_size;
      cfg.multicast_max_size = c.multicast_max_size;
      cfg.scatter_size = c.scatter_size;
      return cfg;
    };
    const EngineConfig by_loggp = with(loggp), by_model = with(*derived);
    EngineConfig by_table = defaults;
    by_table.auto_table = {*row};
    for (uint64_t n : sizes) {
      auto name = [&](const EngineConfig& cfg) {
        return std::string(algorithm_name(decide_algorithm(cfg, p, n, in.multicast)));
      };
      auto size = [](uint64_t v) {
        return v == kNeverCrossover ? std::string("never")
                                    : std::to_string(static_cast<unsigned long long>(v));
      };
      std::fprintf(out, "%u,%d,%u,%s,%s,%s,%u,%u,%llu,%s,%s,%s,%s\n", p, in.multicast ? 1 : 0,
                   derived->crossover_nodes, size(derived->crossover_size).c_str(),
                   size(derived->multicast_max_size).c_str(), size(derived->scatter_size).c_str(),
                   derived->fibo_s, derived->fibo_r, static_cast<unsigned long long>(n),
                   name(defaults).c_str(), name(by_loggp).c_str(), name(by_model).c_str(),
                   name(by_table).c_str());
    }
  }
  if (out != stdout) std::fclose(out);
  // The table's knob for these group sizes (rows ascend as the ranks do).
  std::sort(table.begin(), table.end(),
            [](const AutoTableRow& x, const AutoTableRow& y) { return x.ranks < y.ranks; });
  table.erase(
      std::unique(table.begin(), table.end(),
                  [](const AutoTableRow& x, const AutoTableRow& y) { return x.ranks == y.ranks; }),
      table.end());
  std::fprintf(stderr, "ibbcast sim: auto_table=%s\n", format_auto_table(table).c_str());
  return 0;
}

// --fit-node-us US: engine.bcast_node_us fitted to a measured 1-byte node-aware linear
// broadcast of --ranks ranks on one host (the slowest rank; core/model/machine_fit.h), as CSV
// with the simulator's time at the value and with it unset (a datagram receiver's cost).
int fit_node(const Args& a, const SimSetup& s) {
  auto measured = parse_real(option(a, "fit-node-us", ""));
  if (option(a, "params", "").empty() || s.ranks.size() != 1 || !measured || *measured <= 0) {
    std::fprintf(stderr,
                 "ibbcast sim: --fit-node-us US needs a time > 0, --params FILE and one --ranks\n");
    return 2;
  }
  ModelParams params{s.base.model, s.base.machine};
  params.machine.bcast_node_us = -1;
  const auto failed = [](const Status& st) {
    std::fprintf(stderr, "ibbcast sim: %s\n", st.to_string().c_str());
    return 2;
  };
  auto unset = one_node_time(params, s.ranks[0]);
  if (!unset) return failed(unset.status());
  auto fit = fit_bcast_node_us(params, s.ranks[0], *measured);
  if (!fit) return failed(fit.status());
  params.machine.bcast_node_us = fit->value;
  auto at = one_node_time(params, s.ranks[0]);
  if (!at) return failed(at.status());
  std::printf("bcast_node_us,sim_us,sim_unset_us\n%.6g,%.2f,%.2f\n", fit->value, *at, *unset);
  return 0;
}

}  // namespace

int cmd_sim(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("sim"));
  if (args && args->options.count("torus") != 0) {
    return run_torus(option(*args, "torus", ""), option(*args, "partitions", ""),
                     option(*args, "csv", ""), option(*args, "svg", ""));
  }
  Result<SimSetup> setup = args ? read_setup(*args) : Result<SimSetup>(args.status());
  if (!setup) {
    std::fprintf(stderr, "ibbcast sim: %s\n", setup.status().to_string().c_str());
    return 2;
  }
  const SimSetup& s = *setup;
  if (option(*args, "derive-auto", "") == "1") return derive_auto(*args, s);
  if (args->options.count("fit-node-us") != 0) return fit_node(*args, s);
  const uint32_t big = *std::max_element(s.ranks.begin(), s.ranks.end());
  std::vector<Row> rows;
  std::map<Algorithm, std::vector<double>> spread;  // per-rank times at the largest group
  for (uint32_t p : s.ranks) {
    for (Algorithm a : s.algorithms) {
      for (double q : s.losses) {
        if (q > 0 && a != Algorithm::kTwoStage) continue;  // only multicast datagrams are lost
        for (double d : s.delays) {
          Row w;
          w.sp = s.base;
          w.sp.in.algorithm = a;
          w.sp.in.p = p;
          w.sp.in.loss = q;
          w.sp.in.root_delay = d;
          const auto t0 = std::chrono::steady_clock::now();
          auto r = simulate(w.sp);
          w.wall_ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
          if (!r) {
            std::fprintf(stderr, "ibbcast sim: %s\n", r.status().to_string().c_str());
            return 2;
          }
          w.r = std::move(*r);
          // Node-aware: the closed form of the leaders' part.
          ModelInput leaders = w.sp.in;
          leaders.p /= w.sp.ranks_per_node;
          w.m = predict_loggp(w.sp.model, leaders);
          std::vector<double> others(w.r.done.begin() + 1, w.r.done.end());
          w.p50 = quantile(others, 0.5);
          w.p99 = quantile(others, 0.99);
          if (p == big && q == s.losses[0] && d == s.delays[0]) spread[a] = w.r.done;
          w.r.done = {};  // the CSV needs only the summary
          rows.push_back(std::move(w));
        }
      }
    }
  }
  std::FILE* out = s.csv.empty() ? stdout : std::fopen(s.csv.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "ibbcast sim: cannot write %s\n", s.csv.c_str());
    return 2;
  }
  write_csv(out, rows);
  if (out != stdout) std::fclose(out);
  if (!s.svg.empty()) {
    if (Status st = write_text_file(s.svg, svg_document(plots(s, rows, spread), 2)); !st) {
      std::fprintf(stderr, "ibbcast sim: %s\n", st.to_string().c_str());
      return 2;
    }
  }
  return 0;
}

}  // namespace ibbcast::tool
