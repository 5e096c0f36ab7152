// How the OpenMP backend uses threads (this file is compiled as the openmp backend).

#include <gtest/gtest.h>
#include <omp.h>

#include <set>
#include <thread>
#include <vector>

#include "kaas/backends/kernel.h"
#include "kaas/kernels/axpy.h"

namespace kaas::openmp {
namespace {

struct RecordThreadKernel {
  static constexpr const char* kName = "record_thread_probe";
  void operator()(const Ctx& ctx, int* omp_thread, std::thread::id* os_thread) const {
    omp_thread[ctx.group_id()] = omp_get_thread_num();
    os_thread[ctx.group_id()] = std::this_thread::get_id();
  }
};

TEST(OpenmpBackend, UsesTheCallersThreadCount) {
  Queue queue(backend_instance());
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  EXPECT_EQ(queue.backend().resident_groups(0), 3);
  const int groups = 64;
  std::vector<int> omp_thread(groups, -1);
  std::vector<std::thread::id> os_thread(groups);
  launch(queue, groups, 1, 0, RecordThreadKernel{}, omp_thread.data(), os_thread.data());
  const std::set<int> used(omp_thread.begin(), omp_thread.end());
  EXPECT_EQ(used, (std::set<int>{0, 1, 2}));  // static schedule: every one of the 3 threads
  omp_set_num_threads(1);
  launch(queue, groups, 1, 0, RecordThreadKernel{}, omp_thread.data(), os_thread.data());
  EXPECT_EQ(std::set<int>(omp_thread.begin(), omp_thread.end()), std::set<int>{0});
  omp_set_num_threads(saved);
}

TEST(OpenmpBackend, InsideACallersParallelRegionRunsOnTheCallingThread) {
  Queue queue(backend_instance());
  const int groups = 16;
  bool all_on_caller[2] = {false, false};
#pragma omp parallel num_threads(2)
  {
    std::vector<int> omp_thread(groups, -1);
    std::vector<std::thread::id> os_thread(groups);
    launch(queue, groups, 1, 0, RecordThreadKernel{}, omp_thread.data(), os_thread.data());
    bool same = true;
    for (const auto& id : os_thread) same = same && id == std::this_thread::get_id();
    all_on_caller[omp_get_thread_num()] = same;
  }
  EXPECT_TRUE(all_on_caller[0]);
  EXPECT_TRUE(all_on_caller[1]);
}

TEST(OpenmpBackend, ConcurrentCallersGetCorrectResults) {
  constexpr int kCallers = 4;
  constexpr int64_t n = 50'000;
  std::vector<std::vector<float>> ys(kCallers, std::vector<float>(n, 1.0f));
  std::vector<float> x(n, 2.0f);
#pragma omp parallel for num_threads(kCallers)
  for (int c = 0; c < kCallers; ++c) {
    Queue queue(backend_instance());  // one queue per caller thread
    for (int repeat = 0; repeat <= c; ++repeat) {
      kaas::axpy(queue, 1.0f, make_view(static_cast<const float*>(x.data()), n),
                 make_view(ys[c].data(), n));
    }
  }
  for (int c = 0; c < kCallers; ++c) {
    EXPECT_EQ(ys[c].front(), 1.0f + 2.0f * (c + 1));
    EXPECT_EQ(ys[c].back(), 1.0f + 2.0f * (c + 1));
  }
}

}  // namespace
}  // namespace kaas::openmp
