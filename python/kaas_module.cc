// WORK IN PROGRESS (issue 14, not built yet): the `kaas` Python module (nanobind): the installed
// kaas libraries on numpy arrays. Inputs are read in place when they are C-contiguous arrays of the
// right dtype (no copy); outputs are numpy arrays that own the kaas result. The GIL is released
// while kernels and calls run.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <tuple>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "kaas/client/direct_client.h"
#include "kaas/client/remote_client.h"
#include "kaas/common/error.h"
#include "kaas/kernels/activation.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/knn.h"
#include "kaas/kernels/softmax.h"
#include "kaas/models/tensor.h"

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
  return knn_method_from_name(name);
}

nb::tuple knn_py(In<float, 2> points, In<int64_t, 1> row_splits, int k, const std::string& method,
                 const std::string& backend) {
  const Backend& b = backend_named(backend);
  const KnnMethod m = knn_method(method);
  const int64_t n = int64_t(points.shape(0)), dims = int64_t(points.shape(1));
  const int64_t splits = int64_t(row_splits.shape(0));
  if (k <= 0)
    throw Error(ErrorCode::kInvalidArgument,
                "knn: k must be positive, received " + std::to_string(k));
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

Epilogue epilogue_named(const std::string& activation, float alpha) {
  Epilogue e;
  e.alpha = alpha;
  if (activation == "none")
    e.activation = Activation::kNone;
  else if (activation == "relu")
    e.activation = Activation::kRelu;
  else if (activation == "leaky_relu")
    e.activation = Activation::kLeakyRelu;
  else if (activation == "sigmoid")
    e.activation = Activation::kSigmoid;
  else
    throw Error(ErrorCode::kInvalidArgument,
                "activation '" + activation + "' is not one of none, relu, leaky_relu, sigmoid");
  return e;
}

nb::object dense_py(In<float, 2> x, In<float, 2> w, std::optional<In<float, 1>> bias,
                    const std::string& activation, float alpha, const std::string& backend) {
  const Backend& b = backend_named(backend);
  const int64_t m = int64_t(x.shape(0)), k = int64_t(x.shape(1)), n = int64_t(w.shape(1));
  if (int64_t(w.shape(0)) != k)
    throw Error(ErrorCode::kInvalidArgument,
                "dense: w must be [" + std::to_string(k) + ", N] for x [M, " + std::to_string(k) +
                    "], received [" + std::to_string(w.shape(0)) + ", " + std::to_string(n) + "]");
  const int64_t bias_count = bias ? int64_t(bias->shape(0)) : 0;
  const Epilogue e = epilogue_named(activation, alpha);
  std::vector<float> y(size_t(m * n));
  {
    nb::gil_scoped_release released;
    Queue queue(b);
    DeviceCopy<float> dx(queue, x.data(), size_t(m * k), true);
    DeviceCopy<float> dw(queue, w.data(), size_t(k * n), true);
    DeviceCopy<float> db(queue, bias ? bias->data() : nullptr, size_t(bias_count), bias_count > 0);
    DeviceCopy<float> dy(queue, y.data(), y.size(), false);
    dense(queue, make_view<2, const float>(dx.data(), {m, k}),
          make_view<2, const float>(dw.data(), {k, n}),
          make_view<const float>(db.data(), bias_count), make_view<2>(dy.data(), {m, n}), e);
    dy.to_host(y.data(), y.size());
    queue.wait();
  }
  return nb::cast(to_numpy(std::move(y), {size_t(m), size_t(n)}));
}

nb::object softmax_py(nb::ndarray<const float, nb::c_contig, nb::device::cpu> x, int64_t axis,
                      bool log, const std::string& backend) {
  const Backend& b = backend_named(backend);
  const int rank = int(x.ndim());
  if (rank == 0)
    throw Error(ErrorCode::kInvalidArgument, "softmax: x must have at least 1 dimension");
  if (axis < -rank || axis >= rank)
    throw Error(ErrorCode::kInvalidArgument, "softmax: axis " + std::to_string(axis) +
                                                 " out of range for rank " + std::to_string(rank));
  std::vector<int64_t> extents;
  std::vector<size_t> shape;
  for (int d = 0; d < rank; ++d) {
    shape.push_back(x.shape(d));
    extents.push_back(int64_t(x.shape(d)));
  }
  std::vector<float> y(x.size());
  {
    nb::gil_scoped_release released;
    Queue queue(b);
    DeviceCopy<float> dx(queue, x.data(), x.size(), true);
    DeviceCopy<float> dy(queue, y.data(), y.size(), false);
    softmax(queue, log ? SoftmaxKind::kLogSoftmax : SoftmaxKind::kSoftmax, dx.data(), dy.data(),
            extents.data(), rank, axis < 0 ? axis + rank : axis);
    dy.to_host(y.data(), y.size());
    queue.wait();
  }
  return nb::cast(to_numpy(std::move(y), shape));
}

nb::object conv2d_py(In<float, 4> input, In<float, 4> weight, std::optional<In<float, 1>> bias,
                     std::tuple<int64_t, int64_t> stride,
                     std::tuple<int64_t, int64_t, int64_t, int64_t> pads,
                     std::tuple<int64_t, int64_t> dilation, int64_t groups,
                     const std::string& layout, const std::string& activation, float alpha,
                     const std::string& backend) {
  const Backend& b = backend_named(backend);
  Conv2dParams params;
  if (layout == "NCHW")
    params.layout = Layout::kNCHW;
  else if (layout == "NHWC")
    params.layout = Layout::kNHWC;
  else
    throw Error(ErrorCode::kInvalidArgument, "conv2d: layout '" + layout + "' is not NCHW or NHWC");
  std::tie(params.stride_h, params.stride_w) = stride;
  std::tie(params.pad_top, params.pad_left, params.pad_bottom, params.pad_right) = pads;
  std::tie(params.dilation_h, params.dilation_w) = dilation;
  params.groups = groups;
  params.epilogue = epilogue_named(activation, alpha);
  const int64_t in_extents[4] = {int64_t(input.shape(0)), int64_t(input.shape(1)),
                                 int64_t(input.shape(2)), int64_t(input.shape(3))};
  const int64_t w_extents[4] = {int64_t(weight.shape(0)), int64_t(weight.shape(1)),
                                int64_t(weight.shape(2)), int64_t(weight.shape(3))};
  const Conv2dShape out = conv2d_output_shape(params, in_extents, w_extents);
  const int64_t out_extents[4] = {out.batch,
                                  params.layout == Layout::kNCHW ? out.out_channels : out.out_h,
                                  params.layout == Layout::kNCHW ? out.out_h : out.out_w,
                                  params.layout == Layout::kNCHW ? out.out_w : out.out_channels};
  const int64_t bias_count = bias ? int64_t(bias->shape(0)) : 0;
  std::vector<float> y(size_t(out_extents[0] * out_extents[1] * out_extents[2] * out_extents[3]));
  {
    nb::gil_scoped_release released;
    Queue queue(b);
    DeviceCopy<float> dx(queue, input.data(), input.size(), true);
    DeviceCopy<float> dw(queue, weight.data(), weight.size(), true);
    DeviceCopy<float> db(queue, bias ? bias->data() : nullptr, size_t(bias_count), bias_count > 0);
    DeviceCopy<float> dy(queue, y.data(), y.size(), false);
    conv2d(queue, make_view<4, const float>(dx.data(), in_extents),
           make_view<4, const float>(dw.data(), w_extents),
           make_view<const float>(db.data(), bias_count), make_view<4>(dy.data(), out_extents),
           params);
    dy.to_host(y.data(), y.size());
    queue.wait();
  }
  return nb::cast(to_numpy(std::move(y), {size_t(out_extents[0]), size_t(out_extents[1]),
                                          size_t(out_extents[2]), size_t(out_extents[3])}));
}

}  // namespace
}  // namespace kaas::python

namespace kaas::python {
namespace {

using models::DataType;

std::optional<DataType> dtype_of(const nb::dlpack::dtype& t) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  if (t.code == uint8_t(dtype_code::Float) && t.bits == 32) return DataType::kFloat32;
  if (t.code == uint8_t(dtype_code::Int) && t.bits == 32) return DataType::kInt32;
  if (t.code == uint8_t(dtype_code::Int) && t.bits == 64) return DataType::kInt64;
  if (t.code == uint8_t(dtype_code::UInt) && t.bits == 8) return DataType::kUint8;
  if (t.code == uint8_t(dtype_code::Float) && t.bits == 16) return DataType::kFloat16;
  return std::nullopt;  // bfloat16 too: numpy has no such dtype
}

// A numpy array over a result tensor's bytes; the array keeps the tensor alive (no copy).
nb::object tensor_to_numpy(models::HostTensor tensor) {
  auto* owned = new models::HostTensor(std::move(tensor));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<models::HostTensor*>(p); });
  std::vector<size_t> shape(owned->shape.begin(), owned->shape.end());
  nb::dlpack::dtype dtype;
  switch (owned->dtype) {
    case DataType::kFloat32:
      dtype = nb::dtype<float>();
      break;
    case DataType::kInt32:
      dtype = nb::dtype<int32_t>();
      break;
    case DataType::kInt64:
      dtype = nb::dtype<int64_t>();
      break;
    case DataType::kUint8:
      dtype = nb::dtype<uint8_t>();
      break;
    case DataType::kFloat16:
      dtype = {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};  // numpy.float16
      break;
    case DataType::kBFloat16:
      throw Error(ErrorCode::kUnimplemented,
                  "output '" + owned->name +
                      "' is BF16, which numpy has no dtype for (declare it TYPE_FP32 or "
                      "TYPE_FP16 in the model's config to read it from Python)");
  }
  return nb::cast(nb::ndarray<nb::numpy>(owned->bytes.data(), shape.size(), shape.data(), owner,
                                         nullptr, dtype));
}

nb::dict signature_dict(const models::ModelSignature& signature) {
  auto specs = [](const std::vector<models::TensorSpec>& tensors) {
    nb::list out;
    for (const auto& t : tensors)
      out.append(nb::make_tuple(t.name, std::string(models::triton_name(t.dtype)), t.shape));
    return out;
  };
  nb::dict d;
  d["inputs"] = specs(signature.inputs);
  d["outputs"] = specs(signature.outputs);
  d["max_batch"] = signature.max_batch;
  return d;
}

// kaas.Client: kaas::client::InferenceClient with numpy in and out. Inputs are read in place
// (views) for the duration of run(); the GIL is released while the call runs.
class Client {
 public:
  explicit Client(std::unique_ptr<client::InferenceClient> client) : client_(std::move(client)) {}

  static Client direct(const std::string& repository, const std::string& model,
                       const std::string& backend,
                       const std::map<std::string, std::string>& parameters) {
    client::DirectOptions options;
    options.parameters = parameters;
    return Client(
        client::DirectClient::from_repository(repository, model, backend_named(backend), options));
  }

  static Client remote(const std::string& url, const std::string& model, const std::string& version,
                       int retries, int backoff_ms, int ready_timeout_ms, bool gzip,
                       std::optional<std::string> fallback_repository,
                       const std::string& fallback_backend) {
    client::RemoteOptions options;
    options.model = model;
    options.version = version;
    options.retries = retries;
    options.backoff = std::chrono::milliseconds(backoff_ms);
    options.ready_timeout = std::chrono::milliseconds(ready_timeout_ms);
    if (fallback_repository) {
      // Checked now (unknown backend), built when the server has failed every attempt.
      const Backend& b = backend_named(fallback_backend);
      options.fallback = [repository = *fallback_repository, model, &b] {
        return std::unique_ptr<client::InferenceClient>(
            client::DirectClient::from_repository(repository, model, b));
      };
    }
    client::ConnectionOptions connection;
    connection.gzip = gzip;
    nb::gil_scoped_release released;
    return Client(client::RemoteClient::create(url, options, connection));
  }

  nb::dict run(const nb::dict& inputs, std::optional<double> deadline_ms,
               std::optional<std::vector<std::string>> outputs) {
    client_->clear_inputs();
    std::vector<nb::ndarray<nb::c_contig, nb::device::cpu>> held;  // alive until the call ends
    for (auto [key, value] : inputs) {
      const std::string name = nb::cast<std::string>(key);
      auto array = nb::cast<nb::ndarray<nb::c_contig, nb::device::cpu>>(value);
      const auto dtype = dtype_of(array.dtype());
      if (!dtype)
        throw Error(ErrorCode::kInvalidArgument,
                    "input '" + name +
                        "': dtype must be float32, int32, int64, uint8 or float16 (numpy has no "
                        "bfloat16: a BF16 input cannot be given from Python)");
      std::vector<int64_t> shape(array.ndim());
      for (size_t d = 0; d < array.ndim(); ++d) shape[d] = int64_t(array.shape(d));
      const auto* bytes = static_cast<const std::byte*>(array.data());
      client_->set_input_bytes(name, *dtype, {bytes, array.nbytes()}, std::move(shape));
      held.push_back(std::move(array));
    }
    client::CallOptions options;
    if (deadline_ms) {
      if (!(*deadline_ms > 0))
        throw Error(ErrorCode::kInvalidArgument, "deadline_ms must be positive");
      options.deadline = std::chrono::milliseconds(int64_t(*deadline_ms));
    }
    if (outputs) options.outputs = *outputs;
    client::InferResult result;
    {
      nb::gil_scoped_release released;
      result = client_->run(options);
    }
    client_->clear_inputs();
    nb::dict out;
    for (auto& tensor : result.per_entry().at(0)) {
      const std::string name = tensor.name;
      out[name.c_str()] = tensor_to_numpy(std::move(tensor));
    }
    return out;
  }

  nb::dict signature() const { return signature_dict(client_->signature()); }
  std::string describe() const { return client_->describe(); }
  const std::string& model() const { return client_->model_name(); }

 private:
  std::unique_ptr<client::InferenceClient> client_;
};

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
    case kaas::ErrorCode::kInvalidArgument:
    case kaas::ErrorCode::kAlreadyExists:
      return error_types.invalid_argument;
    case kaas::ErrorCode::kNotFound:
      return error_types.not_found;
    case kaas::ErrorCode::kUnavailable:
    case kaas::ErrorCode::kCancelled:
      return error_types.unavailable;
    case kaas::ErrorCode::kDeadlineExceeded:
      return error_types.deadline_exceeded;
    case kaas::ErrorCode::kResourceExhausted:
      return error_types.resource_exhausted;
    case kaas::ErrorCode::kUnimplemented:
      return error_types.unimplemented;
    case kaas::ErrorCode::kInternal:
      break;
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
  error_types.invalid_argument = new_error_type(
      m, "InvalidArgument", error_types.base, PyExc_ValueError, "Bad shape, dtype, size or value.");
  error_types.not_found = new_error_type(m, "NotFound", error_types.base, PyExc_LookupError,
                                         "Unknown model, backend or tensor name.");
  error_types.unavailable = new_error_type(
      m, "Unavailable", error_types.base, PyExc_ConnectionError, "Device or server not available.");
  error_types.deadline_exceeded = new_error_type(m, "DeadlineExceeded", error_types.base,
                                                 PyExc_TimeoutError, "The deadline passed.");
  error_types.resource_exhausted = new_error_type(
      m, "ResourceExhausted", error_types.base, PyExc_MemoryError, "Out of memory or queue full.");
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

  using kaas::python::Client;
  nb::class_<Client>(m, "Client",
                     "One model, in process (Client.direct) or on kaas-server / Triton over KServe "
                     "v2 gRPC (Client.remote), with the same results.")
      .def_static("direct", &Client::direct, "repository"_a, "model"_a, "backend"_a = "auto",
                  "parameters"_a = std::map<std::string, std::string>{},
                  "The model of a Triton-layout repository entry, run in this process; "
                  "`parameters` replace or add config.pbtxt parameters (precision: fp32, bf16, "
                  "fp16).")
      .def_static("remote", &Client::remote, "url"_a, "model"_a, "version"_a = "", "retries"_a = 2,
                  "backoff_ms"_a = 50, "ready_timeout_ms"_a = 10000, "gzip"_a = false,
                  "fallback_repository"_a = nb::none(), "fallback_backend"_a = "auto",
                  "The model served at url: host:port, a list host1:port,host2:port (balanced\n"
                  "per request, a failed request retried on the next) or dns:///name:port; after\n"
                  "every attempt has failed, the call runs in process on fallback_repository when\n"
                  "given, and returns to the servers once they answer again.")
      .def("run", &Client::run, "inputs"_a, "deadline_ms"_a = nb::none(), "outputs"_a = nb::none(),
           "Runs the model on {name: array}; returns {output name: array}.")
      .def_prop_ro("signature", &Client::signature)
      .def_prop_ro("model", &Client::model)
      .def("__repr__",
           [](const Client& c) { return "<kaas.Client " + c.model() + ", " + c.describe() + ">"; });

  m.def("dense", &kaas::python::dense_py, "x"_a, "w"_a, "bias"_a = nb::none(),
        "activation"_a = "none", "alpha"_a = 0.01f, "backend"_a = "auto",
        "y = activation(x @ w + bias): x float32 [M, K], w [K, N], bias [N] or None.");
  m.def("softmax", &kaas::python::softmax_py, "x"_a, "axis"_a = -1, "log"_a = false,
        "backend"_a = "auto", "Softmax (or log-softmax) of float32 x along axis.");
  m.def("conv2d", &kaas::python::conv2d_py, "input"_a, "weight"_a, "bias"_a = nb::none(),
        "stride"_a = std::make_tuple(int64_t(1), int64_t(1)),
        "pads"_a = std::make_tuple(int64_t(0), int64_t(0), int64_t(0), int64_t(0)),
        "dilation"_a = std::make_tuple(int64_t(1), int64_t(1)), "groups"_a = 1, "layout"_a = "NCHW",
        "activation"_a = "none", "alpha"_a = 0.01f, "backend"_a = "auto",
        "2-D convolution, ONNX Conv semantics: input float32 [N, C, H, W] (or NHWC with\n"
        "layout='NHWC'), weight [C_out, C_in/groups, KH, KW], pads (top, left, bottom, right).");
  m.def("knn", &kaas::python::knn_py, "points"_a, "row_splits"_a, "k"_a, "method"_a = "auto",
        "backend"_a = "auto",
        "Exact k nearest neighbours of every point within its event.\n\n"
        "points: float32 [N, D]; row_splits: int64 [events + 1] (event e is rows\n"
        "row_splits[e]..row_splits[e+1]). Returns (indices int32 [N, k], distances float32\n"
        "[N, k]): slot 0 is the point itself, ties by lower index, -1 / inf padding.");
}
