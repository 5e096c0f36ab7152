#pragma once
// A batched test model for the serving layer's tests: y = 2x per row of [rows, 2] FP32; a NaN
// anywhere fails the whole execution, as a model that validates its input values does.

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kaas/common/error.h"
#include "kaas/models/model.h"

namespace kaas::testing_models {

using models::DataType;
using models::HostTensor;
using models::TensorView;

class DoublingModel final : public models::Model {
 public:
  DoublingModel() {
    signature_.max_batch = 64;
    signature_.inputs = {{"x", DataType::kFloat32, {models::kVariableDim, 2}}};
    signature_.outputs = {{"y", DataType::kFloat32, {models::kVariableDim, 2}}};
  }
  const std::string& name() const override { return name_; }
  const models::ModelSignature& signature() const override { return signature_; }
  std::vector<std::string> describe() const override { return {}; }
  std::vector<HostTensor> run(std::span<const TensorView> inputs) override {
    ++executions;
    const TensorView& x = inputs[0];
    HostTensor y{"y", DataType::kFloat32, {x.shape.begin(), x.shape.end()}, {}};
    y.bytes.resize(x.bytes.size());
    const auto* in = reinterpret_cast<const float*>(x.bytes.data());
    auto* out = reinterpret_cast<float*>(y.bytes.data());
    for (size_t i = 0; i < x.bytes.size() / sizeof(float); ++i) {
      if (std::isnan(in[i])) throw Error(ErrorCode::kInvalidArgument, "x holds NaN");
      out[i] = 2 * in[i];
    }
    return {y};
  }
  std::atomic<int> executions = 0;

 private:
  std::string name_ = "doubling";
  models::ModelSignature signature_;
};

inline HostTensor rows_of(std::vector<float> values) {
  HostTensor t{"x", DataType::kFloat32, {int64_t(values.size() / 2), 2}, {}};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

inline std::vector<float> floats(const HostTensor& t) {
  const auto v = t.values<float>();
  return {v.begin(), v.end()};
}

}  // namespace kaas::testing_models
