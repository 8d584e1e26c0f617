#include "tools/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

namespace ibbcast::tool {
namespace {

constexpr double kW = 520, kH = 360;                                 // panel
constexpr double kLeft = 70, kRight = 150, kTop = 34, kBottom = 48;  // plot margins
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000"};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

/// One axis: maps data to [0, 1] and proposes ticks (decades on log axes, 1-2-5 steps else).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double map(double v) const {
    const double a = log ? std::log10(v) : v;
    return (a - lo) / (hi - lo);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      for (double e = std::ceil(lo - 1e-9); e <= hi + 1e-9; ++e)
        t.push_back(std::pow(10, e));
      return t;
    }
    const double raw = (hi - lo) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
    const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step)
      t.push_back(std::abs(v) < 1e-12 * step ? 0 : v);
    return t;
  }
};

Axis make_axis(const Panel& p, bool x) {
  Axis a;
  a.log = x ? p.log_x : p.log_y;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : p.series) {
    for (const auto& [px, py] : s.points) {
      const double v = x ? px : py;
      if (a.log && v <= 0) continue;
      const double m = a.log ? std::log10(v) : v;
      lo = std::min(lo, m);
      hi = std::max(hi, m);
    }
  }
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (!a.log && !x) lo = std::min(lo, 0.0);  // linear y from zero: honest bars of latency
  if (hi - lo < 1e-12) hi = lo + 1;
  if (a.log) lo = std::floor(lo), hi = std::ceil(hi);
  a.lo = lo;
  a.hi = hi;
  return a;
}

void panel_svg(std::string& o, const Panel& p, double ox, double oy) {
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const Axis ax = make_axis(p, true), ay = make_axis(p, false);
  auto X = [&](double v) { return ox + kLeft + ax.map(v) * pw; };
  auto Y = [&](double v) { return oy + kTop + (1 - ay.map(v)) * ph; };
  o += "<text x='" + fmt("%.1f", ox + kW / 2) + "' y='" + fmt("%.1f", oy + 20) +
       "' text-anchor='middle' font-weight='bold'>" + escape(p.title) + "</text>\n";
  o += "<rect x='" + fmt("%.1f", ox + kLeft) + "' y='" + fmt("%.1f", oy + kTop) + "' width='" +
       fmt("%.1f", pw) + "' height='" + fmt("%.1f", ph) + "' fill='none' stroke='#444'/>\n";
  for (double t : ax.ticks()) {
    o += "<line x1='" + fmt("%.1f", X(t)) + "' x2='" + fmt("%.1f", X(t)) + "' y1='" +
         fmt("%.1f", oy + kTop) + "' y2='" + fmt("%.1f", oy + kTop + ph) + "' stroke='#ddd'/>";
    o += "<text x='" + fmt("%.1f", X(t)) + "' y='" + fmt("%.1f", oy + kTop + ph + 16) +
         "' text-anchor='middle' font-size='11'>" + tick_label(t) + "</text>\n";
  }
  for (double t : ay.ticks()) {
    o += "<line x1='" + fmt("%.1f", ox + kLeft) + "' x2='" + fmt("%.1f", ox + kLeft + pw) +
         "' y1='" + fmt("%.1f", Y(t)) + "' y2='" + fmt("%.1f", Y(t)) + "' stroke='#ddd'/>";
    o += "<text x='" + fmt("%.1f", ox + kLeft - 6) + "' y='" + fmt("%.1f", Y(t) + 4) +
         "' text-anchor='end' font-size='11'>" + tick_label(t) + "</text>\n";
  }
  o += "<text x='" + fmt("%.1f", ox + kLeft + pw / 2) + "' y='" + fmt("%.1f", oy + kH - 8) +
       "' text-anchor='middle' font-size='12'>" + escape(p.x_label) + "</text>\n";
  o += "<text transform='translate(" + fmt("%.1f", ox + 16) + "," +
       fmt("%.1f", oy + kTop + ph / 2) + ") rotate(-90)' text-anchor='middle' font-size='12'>" +
       escape(p.y_label) + "</text>\n";
  bool any = false;
  for (std::size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const std::string color = kColors[i % std::size(kColors)];
    std::string pts;
    for (const auto& [x, y] : s.points) {
      if ((ax.log && x <= 0) || (ay.log && y <= 0) || !std::isfinite(x) || !std::isfinite(y))
        continue;
      pts += fmt("%.1f", X(x)) + "," + fmt("%.1f", Y(y)) + " ";
      if (s.points.size() <= 24)
        o += "<circle cx='" + fmt("%.1f", X(x)) + "' cy='" + fmt("%.1f", Y(y)) +
             "' r='2.5' fill='" + color + "'/>";
      any = true;
    }
    o += "<polyline fill='none' stroke='" + color + "' stroke-width='1.6'" +
         (s.dashed ? " stroke-dasharray='5,3'" : "") + " points='" + pts + "'/>\n";
    const double ly = oy + kTop + 12 + 16 * static_cast<double>(i);
    o += "<line x1='" + fmt("%.1f", ox + kW - kRight + 10) + "' x2='" +
         fmt("%.1f", ox + kW - kRight + 28) + "' y1='" + fmt("%.1f", ly - 4) + "' y2='" +
         fmt("%.1f", ly - 4) + "' stroke='" + color + "' stroke-width='2'" +
         (s.dashed ? " stroke-dasharray='5,3'" : "") + "/>";
    o += "<text x='" + fmt("%.1f", ox + kW - kRight + 32) + "' y='" + fmt("%.1f", ly) +
         "' font-size='11'>" + escape(s.name) + "</text>\n";
  }
  if (!any)
    o += "<text x='" + fmt("%.1f", ox + kLeft + pw / 2) + "' y='" +
         fmt("%.1f", oy + kTop + ph / 2) + "' text-anchor='middle' fill='#888'>no data</text>\n";
}

}  // namespace

std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a >= 1e6 && std::fmod(a, 1e5) == 0) return fmt("%g", v / 1e6) + "M";
  if (a >= 1e3 && std::fmod(a, 100) == 0) return fmt("%g", v / 1e3) + "k";
  return fmt("%g", v);
}

std::string svg_document(const std::vector<Panel>& panels, int columns) {
  columns = std::max(columns, 1);
  const int rows = static_cast<int>((panels.size() + columns - 1) / columns);
  const int cols =
      std::min<int>(columns, static_cast<int>(std::max<std::size_t>(panels.size(), 1)));
  std::string o =
      "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' width='" +
      fmt("%.0f", kW * cols) + "' height='" + fmt("%.0f", kH * std::max(rows, 1)) +
      "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  for (std::size_t i = 0; i < panels.size(); ++i)
    panel_svg(o, panels[i], kW * static_cast<double>(i % columns),
              kH * static_cast<double>(i / columns));
  return o + "</svg>\n";
}

Status write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.close();
  if (!f) return make_error(Errc::kInvalidArgument, "cannot write " + path);
  return Status::ok();
}

}  // namespace ibbcast::tool
