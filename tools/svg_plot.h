#pragma once
// A small SVG line-plot writer for `ibbcast sim`: panels of x/y series on linear or log axes,
// laid out in a grid, as one self-contained SVG document (no scripts, no external fonts).

#include <string>
#include <utility>
#include <vector>

#include "core/protocol/status.h"

namespace ibbcast::tool {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  ///< (x, y); plotted in the given order
  bool dashed = false;
};

struct Panel {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;  ///< log axes drop points <= 0
  std::vector<Series> series;
};

/// The SVG document of `panels`, `columns` per row (>= 1), each panel 520 x 360 px.
/// Empty panels get axes and a "no data" note.
std::string svg_document(const std::vector<Panel>& panels, int columns);

/// Writes `text` to `path` (a plot, a CSV); kInvalidArgument naming the path.
Status write_text_file(const std::string& path, const std::string& text);

/// "1.5k", "2M", "0.25": short tick labels.
std::string tick_label(double v);

}  // namespace ibbcast::tool
