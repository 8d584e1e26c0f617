#pragma once
// The single place where the process environment is read. Everything else asks
// through an EnvLookup, so tests can hand in a map instead of mutating environ.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ibbcast {

using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

/// Looks a variable up in the process environment (the only getenv call).
std::optional<std::string> process_env(std::string_view name);

}  // namespace ibbcast
