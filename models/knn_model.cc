#include "kaas/models/knn_model.h"

#include <mutex>

#include "kaas/backends/buffer.h"
#include "kaas/common/error.h"

namespace kaas::models {

namespace {

class KnnModel final : public Model {
 public:
  KnnModel(const Backend& backend, const KnnModelOptions& options)
      : name_(options.name), options_(options), queue_(backend, options.device) {
    require(options.k >= 1 && options.k <= kKnnMaxK, "knn model '" + name_ + "'", "k",
            "1.." + std::to_string(kKnnMaxK), std::to_string(options.k));
    require(options.dims == -1 || (options.dims >= 1 && options.dims <= kKnnMaxDims),
            "knn model '" + name_ + "'", "dims", "-1 or 1.." + std::to_string(kKnnMaxDims),
            std::to_string(options.dims));
    signature_.inputs = {{"points", DataType::kFloat32, {kVariableDim, options.dims}},
                         {"row_splits", DataType::kInt64, {kVariableDim}}};
    signature_.outputs = {{"indices", DataType::kInt32, {kVariableDim, options.k}},
                          {"distances", DataType::kFloat32, {kVariableDim, options.k}}};
  }

  const std::string& name() const override { return name_; }
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::string> describe() const override {
    return {"knn k=" + std::to_string(options_.k)};
  }

  // Every output has one row per point.
  std::optional<int64_t> output_rows(std::span<const TensorView> inputs) const override {
    for (const TensorView& t : inputs)
      if (t.name == "points" && !t.shape.empty()) return t.shape.front();
    return std::nullopt;
  }

  using Model::run;
  std::vector<HostTensor> run(std::span<const TensorView> inputs) override {
    const CheckedInputs in = check_inputs(signature_, inputs, name_);
    const TensorView& points = in.ordered[0];
    const TensorView& splits = in.ordered[1];
    const int64_t n = points.shape[0], d = points.shape[1], k = options_.k;
    require(d >= 1 && d <= kKnnMaxDims, "model '" + name_ + "'", "points dimension D",
            "1.." + std::to_string(kKnnMaxDims), std::to_string(d));
    std::lock_guard lock(mutex_);
    const auto dpoints = to_device(queue_, points.values<float>());
    const auto dsplits = to_device(queue_, splits.values<int64_t>());
    auto indices = make_device_buffer<int32_t>(queue_, size_t(n * k));
    auto distances = make_device_buffer<float>(queue_, size_t(n * k));
    knn(queue_, make_view<2>(static_cast<const float*>(dpoints.data()), {n, d}),
        make_view(static_cast<const int64_t*>(dsplits.data()), splits.shape[0]), int(k),
        make_view<2>(indices.data(), {n, k}), make_view<2>(distances.data(), {n, k}),
        options_.method);
    HostTensor out_indices{"indices", DataType::kInt32, {n, k}, {}};
    out_indices.bytes.resize(size_t(n * k) * sizeof(int32_t));
    HostTensor out_distances{"distances", DataType::kFloat32, {n, k}, {}};
    out_distances.bytes.resize(size_t(n * k) * sizeof(float));
    copy_to_host(queue_, indices, out_indices.values<int32_t>());
    copy_to_host(queue_, distances, out_distances.values<float>());
    queue_.wait();
    std::vector<HostTensor> outputs;
    outputs.push_back(std::move(out_indices));
    outputs.push_back(std::move(out_distances));
    return outputs;
  }

 private:
  std::string name_;
  KnnModelOptions options_;
  Queue queue_;
  ModelSignature signature_;
  std::mutex mutex_;
};

}  // namespace

KnnMethod knn_method_from_string(const std::string& name) {
  return knn_method_from_name(name);
}

std::unique_ptr<Model> make_knn_model(const Backend& backend, const KnnModelOptions& options) {
  return std::make_unique<KnnModel>(backend, options);
}

}  // namespace kaas::models
