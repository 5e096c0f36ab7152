#pragma once
// kaas-server's log: one line per event on stderr, "kaas-server: ..."; debug lines only at
// --log-verbose 1 or more (what happened to single requests: drops, their reasons).

#include <string_view>

namespace kaas::server {

void set_log_verbosity(int level);
bool log_debug_enabled();
void log_debug(std::string_view message);  // only when log_debug_enabled()

}  // namespace kaas::server
