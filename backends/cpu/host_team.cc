#include "kaas/backends/cpu/host_team.h"

#include <exception>
#include <mutex>

#include "kaas/backends/cpu/host_threads.h"
#include "kaas/backends/cpu/openmp_threads.h"
#include "kaas/backends/cpu/tbb_team.h"
#include "kaas/build_config.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kaas::host {

namespace {

thread_local bool inside_member = false;

// Marks the calling thread as running a member for the member's duration.
class MemberScope {
 public:
  MemberScope() : saved_(inside_member) { inside_member = true; }
  ~MemberScope() { inside_member = saved_; }
  MemberScope(const MemberScope&) = delete;
  MemberScope& operator=(const MemberScope&) = delete;

 private:
  bool saved_;
};

// The first exception any member threw, kept for the caller.
class FirstFailure {
 public:
  void keep(std::exception_ptr failure) {
    const std::lock_guard lock(mutex_);
    if (!first_) first_ = std::move(failure);
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

void run_member(int index, int size, std::atomic<int64_t>& counter,
                FunctionRef<void(TeamMember&)> body, FirstFailure& failure) {
  const MemberScope scope;
  TeamMember member(index, size, &counter);
  try {
    body(member);
  } catch (...) {
    failure.keep(std::current_exception());
  }
}

}  // namespace

int team_size(HostThreads threads) {
  if (inside_member) return 1;
  switch (threads) {
    case HostThreads::kCaller:
      return 1;
    case HostThreads::kOpenmp:
#if defined(_OPENMP)
      return omp_in_parallel() ? 1 : openmp::requested_team();
#else
      return 1;
#endif
    case HostThreads::kTbb:
#if KAAS_HAVE_TBB
      return tbb_team::size();
#else
      return 1;
#endif
  }
  return 1;
}

int run_team(HostThreads threads, bool parallel, FunctionRef<void(TeamMember&)> body) {
  const int size = parallel ? team_size(threads) : 1;
  std::atomic<int64_t> counter{0};
  FirstFailure failure;
  if (size <= 1) {
    run_member(0, 1, counter, body, failure);
    failure.rethrow();
    return 1;
  }
  int ran = size;
  switch (threads) {
    case HostThreads::kOpenmp:
#if defined(_OPENMP)
#pragma omp parallel num_threads(size)
    {
      const int team = omp_get_num_threads();
      if (omp_get_thread_num() == 0) ran = team;
      run_member(omp_get_thread_num(), team, counter, body, failure);
    }
#endif
    break;
    case HostThreads::kTbb:
#if KAAS_HAVE_TBB
      tbb_team::run(size, [&](int index) { run_member(index, size, counter, body, failure); });
#endif
      break;
    case HostThreads::kCaller:
      break;
  }
  note_team(ran);
  failure.rethrow();
  return ran;
}

void for_shares(HostThreads threads, bool parallel, int64_t n,
                FunctionRef<void(int64_t, int64_t)> body) {
  run_team(threads, parallel && n > 1, [&](TeamMember& member) {
    const Range range = member.share(n);
    if (range.begin < range.end) body(range.begin, range.end);
  });
}

}  // namespace kaas::host
