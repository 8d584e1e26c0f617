// libFuzzer target for every parser of configuration text: the unit parsers
// (core/protocol/units.h), algorithm names, each layer's config table as IBBCAST_*
// variables apply it (Config::load_env) and as flags do (Config::set), udp
// group addresses and LogGP parameter files. The first input byte picks the
// parser; the rest is the text.
//
// Invariants beyond "no crash": an accepted value survives formatting and
// parsing again unchanged; an accepted duration is not negative; a rejection
// is kInvalidArgument with a message; a table applies all IBBCAST_* variables
// or none (a bad one leaves the config as it was, and its error names the
// variable); every value a table holds formats to text its own parser takes.

#include <arpa/inet.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/model/loggp_fit.h"
#include "core/protocol/algorithm.h"
#include "core/protocol/units.h"
#include "core/runtime/engine_config_table.h"
#include "dpdk/dpdk_config.h"
#include "fuzz/fuzz_input.h"
#include "mpi-adapter/adapter_config.h"
#include "transports/bootstrap/bootstrap_config.h"
#include "transports/ucx/ucx_config.h"
#include "transports/udp/udp_config.h"
#include "transports/udp/udp_socket.h"
#include "verbs/verbs_config.h"

namespace {

using namespace ibbcast;
using fuzz::check;

void rejected(const Status& st) {
  check(st.code() == Errc::kInvalidArgument && !st.message().empty());
}

void units(uint8_t which, const std::string& s) {
  switch (which % 4) {
    case 0:
      if (auto v = parse_size(s)) {
        check(*parse_size(format_size(*v)) == *v && *parse_size(std::to_string(*v)) == *v);
      } else {
        rejected(v.status());
      }
      break;
    case 1:
      if (auto d = parse_duration(s)) {
        check(d->count() >= 0 && *parse_duration(format_duration(*d)) == *d);
      } else {
        rejected(d.status());
      }
      break;
    case 2:
      if (auto b = parse_bool(s)) {
        check(*parse_bool(format_bool(*b)) == *b);
      } else {
        rejected(b.status());
      }
      break;
    case 3:
      if (auto v = parse_uint(s)) {
        // Digits only: no sign, space or suffix gets through.
        check(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos);
        check(*parse_uint(std::to_string(*v)) == *v);
      } else {
        rejected(v.status());
      }
      break;
  }
}

void algorithm(const std::string& s) {
  if (auto a = parse_algorithm(s)) {
    check(static_cast<int>(*a) < kAlgorithmCount && parse_algorithm(algorithm_name(*a)) == *a);
  }
}

void udp_group(const std::string& s) {
  auto g = udp::parse_group(s);
  if (!g) return rejected(g.status());
  // Canonical text of what was parsed parses to the same address.
  char host[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (g->ipv6) {
    const auto* sa = reinterpret_cast<const sockaddr_in6*>(&g->addr);
    check(sa->sin6_family == AF_INET6 && g->len == sizeof(sockaddr_in6));
    check(IN6_IS_ADDR_MULTICAST(&sa->sin6_addr));
    check(inet_ntop(AF_INET6, &sa->sin6_addr, host, sizeof host) != nullptr);
    port = ntohs(sa->sin6_port);
  } else {
    const auto* sa = reinterpret_cast<const sockaddr_in*>(&g->addr);
    check(sa->sin_family == AF_INET && g->len == sizeof(sockaddr_in));
    check(IN_MULTICAST(ntohl(sa->sin_addr.s_addr)));
    check(inet_ntop(AF_INET, &sa->sin_addr, host, sizeof host) != nullptr);
    port = ntohs(sa->sin_port);
  }
  check(port != 0 && g->text == s);
  const std::string canonical = std::string(g->ipv6 ? "udp6:[" : "udp4:") + host +
                                (g->ipv6 ? "]:" : ":") + std::to_string(port);
  auto again = udp::parse_group(canonical);
  check(again && again->ipv6 == g->ipv6 && again->len == g->len &&
        std::memcmp(&again->addr, &g->addr, g->len) == 0);
}

void loggp(const std::string& s) {
  auto m = parse_loggp_csv(s);
  if (!m) return rejected(m.status());
  for (double v : {m->L, m->o, m->g, m->G})
    check(std::isfinite(v) && v >= 0);
  // What bench --loggp writes from these values reads back (to its 6 digits).
  LogGPFit fit;
  fit.model = *m;
  auto again = parse_loggp_csv(format_loggp_csv(fit, "fuzz"));
  check(again.is_ok());
  const double got[] = {again->L, again->o, again->g, again->G};
  const double want[] = {m->L, m->o, m->g, m->G};
  for (int i = 0; i < 4; ++i)
    check(std::fabs(got[i] - want[i]) <= 1e-5 * want[i] + 1e-300);
}

// Every value formats to text the field's parser takes back unchanged.
template <typename T>
void formats_reparse(std::span<const ConfigField<T>> table, const T& value) {
  for (const auto& f : table) {
    const std::string text = f.format(value);
    T copy = value;
    check(f.parse(copy, text).is_ok());
    check(f.format(copy) == text);
  }
}

template <typename T>
std::vector<std::string> values(const Config<T>& c) {
  std::vector<std::string> v;
  for (const auto& row : c.rows())
    v.push_back(row.value + "/" + row.origin);
  return v;
}

// Records of [field index][value]\n: IBBCAST_* variables, then set() calls.
template <typename T>
void table(std::string_view layer, std::span<const ConfigField<T>> rows, fuzz::Input& in) {
  Config<T> cfg(layer, rows);
  formats_reparse(rows, cfg.value());
  std::map<std::string, std::string, std::less<>> env;
  const uint8_t n_env = in.take<uint8_t>() % 8;
  for (uint8_t i = 0; i < n_env && !in.empty(); ++i) {
    const auto& f = rows[in.take<uint8_t>() % rows.size()];
    env[env_name(f.name)] = in.text_until('\n');
  }
  const auto before = values(cfg);
  const Status st = cfg.load_env([&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  if (!st) {
    rejected(st);
    check(st.message().starts_with("IBBCAST_") && values(cfg) == before);
  }
  formats_reparse(rows, cfg.value());
  while (!in.empty()) {
    const uint8_t pick = in.take<uint8_t>();
    const auto& f = rows[pick % rows.size()];
    const std::string name = pick & 0x80 ? flag_name(f.name) : std::string(f.name);
    const std::string text = in.text_until('\n');
    const auto prior = values(cfg);
    if (Status s = cfg.set(pick & 0x40 ? text : name, text, ConfigOrigin::kFlag); !s) {
      rejected(s);
      check(values(cfg) == prior);
    }
  }
  formats_reparse(rows, cfg.value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t which = in.take<uint8_t>();
  switch (which % 12) {
    case 0:
    case 1:
    case 2:
    case 3:
      units(which % 4, in.rest_text());
      break;
    case 4:
      algorithm(in.rest_text());
      break;
    case 5:
      udp_group(in.rest_text());
      break;
    case 6:
      loggp(in.rest_text());
      break;
    case 7:
      table<EngineConfig>("engine", engine_config_table(), in);
      break;
    case 8:
      table<udp::UdpConfig>("udp", udp::udp_config_table(), in);
      break;
    case 9:
      table<BootstrapConfig>("bootstrap", bootstrap_config_table(), in);
      break;
    case 10:
      (which & 0x40) ? table<ucx::UcxConfig>("ucx", ucx::ucx_config_table(), in)
                     : table<dpdk::DpdkConfig>("dpdk", dpdk::dpdk_config_table(), in);
      break;
    case 11:
      (which & 0x80) ? table<verbs::VerbsConfig>("verbs", verbs::verbs_config_table(), in)
                     : table<mpi::AdapterConfig>("mpi", mpi::adapter_config_table(), in);
      break;
  }
  return 0;
}
