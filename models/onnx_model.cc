#include "kaas/models/onnx_model.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include "kaas/backends/backend_traits.h"
#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "kaas/common/error.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/planner.h"
#include "kaas/models/onnx_fused.h"
#include "kaas/models/onnx_fused_plan.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_ops/op_def.h"
#include "kaas/models/onnx_sparse_execution.h"
#include "kaas/models/onnx_unfused_plan.h"
#include "kaas/models/onnx_value_storage.h"
#include "kaas/models/plan_log.h"

namespace kaas::models {

using onnx_import::Graph;
using onnx_import::Op;
using Shape = std::vector<int64_t>;

onnx::ModelProto read_onnx_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, "ONNX model: cannot open '" + path.string() + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in) || !model.has_graph())
    throw Error(ErrorCode::kInvalidArgument,
                "ONNX model: '" + path.string() +
                    "' is not a valid ONNX ModelProto (truncated, corrupt or another format)");
  return model;
}

namespace {

class OnnxModel final : public OnnxDeviceModel {
 public:
  OnnxModel(const onnx::ModelProto& proto, const Backend& backend, const OnnxModelOptions& options)
      : name_(options.name),
        graph_(onnx_import::parse(proto)),
        queue_(backend, options.device),
        options_(options) {
    onnx_import::simplify(graph_);
    if (!backend.available())
      throw Error(ErrorCode::kUnavailable,
                  "backend " + std::string(backend.name()) + ": " + backend.unavailable_reason());
    max_batch_ = graph_.batched ? options.max_batch : 0;
    if (graph_.batched && max_batch_ < 1)
      throw Error(ErrorCode::kInvalidArgument, "model '" + name_ + "': max_batch must be >= 1");
    max_shapes_ = onnx_import::infer_shapes(graph_, std::max<int64_t>(max_batch_, 1));
    make_signature();
    storage_.emplace(queue_, graph_);
    choose_plan();
  }

  const std::string& name() const override { return name_; }
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::string> describe() const override { return log_.lines(); }

  const Queue& queue() const override { return queue_; }
  float* device_input(size_t index) override { return storage_->data(graph_.inputs.at(index)); }

  const SparseNetwork* sparse_network() const override {
    return sparse_ ? &sparse_->network() : nullptr;
  }
  LastRun last_run() const override {
    if (!sparse_) return {};
    return {sparse_->last_sparse_rows() > 0, sparse_->last_active(), sparse_->last_sparse_rows()};
  }

  std::vector<const float*> run_device(int64_t batch) override {
    require(!graph_.batched || (batch >= 1 && batch <= max_batch_), "model '" + name_ + "'",
            "batch size", "1.." + std::to_string(max_batch_), std::to_string(batch));
    shapes_ = graph_.batched ? onnx_import::infer_shapes(graph_, batch) : max_shapes_;
    if (sparse_) sparse_->begin_run();
    if (sparse_ && sparse_->choose()) {
      sparse_->run();
    } else {
      run_dense();
    }
    std::vector<const float*> outputs;
    for (const auto& output : graph_.outputs) outputs.push_back(storage_->data(output.second));
    return outputs;
  }

  using Model::run;
  std::vector<HostTensor> run(std::span<const TensorView> inputs) override {
    const CheckedInputs checked = check_inputs(signature_, inputs, name_);
    std::lock_guard lock(mutex_);
    try {
      for (size_t i = 0; i < graph_.inputs.size(); ++i) {
        const TensorView& in = checked.ordered[i];
        copy_to_device(queue_, in.values<float>(), storage_->storage(graph_.inputs[i]));
      }
      run_device(checked.batch);
      std::vector<HostTensor> outputs;
      for (size_t o = 0; o < graph_.outputs.size(); ++o) {
        const int value = graph_.outputs[o].second;
        HostTensor out{signature_.outputs[o].name, DataType::kFloat32, shapes_[value], {}};
        out.bytes.resize(size_t(element_count(out.shape)) * sizeof(float));
        copy_to_host(queue_, storage_->storage(value), out.values<float>());
        outputs.push_back(std::move(out));
      }
      queue_.wait();
      return outputs;
    } catch (...) {
      queue_.wait();  // nothing of this call stays in flight
      throw;
    }
  }

 private:
  void make_signature() {
    signature_.max_batch = max_batch_;
    for (int id : graph_.inputs)
      signature_.inputs.push_back(
          {graph_.values[id].name, DataType::kFloat32, graph_.values[id].shape});
    const auto at1 = onnx_import::infer_shapes(graph_, 1);
    const auto at2 = graph_.batched ? onnx_import::infer_shapes(graph_, 2) : at1;
    for (const auto& [name, id] : graph_.outputs) {
      Shape shape = at1[id];
      if (graph_.batched) {
        // The batch must travel through to every output as its first dimension.
        bool scales = !shape.empty() && shape[0] == 1 && at2[id][0] == 2;
        for (size_t d = 1; scales && d < shape.size(); ++d) scales = at2[id][d] == shape[d];
        if (!scales)
          throw Error(ErrorCode::kUnimplemented, "ONNX model: output '" + name +
                                                     "' does not carry the batch dimension first "
                                                     "(shape " +
                                                     shape_string(at1[id]) + " at batch 1, " +
                                                     shape_string(at2[id]) + " at batch 2)");
        shape[0] = kVariableDim;
      }
      signature_.outputs.push_back({name, DataType::kFloat32, shape});
    }
  }

  // The plan: the fused conv-dense-heads plan where the graph matches it (and the options allow
  // it), the unfused one otherwise or where measured faster; beside the fused plan in fp32, its
  // sparse execution.
  void choose_plan() {
    log_ = {};
    log_.graph = graph_.log;
    std::string why_not;
    if (auto match = onnx_import::match_conv_dense_heads(graph_, why_not)) {
      // The first dense layer sums K per conv output row in every plan: the fused plan's slab
      // passes end at row boundaries, so the fused and unfused plans give the same bits.
      const Shape& conv_out = max_shapes_[graph_.ops[match->conv].output];  // [n, OH, OW, OC]
      graph_.ops[match->dense1].attr<GemmParams>().k_chunk = conv_out[2] * conv_out[3];
      if (options_.fused != FusedPlan::kOff) fused_ = *match;
    }
    if (options_.fused == FusedPlan::kRequire && !fused_)
      throw Error(
          ErrorCode::kUnimplemented,
          "model '" + name_ + "': the fused conv-dense-heads plan does not apply: " + why_not);
    if (!fused_) {
      unfused_ = std::make_unique<onnx_import::UnfusedPlan>(queue_, graph_, max_shapes_, *storage_,
                                                            options_.precision);
      log_unfused_plan(options_.fused == FusedPlan::kOff ? "fused plan disabled" : why_not);
      return;
    }
    // fp32 on a CPU backend, measuring: the unfused plan is a candidate too, so its buffers are
    // laid out first and the fused plan shares its inputs and outputs.
    const bool measure_unfused =
        host_simd(queue_.backend_id()) && options_.precision == Precision::kFp32 &&
        options_.planner.value_or(planner::mode_from_environment()) == planner::Mode::kMeasure;
    if (measure_unfused) {
      unfused_ = std::make_unique<onnx_import::UnfusedPlan>(queue_, graph_, max_shapes_, *storage_,
                                                            Precision::kFp32);
    } else {
      for (int id : graph_.inputs)
        storage_->assign(id, storage_->add(element_count(max_shapes_[id])));
      for (int v : {graph_.ops[fused_->softmax].output, graph_.ops[fused_->head_b].output})
        storage_->assign(v, storage_->add(element_count(max_shapes_[v])));
    }
    fused_plan_ =
        std::make_unique<onnx_import::ConvDenseHeadsPlan>(plan_context(), max_batch_, log_);
    const auto run_model = [this](int64_t batch) {
      run_device(batch);
      queue_.wait();
    };
    const auto run_unfused = [this](int64_t batch) {
      run_unfused_ = true;
      run_device(batch);
      queue_.wait();
      run_unfused_ = false;
    };
    if (fused_plan_->choose_execution(fused_plan_->batch_tile(), run_model,
                                      measure_unfused ? std::function<void(int64_t)>(run_unfused)
                                                      : std::function<void(int64_t)>())) {
      if (unfused_) storage_->release_intermediates(graph_);  // measured, not chosen
      unfused_.reset();
    } else {
      fused_plan_.reset();
      run_unfused_ = true;
      // The log describes what runs: the unfused ops instead of the fused plan's layers.
      log_.precision.clear();
      log_unfused_plan("measured faster than the fused conv-dense-heads plan");
    }
    plan_sparse();
  }

  void log_unfused_plan(const std::string& why) {
    log_.graph.insert(log_.graph.end(), unfused_->op_lines().begin(), unfused_->op_lines().end());
    log_.precision = unfused_->precision_lines();
    log_.summary = "plan: unfused (" + why + ")";
  }

  onnx_import::PlanContext plan_context() {
    return {queue_,
            graph_,
            *fused_,
            max_shapes_,
            shapes_,
            [this](int v) { return storage_->data(v); },
            [this](int v) -> const DeviceBuffer<float>& { return storage_->storage(v); },
            options_};
  }

  // The sparse execution beside the fused plan (fp32): built unless the options say dense;
  // in kAuto, timed at load on all-charged and all-zero patches against the dense plan.
  void plan_sparse() {
    if (options_.precision != Precision::kFp32 || options_.sparse == SparsePlan::kDense) return;
    sparse_ = std::make_unique<onnx_import::SparseExecution>(
        plan_context(), [this] { run_dense(); }, std::max<int64_t>(max_batch_, 1), log_);
  }

  void run_dense() {
    if (fused_plan_ && !run_unfused_) {
      fused_plan_->run();
    } else {
      unfused_->run(shapes_);
    }
  }

  std::string name_;
  Graph graph_;
  Queue queue_;
  OnnxModelOptions options_;
  int64_t max_batch_ = 0;
  std::vector<Shape> max_shapes_;
  std::vector<Shape> shapes_;  // of the last run_device()
  ModelSignature signature_;
  PlanLog log_;
  std::optional<onnx_import::ValueStorage> storage_;
  std::optional<onnx_import::ConvDenseHeads> fused_;
  std::unique_ptr<onnx_import::UnfusedPlan> unfused_;
  std::unique_ptr<onnx_import::ConvDenseHeadsPlan> fused_plan_;
  bool run_unfused_ = false;                              // chosen (or being measured)
  std::unique_ptr<onnx_import::SparseExecution> sparse_;  // the fused plan's sparse execution
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<OnnxDeviceModel> make_onnx_device_model(const onnx::ModelProto& model,
                                                        const Backend& backend,
                                                        const OnnxModelOptions& options) {
  return std::make_unique<OnnxModel>(model, backend, options);
}

std::string_view to_string(SparsePlan plan) {
  switch (plan) {
    case SparsePlan::kDense:
      return "dense";
    case SparsePlan::kSparse:
      return "sparse";
    case SparsePlan::kAuto:
      break;
  }
  return "auto";
}

SparsePlan sparse_plan_from_string(std::string_view text, const std::string& where) {
  for (SparsePlan p : {SparsePlan::kAuto, SparsePlan::kDense, SparsePlan::kSparse})
    if (text == to_string(p)) return p;
  throw Error(
      ErrorCode::kInvalidArgument,
      where + ": sparse plan must be auto, dense or sparse, not '" + std::string(text) + "'");
}

bool onnx_model_is_batched(const onnx::ModelProto& model) {
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name()) || !input.type().tensor_type().has_shape()) continue;
    const auto& dims = input.type().tensor_type().shape().dim();
    if (!dims.empty() && !(dims[0].has_dim_value() && dims[0].dim_value() >= 0)) return true;
  }
  return false;
}

std::unique_ptr<Model> make_onnx_model(const onnx::ModelProto& model, const Backend& backend,
                                       const OnnxModelOptions& options) {
  return make_onnx_device_model(model, backend, options);
}

std::unique_ptr<Model> load_onnx_model(const std::filesystem::path& path, const Backend& backend,
                                       const OnnxModelOptions& options) {
  return make_onnx_model(read_onnx_file(path), backend, options);
}

}  // namespace kaas::models
