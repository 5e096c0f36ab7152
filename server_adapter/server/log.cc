#include "kaas/server_adapter/server/log.h"

#include <atomic>
#include <cstdio>

namespace kaas::server {

namespace {
std::atomic<int> verbosity{0};
}

void set_log_verbosity(int level) {
  verbosity.store(level);
}

bool log_debug_enabled() {
  return verbosity.load(std::memory_order_relaxed) >= 1;
}

// One fprintf per line: lines from several threads do not interleave.
void log_debug(std::string_view message) {
  if (log_debug_enabled())
    std::fprintf(stderr, "kaas-server: debug: %.*s\n", int(message.size()), message.data());
}

}  // namespace kaas::server
