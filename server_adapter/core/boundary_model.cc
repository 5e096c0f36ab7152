#include "kaas/server_adapter/core/boundary_model.h"

#include <cstring>
#include <vector>

#include "kaas/backends/half.h"
#include "kaas/common/error.h"

namespace kaas::repository {

namespace {

using models::DataType;
using models::HostTensor;
using models::TensorView;

bool is_half(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

template <class ConfigTensors>
void collect(const ConfigTensors& tensors, std::map<std::string, DataType>* out) {
  for (const auto& t : tensors) {
    if (t.data_type() == inference::TYPE_FP16) (*out)[t.name()] = DataType::kFloat16;
    if (t.data_type() == inference::TYPE_BF16) (*out)[t.name()] = DataType::kBFloat16;
  }
}

// 16-bit values (any alignment: Triton's buffers need not be 2-byte aligned) widened to float.
HostTensor widen(const TensorView& in) {
  const size_t count = in.bytes.size() / 2;
  HostTensor out{std::string(in.name), DataType::kFloat32, {in.shape.begin(), in.shape.end()}, {}};
  out.bytes.resize(count * sizeof(float));
  float* to = out.values<float>().data();
  const std::byte* from = in.bytes.data();
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, from + 2 * i, 2);
    to[i] =
        in.dtype == DataType::kFloat16 ? math::to_float(fp16{bits}) : math::to_float(bf16{bits});
  }
  return out;
}

// A float output rounded to its 16-bit wire type, in place of the float bytes.
void narrow(HostTensor& t, DataType dtype) {
  const auto from = t.values<float>();
  std::vector<std::byte> bytes(from.size() * 2);
  for (size_t i = 0; i < from.size(); ++i) {
    const uint16_t bits =
        dtype == DataType::kFloat16 ? math::to_fp16(from[i]).bits : math::to_bf16(from[i]).bits;
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  t.bytes = std::move(bytes);
  t.dtype = dtype;
}

std::string config_type_name(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "TYPE_FP32";
    case DataType::kInt32:
      return "TYPE_INT32";
    case DataType::kInt64:
      return "TYPE_INT64";
    case DataType::kUint8:
      return "TYPE_UINT8";
    case DataType::kFloat16:
      return "TYPE_FP16";
    case DataType::kBFloat16:
      return "TYPE_BF16";
  }
  return "TYPE_INVALID";
}

// Replaces the declared tensors' datatypes in `specs`; each must be an FP32 tensor.
void retype(const std::string& model, std::vector<models::TensorSpec>& specs,
            const std::map<std::string, DataType>& declared, const char* kind) {
  for (models::TensorSpec& spec : specs) {
    const auto it = declared.find(spec.name);
    if (it == declared.end()) continue;
    if (spec.dtype != DataType::kFloat32)
      throw Error(ErrorCode::kInvalidArgument,
                  "model '" + model + "' config: " + kind + " '" + spec.name + "' data_type " +
                      config_type_name(it->second) + ", the model has " +
                      config_type_name(spec.dtype) +
                      " (TYPE_FP16 and TYPE_BF16 are converted at the boundary from and to FP32 "
                      "model tensors only)");
    spec.dtype = it->second;
  }
}

class BoundaryModel final : public models::Model {
 public:
  BoundaryModel(std::unique_ptr<models::Model> inner, const BoundaryTypes& types)
      : inner_(std::move(inner)), signature_(inner_->signature()), types_(types) {
    retype(inner_->name(), signature_.inputs, types_.inputs, "input");
    retype(inner_->name(), signature_.outputs, types_.outputs, "output");
  }

  const std::string& name() const override { return inner_->name(); }
  const models::ModelSignature& signature() const override { return signature_; }

  std::vector<std::string> describe() const override {
    std::vector<std::string> lines = inner_->describe();
    std::string line = "boundary conversion (host, round to nearest even):";
    for (const auto& spec : signature_.inputs)
      if (is_half(spec.dtype))
        line += " input '" + spec.name + "' " + std::string(models::triton_name(spec.dtype)) +
                " -> FP32;";
    for (const auto& spec : signature_.outputs)
      if (is_half(spec.dtype))
        line += " output '" + spec.name + "' FP32 -> " +
                std::string(models::triton_name(spec.dtype)) + ";";
    line.pop_back();
    lines.push_back(line);
    return lines;
  }

  std::optional<int64_t> output_rows(std::span<const TensorView> inputs) const override {
    return inner_->output_rows(inputs);
  }
  std::vector<HostTensor> run(std::span<const TensorView> inputs) override {
    // The wire types first (an FP32 tensor sent for a declared FP16 input is an error, not
    // passed through), then the model checks the widened inputs as it always does.
    models::check_inputs(signature_, inputs, inner_->name());
    std::vector<HostTensor> widened;
    widened.reserve(inputs.size());
    std::vector<TensorView> views;
    views.reserve(inputs.size());
    for (const TensorView& in : inputs) {
      if (is_half(in.dtype)) {
        widened.push_back(widen(in));
        views.push_back(widened.back().view());
      } else {
        views.push_back(in);
      }
    }
    std::vector<HostTensor> outputs = inner_->run(views);
    for (HostTensor& out : outputs) {
      const auto it = types_.outputs.find(out.name);
      if (it != types_.outputs.end() && out.dtype == DataType::kFloat32) narrow(out, it->second);
    }
    return outputs;
  }

 private:
  std::unique_ptr<models::Model> inner_;
  models::ModelSignature signature_;
  BoundaryTypes types_;
};

}  // namespace

BoundaryTypes boundary_types(const inference::ModelConfig& config) {
  BoundaryTypes types;
  collect(config.input(), &types.inputs);
  collect(config.output(), &types.outputs);
  return types;
}

std::unique_ptr<models::Model> with_boundary(std::unique_ptr<models::Model> inner,
                                             const BoundaryTypes& types) {
  if (types.empty()) return inner;
  return std::make_unique<BoundaryModel>(std::move(inner), types);
}

}  // namespace kaas::repository
