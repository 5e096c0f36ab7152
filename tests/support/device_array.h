#pragma once
// Device arrays for the differential harness: the payload sits between two guard zones and
// everything starts poisoned, so a test proves that a kernel wrote every output element and
// nothing outside its output.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "cases/guarded.h"
#include "kaas/backends/buffer.h"

namespace kaas::testing {

using cases::poison_value;
using cases::same_bits;

template <class T>
class GuardedArray {
 public:
  static constexpr size_t kGuard = 67;  // odd, so misaligned overruns land in it too

  // Payload of `n` elements, poisoned.
  GuardedArray(const Queue& queue, size_t n) : queue_(&queue), n_(n) {
    buffer_ = make_device_buffer<T>(queue, n + 2 * kGuard);
    std::vector<T> host(n + 2 * kGuard, poison_value<T>());
    copy_to_device(queue, std::span<const T>(host), buffer_);
    queue.wait();
  }
  // Payload initialised from `values`.
  GuardedArray(const Queue& queue, const std::vector<T>& values)
      : GuardedArray(queue, values.size()) {
    copy_to_device(queue, std::span<const T>(values), buffer_, kGuard);
    queue.wait();
  }

  View1<T> view() const { return make_view(buffer_.data() + kGuard, static_cast<int64_t>(n_)); }
  View1<const T> const_view() const { return view(); }

  // The payload; records a test failure if a guard element changed.
  std::vector<T> read() const {
    std::vector<T> host(n_ + 2 * kGuard);
    copy_to_host(*queue_, buffer_, std::span<T>(host));
    queue_->wait();
    for (size_t i = 0; i < kGuard; ++i) {
      EXPECT_TRUE(same_bits(host[i], poison_value<T>()))
          << "write before the output at -" << (kGuard - i);
      EXPECT_TRUE(same_bits(host[kGuard + n_ + i], poison_value<T>()))
          << "write past the output end at +" << i;
    }
    return {host.begin() + kGuard, host.begin() + kGuard + static_cast<std::ptrdiff_t>(n_)};
  }

 private:
  const Queue* queue_;
  size_t n_;
  DeviceBuffer<T> buffer_;
};

}  // namespace kaas::testing
