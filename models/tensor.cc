#include "kaas/models/tensor.h"

#include "kaas/common/error.h"

namespace kaas::models {

std::string_view triton_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "FP32";
    case DataType::kInt32:
      return "INT32";
    case DataType::kInt64:
      return "INT64";
    case DataType::kUint8:
      return "UINT8";
    case DataType::kFloat16:
      return "FP16";
    case DataType::kBFloat16:
      return "BF16";
  }
  return "UNKNOWN";
}

std::optional<DataType> data_type_from_triton(std::string_view name) {
  for (DataType d : {DataType::kFloat32, DataType::kInt32, DataType::kInt64, DataType::kUint8,
                     DataType::kFloat16, DataType::kBFloat16}) {
    if (triton_name(d) == name) return d;
  }
  return std::nullopt;
}

size_t element_size(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
    case DataType::kUint8:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
  }
  return 0;
}

int64_t element_count(std::span<const int64_t> shape) {
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) {
    // Found by fuzzing (.npy header, ONNX initializer dims): a product beyond int64 is an error.
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(ErrorCode::kInvalidArgument,
                  "shape " + shape_string(shape) + " has more elements than int64 can count");
  }
  return n;
}

CheckedInputs check_inputs(const ModelSignature& signature, std::span<const TensorView> inputs,
                           std::string_view model_name) {
  const std::string where = "model '" + std::string(model_name) + "'";
  CheckedInputs checked;
  constexpr size_t kAbsent = ~size_t(0);
  checked.position.assign(signature.inputs.size(), kAbsent);
  for (size_t at = 0; at < inputs.size(); ++at) {
    const TensorView& input = inputs[at];
    size_t index = 0;
    while (index < signature.inputs.size() && signature.inputs[index].name != input.name) ++index;
    std::string expected_names;
    for (const auto& spec : signature.inputs) {
      expected_names += expected_names.empty() ? "" : ", ";
      expected_names += spec.name;
    }
    std::string quoted = "'";
    quoted.append(input.name).append("'");
    require(index < signature.inputs.size(), where, "input name", "one of " + expected_names,
            quoted);
    require(checked.position[index] == kAbsent, where, "input " + quoted, "given once",
            "given twice");
    checked.position[index] = at;
  }
  for (size_t i = 0; i < signature.inputs.size(); ++i) {
    const TensorSpec& spec = signature.inputs[i];
    require(checked.position[i] != kAbsent, where, "input '" + spec.name + "'", "present",
            "missing");
    const TensorView& input = inputs[checked.position[i]];
    checked.ordered.push_back(input);
    const std::string what = "input '" + spec.name + "'";
    require(input.dtype == spec.dtype, where, what + " datatype",
            std::string(triton_name(spec.dtype)), std::string(triton_name(input.dtype)));
    require(input.shape.size() == spec.shape.size(), where, what + " shape",
            shape_string(spec.shape), shape_string(input.shape));
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      require(input.shape[d] >= 0, where, what + " shape", shape_string(spec.shape),
              shape_string(input.shape));
      if (spec.shape[d] != kVariableDim) {
        require(input.shape[d] == spec.shape[d], where, what + " shape", shape_string(spec.shape),
                shape_string(input.shape));
      }
    }
    if (signature.max_batch > 0) {
      const int64_t batch = input.shape[0];
      require(batch >= 1 && batch <= signature.max_batch, where, what + " batch size",
              "1.." + std::to_string(signature.max_batch), std::to_string(batch));
      require(checked.batch == 0 || checked.batch == batch, where, what + " batch size",
              "the same as the other inputs (" + std::to_string(checked.batch) + ")",
              std::to_string(batch));
      checked.batch = batch;
    }
    const size_t bytes = static_cast<size_t>(element_count(input.shape)) * element_size(spec.dtype);
    require(input.bytes.size() == bytes, where, what + " byte size",
            std::to_string(bytes) + " for shape " + shape_string(input.shape),
            std::to_string(input.bytes.size()));
  }
  return checked;
}

CheckedInputs check_inputs(const ModelSignature& signature, std::span<const HostTensor> inputs,
                           std::string_view model_name) {
  return check_inputs(signature, views_of(inputs), model_name);
}

std::vector<TensorView> views_of(std::span<const HostTensor> tensors) {
  std::vector<TensorView> views;
  views.reserve(tensors.size());
  for (const HostTensor& t : tensors) views.push_back(t.view());
  return views;
}

}  // namespace kaas::models
