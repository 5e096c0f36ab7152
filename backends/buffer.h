#pragma once
// Owning, move-only buffers and the explicit copies between them. Kernels never see a buffer,
// only a View of it. Nothing here copies behind the caller's back.

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/common/error.h"

namespace kaas {

namespace detail {
void* allocate_host(size_t bytes);  // 64-byte aligned; throws kResourceExhausted
void free_host(void* ptr) noexcept;
}  // namespace detail

// Where a buffer's memory lives, and how it is allocated and released.
enum class MemorySpace { kHost, kPinnedHost, kDevice };

template <class T, MemorySpace Space>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "kaas buffers hold trivially copyable elements");

 public:
  Buffer() = default;
  // Host buffers need no backend; pinned and device buffers are allocated by `backend`.
  explicit Buffer(size_t count, const Backend* backend = nullptr, int device = 0)
      : backend_(backend), count_(count) {
    if constexpr (Space != MemorySpace::kHost) {
      if (backend == nullptr) {
        throw Error(ErrorCode::kInvalidArgument,
                    "Buffer: a device or pinned buffer needs a backend");
      }
    }
    if (count == 0) return;
    const size_t bytes = count * sizeof(T);
    if constexpr (Space == MemorySpace::kHost) {
      data_ = static_cast<T*>(detail::allocate_host(bytes));
    } else if constexpr (Space == MemorySpace::kPinnedHost) {
      data_ = static_cast<T*>(backend->allocate_pinned(bytes));
    } else {
      data_ = static_cast<T*>(backend->allocate_device(bytes, device));
    }
  }
  ~Buffer() { release(); }
  Buffer(Buffer&& other) noexcept
      : backend_(other.backend_),
        data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      backend_ = other.backend_;
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* data() const { return data_; }
  size_t size() const { return count_; }
  View<T, 1> view() const { return make_view(data_, static_cast<int64_t>(count_)); }
  // Host-side access; only host and pinned buffers are addressable from the CPU.
  std::span<T> host_span() const requires(Space != MemorySpace::kDevice) { return {data_, count_}; }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
    if constexpr (Space == MemorySpace::kHost) {
      detail::free_host(data_);
    } else if constexpr (Space == MemorySpace::kPinnedHost) {
      backend_->free_pinned(data_);
    } else {
      backend_->free_device(data_);
    }
    data_ = nullptr;
  }

  const Backend* backend_ = nullptr;
  T* data_ = nullptr;
  size_t count_ = 0;
};

template <class T>
using HostBuffer = Buffer<T, MemorySpace::kHost>;
template <class T>
using PinnedHostBuffer = Buffer<T, MemorySpace::kPinnedHost>;
template <class T>
using DeviceBuffer = Buffer<T, MemorySpace::kDevice>;

template <class T>
DeviceBuffer<T> make_device_buffer(const Queue& queue, size_t count) {
  return DeviceBuffer<T>(count, &queue.backend(), queue.device());
}
template <class T>
PinnedHostBuffer<T> make_pinned_buffer(const Queue& queue, size_t count) {
  return PinnedHostBuffer<T>(count, &queue.backend(), queue.device());
}

namespace detail {
inline void require_copy_fits(size_t count, size_t offset, size_t capacity, const char* what) {
  if (offset > capacity || count > capacity - offset) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": expected at most " +
                    std::to_string(offset > capacity ? 0 : capacity - offset) +
                    " elements after offset " + std::to_string(offset) + ", received " +
                    std::to_string(count));
  }
}
}  // namespace detail

// Stream-ordered copies. On GPU queues the host memory must stay valid, and results are only
// readable, after queue.wait().
template <class T>
void copy_to_device(const Queue& queue, std::span<const T> src, const DeviceBuffer<T>& dst,
                    size_t dst_offset = 0) {
  detail::require_copy_fits(src.size(), dst_offset, dst.size(), "copy_to_device: source size");
  if (src.empty()) return;
  queue.backend().copy(dst.data() + dst_offset, src.data(), src.size_bytes(),
                       CopyKind::kHostToDevice, queue.native_stream());
}

template <class T>
void copy_to_host(const Queue& queue, const DeviceBuffer<T>& src, std::span<T> dst,
                  size_t src_offset = 0) {
  detail::require_copy_fits(dst.size(), src_offset, src.size(), "copy_to_host: destination size");
  if (dst.empty()) return;
  queue.backend().copy(dst.data(), src.data() + src_offset, dst.size_bytes(),
                       CopyKind::kDeviceToHost, queue.native_stream());
}

template <class T>
void copy_device_to_device(const Queue& queue, const DeviceBuffer<T>& src,
                           const DeviceBuffer<T>& dst) {
  detail::require_copy_fits(src.size(), 0, dst.size(), "copy_device_to_device: source size");
  if (src.size() == 0) return;
  queue.backend().copy(dst.data(), src.data(), src.size() * sizeof(T), CopyKind::kDeviceToDevice,
                       queue.native_stream());
}

// Convenience for tests, tools and set-up code: a new device buffer holding `host`, and a whole
// buffer read back (this one waits for the queue).
template <class T>
DeviceBuffer<T> to_device(const Queue& queue, std::span<const T> host) {
  auto buffer = make_device_buffer<T>(queue, host.size());
  copy_to_device(queue, host, buffer);
  return buffer;
}
template <class T>
DeviceBuffer<T> to_device(const Queue& queue, const std::vector<T>& host) {
  return to_device(queue, std::span<const T>(host));
}
template <class T>
std::vector<T> to_host(const Queue& queue, const DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  copy_to_host(queue, buffer, std::span<T>(host));
  queue.wait();
  return host;
}

// A (small) device view read back to the host, e.g. index arrays a kernel entry point must
// validate before launching. Waits for the queue. A strided view needs host-addressable memory.
template <class T>
std::vector<std::remove_const_t<T>> to_host(const Queue& queue, View1<T> view) {
  std::vector<std::remove_const_t<T>> host(static_cast<size_t>(view.extent[0]));
  if (host.empty()) return host;
  if (view.stride[0] == 1 || host.size() == 1) {
    queue.backend().copy(host.data(), view.data, host.size() * sizeof(T), CopyKind::kDeviceToHost,
                         queue.native_stream());
    queue.wait();
  } else if (queue.backend().device_memory_is_host()) {
    queue.wait();
    for (size_t i = 0; i < host.size(); ++i) host[i] = view[static_cast<int64_t>(i)];
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                "to_host: view stride: expected 1 for device memory, received " +
                    std::to_string(view.stride[0]));
  }
  return host;
}

}  // namespace kaas
