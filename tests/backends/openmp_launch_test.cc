// How the OpenMP backend uses threads (this file is compiled as the openmp backend).

#include <gtest/gtest.h>
#include <omp.h>

#include <set>
#include <thread>
#include <vector>

#include "kaas/backends/cpu/openmp_threads.h"
#include "kaas/backends/kernel.h"
#include "kaas/kernels/axpy.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"

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

// The widest OpenMP team each of kaas's kinds of parallel region ran with on the calling thread:
// a launch, gemm (whichever implementation kAuto takes here) and conv2d (likewise).
struct Teams {
  int launch = -1, gemm = -1, conv = -1;
};

Teams run_kernels_and_count_teams() {
  Queue queue(backend_instance());
  Teams teams;
  take_widest_team();
  std::vector<int> omp_thread(64);
  std::vector<std::thread::id> os_thread(64);
  launch(queue, 64, 1, 0, RecordThreadKernel{}, omp_thread.data(), os_thread.data());
  teams.launch = take_widest_team();

  const int64_t m = 96, n = 64, k = 128;
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), y(size_t(m * n));
  GemmParams gemm_params;
  gemm_params.rows_independent = true;
  gemm(queue, make_view<2>(static_cast<const float*>(a.data()), {m, k}),
       make_view<2>(static_cast<const float*>(b.data()), {k, n}), View2<const float>{},
       make_view<2>(y.data(), {m, n}), gemm_params);
  teams.gemm = take_widest_team();
  EXPECT_EQ(y.front(), float(k) * 0.125f);

  const int64_t batch = 4, side = 24, channels = 16;
  std::vector<float> input(size_t(batch * side * side), 1.0f), weight(size_t(channels * 9), 1.0f),
      output(size_t(batch * (side - 2) * (side - 2) * channels));
  Conv2dParams conv_params;
  conv_params.layout = Layout::kNHWC;
  conv2d(queue, make_view<4>(static_cast<const float*>(input.data()), {batch, side, side, 1}),
         make_view<4>(static_cast<const float*>(weight.data()), {channels, 1, 3, 3}),
         View1<const float>{}, make_view<4>(output.data(), {batch, side - 2, side - 2, channels}),
         conv_params);
  teams.conv = take_widest_team();
  EXPECT_EQ(output.front(), 9.0f);
  return teams;
}

// omp_set_num_threads holds for its own thread only; kaas's configured counts hold in every
// region kaas starts from any thread (Triton's instance threads, a std::thread, server workers).
TEST(OpenmpBackend, ConfiguredThreadCountHoldsOnEveryThread) {
  const Backend& backend = backend_instance();
  backend.set_process_threads(3);  // not the core count of a 2-vCPU CI machine
  Teams from_thread, from_own_setting;
  std::thread([&] { from_thread = run_kernels_and_count_teams(); }).join();
  std::thread([&] {
    backend.set_caller_threads(2);  // a thread's own count wins over the process's
    from_own_setting = run_kernels_and_count_teams();
  }).join();
  const Teams from_first = run_kernels_and_count_teams();
  backend.set_process_threads(0);
  for (const Teams& teams : {from_thread, from_first}) {
    EXPECT_EQ(teams.launch, 3);
    EXPECT_EQ(teams.gemm, 3);
    EXPECT_EQ(teams.conv, 3);
  }
  EXPECT_EQ(from_own_setting.launch, 2);
  EXPECT_EQ(from_own_setting.gemm, 2);
  EXPECT_EQ(from_own_setting.conv, 2);
}

}  // namespace
}  // namespace kaas::openmp
