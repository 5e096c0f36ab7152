#pragma once
// The parallel work of the host SIMD paths and fused plans, written once for every thread
// runtime of the CPU backends (backend_traits.h: HostThreads). A team of members runs one body;
// each member takes a fixed share of the items (share) or chunks from a common counter (take).
// How items are split never changes a result's bits (docs/reproducibility.md): kernels only give
// a thread whole output elements or whole K chunks.
//
// OpenMP: one parallel region of the requested team size. oneTBB: one task per member in the
// caller's arena (a framework's, so kaas composes with its scheduling), or in an arena of the
// requested size; isolated, so a thread waiting for the team never picks up unrelated work that
// could reuse the caller's thread-local scratch. Work started inside a member (a kernel called
// by a fused plan's member) runs on that member's thread alone, under every runtime.

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kaas/backends/backend_traits.h"

namespace kaas::host {

// A non-owning reference to a callable, for calls that must not be templates (they cross into
// the runtime's own translation unit).
template <class Signature>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): passed like a lambda
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

struct Range {
  int64_t begin = 0, end = 0;
};

// Its methods are always inlined: they are called from translation units built for AVX-512,
// whose out-of-line copy of a shared inline function must never be the one others call.
class TeamMember {
 public:
  TeamMember(int index, int size, std::atomic<int64_t>* counter)
      : index_(index), size_(size), counter_(counter) {}
  [[gnu::always_inline]] int index() const { return index_; }
  [[gnu::always_inline]] int size() const { return size_; }
  // This member's share of n items: contiguous, the same split for the same team size.
  [[gnu::always_inline]] Range share(int64_t n) const {
    return {n * index_ / size_, n * (index_ + 1) / size_};
  }
  // The next `chunk` items of n not yet taken by any member; false once all are taken. One
  // counter per team: use it for one loop only.
  [[gnu::always_inline]] bool take(int64_t n, int64_t chunk, Range& range) {
    const int64_t begin = counter_->fetch_add(chunk, std::memory_order_relaxed);
    if (begin >= n) return false;
    range = {begin, begin + chunk < n ? begin + chunk : n};
    return true;
  }

 private:
  int index_, size_;
  std::atomic<int64_t>* counter_;
};

// Members a team started on this thread now would have (>= 1): 1 for kCaller, inside a team
// member, or (OpenMP) inside another active parallel region.
int team_size(HostThreads threads);

// Runs body on every member of a team of team_size(threads) members (the caller alone when
// `parallel` is false) and returns when all are done; the first exception a member threw is
// rethrown. Returns the team size.
int run_team(HostThreads threads, bool parallel, FunctionRef<void(TeamMember&)> body);

// body(begin, end) over [0, n): each member its share.
void for_shares(HostThreads threads, bool parallel, int64_t n,
                FunctionRef<void(int64_t, int64_t)> body);

}  // namespace kaas::host
