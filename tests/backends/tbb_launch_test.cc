// How the tbb backend uses threads (this file is compiled as the tbb backend): inside a
// framework's arena it runs on that arena's threads and nothing else, with a request it runs
// teams of that size, work started inside a team member stays on the member's thread, and a
// member's exception reaches the caller.

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kaas/backends/cpu/host_team.h"
#include "kaas/backends/cpu/host_threads.h"
#include "kaas/backends/kernel.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"

namespace kaas::tbb {
namespace {

struct RecordThreadKernel {
  static constexpr const char* kName = "record_thread_probe";
  void operator()(const Ctx& ctx, std::thread::id* os_thread) const {
    os_thread[ctx.group_id()] = std::this_thread::get_id();
  }
};

// A gemm and a conv through kAuto (the SIMD paths where the CPU has them), checked for their
// values; returns whether both were right.
bool gemm_and_conv_are_right(const Queue& queue) {
  const int64_t m = 96, n = 64, k = 128;
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), y(size_t(m * n));
  GemmParams gemm_params;
  gemm_params.rows_independent = true;
  gemm(queue, make_view<2>(static_cast<const float*>(a.data()), {m, k}),
       make_view<2>(static_cast<const float*>(b.data()), {k, n}), View2<const float>{},
       make_view<2>(y.data(), {m, n}), gemm_params);
  const int64_t batch = 4, side = 24, channels = 16;
  std::vector<float> input(size_t(batch * side * side), 1.0f), weight(size_t(channels * 9), 1.0f),
      output(size_t(batch * (side - 2) * (side - 2) * channels));
  Conv2dParams conv_params;
  conv_params.layout = Layout::kNHWC;
  conv2d(queue, make_view<4>(static_cast<const float*>(input.data()), {batch, side, side, 1}),
         make_view<4>(static_cast<const float*>(weight.data()), {channels, 1, 3, 3}),
         View1<const float>{}, make_view<4>(output.data(), {batch, side - 2, side - 2, channels}),
         conv_params);
  return y.front() == float(k) * 0.125f && y.back() == float(k) * 0.125f &&
         output.front() == 9.0f && output.back() == 9.0f;
}

TEST(TbbBackend, ARequestSetsTheTeamOnEveryThread) {
  const Backend& backend = backend_instance();
  backend.set_process_threads(3);  // not the core count of a 2-vCPU CI machine
  Queue queue(backend);
  EXPECT_EQ(queue.backend().resident_groups(0), 3);
  int from_thread = 0, own = 0;
  std::thread([&] {
    host::take_widest_team();
    EXPECT_TRUE(gemm_and_conv_are_right(Queue(backend)));
    from_thread = host::take_widest_team();
  }).join();
  std::thread([&] {
    backend.set_caller_threads(2);  // a thread's own count wins over the process's
    host::take_widest_team();
    EXPECT_TRUE(gemm_and_conv_are_right(Queue(backend)));
    own = host::take_widest_team();
  }).join();
  backend.set_process_threads(0);
  EXPECT_EQ(from_thread, 3);
  EXPECT_EQ(own, 2);
}

// Counts the groups running at once (each holds its place for ~50 us).
struct ConcurrencyKernel {
  static constexpr const char* kName = "concurrency_probe";
  void operator()(const Ctx&, std::atomic<int>* running, std::atomic<int>* widest) const {
    const int now = running->fetch_add(1) + 1;
    int seen = widest->load();
    while (now > seen && !widest->compare_exchange_weak(seen, now)) {
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    while (std::chrono::steady_clock::now() < until) {
    }
    running->fetch_sub(1);
  }
};

// A framework's arena of 2 threads running 8 "events" at once, each calling kaas: never more
// than 2 of kaas's groups run at the same time (kaas starts no threads of its own), and the
// results are right.
TEST(TbbBackend, InsideAFrameworksArenaUsesNoMoreThanItsThreads) {
  ::tbb::task_arena framework(2);
  std::atomic<int> running{0}, widest{0};
  std::atomic<bool> all_right{true};
  framework.execute([&] {
    ::tbb::parallel_for(0, 8, [&](int) {
      Queue queue(backend_instance());
      launch(queue, 64, 1, 0, ConcurrencyKernel{}, &running, &widest);
      if (!gemm_and_conv_are_right(queue)) all_right = false;
    });
  });
  EXPECT_TRUE(all_right);
  EXPECT_GE(widest.load(), 1);
  EXPECT_LE(widest.load(), 2);
}

TEST(TbbBackend, WorkStartedInsideAMemberStaysOnItsThread) {
  host::set_thread_request(2);
  std::vector<int> inner_sizes(2, 0);
  std::vector<std::thread::id> member_thread(2), inner_thread(2 * 16);
  host::run_team(HostThreads::kTbb, true, [&](host::TeamMember& member) {
    member_thread[size_t(member.index())] = std::this_thread::get_id();
    inner_sizes[size_t(member.index())] = host::team_size(HostThreads::kTbb);
    Queue queue(backend_instance());
    launch(queue, 16, 1, 0, RecordThreadKernel{}, inner_thread.data() + 16 * member.index());
  });
  host::set_thread_request(0);
  EXPECT_EQ(inner_sizes, (std::vector<int>{1, 1}));
  for (int m = 0; m < 2; ++m)
    for (int g = 0; g < 16; ++g)
      EXPECT_EQ(inner_thread[size_t(16 * m + g)], member_thread[size_t(m)]);
}

TEST(TbbBackend, AMembersExceptionReachesTheCaller) {
  host::set_thread_request(3);
  try {
    host::run_team(HostThreads::kTbb, true, [](host::TeamMember& member) {
      if (member.index() == 1) throw std::runtime_error("member 1 failed");
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "member 1 failed");
  }
  host::set_thread_request(0);
}

}  // namespace
}  // namespace kaas::tbb
