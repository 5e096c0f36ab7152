// WORK IN PROGRESS (issue 14, not built yet): the `kaas` Python module (nanobind): the installed kaas libraries on numpy arrays. Inputs are
// read in place when they are C-contiguous arrays of the right dtype (no copy); outputs are
// numpy arrays that own the kaas result. The GIL is released while kernels and calls run.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/buffer.h"
#include "kaas/backends/error.h"
#include "kaas/backends/queue.h"
#include "kaas/kernels/activation.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/knn.h"
#include "kaas/kernels/softmax.h"
#include "kaas/server_adapter/client/direct_client.h"
#include "kaas/server_adapter/client/remote_client.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kaas::python {
namespace {

template <class T, size_t Rank>
using In = nb::ndarray<const T, nb::ndim<Rank>, nb::c_contig, nb::device::cpu>;
using AnyIn = nb::ndarray<nb::c_contig, nb::device::cpu>;

// A numpy array owning `values`.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T> values, std::vector<size_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(owned->data(), shape.size(), shape.data(), owner);
}

const Backend& backend_named(const std::string& name) {
  return name == "auto" ? default_backend() : find_backend(name);
}

// Kernels run on any backend: on CPU backends the arrays are used in place; on a GPU the
// inputs go to device memory and the results come back.
template <class T>
class DeviceCopy {
 public:
  // `upload`: the kernel reads the host values (an input); otherwise it only writes (an output).
  DeviceCopy(const Queue& queue, const T* host, size_t count, bool upload) : queue_(queue) {
    if (queue.backend().device_memory_is_host()) {
      pointer_ = const_cast<T*>(host);
    } else {
      buffer_ = make_device_buffer<T>(queue, count);
      if (upload) copy_to_device<T>(queue, std::span<const T>(host, count), buffer_);
      pointer_ = buffer_.data();
    }
  }
  T* data() const { return pointer_; }
  // Results into `host` (a no-op on CPU backends, where the kernel wrote there).
  void to_host(T* host, size_t count) const {
    if (!queue_.backend().device_memory_is_host()) copy_to_host<T>(queue_, buffer_, {host, count});
  }

 private:
  const Queue& queue_;
  DeviceBuffer<T> buffer_;
  T* pointer_ = nullptr;
};

KnnMethod knn_method(const std::string& name) {
  if (name == "auto") return KnnMethod::kAuto;
  if (name == "brute_force") return KnnMethod::kBruteForce;
  if (name == "binned") return KnnMethod::kBinned;
  throw Error(ErrorCode::kInvalidArgument,
              "knn: method '" + name + "' is not one of auto, brute_force, binned");
}

nb::tuple knn_py(In<float, 2> points, In<int64_t, 1> row_splits, int k, const std::string& method,
                 const std::string& backend) {
  const Backend& b = backend_named(backend);
  const KnnMethod m = knn_method(method);
  const int64_t n = int64_t(points.shape(0)), dims = int64_t(points.shape(1));
  const int64_t splits = int64_t(row_splits.shape(0));
  if (k <= 0) throw Error(ErrorCode::kInvalidArgument, "knn: k must be positive, received " + std::to_string(k));
  const size_t out_count = size_t(n) * size_t(k);
  std::vector<int32_t> indices(out_count);
  std::vector<float> distances(out_count);
  {
    nb::gil_scoped_release released;
    Queue queue(b);
    DeviceCopy<float> p(queue, points.data(), size_t(n * dims), true);
    DeviceCopy<int64_t> s(queue, row_splits.data(), size_t(splits), true);
    DeviceCopy<int32_t> i(queue, indices.data(), out_count, false);
    DeviceCopy<float> d(queue, distances.data(), out_count, false);
    knn(queue, make_view<2, const float>(p.data(), {n, dims}),
        make_view<const int64_t>(s.data(), splits), k, make_view<2>(i.data(), {n, int64_t(k)}),
        make_view<2>(d.data(), {n, int64_t(k)}), m);
    i.to_host(indices.data(), out_count);
    d.to_host(distances.data(), out_count);
    queue.wait();
  }
  return nb::make_tuple(to_numpy(std::move(indices), {size_t(n), size_t(k)}),
                        to_numpy(std::move(distances), {size_t(n), size_t(k)}));
}

}  // namespace
}  // namespace kaas::python
