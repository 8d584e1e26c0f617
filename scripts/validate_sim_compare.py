#!/usr/bin/env python3
"""The comparison of scripts/validate_sim.sh: bench rows against sim rows.

Usage: validate_sim_compare.py BENCH_CSV SIM_CSV OUT_CSV OUT_SVG [AUTO_CSV OUT_AUTO_CSV]

BENCH_CSV: `ibbcast bench` rows with a leading shape column (per_node rows are used; the
slowest target's median is the cell's "last", their mean its "mean"). SIM_CSV: `ibbcast sim`
rows with a leading shape column (sim_last_us, sim_mean_us). Writes one row per cell measured
by both (cells where bench reported no per-node time for some target are left out and
counted), an SVG of predicted against measured (log-log, one colour per algorithm, one panel
per shape), and prints per shape and algorithm the median and worst |relative error| of
"last", and how often the model's fastest algorithm was within 10 % of the measured fastest.
Exits 1 when a per-node median is negative or zero (an impossible sample).

AUTO_CSV: `ibbcast sim --derive-auto` rows with a leading shape column: what `auto` picks per
(ranks, size) under the default knobs, the LogGP-calibrated ones and those derived by the
simulator. Prints, for each, in how many cells its pick measured within 10 % of the measured
fastest and its measured time over the fastest's (geometric mean, worst), and writes the
cells with the three picks and their measured times to OUT_AUTO_CSV.

Both counts are also given with picks that sent the same messages as the measured fastest
(equal sends_hash in the sim rows) counted as right: such algorithms differ only by noise;
and auto's with a pick counted as right when it measured within the cell's own noise of the
fastest, where that noise (how far apart algorithms with the same sends measured) exceeds
10 %. The target stays the 10 % count; the others say how much of a miss is resolution.
"""
import csv
import math
import statistics
import sys
from collections import defaultdict


def read_bench(path):
    cells = defaultdict(list)
    bad = []
    for r in csv.DictReader(open(path)):
        if r["method"] != "per_node" or not r["median_us"]:
            continue
        v = float(r["median_us"])
        key = (r["shape"], int(r["ranks"]), r["algorithm"], int(r["size"]))
        if v <= 0:
            bad.append((key, r["target"], v))
        cells[key].append(v)
    return cells, bad


def read_sim(path):
    sim = {}
    names = ["shape"]
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split(",")
            if fields[1] == "algorithm":
                names = ["shape"] + fields[1:]
                continue
            if len(names) == 1:  # the rows carry no header: the sim's own order
                names = ["shape", "algorithm", "ranks", "bytes", "fragment_size", "loss",
                         "root_delay_us", "skew", "skew_scale_us", "seed", "sim_last_us",
                         "sim_mean_us", "sim_p50_us", "sim_p99_us", "model_last_us",
                         "model_mean_us", "model_exact", "lost", "repaired", "events", "wall_ms",
                         "sends_hash", "ranks_per_node"]
            r = dict(zip(names, fields))
            sim[(r["shape"], int(r["ranks"]), r["algorithm"], int(r["bytes"]))] = r
    return sim


COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def svg(rows, path):
    shapes = sorted({r["shape"] for r in rows})
    algos = sorted({r["algorithm"] for r in rows})
    w, h, pad = 460, 420, 60
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (w * len(shapes), h + 20 * ((len(algos) + 4) // 5))]
    vals = [v for r in rows for v in (r["measured"], r["predicted"]) if v > 0]
    lo = math.floor(math.log10(min(vals)))
    hi = math.ceil(math.log10(max(vals)))

    def pos(v, x0):
        f = (math.log10(max(v, 10 ** lo)) - lo) / (hi - lo)
        return f

    for i, shape in enumerate(shapes):
        x0 = i * w
        size = w - 2 * pad
        out.append('<text x="%d" y="18" font-size="13">predicted vs measured, links %s</text>'
                   % (x0 + pad, "unshaped" if shape == "off" else shape))
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#000"/>'
                   % (x0 + pad, 30, size, size))
        for d in range(lo, hi + 1):
            f = (d - lo) / (hi - lo)
            label = "1e%d us" % d
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>'
                       % (x0 + pad + f * size, 30, x0 + pad + f * size, 30 + size))
            out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                       % (x0 + pad, 30 + size - f * size, x0 + pad + size, 30 + size - f * size))
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                       % (x0 + pad + f * size, 30 + size + 14, label))
            out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                       % (x0 + pad - 4, 30 + size - f * size + 4, label))
        # y = x, and the +-20 % band
        for k, dash in ((1.0, ""), (1.2, ' stroke-dasharray="4 3"'), (1 / 1.2, ' stroke-dasharray="4 3"')):
            a, b = 10 ** lo, 10 ** hi
            out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"%s/>'
                       % (x0 + pad + pos(a, x0) * size, 30 + size - pos(a * k, x0) * size,
                          x0 + pad + pos(b / k if k > 1 else b, x0) * size,
                          30 + size - pos(b if k > 1 else b * k, x0) * size, dash))
        out.append('<text x="%d" y="%d" text-anchor="middle">measured (us), dashed: +-20 %%</text>'
                   % (x0 + pad + size // 2, 30 + size + 30))
        for r in rows:
            if r["shape"] != shape:
                continue
            c = COLOURS[algos.index(r["algorithm"]) % len(COLOURS)]
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s" fill-opacity="0.7"/>'
                       % (x0 + pad + pos(r["measured"], x0) * size,
                          30 + size - pos(r["predicted"], x0) * size, c))
    for j, a in enumerate(algos):
        x, y = 10 + (j % 5) * 170, h + 14 + 20 * (j // 5)
        out.append('<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d">%s</text>'
                   % (x, y - 4, COLOURS[j % len(COLOURS)], x + 8, y, a))
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def sends_alike(a, b):
    """Two algorithms that sent the same messages in the simulation (sim's sends_hash): at 2
    ranks six of them send the root's one message; what a measurement tells them apart by is
    noise, so a pick of one where the other measured fastest is no miss."""
    return bool(a["sends"]) and a["sends"] == b["sends"]


def cell_noise(group):
    """The cell's own resolution: how far apart algorithms that sent the same messages
    measured (max over such sets of slowest / fastest - 1; 0 when no two sent alike). The
    10 % judgment of a pick cannot be finer than the measurement that makes it."""
    sets = defaultdict(list)
    for r in group:
        if r["sends"]:
            sets[r["sends"]].append(r["measured"])
    spreads = [max(v) / min(v) - 1 for v in sets.values() if len(v) > 1]
    return max(spreads, default=0.0)


def check_auto(groups, auto_path, out_path):
    picks = {}
    reader = csv.DictReader(open(auto_path))
    for r in reader:
        picks[(r["shape"], int(r["ranks"]), int(r["size"]))] = r
    # Runs before the table have no auto_table column.
    kinds = tuple(k for k in ("auto_default", "auto_loggp", "auto_model", "auto_table")
                  if k in reader.fieldnames)
    good = dict.fromkeys(kinds, 0)
    alike = dict.fromkeys(kinds, 0)
    within_noise = dict.fromkeys(kinds, 0)
    noisy = []
    picked = {k: [] for k in kinds}
    cells = 0
    with open(out_path, "w") as f:
        f.write("shape,ranks,size,fastest,fastest_us,%s\n" % ",".join(
            "%s,%s_us" % (k, k) for k in kinds))
        for key in sorted(groups):
            pick = picks.get(key)
            measured = {r["algorithm"]: r["measured"] for r in groups[key]}
            by_name = {r["algorithm"]: r for r in groups[key]}
            if pick is None or any(pick[k] not in measured for k in kinds):
                continue
            cells += 1
            fastest = min(measured, key=measured.get)
            noise = cell_noise(groups[key])
            if noise > 0.1:
                noisy.append((key, noise))
            f.write("%s,%d,%d,%s,%.1f" % (key + (fastest, measured[fastest])))
            for k in kinds:
                ok = measured[pick[k]] <= 1.1 * measured[fastest]
                good[k] += ok
                alike[k] += ok or sends_alike(by_name[pick[k]], by_name[fastest])
                within_noise[k] += measured[pick[k]] <= (1 + max(0.1, noise)) * measured[fastest]
                picked[k].append(measured[pick[k]] / measured[fastest])
                f.write(",%s,%.1f" % (pick[k], measured[pick[k]]))
            f.write("\n")
    for k in kinds:
        if cells:
            # How often is not how much: also the pick's measured time over the fastest's,
            # geometric mean and worst.
            ratios = picked[k]
            geo = math.exp(sum(math.log(r) for r in ratios) / cells)
            print("%s: pick within 10 %% of the measured fastest in %d of %d cells (%.0f %%); "
                  "its time over the fastest's: geometric mean %.2f, worst %.1f"
                  % (k, good[k], cells, 100.0 * good[k] / cells, geo, max(ratios)))
            print("  %s: or sending the same messages as the measured fastest: %d (%.0f %%)"
                  % (k, alike[k], 100.0 * alike[k] / cells))
            print("  %s: or within the cell's own noise where it exceeds 10 %%: %d (%.0f %%)"
                  % (k, within_noise[k], 100.0 * within_noise[k] / cells))
    if noisy:
        print("cells whose algorithms with the same sends measured more than 10 %% apart: %s"
              % "; ".join("%s %d ranks %d B %.0f %%" % (k + (100 * n,)) for k, n in noisy))


def main():
    bench_path, sim_path, out_csv, out_svg = sys.argv[1:5]
    cells, bad = read_bench(bench_path)
    sim = read_sim(sim_path)
    rows = []
    incomplete = 0
    for key in sorted(cells):
        s = sim.get(key)
        if s is None:
            continue
        if len(cells[key]) < key[1] - 1:
            # A target without a per-node time (bench refused its samples): the slowest
            # rank is unknown, so the cell is left out rather than understated.
            incomplete += 1
            continue
        shape, ranks, algorithm, size = key
        measured = max(cells[key])
        mean = sum(cells[key]) / len(cells[key])
        pl, pm = float(s["sim_last_us"]), float(s["sim_mean_us"])
        rows.append(dict(shape=shape, ranks=ranks, algorithm=algorithm, size=size,
                         sends=s.get("sends_hash", ""),
                         measured=measured, predicted=pl, err=(pl - measured) / measured,
                         measured_mean=mean, predicted_mean=pm, err_mean=(pm - mean) / mean))
    with open(out_csv, "w") as f:
        f.write("shape,ranks,algorithm,size,measured_last_us,predicted_last_us,rel_err_last,"
                "measured_mean_us,predicted_mean_us,rel_err_mean\n")
        for r in rows:
            f.write("%s,%d,%s,%d,%.1f,%.1f,%.3f,%.1f,%.1f,%.3f\n" % (
                r["shape"], r["ranks"], r["algorithm"], r["size"], r["measured"], r["predicted"],
                r["err"], r["measured_mean"], r["predicted_mean"], r["err_mean"]))
    if rows:
        svg(rows, out_svg)
    print("shape,algorithm,cells,median_abs_err,worst_abs_err")
    for shape in sorted({r["shape"] for r in rows}):
        for algorithm in sorted({r["algorithm"] for r in rows}) + ["(all)"]:
            errs = [abs(r["err"]) for r in rows if r["shape"] == shape and
                    (algorithm == "(all)" or r["algorithm"] == algorithm)]
            if errs:
                print("%s,%s,%d,%.3f,%.3f" % (shape, algorithm, len(errs),
                                              statistics.median(errs), max(errs)))
    # Would the model pick the right algorithm? Per (shape, ranks, size): the measured time of
    # the model's fastest against the measured fastest.
    groups = defaultdict(list)
    for r in rows:
        groups[(r["shape"], r["ranks"], r["size"])].append(r)
    good = same = 0
    for g in groups.values():
        pick = min(g, key=lambda r: r["predicted"])
        best = min(g, key=lambda r: r["measured"])
        ok = pick["measured"] <= 1.1 * best["measured"]
        good += ok
        same += ok or sends_alike(pick, best)
    if groups:
        print("model's fastest within 10 %% of the measured fastest: %d of %d cells (%.0f %%)"
              % (good, len(groups), 100.0 * good / len(groups)))
        print("  or sending the same messages as the measured fastest: %d (%.0f %%)"
              % (same, 100.0 * same / len(groups)))
    if len(sys.argv) > 6:
        check_auto(groups, sys.argv[5], sys.argv[6])
    if incomplete:
        print("%d cells left out: a target had no per-node time" % incomplete)
    for key, target, v in bad:
        print("impossible per-node median %.1f us: %s target %s" % (v, key, target), file=sys.stderr)
    return 1 if bad or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
