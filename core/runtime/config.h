#pragma once
// One declarative table per layer. A table lists, for each knob of a typed
// config struct, its name, default, documentation and parser; from it come the
// IBBCAST_* environment variables, the tools' --flags, `ibbcast info --config`
// (value and origin) and docs/config.md. Adding a knob is one table row.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/env.h"

namespace ibbcast {

enum class ConfigOrigin : uint8_t { kDefault, kEnv, kFlag, kApi };
std::string_view config_origin_name(ConfigOrigin o);

template <typename T>
struct ConfigField {
  std::string_view name;           ///< lower_snake; env IBBCAST_<UPPER>, flag --<kebab>
  std::string_view default_value;  ///< parsed at load, so defaults go through the same parser
  std::string_view doc;            ///< one line
  Status (*parse)(T& cfg, std::string_view text);
  std::string (*format)(const T& cfg);
};

/// "fragment_size" → "IBBCAST_FRAGMENT_SIZE".
std::string env_name(std::string_view field);
/// "fragment_size" → "fragment-size".
std::string flag_name(std::string_view field);

/// One row of `ibbcast info --config`.
struct ConfigRow {
  std::string layer, name, value, origin, doc, default_value;
};

/// A config struct plus where each value came from.
template <typename T>
class Config {
 public:
  Config(std::string_view layer, std::span<const ConfigField<T>> table)
      : layer_(layer), table_(table), origins_(table.size(), ConfigOrigin::kDefault) {
    for (const auto& f : table_) {
      Status st = f.parse(value_, f.default_value);
      (void)st;  // defaults are covered by a unit test that parses every table
    }
  }

  const T& value() const { return value_; }
  T& mutable_value() { return value_; }
  std::string_view layer() const { return layer_; }

  /// Applies every IBBCAST_* variable of this table found by `lookup`. All or
  /// nothing: the first bad value is returned as an error naming the variable
  /// and the config is left as it was.
  Status load_env(const EnvLookup& lookup = process_env) {
    T next = value_;
    std::vector<ConfigOrigin> origins = origins_;
    for (std::size_t i = 0; i < table_.size(); ++i) {
      std::string var = env_name(table_[i].name);
      auto v = lookup(var);
      if (!v) continue;
      Status st = table_[i].parse(next, *v);
      if (!st) return make_error(st.code(), var + "=" + *v + ": " + st.message());
      origins[i] = ConfigOrigin::kEnv;
    }
    value_ = std::move(next);
    origins_ = std::move(origins);
    return Status::ok();
  }

  /// Sets one knob by name (flag or API). kInvalidArgument for an unknown name or bad value.
  Status set(std::string_view name, std::string_view text, ConfigOrigin origin) {
    for (std::size_t i = 0; i < table_.size(); ++i) {
      if (table_[i].name != name && flag_name(table_[i].name) != name) continue;
      Status st = table_[i].parse(value_, text);
      if (!st)
        return make_error(st.code(),
                          std::string(name) + "=" + std::string(text) + ": " + st.message());
      origins_[i] = origin;
      return Status::ok();
    }
    return make_error(Errc::kInvalidArgument,
                      "unknown " + std::string(layer_) + " setting '" + std::string(name) + "'");
  }

  bool has(std::string_view name) const {
    for (const auto& f : table_) {
      if (f.name == name || flag_name(f.name) == name) return true;
    }
    return false;
  }

  std::vector<ConfigRow> rows() const {
    std::vector<ConfigRow> out;
    for (std::size_t i = 0; i < table_.size(); ++i) {
      out.push_back({std::string(layer_), std::string(table_[i].name), table_[i].format(value_),
                     std::string(config_origin_name(origins_[i])), std::string(table_[i].doc),
                     std::string(table_[i].default_value)});
    }
    return out;
  }

 private:
  std::string layer_;
  std::span<const ConfigField<T>> table_;
  std::vector<ConfigOrigin> origins_;
  T value_{};
};

}  // namespace ibbcast
