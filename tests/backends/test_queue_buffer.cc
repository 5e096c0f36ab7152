// Queues, events, buffers and explicit copies on every backend under test.

#include <gtest/gtest.h>

#include <numeric>

#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "tests/support/backends_under_test.h"

namespace kaas::testing {
namespace {

class QueueBufferTest : public ::testing::TestWithParam<const Backend*> {};

TEST_P(QueueBufferTest, RoundTripThroughDeviceAndPinnedMemory) {
  Queue queue(*GetParam());
  std::vector<int32_t> host(1000);
  std::iota(host.begin(), host.end(), -500);
  auto device = make_device_buffer<int32_t>(queue, host.size());
  auto other = make_device_buffer<int32_t>(queue, host.size());
  auto pinned = make_pinned_buffer<int32_t>(queue, host.size());
  copy_to_device(queue, std::span<const int32_t>(host), device);
  copy_device_to_device(queue, device, other);
  copy_to_host(queue, other, pinned.host_span());
  queue.wait();
  EXPECT_TRUE(std::equal(host.begin(), host.end(), pinned.host_span().begin()));

  // partial copies at an offset
  std::vector<int32_t> tail(10);
  copy_to_host(queue, other, std::span<int32_t>(tail), 990);
  queue.wait();
  EXPECT_EQ(tail.front(), 490);
  EXPECT_EQ(tail.back(), 499);
}

TEST_P(QueueBufferTest, ViewsReadBackToTheHost) {
  Queue queue(*GetParam());
  const std::vector<int64_t> values = {5, 6, 7, 8, 9, 10};
  auto device = to_device(queue, values);
  EXPECT_EQ(to_host(queue, View1<const int64_t>(device.view())), values);
  View1<const int64_t> every_other = device.view();
  every_other.extent[0] = 3, every_other.stride[0] = 2;
  if (queue.backend().device_memory_is_host()) {
    EXPECT_EQ(to_host(queue, every_other), (std::vector<int64_t>{5, 7, 9}));
  } else {
    EXPECT_THROW(to_host(queue, every_other), Error);
  }
  EXPECT_TRUE(to_host(queue, View1<const int64_t>{}).empty());
}

TEST_P(QueueBufferTest, CopySizeErrorsNameTheSizes) {
  Queue queue(*GetParam());
  auto device = make_device_buffer<float>(queue, 8);
  std::vector<float> big(9, 1.0f);
  try {
    copy_to_device(queue, std::span<const float>(big), device);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(
        e.what(),
        "copy_to_device: source size: expected at most 8 elements after offset 0, received 9");
  }
  std::vector<float> four(4);
  EXPECT_THROW(copy_to_host(queue, device, std::span<float>(four), 5), Error);
  EXPECT_NO_THROW(copy_to_host(queue, device, std::span<float>(four), 4));
}

TEST_P(QueueBufferTest, BuffersAreMoveOnlyOwners) {
  Queue queue(*GetParam());
  auto a = make_device_buffer<double>(queue, 16);
  double* raw = a.data();
  DeviceBuffer<double> b = std::move(a);
  EXPECT_EQ(b.data(), raw);
  EXPECT_EQ(b.size(), 16u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.size(), 0u);
  static_assert(!std::is_copy_constructible_v<DeviceBuffer<double>>);
  auto empty = make_device_buffer<float>(queue, 0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.view().extent[0], 0);
}

TEST_P(QueueBufferTest, EventsMeasureNonNegativeTime) {
  Queue queue(*GetParam());
  Event start(queue.backend()), stop(queue.backend());
  start.record(queue);
  stop.record(queue);
  stop.wait();
  EXPECT_GE(stop.elapsed_ms_since(start), 0.0);
}

TEST_P(QueueBufferTest, BadDeviceIndexIsInvalidArgument) {
  try {
    Queue queue(*GetParam(), 99);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("received 99"), std::string::npos) << e.what();
  }
}

KAAS_INSTANTIATE_FOR_BACKENDS(QueueBufferTest);

TEST(Queue, UnavailableBackendIsUnavailableError) {
  for (const Backend* b : compiled_backends()) {
    if (b->available()) continue;
    try {
      Queue queue(*b);
      FAIL() << b->name();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    }
  }
}

}  // namespace
}  // namespace kaas::testing
