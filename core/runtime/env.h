#pragma once
// The single place where the process environment is read. Everything else asks
// through an EnvLookup, so tests can hand in a map instead of mutating environ.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ibbcast {

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// Looks a variable up in the process environment (the only getenv call).
std::optional<std::string> process_env(std::string_view name);

/// The names of the process environment's variables that start with `prefix`.
std::vector<std::string> process_env_names(std::string_view prefix);

/// Of `names`, those not in `known`, each with the closest known name when
/// one is near (a typo: at most a third of the name's letters differ), else "".
std::vector<std::pair<std::string, std::string>> unknown_names(
    const std::vector<std::string>& names, const std::vector<std::string>& known);

}  // namespace ibbcast
