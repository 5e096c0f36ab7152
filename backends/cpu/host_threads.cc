#include "kaas/backends/cpu/host_threads.h"

#include <algorithm>
#include <atomic>

namespace kaas::host {

namespace {

std::atomic<int> process_request{0};
thread_local int thread_request = 0;
thread_local int widest_team = 0;

}  // namespace

int explicit_request() {
  if (thread_request > 0) return thread_request;
  return process_request.load(std::memory_order_relaxed);
}

void set_thread_request(int threads) {
  thread_request = std::max(threads, 0);
}

void set_process_request(int threads) {
  process_request.store(std::max(threads, 0), std::memory_order_relaxed);
}

void note_team(int team) {
  widest_team = std::max(widest_team, team);
}

int take_widest_team() {
  const int widest = widest_team;
  widest_team = 0;
  return widest;
}

}  // namespace kaas::host
