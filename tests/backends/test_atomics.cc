#include <gtest/gtest.h>

#include "backends/buffer.h"
#include "tests/backends/atomics_probe.h"
#include "tests/support/backends_under_test.h"

namespace kaas::testing {
namespace {

class AtomicsTest : public ::testing::TestWithParam<const Backend*> {};

template <class T>
DeviceBuffer<T> filled(const Queue& queue, std::vector<T> values) {
  auto buffer = make_device_buffer<T>(queue, values.size());
  copy_to_device(queue, std::span<const T>(values), buffer);
  return buffer;
}

template <class T>
std::vector<T> read(const Queue& queue, const DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  copy_to_host(queue, buffer, std::span<T>(host));
  queue.wait();
  return host;
}

// Every element of every group hits the same addresses, so lost updates would show.
TEST_P(AtomicsTest, ConcurrentUpdatesAreNotLost) {
  Queue queue(*GetParam());
  const int64_t n = 100'000;
  auto counts = filled<int32_t>(queue, {0}), high = filled<int32_t>(queue, {-1});
  auto low = filled<int32_t>(queue, {1 << 30});
  auto wide = filled<int64_t>(queue, {0});
  auto real = filled<float>(queue, {0.0f, -1.0f, 1e30f});
  run_atomics_probe(queue, n, {counts.view(), wide.view(), high.view(), low.view(), real.view()});
  EXPECT_EQ(read(queue, counts)[0], n);
  EXPECT_EQ(read(queue, wide)[0], n * (n - 1) / 2);
  EXPECT_EQ(read(queue, high)[0], n - 1);
  EXPECT_EQ(read(queue, low)[0], 0);
  const auto r = read(queue, real);
  EXPECT_EQ(r[0], float(n));  // integers below 2^24 add exactly in any order
  EXPECT_EQ(r[1], float(n - 1));
  EXPECT_EQ(r[2], 0.0f);
}

KAAS_INSTANTIATE_FOR_BACKENDS(AtomicsTest);

}  // namespace
}  // namespace kaas::testing
