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

namespace {

// kaas.Error and its subclasses, one per ErrorCode a caller handles differently; each also
// derives from the matching Python built-in so `except ValueError` works as expected.
struct ErrorTypes {
  PyObject* base = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* not_found = nullptr;
  PyObject* unavailable = nullptr;
  PyObject* deadline_exceeded = nullptr;
  PyObject* resource_exhausted = nullptr;
  PyObject* unimplemented = nullptr;
};
ErrorTypes error_types;

PyObject* new_error_type(nb::module_& m, const char* name, PyObject* base, PyObject* builtin,
                         const char* doc) {
  PyObject* bases = builtin ? PyTuple_Pack(2, base, builtin) : PyTuple_Pack(1, base);
  const std::string qualified = std::string("kaas.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_DECREF(bases);
  if (!type) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

PyObject* error_type_for(kaas::ErrorCode code) {
  switch (code) {
    case kaas::ErrorCode::kInvalidArgument: return error_types.invalid_argument;
    case kaas::ErrorCode::kNotFound: return error_types.not_found;
    case kaas::ErrorCode::kUnavailable: return error_types.unavailable;
    case kaas::ErrorCode::kDeadlineExceeded: return error_types.deadline_exceeded;
    case kaas::ErrorCode::kResourceExhausted: return error_types.resource_exhausted;
    case kaas::ErrorCode::kUnimplemented: return error_types.unimplemented;
    case kaas::ErrorCode::kInternal: break;
  }
  return error_types.base;
}

// Raises the kaas.Error subclass of `e` with `code` (the kaas name, e.g. "INVALID_ARGUMENT").
void raise_kaas_error(const kaas::Error& e) {
  PyObject* type = error_type_for(e.code());
  PyObject* instance = PyObject_CallFunction(type, "s", e.what());
  if (!instance) return;  // the constructor's own error stays set
  PyObject* code = PyUnicode_FromString(std::string(kaas::to_string(e.code())).c_str());
  PyObject_SetAttrString(instance, "code", code);
  Py_XDECREF(code);
  PyErr_SetObject(type, instance);
  Py_DECREF(instance);
}

}  // namespace

NB_MODULE(_kaas, m) {
  m.doc() = "kaas: HEP reconstruction kernels, models and the inference client on numpy arrays";

  error_types.base = new_error_type(m, "Error", PyExc_Exception, nullptr,
                                    "A kaas error; .code names its kind (e.g. INVALID_ARGUMENT).");
  error_types.invalid_argument = new_error_type(m, "InvalidArgument", error_types.base,
                                                PyExc_ValueError, "Bad shape, dtype, size or value.");
  error_types.not_found = new_error_type(m, "NotFound", error_types.base, PyExc_LookupError,
                                         "Unknown model, backend or tensor name.");
  error_types.unavailable = new_error_type(m, "Unavailable", error_types.base,
                                           PyExc_ConnectionError, "Device or server not available.");
  error_types.deadline_exceeded = new_error_type(m, "DeadlineExceeded", error_types.base,
                                                 PyExc_TimeoutError, "The deadline passed.");
  error_types.resource_exhausted = new_error_type(m, "ResourceExhausted", error_types.base,
                                                  PyExc_MemoryError, "Out of memory or queue full.");
  error_types.unimplemented = new_error_type(m, "Unimplemented", error_types.base,
                                             PyExc_NotImplementedError, "Not supported (yet).");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kaas::Error& e) {
      raise_kaas_error(e);
    }
  });

  m.def(
      "backends",
      [](bool available_only) {
        std::vector<std::string> names;
        for (const kaas::Backend* b : kaas::compiled_backends())
          if (!available_only || b->available()) names.emplace_back(b->name());
        return names;
      },
      "available_only"_a = true,
      "Names of the backends compiled in (only those that can run here, by default).");

  m.def("knn", &kaas::python::knn_py, "points"_a, "row_splits"_a, "k"_a, "method"_a = "auto",
        "backend"_a = "auto",
        "Exact k nearest neighbours of every point within its event.\n\n"
        "points: float32 [N, D]; row_splits: int64 [events + 1] (event e is rows\n"
        "row_splits[e]..row_splits[e+1]). Returns (indices int32 [N, k], distances float32\n"
        "[N, k]): slot 0 is the point itself, ties by lower index, -1 / inf padding.");
}
