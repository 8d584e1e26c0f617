#include "core/model/machine_params.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ibbcast {

double MulticastCost::send_us(uint64_t m) const {
  return o_s + static_cast<double>(m > 0 ? m - 1 : 0) * G;
}

double MulticastCost::recv_us(uint64_t m) const {
  return o_r + static_cast<double>(m > 0 ? m - 1 : 0) * G_r;
}

double MulticastCost::hop_us(uint64_t m) const {
  return send_us(m) + L + recv_us(m);
}

double MachineCosts::wire_us(uint64_t m) const {
  // Mbit/s is bits per us.
  return link_mbit > 0 ? static_cast<double>(m) * 8.0 / link_mbit : 0;
}

namespace {

struct Field {
  const char* key;
  double MachineCosts::*machine;
  double MulticastCost::*multicast;
  double LogGP::*loggp;
};

// One row per real-valued key (cpu.cores is a count): exactly one member pointer is set.
constexpr Field kFields[] = {
    {"reliable.L_us", nullptr, nullptr, &LogGP::L},
    {"reliable.o_us", nullptr, nullptr, &LogGP::o},
    {"reliable.g_us", nullptr, nullptr, &LogGP::g},
    {"reliable.G_us_per_byte", nullptr, nullptr, &LogGP::G},
    {"reliable.send_cpu_us_per_byte", &MachineCosts::send_cpu_us_per_byte, nullptr, nullptr},
    {"reliable.recv_cpu_us_per_byte", &MachineCosts::recv_cpu_us_per_byte, nullptr, nullptr},
    {"multicast.o_s_us", nullptr, &MulticastCost::o_s, nullptr},
    {"multicast.o_r_us", nullptr, &MulticastCost::o_r, nullptr},
    {"multicast.L_us", nullptr, &MulticastCost::L, nullptr},
    {"multicast.G_us_per_byte", nullptr, &MulticastCost::G, nullptr},
    {"multicast.recv_G_us_per_byte", nullptr, &MulticastCost::G_r, nullptr},
    {"multicast.call_us", nullptr, &MulticastCost::call, nullptr},
    {"engine.bcast_us", &MachineCosts::bcast_us, nullptr, nullptr},
    {"engine.bcast_datagram_us", &MachineCosts::bcast_datagram_us, nullptr, nullptr},
    {"engine.bcast_node_us", &MachineCosts::bcast_node_us, nullptr, nullptr},
    {"engine.bcast_wake_share", &MachineCosts::bcast_wake_share, nullptr, nullptr},
    {"engine.bcast_cpu_share", &MachineCosts::bcast_cpu_share, nullptr, nullptr},
    {"engine.run_bytes", &MachineCosts::run_bytes, nullptr, nullptr},
    {"engine.run_min_bytes", &MachineCosts::run_min_bytes, nullptr, nullptr},
    {"engine.fragment_us", &MachineCosts::fragment_us, nullptr, nullptr},
    {"engine.byte_us", &MachineCosts::byte_us, nullptr, nullptr},
    {"link.mbit", &MachineCosts::link_mbit, nullptr, nullptr},
    {"link.burst_bytes", &MachineCosts::link_burst_bytes, nullptr, nullptr},
    {"link.idle_us", &MachineCosts::link_idle_us, nullptr, nullptr},
    {"link.previous_broadcasts", &MachineCosts::link_previous_broadcasts, nullptr, nullptr},
};

double* slot(ModelParams& p, const Field& f) {
  if (f.loggp != nullptr) return &(p.reliable.*f.loggp);
  if (f.multicast != nullptr) return &(p.machine.multicast.*f.multicast);
  return &(p.machine.*f.machine);
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

std::string format_model_params(const ModelParams& p, std::string_view comment) {
  std::string out;
  std::string_view c = comment;
  while (!c.empty()) {
    const std::size_t eol = std::min(c.find('\n'), c.size());
    out += "# ";
    out += c.substr(0, eol);
    out += '\n';
    c.remove_prefix(std::min(eol + 1, c.size()));
  }
  ModelParams copy = p;
  char line[128];
  for (const Field& f : kFields) {
    // Unset (bcast_datagram_us, bcast_node_us): the default stands.
    if (*slot(copy, f) < 0) continue;
    std::snprintf(line, sizeof line, "%s = %.6g\n", f.key, *slot(copy, f));
    out += line;
  }
  std::snprintf(line, sizeof line, "cpu.cores = %u\n", p.machine.cores);
  out += line;
  out += p.machine.sharing == CpuSharing::kFair ? "cpu.sharing = fair\n"
                                                : "cpu.sharing = first_come\n";
  return out;
}

Result<ModelParams> parse_model_params(std::string_view text) {
  ModelParams p;
  int number = 0;
  while (!text.empty()) {
    const std::size_t eol = std::min(text.find('\n'), text.size());
    const std::string line = trim(text.substr(0, eol));
    text.remove_prefix(std::min(eol + 1, text.size()));
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = "parameter file line " + std::to_string(number) + ": ";
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      return make_error(Errc::kInvalidArgument, where + "expected key = value, got '" + line + "'");
    const std::string key = trim(std::string_view(line).substr(0, eq));
    const std::string value = trim(std::string_view(line).substr(eq + 1));
    if (key == "cpu.sharing") {
      if (value != "first_come" && value != "fair")
        return make_error(Errc::kInvalidArgument,
                          where + "cpu.sharing: first_come or fair, got '" + value + "'");
      p.machine.sharing = value == "fair" ? CpuSharing::kFair : CpuSharing::kFirstCome;
      continue;
    }
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
      return make_error(Errc::kInvalidArgument, where + key + ": not a number >= 0: " + value);
    if (key == "cpu.cores") {
      if (v != std::floor(v) || v > 65536)
        return make_error(Errc::kInvalidArgument, where + "cpu.cores: a whole number of cores");
      p.machine.cores = static_cast<uint32_t>(v);
      continue;
    }
    if (key == "link.previous_broadcasts" &&
        (v != std::floor(v) || v > MachineCosts::kMaxPreviousBroadcasts)) {
      return make_error(Errc::kInvalidArgument,
                        where + "link.previous_broadcasts: a whole number up to " +
                            std::to_string(static_cast<int>(MachineCosts::kMaxPreviousBroadcasts)));
    }
    if ((key == "engine.bcast_wake_share" || key == "engine.bcast_cpu_share") && v > 1) {
      return make_error(Errc::kInvalidArgument,
                        where + key + ": a share from 0 to 1, got " + value);
    }
    bool known = false;
    for (const Field& f : kFields) {
      if (key == f.key) {
        *slot(p, f) = v;
        known = true;
      }
    }
    if (!known) return make_error(Errc::kInvalidArgument, where + "unknown key '" + key + "'");
  }
  return p;
}

}  // namespace ibbcast
