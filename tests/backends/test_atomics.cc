#include <gtest/gtest.h>

#include "kaas/backends/buffer.h"
#include "tests/backends/atomics_probe.h"
#include "tests/support/backends_under_test.h"

namespace kaas::testing {
namespace {

class AtomicsTest : public ::testing::TestWithParam<const Backend*> {};

// Every element of every group hits the same addresses, so lost updates would show.
TEST_P(AtomicsTest, ConcurrentUpdatesAreNotLost) {
  Queue queue(*GetParam());
  const int64_t n = 100'000;
  auto counts = to_device<int32_t>(queue, std::vector<int32_t>{0}),
       high = to_device<int32_t>(queue, std::vector<int32_t>{-1});
  auto low = to_device<int32_t>(queue, std::vector<int32_t>{1 << 30});
  auto wide = to_device<int64_t>(queue, std::vector<int64_t>{0});
  auto real = to_device<float>(queue, std::vector<float>{0.0f, -1.0f, 1e30f});
  run_atomics_probe(queue, n, {counts.view(), wide.view(), high.view(), low.view(), real.view()});
  EXPECT_EQ(to_host(queue, counts)[0], n);
  EXPECT_EQ(to_host(queue, wide)[0], n * (n - 1) / 2);
  EXPECT_EQ(to_host(queue, high)[0], n - 1);
  EXPECT_EQ(to_host(queue, low)[0], 0);
  const auto r = to_host(queue, real);
  EXPECT_EQ(r[0], float(n));  // integers below 2^24 add exactly in any order
  EXPECT_EQ(r[1], float(n - 1));
  EXPECT_EQ(r[2], 0.0f);
}

KAAS_INSTANTIATE_FOR_BACKENDS(AtomicsTest);

}  // namespace
}  // namespace kaas::testing
