#include "kaas/kernels/scan.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cases/scan_cases.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class ScanTest : public ::testing::TestWithParam<const Backend*> {};

// Baton hand-overs of one scan on the emulated GPU: (syncs per tile) x tiles x group size.
int64_t scan_handoffs(int64_t n, int group_size, size_t element_bytes) {
  int64_t steps = 0;
  for (int w = 1; w < group_size; w *= 2) ++steps;
  const int64_t fit = (int64_t(48 * 1024 / element_bytes) - 2 * group_size - 1) / group_size;
  const int64_t items = std::max<int64_t>(1, std::min<int64_t>(32, fit));
  const int64_t tiles = (n + group_size * items - 1) / (group_size * items) + 8;
  return tiles * (steps + 4) * group_size;
}

template <class T>
void check_integer_scan(const Queue& queue, int64_t n, int group_size, bool in_place) {
  SCOPED_TRACE("n=" + std::to_string(n) + " group_size=" + std::to_string(group_size) +
               (in_place ? " in place" : ""));
  const auto x = cases::scan_inputs<T>(n);
  GuardedArray<T> dx(queue, x), dy(queue, static_cast<size_t>(n));
  if (in_place) {
    exclusive_scan<T>(queue, dx.const_view(), dx.view(), {group_size, 0});
  } else {
    exclusive_scan<T>(queue, dx.const_view(), dy.view(), {group_size, 0});
  }
  const auto out = in_place ? dx.read() : dy.read();
  T running = 0;
  int64_t wrong = 0, first_wrong = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] != running && wrong++ == 0) first_wrong = i;
    running += x[i];
  }
  EXPECT_EQ(wrong, 0) << "first wrong element " << first_wrong;
}

TEST_P(ScanTest, Int32AndInt64AreBitExact) {
  Queue queue(*GetParam());
  int64_t skipped = 0;
  for (int64_t n : standard_sizes()) {
    for (int group_size : standard_group_sizes()) {
      if (!affordable(queue.backend(), scan_handoffs(n, group_size, 8))) {
        ++skipped;
        continue;
      }
      check_integer_scan<int32_t>(queue, n, group_size, false);
      check_integer_scan<int64_t>(queue, n, group_size, false);
    }
  }
  if (skipped > 0)
    std::printf("[ emulator ] %lld configurations over budget not run\n", (long long)skipped);
}

TEST_P(ScanTest, InPlace) {
  Queue queue(*GetParam());
  check_integer_scan<int64_t>(queue, 100'003, 64, true);
  check_integer_scan<int32_t>(queue, 33, 7, true);
}

TEST_P(ScanTest, FloatMatchesDoubleReference) {
  Queue queue(*GetParam());
  for (int64_t n : standard_sizes()) {
    for (int group_size : {7, 32, 256}) {
      if (!affordable(queue.backend(), scan_handoffs(n, group_size, 4))) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " group_size=" + std::to_string(group_size));
      const auto x = cases::scan_inputs<float>(n);
      GuardedArray<float> dx(queue, x), dy(queue, static_cast<size_t>(n));
      exclusive_scan<float>(queue, dx.const_view(), dy.view(), {group_size, 0});
      const auto out = dy.read();
      double running = 0, magnitude = 0;
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        wrong += !(std::abs(out[i] - running) <= reduction_tolerance(i, magnitude));
        running += x[i];
        magnitude += std::abs(x[i]);
      }
      EXPECT_EQ(wrong, 0);
    }
  }
}

TEST_P(ScanTest, RejectsBadArguments) {
  Queue queue(*GetParam());
  GuardedArray<int32_t> a(queue, std::vector<int32_t>(100, 1)), b(queue, 99);
  try {
    exclusive_scan<int32_t>(queue, a.const_view(), b.view());
    FAIL() << "extent mismatch accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "exclusive_scan: y extent (same as x): expected 100, received 99");
  }
  View1<int32_t> shifted = a.view();
  shifted.data += 1;
  shifted.extent[0] = 99;
  View1<const int32_t> head = a.const_view();
  head.extent[0] = 99;
  try {
    exclusive_scan<int32_t>(queue, head, shifted);
    FAIL() << "partially overlapping output accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "exclusive_scan: y memory: expected the same as x or disjoint from it, received "
                 "a partial overlap");
  }
  EXPECT_EQ(a.read(), std::vector<int32_t>(100, 1));
}

// Every case of cases/scan_cases.cc, with every implementation, against its host reference.
TEST_P(ScanTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "scan");
}

KAAS_INSTANTIATE_FOR_BACKENDS(ScanTest);

}  // namespace
}  // namespace kaas::testing
