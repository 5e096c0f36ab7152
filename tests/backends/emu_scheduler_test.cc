// The emulated-GPU execution model itself (this file is compiled as the gpu_emu backend).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "kaas/backends/kernel.h"

namespace kaas::gpu_emu {
namespace {

// Logs (group, element, phase) in execution order; the log is only touched by the thread
// holding the baton, so no locking is needed (and TSan-style races would be a scheduler bug).
struct OrderKernel {
  static constexpr const char* kName = "order_probe";
  void operator()(const Ctx& ctx, std::vector<int>* log, int phases) const {
    for (int p = 0; p < phases; ++p) {
      for (int64_t e : group_elements(ctx, ctx.group_size())) {
        log->push_back(int(ctx.group_id() * 10000 + e * 10 + p));
      }
      ctx.sync();
    }
  }
};

TEST(EmulatedGpu, ElementsTakeTurnsInFixedOrderBetweenBarriers) {
  Queue queue(backend_instance());
  std::vector<int> log;
  launch(queue, 2, 5, 0, OrderKernel{}, &log, 3);
  std::vector<int> expected;
  for (int g = 0; g < 2; ++g)
    for (int p = 0; p < 3; ++p)
      for (int e = 0; e < 5; ++e) expected.push_back(g * 10000 + e * 10 + p);
  EXPECT_EQ(log, expected);
}

struct SharedPoisonKernel {
  static constexpr const char* kName = "shared_poison_probe";
  void operator()(const Ctx& ctx, uint32_t* first_word, int64_t groups) const {
    for (int64_t e : group_elements(ctx, 1)) {
      first_word[ctx.group_id() + e] = *ctx.shared<uint32_t>();
      *ctx.shared<uint32_t>() = 42;  // must not leak into the next group
    }
    (void)groups;
  }
};

TEST(EmulatedGpu, SharedMemoryIsPoisonedForEveryGroup) {
  Queue queue(backend_instance());
  std::vector<uint32_t> seen(3, 0);
  launch(queue, 3, 4, 64, SharedPoisonKernel{}, seen.data(), int64_t{3});
  EXPECT_EQ(seen, std::vector<uint32_t>(3, 0xFFFFFFFFu));
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(seen[0])));
}

struct ThrowingKernel {
  static constexpr const char* kName = "throwing_probe";
  void operator()(const Ctx& ctx) const {
    for (int64_t e : group_elements(ctx, ctx.group_size())) {
      if (e == 2) throw Error(ErrorCode::kInvalidArgument, "element 2 refuses");
    }
    ctx.sync();
  }
};

TEST(EmulatedGpu, AnExceptionInOneElementEndsTheLaunchCleanly) {
  Queue queue(backend_instance());
  try {
    launch(queue, 2, 4, 0, ThrowingKernel{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "element 2 refuses");
  }
  std::vector<int> log;  // the backend still works afterwards
  launch(queue, 1, 2, 0, OrderKernel{}, &log, 1);
  EXPECT_EQ(log, (std::vector<int>{0, 10}));
}

// Element 1 of group 1 skips the barrier the others wait at.
struct DivergentKernel {
  static constexpr const char* kName = "divergent_probe";
  void operator()(const Ctx& ctx, std::vector<int>* destroyed) const {
    struct Guard {  // proves the waiting elements are unwound, not abandoned
      std::vector<int>* log;
      int id;
      ~Guard() { log->push_back(id); }
    } guard{destroyed, int(ctx.group_id() * 100 + group_elements(ctx, 1000).first)};
    if (ctx.group_id() == 1 && group_elements(ctx, 1000).first == 1) return;
    ctx.sync();
  }
};

TEST(EmulatedGpu, BarrierDivergenceIsAnErrorAndEveryElementIsUnwound) {
  Queue queue(backend_instance());
  std::vector<int> destroyed;
  try {
    launch(queue, 3, 4, 0, DivergentKernel{}, &destroyed);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("barrier divergence in kernel divergent_probe, group 1"),
              std::string::npos)
        << e.what();
  }
  std::sort(destroyed.begin(), destroyed.end());
  EXPECT_EQ(destroyed, (std::vector<int>{0, 1, 2, 3, 100, 101, 102, 103}));  // group 2 never ran
}

// Many elements, groups and barriers: a block-wide tree sum through shared memory, as GPU
// kernels write it, gives the exact answer on every group.
struct TreeSumKernel {
  static constexpr const char* kName = "tree_sum_probe";
  void operator()(const Ctx& ctx, int64_t* sums) const {
    auto* partial = ctx.shared<int64_t>();
    const int n = ctx.group_size();
    for (int64_t e : group_elements(ctx, n)) partial[e] = ctx.group_id() * 1000 + e;
    for (int stride = n / 2; stride > 0; stride /= 2) {
      ctx.sync();
      for (int64_t e : group_elements(ctx, stride)) partial[e] += partial[e + stride];
    }
    ctx.sync();
    for (int64_t e : group_elements(ctx, 1)) sums[ctx.group_id() + e] = partial[0];
  }
};

TEST(EmulatedGpu, LargeGroupsWithManyBarriers) {
  Queue queue(backend_instance());
  constexpr int kGroupSize = 1024;
  std::vector<int64_t> sums(6, -1);
  launch(queue, 6, kGroupSize, kGroupSize * sizeof(int64_t), TreeSumKernel{}, sums.data());
  for (int64_t g = 0; g < 6; ++g)
    EXPECT_EQ(sums[size_t(g)], g * 1000 * kGroupSize + int64_t(kGroupSize) * (kGroupSize - 1) / 2);
}

TEST(EmulatedGpu, ZeroGroupsRunNothing) {
  Queue queue(backend_instance());
  std::vector<int> log;
  launch(queue, 0, 32, 0, OrderKernel{}, &log, 1);
  EXPECT_TRUE(log.empty());
}

}  // namespace
}  // namespace kaas::gpu_emu
