#include "tools/sim_torus.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/model/model_torus.h"
#include "core/protocol/units.h"
#include "tools/svg_plot.h"

namespace ibbcast::tool {
namespace {

Result<TorusShape> parse_shape(const std::string& s) {
  TorusShape shape{0, 0};
  uint64_t nodes = 1;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, 'x');) {
    auto k = parse_uint(item);
    IBBCAST_RETURN_IF_ERROR(k.status());
    if (*k < 2 || *k > 64)
      return make_error(Errc::kInvalidArgument, "--torus: 2..64 per dimension");
    if (shape.k != 0 && shape.k != *k)
      return make_error(Errc::kInvalidArgument,
                        "--torus: a k-ary torus has k nodes in every dimension");
    shape.k = static_cast<uint32_t>(*k);
    ++shape.dims;
    nodes *= *k;
  }
  if (shape.dims == 0 || nodes > 65536)
    return make_error(Errc::kInvalidArgument, "--torus KxK[xK...], at most 65,536 nodes");
  return shape;
}

}  // namespace

int run_torus(const std::string& shape_text, const std::string& partitions, const std::string& csv,
              const std::string& svg) {
  auto shape = parse_shape(shape_text);
  std::vector<uint32_t> rs;
  std::stringstream in(partitions);
  for (std::string item; shape && std::getline(in, item, ',');) {
    auto r = parse_uint(item);
    if (!r || *r < 1) {
      std::fprintf(stderr, "ibbcast sim: --partitions: positive integers\n");
      return 2;
    }
    rs.push_back(static_cast<uint32_t>(*r));
  }
  if (!shape) {
    std::fprintf(stderr, "ibbcast sim: %s\n", shape.status().to_string().c_str());
    return 2;
  }
  if (rs.empty()) rs.push_back(shape->k);
  uint32_t nodes = 1;
  for (uint32_t d = 0; d < shape->dims; ++d)
    nodes *= shape->k;
  std::FILE* out = csv.empty() ? stdout : std::fopen(csv.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "ibbcast sim: cannot write %s\n", csv.c_str());
    return 2;
  }
  std::fputs("algorithm,k,dims,group,partition,latency_us,steps\n", out);
  Panel plot{"Torus multicast, " + shape_text + " (Oral & George eq. 7, Table 1)",
             "group size",
             "us",
             false,
             true,
             {}};
  const std::vector<uint32_t> kNoPartition{0};  // r is Mu-torus's only
  for (int i = 0; i < kTorusAlgorithmCount; ++i) {
    const auto a = static_cast<TorusAlgorithm>(i);
    const bool mu = a == TorusAlgorithm::kMuTorus;
    for (uint32_t r : mu ? rs : kNoPartition) {
      Series s{std::string(torus_algorithm_name(a)) + (mu ? " r=" + std::to_string(r) : ""), {}};
      for (uint32_t g = 2; g <= nodes; ++g) {
        const TorusTiming t = torus_predict(a, *shape, g, r);
        std::fprintf(out, "%s,%u,%u,%u,%u,%.4f,%u\n", std::string(torus_algorithm_name(a)).c_str(),
                     shape->k, shape->dims, g, r, t.latency, t.steps);
        s.points.emplace_back(g, t.latency);
      }
      plot.series.push_back(std::move(s));
    }
  }
  if (out != stdout) std::fclose(out);
  if (!svg.empty()) {
    std::ofstream f(svg);
    f << svg_document({plot}, 1);
    if (!f) {
      std::fprintf(stderr, "ibbcast sim: cannot write %s\n", svg.c_str());
      return 2;
    }
  }
  return 0;
}

}  // namespace ibbcast::tool
