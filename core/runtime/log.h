#pragma once
// Minimal logging: one line to stderr, prefixed, for errors classified once
// and for the one-time fallback notice. Never on the datapath.

#include <string_view>

namespace ibbcast {

void log_warning(std::string_view message);
void log_info(std::string_view message);

}  // namespace ibbcast
