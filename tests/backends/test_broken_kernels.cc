// Each planted bug must be caught by the backend named in broken_kernels.h, and missed by the
// others (which is why both kinds of CPU backend exist).

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "kaas/backends/backend.h"
#include "kaas/backends/buffer.h"
#include "tests/backends/broken_kernels.h"
#include "tests/support/backends_under_test.h"

namespace kaas::testing {
namespace {

constexpr int kGroupSize = 32;
constexpr int64_t kTiles = 5;
constexpr int64_t kN = kGroupSize * kTiles;

enum class Bug { kMissingSync, kMissingSyncFixed, kReverseLocal, kReverseFixed };

std::vector<float> run(const Backend& backend, Bug bug) {
  Queue queue(backend);
  std::vector<float> x(kN), y(kN, -1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = make_device_buffer<float>(queue, kN), dy = make_device_buffer<float>(queue, kN);
  copy_to_device(queue, std::span<const float>(x), dx);
  copy_to_device(queue, std::span<const float>(y), dy);
  auto call = [&](auto rotate, auto reverse) {
    switch (bug) {
      case Bug::kMissingSync:
        return rotate(queue, dx.view(), dy.view(), kGroupSize, false);
      case Bug::kMissingSyncFixed:
        return rotate(queue, dx.view(), dy.view(), kGroupSize, true);
      case Bug::kReverseLocal:
        return reverse(queue, dx.view(), dy.view(), kGroupSize, false);
      case Bug::kReverseFixed:
        return reverse(queue, dx.view(), dy.view(), kGroupSize, true);
    }
  };
  switch (backend.id()) {
    case BackendId::kSerial:
      call(serial::rotate_missing_sync, serial::reverse_local_across_sync);
      break;
#if KAAS_HAVE_OPENMP
    case BackendId::kOpenmp:
      call(openmp::rotate_missing_sync, openmp::reverse_local_across_sync);
      break;
#endif
#if KAAS_HAVE_TBB
    case BackendId::kTbb:
      call(tbb::rotate_missing_sync, tbb::reverse_local_across_sync);
      break;
#endif
    case BackendId::kGpuEmu:
      call(gpu_emu::rotate_missing_sync, gpu_emu::reverse_local_across_sync);
      break;
    default:
      ADD_FAILURE() << "broken kernels are compiled for CPU backends only";
  }
  copy_to_host(queue, dy, std::span<float>(y));
  queue.wait();
  return y;
}

std::vector<float> expected_rotation() {
  std::vector<float> y(kN);
  for (int64_t t = 0; t < kTiles; ++t)
    for (int64_t e = 0; e < kGroupSize; ++e)
      y[t * kGroupSize + e] = float(t * kGroupSize + (e + 1) % kGroupSize);
  return y;
}

std::vector<float> expected_reversal() {
  std::vector<float> y(kN);
  for (int64_t t = 0; t < kTiles; ++t)
    for (int64_t e = 0; e < kGroupSize; ++e)
      y[t * kGroupSize + kGroupSize - 1 - e] = float(t * kGroupSize + e);
  return y;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class BrokenKernelTest : public ::testing::TestWithParam<const Backend*> {
 protected:
  void SetUp() override {
    if (GetParam()->id() == BackendId::kCuda || GetParam()->id() == BackendId::kHip) {
      GTEST_SKIP() << "the broken kernels are only compiled for the CPU backends";
    }
  }
  bool is_emulator() const { return GetParam()->id() == BackendId::kGpuEmu; }
};

// (a) missing sync(): the emulator runs element 0 to its read before element 1 has written,
// so it reads the poisoned slot; the CPU backends finish the write loop first and hide it.
TEST_P(BrokenKernelTest, MissingSyncIsCaughtByTheEmulatorEveryRun) {
  const auto expected = expected_rotation();
  const auto first = run(*GetParam(), Bug::kMissingSync);
  if (is_emulator()) {
    int64_t wrong = 0;
    for (int64_t i = 0; i < kN; ++i) wrong += !(first[i] == expected[i]);
    EXPECT_EQ(wrong, kTiles * (kGroupSize - 1))
        << "every element but the last of each tile reads an unwritten slot";
    for (int repeat = 0; repeat < 3; ++repeat) {
      EXPECT_TRUE(bitwise_equal(run(*GetParam(), Bug::kMissingSync), first)) << "not deterministic";
    }
  } else {
    EXPECT_EQ(first, expected) << "the CPU backends are expected to hide this race";
  }
  EXPECT_EQ(run(*GetParam(), Bug::kMissingSyncFixed), expected);
}

// (b) sync() inside an element loop with uneven trip counts (40 elements over 32 threads).
TEST_P(BrokenKernelTest, DivergentBarrierIsReportedByTheEmulator) {
  Queue queue(*GetParam());
  std::vector<float> x(40);
  std::iota(x.begin(), x.end(), 1.0f);
  auto dx = make_device_buffer<float>(queue, 40), dy = make_device_buffer<float>(queue, 40);
  copy_to_device(queue, std::span<const float>(x), dx);
  auto call = [&] {
    switch (GetParam()->id()) {
      case BackendId::kSerial:
        return serial::divergent_sync(queue, dx.view(), dy.view(), kGroupSize);
#if KAAS_HAVE_OPENMP
      case BackendId::kOpenmp:
        return openmp::divergent_sync(queue, dx.view(), dy.view(), kGroupSize);
#endif
#if KAAS_HAVE_TBB
      case BackendId::kTbb:
        return tbb::divergent_sync(queue, dx.view(), dy.view(), kGroupSize);
#endif
      default:
        return gpu_emu::divergent_sync(queue, dx.view(), dy.view(), kGroupSize);
    }
  };
  if (is_emulator()) {
    try {
      call();
      FAIL() << "divergent barriers were not reported";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInternal);
      const std::string message = e.what();
      EXPECT_NE(message.find("barrier divergence in kernel divergent_sync, group 0"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("element threads [0,1,2,3,4,5,6,7] wait at sync() call #2"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("returned after 1 sync() calls"), std::string::npos) << message;
    }
    // The emulator is usable again after the abort.
    EXPECT_EQ(run(*GetParam(), Bug::kMissingSyncFixed), expected_rotation());
  } else {
    EXPECT_NO_THROW(call()) << "the CPU backends cannot see divergent barriers";
    std::vector<float> y(40);
    copy_to_host(queue, dy, std::span<float>(y));
    queue.wait();
    EXPECT_EQ(y, x);
  }
}

// (c) a per-element value kept in a local across sync(): correct with a thread per element
// (the emulator, GPUs), wrong where one CPU thread plays the whole group.
TEST_P(BrokenKernelTest, LocalAcrossSyncIsCaughtByTheCpuBackends) {
  const auto expected = expected_reversal();
  const auto got = run(*GetParam(), Bug::kReverseLocal);
  if (is_emulator()) {
    EXPECT_EQ(got, expected);
  } else {
    EXPECT_NE(got, expected);
    // Every element of a tile received the tile's last input, the one value the local held.
    for (int64_t t = 0; t < kTiles; ++t) {
      EXPECT_EQ(got[t * kGroupSize], float(t * kGroupSize + kGroupSize - 1));
      EXPECT_EQ(got[t * kGroupSize + kGroupSize - 1], float(t * kGroupSize + kGroupSize - 1));
    }
  }
  EXPECT_EQ(run(*GetParam(), Bug::kReverseFixed), expected);
}

KAAS_INSTANTIATE_FOR_BACKENDS(BrokenKernelTest);

}  // namespace
}  // namespace kaas::testing
