#pragma once
// Host-side tensors and model signatures: what callers (kaas-infer, the server, the client API)
// hand to a model and get back. Shapes follow Triton's convention: a model with max_batch > 0
// has a leading batch dimension written -1 in its signature; other -1 dimensions are variable.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/common/error.h"

namespace kaas::models {

// kFloat16 (IEEE binary16) and kBFloat16 (bfloat16) are 16-bit storage types on the wire
// (kaas::fp16 / kaas::bf16 in backends/half.h): models compute on kFloat32 tensors, and a served
// model that declares FP16/BF16 in its config converts at its boundary (server_adapter).
enum class DataType { kFloat32, kInt32, kInt64, kUint8, kFloat16, kBFloat16 };

// "FP32", "INT32", "INT64", "UINT8", "FP16", "BF16"
std::string_view triton_name(DataType dtype);
std::optional<DataType> data_type_from_triton(std::string_view name);
size_t element_size(DataType dtype);

inline constexpr int64_t kVariableDim = -1;

struct TensorSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;  // -1: the batch dimension (first, when batched) or variable
};

struct ModelSignature {
  std::vector<TensorSpec> inputs, outputs;
  int64_t max_batch = 0;  // 0: no batch dimension
};

using kaas::shape_string;  // backends/error.h
int64_t element_count(std::span<const int64_t> shape);

// A tensor someone else owns: what models read their inputs from, so a caller's arrays are
// not copied on the way in. Valid while the owner's memory is.
struct TensorView {
  std::string_view name;
  DataType dtype = DataType::kFloat32;
  std::span<const int64_t> shape;
  std::span<const std::byte> bytes;

  int64_t elements() const { return element_count(shape); }
  template <class T>
  std::span<const T> values() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

struct HostTensor {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  int64_t elements() const { return element_count(shape); }
  TensorView view() const { return {name, dtype, shape, bytes}; }

  template <class T>
  std::span<const T> values() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> values() {
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

  template <class T>
  static HostTensor make(std::string name, DataType dtype, std::vector<int64_t> shape,
                         std::span<const T> values) {
    HostTensor t{std::move(name), dtype, std::move(shape), {}};
    t.bytes.resize(values.size_bytes());
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
    return t;
  }
};

std::vector<TensorView> views_of(std::span<const HostTensor> tensors);

// The inputs of one call checked against a signature: each input exactly once (any order),
// matching dtype, rank and fixed dimensions, one common batch size in 1..max_batch, byte size
// equal to the shape's. Throws kaas::Error kInvalidArgument naming the model, the input and what
// was wrong.
struct CheckedInputs {
  int64_t batch = 0;                // 0 for a model without a batch dimension
  std::vector<TensorView> ordered;  // in signature order
  std::vector<size_t> position;     // ordered[i] is inputs[position[i]]
};
CheckedInputs check_inputs(const ModelSignature& signature, std::span<const TensorView> inputs,
                           std::string_view model_name);
CheckedInputs check_inputs(const ModelSignature& signature, std::span<const HostTensor> inputs,
                           std::string_view model_name);

}  // namespace kaas::models
