#pragma once
// Device arrays whose payload sits between two poisoned guard zones and starts poisoned, so a
// check proves that a kernel wrote every output element and nothing outside its output.

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "kaas/backends/buffer.h"

namespace kaas::cases {

template <class T>
T poison_value() {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(0x7fa5a5a5u);  // a quiet NaN with a recognisable payload
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(0x7ff4a5a5a5a5a5a5ull);
  } else {
    T value;
    std::memset(&value, 0xA5, sizeof value);
    return value;
  }
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
class Guarded {
 public:
  static constexpr size_t kGuard = 67;  // odd, so misaligned overruns land in it too

  // Payload of `n` elements, poisoned.
  Guarded(const Queue& queue, size_t n) : queue_(&queue), n_(n) {
    buffer_ = make_device_buffer<T>(queue, n + 2 * kGuard);
    std::vector<T> host(n + 2 * kGuard, poison_value<T>());
    copy_to_device(queue, std::span<const T>(host), buffer_);
    queue.wait();
  }
  // Payload initialised from `values`.
  Guarded(const Queue& queue, const std::vector<T>& values) : Guarded(queue, values.size()) {
    copy_to_device(queue, std::span<const T>(values), buffer_, kGuard);
    queue.wait();
  }

  T* data() const { return buffer_.data() + kGuard; }
  size_t size() const { return n_; }
  View1<T> view() const { return make_view(data(), static_cast<int64_t>(n_)); }
  View1<const T> const_view() const { return view(); }

  // The payload; adds to *guard_writes the guard elements that changed.
  std::vector<T> read(int64_t* guard_writes) const {
    std::vector<T> host(n_ + 2 * kGuard);
    copy_to_host(*queue_, buffer_, std::span<T>(host));
    queue_->wait();
    for (size_t i = 0; i < kGuard; ++i) {
      *guard_writes += !same_bits(host[i], poison_value<T>());
      *guard_writes += !same_bits(host[kGuard + n_ + i], poison_value<T>());
    }
    return {host.begin() + kGuard, host.begin() + kGuard + static_cast<std::ptrdiff_t>(n_)};
  }

 private:
  const Queue* queue_;
  size_t n_;
  DeviceBuffer<T> buffer_;
};

}  // namespace kaas::cases
