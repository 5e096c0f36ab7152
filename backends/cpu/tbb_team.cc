#include "kaas/backends/cpu/tbb_team.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/version.h>

#include <map>
#include <memory>
#include <mutex>

#include "kaas/backends/cpu/host_threads.h"

namespace kaas::host::tbb_team {

namespace {

// One arena per requested size, made on first use and kept for the process (arenas are cheap
// when idle; making one per call is not).
::tbb::task_arena& arena_of(int size) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<::tbb::task_arena>> arenas;
  const std::lock_guard lock(mutex);
  auto& arena = arenas[size];
  if (!arena) arena = std::make_unique<::tbb::task_arena>(size);
  return *arena;
}

}  // namespace

int size() {
  const int request = explicit_request();
  return request > 0 ? request : ::tbb::this_task_arena::max_concurrency();
}

void run(int size, FunctionRef<void(int)> member) {
  const auto team = [&] {
    ::tbb::this_task_arena::isolate([&] {
      ::tbb::parallel_for(
          ::tbb::blocked_range<int>(0, size, 1),
          [&](const ::tbb::blocked_range<int>& range) {
            for (int index = range.begin(); index < range.end(); ++index) member(index);
          },
          ::tbb::simple_partitioner());
    });
  };
  if (explicit_request() > 0 && size != ::tbb::this_task_arena::max_concurrency()) {
    arena_of(size).execute(team);
  } else {
    team();
  }
}

const char* version() {
  return TBB_VERSION_STRING;
}

}  // namespace kaas::host::tbb_team
