#include "tools/cli.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "api/settings.h"

namespace ibbcast::tool {

Result<Args> parse_args(int argc, char** argv, const Command& cmd) {
  const std::string self = "ibbcast " + std::string(cmd.name);
  auto bad = [&self](const std::string& what) {
    return make_error(Errc::kInvalidArgument, what + " (" + self + " --help lists what it takes)");
  };
  auto find = [&cmd](const std::string& key) -> const OptionDoc* {
    for (const OptionDoc& o : cmd.options)
      if (o.name == key) return &o;
    return nullptr;
  };
  Args a;
  warn_unknown_env();
  // Environment first, so flags override it.
  IBBCAST_RETURN_IF_ERROR(a.engine.load_env());
  IBBCAST_RETURN_IF_ERROR(a.udp.load_env());
  IBBCAST_RETURN_IF_ERROR(a.dpdk.load_env());
  IBBCAST_RETURN_IF_ERROR(a.verbs.load_env());
  IBBCAST_RETURN_IF_ERROR(a.ucx.load_env());
  IBBCAST_RETURN_IF_ERROR(a.bootstrap.load_env());
  IBBCAST_RETURN_IF_ERROR(a.mpi.load_env());
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      // "-" is a file name (stdin); any other single dash is a mistyped option.
      if (arg.size() > 1 && arg[0] == '-') return bad("unknown option " + arg);
      if (a.positional.size() >= cmd.max_positional)
        return bad("unexpected argument '" + arg + "'");
      a.positional.push_back(arg);
      continue;
    }
    std::string key = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_value = true;
    }
    const OptionDoc* own = find(key);
    const bool knob =
        cmd.takes_knobs && (a.engine.has(key) || a.udp.has(key) || a.dpdk.has(key) ||
                            a.verbs.has(key) || a.ucx.has(key) || a.bootstrap.has(key));
    if (own == nullptr && !knob) return bad("unknown option --" + key);
    if (own != nullptr && own->value.empty()) {
      a.options[key] = has_value ? value : "1";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) return bad("--" + key + " needs a value");
      value = argv[++i];
    }
    if (own != nullptr) {
      a.options[key] = value;
    } else if (a.engine.has(key)) {
      IBBCAST_RETURN_IF_ERROR(a.engine.set(key, value, ConfigOrigin::kFlag));
    } else if (a.udp.has(key)) {
      IBBCAST_RETURN_IF_ERROR(a.udp.set(key, value, ConfigOrigin::kFlag));
    } else if (a.dpdk.has(key)) {
      IBBCAST_RETURN_IF_ERROR(a.dpdk.set(key, value, ConfigOrigin::kFlag));
    } else if (a.verbs.has(key)) {
      IBBCAST_RETURN_IF_ERROR(a.verbs.set(key, value, ConfigOrigin::kFlag));
    } else if (a.ucx.has(key)) {
      IBBCAST_RETURN_IF_ERROR(a.ucx.set(key, value, ConfigOrigin::kFlag));
    } else if (a.bootstrap.has(key)) {
      IBBCAST_RETURN_IF_ERROR(a.bootstrap.set(key, value, ConfigOrigin::kFlag));
    }
  }
  if (a.positional.size() < cmd.min_positional) return bad("needs " + std::string(cmd.synopsis));
  return a;
}

std::vector<ConfigRow> Args::rows() const {
  std::vector<ConfigRow> r = engine.rows();
  for (auto& row : udp.rows())
    r.push_back(std::move(row));
  for (auto& row : dpdk.rows())
    r.push_back(std::move(row));
  for (auto& row : verbs.rows())
    r.push_back(std::move(row));
  for (auto& row : ucx.rows())
    r.push_back(std::move(row));
  for (auto& row : bootstrap.rows())
    r.push_back(std::move(row));
  for (auto& row : mpi.rows())
    r.push_back(std::move(row));
  return r;
}

std::string option(const Args& a, const std::string& key, const std::string& def) {
  auto it = a.options.find(key);
  return it == a.options.end() ? def : it->second;
}

Result<double> parse_real(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v))
    return make_error(Errc::kInvalidArgument, "not a number: " + s);
  return v;
}

}  // namespace ibbcast::tool
