#include "kaas/models/onnx_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <type_traits>
#include <variant>

#include "kaas/backends/backend_traits.h"
#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "kaas/common/error.h"
#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/convert.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/impl_table.h"
#include "kaas/kernels/planner.h"
#include "kaas/models/onnx_fused.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_ops/op_def.h"
#include "kaas/models/onnx_reduced_ops.h"
#include "kaas/models/onnx_sparse_execution.h"
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

// The fused plan's 16-bit copies: the input (rounded per call), the conv and first dense
// weights (rounded once at load, W1 also packed for the AVX512-BF16 kernel where it runs) and
// the conv slab.
template <class T>
struct ReducedLayers {
  DeviceBuffer<T> input, conv_weight, dense1_weight, slab;
  std::vector<bf16> dense1_pairs;  // host memory: CPU backends only
  GemmPackedBf16 dense1_packed;
};

template <class T>
std::vector<T> rounded(const std::vector<float>& values) {
  std::vector<T> r(values.size());
  for (size_t i = 0; i < values.size(); ++i) r[i] = math::round_to<T>(values[i]);
  return r;
}

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
    upload_constants();
    choose_plan();
  }

  const std::string& name() const override { return name_; }
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::string> describe() const override { return log_.lines(); }

  const Queue& queue() const override { return queue_; }
  float* device_input(size_t index) override { return data(graph_.inputs.at(index)); }

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
    } else if (fused_ && !run_unfused_) {
      run_fused();
    } else {
      run_unfused();
    }
    std::vector<const float*> outputs;
    for (const auto& output : graph_.outputs) outputs.push_back(data(output.second));
    return outputs;
  }

  using Model::run;
  std::vector<HostTensor> run(std::span<const TensorView> inputs) override {
    const CheckedInputs checked = check_inputs(signature_, inputs, name_);
    std::lock_guard lock(mutex_);
    try {
      for (size_t i = 0; i < graph_.inputs.size(); ++i) {
        const TensorView& in = checked.ordered[i];
        copy_to_device(queue_, in.values<float>(), storage(graph_.inputs[i]));
      }
      run_device(checked.batch);
      std::vector<HostTensor> outputs;
      for (size_t o = 0; o < graph_.outputs.size(); ++o) {
        const int value = graph_.outputs[o].second;
        HostTensor out{signature_.outputs[o].name, DataType::kFloat32, shapes_[value], {}};
        out.bytes.resize(size_t(element_count(out.shape)) * sizeof(float));
        copy_to_host(queue_, storage(value), out.values<float>());
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
  const DeviceBuffer<float>& storage(int value) const { return storages_[storage_of_[value]]; }
  float* data(int value) const { return storage(value).data(); }

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

  void upload_constants() {
    storage_of_.assign(graph_.values.size(), -1);
    const auto uses = onnx_import::use_counts(graph_);
    for (size_t v = 0; v < graph_.values.size(); ++v) {
      const auto& value = graph_.values[v];
      if (!value.constant || value.is_int64 || uses[v] == 0) continue;
      storage_of_[v] = static_cast<int>(storages_.size());
      storages_.push_back(to_device(queue_, value.data));
    }
    queue_.wait();
  }

  int new_storage(int64_t elements) {
    storages_.push_back(make_device_buffer<float>(queue_, size_t(std::max<int64_t>(elements, 1))));
    return static_cast<int>(storages_.size()) - 1;
  }

  // Unfused plan: intermediates share pooled buffers by liveness; Flatten/Reshape alias their
  // input's buffer. Inputs get their own buffers (reused once dead).
  void plan_unfused() {
    const int end = static_cast<int>(graph_.ops.size());
    std::vector<int> root(graph_.values.size());
    for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<int>(v);
    for (const Op& op : graph_.ops) {
      if (op.def->output_aliases_input) root[op.output] = root[op.inputs[0]];
    }
    std::vector<int> last_use(graph_.values.size(), -1);
    for (int i = 0; i < end; ++i) {
      for (int in : graph_.ops[i].inputs) {
        if (in >= 0) last_use[root[in]] = std::max(last_use[root[in]], i);
      }
    }
    for (const auto& [name, id] : graph_.outputs) last_use[root[id]] = end;
    std::multimap<size_t, int> free_pool;  // capacity -> storage
    for (int id : graph_.inputs) storage_of_[id] = new_storage(element_count(max_shapes_[id]));
    for (int i = 0; i < end; ++i) {
      const Op& op = graph_.ops[i];
      if (op.def->output_aliases_input) {
        storage_of_[op.output] = storage_of_[op.inputs[0]];
      } else {
        const size_t need = size_t(element_count(max_shapes_[op.output]));
        const auto fit = free_pool.lower_bound(need);
        if (fit != free_pool.end()) {
          storage_of_[op.output] = fit->second;
          free_pool.erase(fit);
        } else {
          storage_of_[op.output] = new_storage(int64_t(need));
        }
      }
      for (int in : op.inputs) {
        if (in < 0 || graph_.values[root[in]].constant || last_use[root[in]] != i) continue;
        last_use[root[in]] = -2;  // freed once, even when read twice by this op
        const int s = storage_of_[root[in]];
        free_pool.emplace(storages_[s].size(), s);
      }
    }
    for (const Op& op : graph_.ops) {
      const Shape& out = max_shapes_[op.output];
      log_.graph.push_back(op.op_type + " " + op.node + " -> " + shape_string(out));
    }
  }

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
      plan_unfused();
      if (options_.precision == Precision::kFp32) {
        log_.precision.push_back("precision fp32: every op");
      } else {
        reduced_ops_ = std::make_unique<onnx_import::ReducedOps>(queue_, graph_, max_shapes_,
                                                                 options_.precision);
        log_.precision = reduced_ops_->plan();
      }
      log_.summary = options_.fused == FusedPlan::kOff ? "plan: unfused (fused plan disabled)"
                                                       : "plan: unfused (" + why_not + ")";
      return;
    }
    // fp32 on a CPU backend, measuring: the unfused plan is a candidate too, so its buffers are
    // laid out first and the fused plan shares its inputs and outputs.
    const bool cpu = host_simd(queue_.backend_id());
    unfused_candidate_ =
        cpu && options_.precision == Precision::kFp32 &&
        options_.planner.value_or(planner::mode_from_environment()) == planner::Mode::kMeasure;
    const Op& softmax = graph_.ops[fused_->softmax];
    const Op& head_b = graph_.ops[fused_->head_b];
    if (unfused_candidate_) {
      const size_t graph_lines = log_.graph.size();
      plan_unfused();
      // Its op lines are logged only if it is chosen.
      unfused_plan_lines_.assign(log_.graph.begin() + std::ptrdiff_t(graph_lines),
                                 log_.graph.end());
      log_.graph.resize(graph_lines);
    } else {
      for (int id : graph_.inputs) storage_of_[id] = new_storage(element_count(max_shapes_[id]));
      for (int v : {softmax.output, head_b.output})
        storage_of_[v] = new_storage(element_count(max_shapes_[v]));
    }
    const int64_t tile = plan_fused_layers();
    plan_fused_execution(tile);
    plan_sparse();
  }

  // The fused plan's buffers (its slab sized by the batch tile and the slab budget, the first
  // layer's packed weights) and its plan lines. Returns the batch tile.
  int64_t plan_fused_layers() {
    const int64_t tile =
        std::min<int64_t>(std::max<int64_t>(max_batch_, 1), options_.fused_batch_tile);
    options_.fused_batch_tile = tile;
    const Shape& conv_out = max_shapes_[graph_.ops[fused_->conv].output];
    const int64_t element_bytes = options_.precision == Precision::kFp32 ? 4 : 2;
    const int64_t slab_budget =
        conv_dense_heads_slab_budget(queue_.backend(), conv_out[1], conv_out[2], conv_out[3], tile,
                                     options_.fused_slab_bytes, element_bytes);
    const int64_t rows =
        onnx_import::slab_rows(graph_, *fused_, max_shapes_, tile, slab_budget, element_bytes);
    fused_rows_per_pass_ = rows;
    const size_t slab_elements = size_t(tile * rows * conv_out[2] * conv_out[3]);
    std::string dense1_impl = "portable";
    switch (options_.precision) {
      case Precision::kFp32:
        fused_slab_ = make_device_buffer<float>(queue_, slab_elements);
        dense1_impl = "kAuto";
        pack_dense1_panels();
        break;
      case Precision::kBf16:
        dense1_impl = make_reduced<bf16>(slab_elements);
        break;
      case Precision::kFp16:
        dense1_impl = make_reduced<fp16>(slab_elements);
        break;
    }
    fused_dense1_ = make_device_buffer<float>(
        queue_, size_t(max_shapes_[graph_.ops[fused_->dense1].output][0] *
                       max_shapes_[graph_.ops[fused_->dense1].output][1]));
    const std::string p(to_string(options_.precision));
    const std::string reduced = p + " weights and activations, fp32 accumulation and bias";
    log_.precision.push_back("precision " + p + ": " + graph_.ops[fused_->conv].node + " (Conv) " +
                             (p == "fp32" ? std::string("fp32") : reduced));
    log_.precision.push_back("precision " + p + ": " + graph_.ops[fused_->dense1].node +
                             " (Gemm) " + (p == "fp32" ? std::string("fp32") : reduced) +
                             ", gemm " + dense1_impl);
    log_.precision.push_back("precision " + p + ": " + graph_.ops[fused_->dense2].node + ", " +
                             graph_.ops[fused_->head_a].node + ", " +
                             graph_.ops[fused_->head_b].node + " fp32 (their outputs fp32)");
    log_.summary = "plan: fused conv-dense-heads: " + graph_.ops[fused_->conv].op_type + " " +
                   std::to_string(rows) + " output rows x " + std::to_string(tile) +
                   " patches per slab, accumulated into " + graph_.ops[fused_->dense1].node + "; " +
                   graph_.ops[fused_->dense2].node + " and both heads in one kernel";
    return tile;
  }

  // The sparse execution beside the fused plan (fp32): built unless the options say dense;
  // in kAuto, timed at load on all-charged and all-zero patches against the dense plan.
  void plan_sparse() {
    if (options_.precision != Precision::kFp32 || options_.sparse == SparsePlan::kDense) return;
    const onnx_import::PlanContext context{
        queue_,
        graph_,
        *fused_,
        max_shapes_,
        shapes_,
        [this](int v) { return data(v); },
        [this](int v) -> const DeviceBuffer<float>& { return storage(v); },
        options_};
    sparse_ = std::make_unique<onnx_import::SparseExecution>(
        context, [this] { run_unfused_ ? run_unfused() : run_fused(); },
        std::max<int64_t>(max_batch_, 1), log_);
  }

  struct FusedKernels {
    GemmImpl dense1;
    Conv2dImpl conv;
    std::string name;
  };

  // The first-layer (and conv) kernels the fused plan may run: the rows of gemm's table
  // (kernels/gemm.cc) with a SIMD tier that can run this product here (the tiles, which take K
  // chunks and packed panels); for bf16 also the conv on vdpbf16ps.
  std::vector<FusedKernels> fused_kernel_candidates(int64_t batch, int64_t n1, bool trans_b) {
    const Op& dense1 = graph_.ops[fused_->dense1];
    std::vector<FusedKernels> impls;
    const int64_t k1 = max_shapes_[dense1.inputs[0]][1];
    const auto tiles = [&](const std::vector<std::string>& rows, std::string_view choice) {
      std::vector<GemmImpl> out;
      for (const std::string& row : rows) {
        if (impl_row_tier(choice, row) != IsaTier::kPortable)
          out.push_back(gemm_impl_from_name(row));
      }
      return out;
    };
    if (options_.precision == Precision::kFp32) {
      // op(W1) runs packed in panels, row-major whatever its spelling.
      const float* none = nullptr;
      GemmParams params;
      params.rows_independent = true;
      for (GemmImpl impl : tiles(
               gemm_impls_for(queue_, make_view<2>(none, {batch, k1}), make_view<2>(none, {k1, n1}),
                              make_view<2>(static_cast<float*>(nullptr), {batch, n1}), params),
               "gemm fp32"))
        impls.push_back({impl, Conv2dImpl::kAuto, std::string(gemm_impl_name(impl))});
    } else {
      const bf16* none = nullptr;
      GemmParams params;
      params.trans_b = trans_b;
      const auto* bf16_layers = std::get_if<ReducedLayers<bf16>>(&reduced_);
      if (bf16_layers != nullptr && bf16_layers->dense1_packed.pairs != nullptr)
        params.packed_b = &bf16_layers->dense1_packed;
      const auto w1 = trans_b ? make_view<2>(none, {n1, k1}) : make_view<2>(none, {k1, n1});
      // Widened tiles (fp16 too: the same row-major condition), then vdpbf16ps (bf16, packed).
      for (GemmImpl impl :
           tiles(gemm_impls_for(queue_, make_view<2>(none, {batch, k1}), w1,
                                make_view<2>(static_cast<float*>(nullptr), {batch, n1}), params),
                 "gemm bf16")) {
        if (impl == GemmImpl::kAvx512) {
          impls.push_back({GemmImpl::kAvx512, Conv2dImpl::kAuto, "avx512 widened"});
          continue;
        }
        impls.push_back({GemmImpl::kAvx512Bf16, Conv2dImpl::kAuto, "avx512_bf16 vdpbf16ps"});
        // The conv on vdpbf16ps too (a 5x5 single-channel kernel: 15 pair steps, not 25 FMAs).
        if (conv2d_avx512_bf16_available())
          impls.push_back({GemmImpl::kAvx512Bf16, Conv2dImpl::kAvx512Bf16,
                           "avx512_bf16 vdpbf16ps conv and dense"});
      }
    }
    return impls;
  }

  // The planner's candidates for the fused plan on the CPU backends: thread split x first-layer
  // GEMM, today's fixed rule (kernel split, kAuto's GEMM) first. Each is timed on `batch` rows
  // of the real shapes; the outputs are the same bits for every split and for the fp32 GEMMs
  // (one FMA chain per element in either vector width); the bf16 kernels round differently
  // (vdpbf16ps multiplies pairs), so the choice is made once, at load, for every batch.
  void plan_fused_execution(int64_t batch) {
    if (!host_simd(queue_.backend_id())) return;
    const Op& dense1 = graph_.ops[fused_->dense1];
    const int64_t n1 = max_shapes_[dense1.output][1];
    const bool trans_b = dense1.attr<GemmParams>().trans_b;
    std::vector<FusedKernels> impls = fused_kernel_candidates(batch, n1, trans_b);
    if (impls.empty()) impls.push_back({GemmImpl::kAuto, Conv2dImpl::kAuto, "auto"});
    const planner::Mode mode = options_.planner.value_or(planner::mode_from_environment());
    if (options_.precision != Precision::kFp32 && impls.size() > 1 &&
        mode == planner::Mode::kMeasure && options_.fused_candidate.empty())
      impls = {choose_reduced_kernels(impls, batch)};
    std::vector<ConvDenseHeadsSplit> splits{ConvDenseHeadsSplit::kKernels};
    const int threads = conv_dense_heads_batch_threads(queue_);
    if (threads > 1 && batch >= threads) splits.push_back(ConvDenseHeadsSplit::kBatch);
    std::vector<planner::Candidate> candidates;
    std::vector<std::pair<ConvDenseHeadsSplit, FusedKernels>> choices;
    for (const auto split : splits) {
      for (const FusedKernels& k : impls) {
        choices.emplace_back(split, k);
        candidates.push_back(
            {std::string(to_string(split)) + " split, " + k.name, [this, split, k, batch] {
               fused_split_ = split;
               fused_impl_ = k.dense1;
               fused_conv_impl_ = k.conv;
               run_device(batch);
               queue_.wait();
             }});
      }
    }
    if (unfused_candidate_) {
      candidates.push_back({"unfused", [this, batch] {
                              run_unfused_ = true;
                              run_device(batch);
                              queue_.wait();
                              run_unfused_ = false;
                            }});
    }
    if (mode == planner::Mode::kMeasure && candidates.size() > 1) copy_trial_input();
    const Shape& conv_out = max_shapes_[graph_.ops[fused_->conv].output];
    const std::string point =
        "conv-dense-heads " + std::string(to_string(options_.precision)) + " " +
        std::string(queue_.backend().name()) + " threads " + std::to_string(threads) + " conv " +
        shape_string(Shape(conv_out.begin() + 1, conv_out.end())) + " N1 " + std::to_string(n1) +
        (trans_b ? " transB" : "") + " slab rows " + std::to_string(fused_rows_per_pass_) +
        " batch " + std::to_string(batch);
    const planner::Decision d = options_.fused_candidate.empty()
                                    ? planner::choose(point, candidates, mode)
                                    : pinned(candidates, options_.fused_candidate);
    log_.decisions.push_back("planner: " + d.describe(point));
    if (d.chosen < choices.size()) {
      fused_split_ = choices[d.chosen].first;
      fused_impl_ = choices[d.chosen].second.dense1;
      fused_conv_impl_ = choices[d.chosen].second.conv;
      if (fused_split_ == ConvDenseHeadsSplit::kBatch && options_.fused_candidate.empty())
        log_.extend_last_decision(plan_batch_split_threshold(point, batch, mode));
      release_unfused_buffers();
      return;
    }
    run_unfused_ = true;  // measured faster than every fused candidate
    fused_slab_ = {};
    fused_dense1_ = {};
    fused_dense1_panels_ = {};
    std::vector<float>().swap(fused_dense1_panel_values_);
    // The log describes what runs: the unfused ops instead of the fused plan's layers.
    log_.graph.insert(log_.graph.end(), unfused_plan_lines_.begin(), unfused_plan_lines_.end());
    log_.precision = {"precision fp32: every op"};
    log_.summary = "plan: unfused (measured faster than the fused conv-dense-heads plan)";
  }

  // The batch split, chosen at the planning batch, can lose to the kernels split on the smaller
  // batches a dynamic batcher forms (batch 32 on a Zen 5 VM: 3.2 ms split by batch, 2.6 ms by
  // kernels). The two splits give the same bits, so the split may follow the batch: both are
  // timed at 32, 64 and 128 rows, and the batch split runs from the smallest of them where it is
  // faster (the planning batch when none). Returns what the plan log adds.
  std::string plan_batch_split_threshold(const std::string& point, int64_t batch,
                                         planner::Mode mode) {
    batch_split_from_ = 0;
    if (mode != planner::Mode::kMeasure) return {};
    const int threads = conv_dense_heads_batch_threads(queue_);
    const ConvDenseHeadsSplit chosen = fused_split_;
    std::string log;
    int64_t from = batch;
    for (const int64_t rows : {int64_t(32), int64_t(64), int64_t(128)}) {
      if (rows >= batch || rows < threads) continue;
      std::vector<planner::Candidate> candidates;
      for (const auto split : {ConvDenseHeadsSplit::kKernels, ConvDenseHeadsSplit::kBatch}) {
        candidates.push_back({std::string(to_string(split)) + " split", [this, split, rows] {
                                fused_split_ = split;
                                run_device(rows);
                                queue_.wait();
                              }});
      }
      const std::string at = point + " split at batch " + std::to_string(rows);
      const planner::Decision d = planner::choose(at, candidates, mode);
      log += "; at batch " + std::to_string(rows) + ": " + d.chosen_name;
      if (d.chosen == 1) {
        from = rows;
        break;
      }
    }
    fused_split_ = chosen;
    batch_split_from_ = from;
    return log + " (the batch split from batch " + std::to_string(from) + ")";
  }

  // Trial input of the fused plan's measurements: the rescaled-ADC range of the network's
  // training data, a fixed pattern.
  void copy_trial_input() {
    const int input = graph_.ops[fused_->conv].inputs[0];
    std::vector<float> values(size_t(element_count(max_shapes_[input])));
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(int(i * 7919 % 2000)) / 100 - 5;
    copy_to_device(queue_, std::span<const float>(values), storage(input));
    queue_.wait();
  }

  // bf16 / fp16: the first-layer kernels differ in their bits (vdpbf16ps multiplies pairs), so
  // which one runs is a decision of the model, not of this process, batch or thread count: made
  // once on the kernel split, under a point without backend, threads or batch, and kept in the
  // model's plan file (docs/reproducibility.md). The split is chosen per process after it.
  FusedKernels choose_reduced_kernels(const std::vector<FusedKernels>& impls, int64_t batch) {
    copy_trial_input();
    std::vector<planner::Candidate> candidates;
    for (const FusedKernels& k : impls) {
      candidates.push_back({k.name, [this, k, batch] {
                              fused_split_ = ConvDenseHeadsSplit::kKernels;
                              fused_impl_ = k.dense1;
                              fused_conv_impl_ = k.conv;
                              run_device(batch);
                              queue_.wait();
                            }});
    }
    const Shape& conv_out = max_shapes_[graph_.ops[fused_->conv].output];
    const std::string point =
        "conv-dense-heads " + std::string(to_string(options_.precision)) + " kernels (bits) conv " +
        shape_string(Shape(conv_out.begin() + 1, conv_out.end())) + " weights " +
        std::to_string(onnx_import::conv_dense_weights_digest(graph_, *fused_));
    const planner::Decision d =
        planner::choose(point, candidates, planner::Mode::kMeasure, {}, options_.plan_file);
    log_.decisions.push_back("planner: " + d.describe(point));
    return impls[d.chosen];
  }

  // The decision that runs candidate `name`, or kInvalidArgument naming the candidates.
  static planner::Decision pinned(const std::vector<planner::Candidate>& candidates,
                                  const std::string& name) {
    planner::Decision d;
    std::string names;
    for (size_t i = 0; i < candidates.size(); ++i) {
      d.names.push_back(candidates[i].name);
      names += (i == 0 ? "\"" : ", \"") + candidates[i].name + "\"";
      if (candidates[i].name == name) d.chosen = i;
    }
    require(std::find(d.names.begin(), d.names.end(), name) != d.names.end(), "onnx model",
            "fused_candidate", "one of " + names, "\"" + name + "\"");
    d.chosen_name = name;
    d.pinned = true;
    return d;
  }

  // The unfused plan's intermediates, once the fused plan won: every storage that no input,
  // output or constant uses.
  void release_unfused_buffers() {
    if (!unfused_candidate_) return;
    std::vector<bool> keep(storages_.size(), false);
    for (int id : graph_.inputs) keep[size_t(storage_of_[id])] = true;
    for (const auto& [name, id] : graph_.outputs) keep[size_t(storage_of_[id])] = true;
    for (size_t v = 0; v < graph_.values.size(); ++v)
      if (graph_.values[v].constant && storage_of_[v] >= 0) keep[size_t(storage_of_[v])] = true;
    for (size_t s = 0; s < storages_.size(); ++s)
      if (!keep[s]) storages_[s] = {};
  }

  // The 16-bit copies of the fused plan's first layers; returns the first dense layer's gemm.
  template <class T>
  std::string make_reduced(size_t slab_elements) {
    ReducedLayers<T> layers;
    const Op& conv = graph_.ops[fused_->conv];
    const Op& dense1 = graph_.ops[fused_->dense1];
    layers.input =
        make_device_buffer<T>(queue_, size_t(element_count(max_shapes_[conv.inputs[0]])));
    const std::vector<T> conv_weight = rounded<T>(graph_.values[conv.inputs[1]].data);
    const std::vector<T> dense1_weight = rounded<T>(graph_.values[dense1.inputs[1]].data);
    layers.conv_weight = to_device(queue_, std::span<const T>(conv_weight));
    layers.dense1_weight = to_device(queue_, std::span<const T>(dense1_weight));
    layers.slab = make_device_buffer<T>(queue_, slab_elements);
    std::string impl = "portable";
    const bool cpu = host_simd(queue_.backend_id());
    const bool trans_b = dense1.attr<GemmParams>().trans_b;
    // What gemm's kAuto will run for every slab pass (N1 % 16 == 0 for the AVX-512 tiles; the
    // packed pairs need an even row length to be sliced per pass).
    const Shape& conv_out = max_shapes_[conv.output];
    const int64_t n1 = max_shapes_[dense1.output][1], row_values = conv_out[2] * conv_out[3];
    const bool tiles_fit = cpu && n1 % 16 == 0;
    if (tiles_fit && !trans_b && gemm_avx512_available())
      impl = "avx512 (16-bit blocks widened to fp32)";
    if constexpr (std::is_same_v<T, bf16>) {
      // A transposed W1 (PyTorch Linear) is packed in K-pairs for the AVX512-BF16 kernel.
      // A row-major one too, as the planner's vdpbf16ps candidate against the widened blocks.
      if (tiles_fit && row_values % 2 == 0 && gemm_avx512_bf16_available()) {
        const Shape& w1 = graph_.values[dense1.inputs[1]].shape;
        View2<const bf16> op_w1 = make_view<2>(dense1_weight.data(), {w1[0], w1[1]});
        if (trans_b) {
          std::swap(op_w1.extent[0], op_w1.extent[1]);
          std::swap(op_w1.stride[0], op_w1.stride[1]);
        }
        layers.dense1_pairs.resize(
            size_t(gemm_packed_bf16_elements(op_w1.extent[0], op_w1.extent[1])));
        layers.dense1_packed = gemm_pack_bf16(op_w1, layers.dense1_pairs.data());
        if (trans_b) impl = "avx512_bf16 (W1 packed in K-pairs at load)";
      }
    }
    queue_.wait();
    reduced_.template emplace<ReducedLayers<T>>(std::move(layers));
    return impl;
  }

  void run_unfused() {
    const std::function<float*(int)> data_of = [this](int v) { return data(v); };
    const onnx_import::RunContext context{queue_, shapes_, data_of};
    for (const Op& op : graph_.ops) {
      if (reduced_ops_ && reduced_ops_->run(context, op)) continue;
      if (op.def->run != nullptr) op.def->run(context, op);
    }
  }

  // fp32 on a CPU backend with a fast GEMM path: op(W1) packed in column panels once, so above
  // a few rows (where threads split columns) a thread streams its own panel of the first dense
  // layer's weights; batch 1 splits K by chunks and reads W1 as stored. The same values, so the
  // same bits; the cost is a second copy of W1 in host memory (47.6 MB for EmTrkMichelId).
  void pack_dense1_panels() {
    if (!host_simd(queue_.backend_id()) || !(gemm_avx512_available() || gemm_avx2_available()))
      return;
    const Op& dense1 = graph_.ops[fused_->dense1];
    const Shape& w1 = max_shapes_[dense1.inputs[1]];
    const bool trans_b = dense1.attr<GemmParams>().trans_b;
    View2<const float> op_w1 =
        make_view<2>(static_cast<const float*>(data(dense1.inputs[1])), {w1[0], w1[1]});
    if (trans_b) {
      std::swap(op_w1.extent[0], op_w1.extent[1]);
      std::swap(op_w1.stride[0], op_w1.stride[1]);
    }
    fused_dense1_panel_values_.resize(
        size_t(gemm_packed_panels_elements(op_w1.extent[0], op_w1.extent[1])));
    fused_dense1_panels_ = gemm_pack_panels(op_w1, fused_dense1_panel_values_.data());
  }

  void run_fused() {
    const int64_t rows = shapes_[graph_.ops[fused_->conv].inputs[0]][0];
    const ConvDenseHeadsSplit split =
        rows < batch_split_from_ ? ConvDenseHeadsSplit::kKernels : fused_split_;
    const onnx_import::FusedBuffers buffers{fused_dense1_.data(), options_.fused_batch_tile,
                                            fused_rows_per_pass_, split,
                                            fused_impl_,          fused_conv_impl_};
    const std::function<float*(int)> data_of = [this](int v) { return data(v); };
    const Op& conv = graph_.ops[fused_->conv];
    const Op& dense1 = graph_.ops[fused_->dense1];
    if (std::holds_alternative<std::monostate>(reduced_)) {
      const onnx_import::FusedOperands<float> operands{
          data(conv.inputs[0]),
          data(conv.inputs[1]),
          data(dense1.inputs[1]),
          nullptr,
          fused_slab_.data(),
          fused_dense1_panels_.data != nullptr ? &fused_dense1_panels_ : nullptr};
      return onnx_import::run_conv_dense_heads(queue_, graph_, *fused_, shapes_, data_of, operands,
                                               buffers);
    }
    if (auto* layers = std::get_if<ReducedLayers<bf16>>(&reduced_))
      return run_reduced(*layers, data_of, buffers);
    if (auto* layers = std::get_if<ReducedLayers<fp16>>(&reduced_))
      return run_reduced(*layers, data_of, buffers);
  }

  template <class T>
  void run_reduced(ReducedLayers<T>& layers, const std::function<float*(int)>& data_of,
                   const onnx_import::FusedBuffers& buffers) {
    const int input = graph_.ops[fused_->conv].inputs[0];
    const int64_t count = element_count(shapes_[input]);
    convert(queue_, make_view(static_cast<const float*>(data(input)), count),
            make_view(layers.input.data(), count));
    const GemmPackedBf16* packed =
        layers.dense1_packed.pairs != nullptr ? &layers.dense1_packed : nullptr;
    const onnx_import::FusedOperands<T> operands{
        layers.input.data(),         layers.conv_weight.data(),
        layers.dense1_weight.data(), packed,
        layers.slab.data(),          nullptr};
    onnx_import::run_conv_dense_heads(queue_, graph_, *fused_, shapes_, data_of, operands, buffers);
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
  std::vector<DeviceBuffer<float>> storages_;
  std::vector<int> storage_of_;
  std::optional<onnx_import::ConvDenseHeads> fused_;
  DeviceBuffer<float> fused_slab_, fused_dense1_;
  std::vector<float> fused_dense1_panel_values_;  // host memory: CPU backends only
  GemmPackedPanels fused_dense1_panels_;
  int64_t fused_rows_per_pass_ = 1;
  ConvDenseHeadsSplit fused_split_ = ConvDenseHeadsSplit::kKernels;
  int64_t batch_split_from_ = 0;    // smaller batches run the kernels split (measured)
  bool unfused_candidate_ = false;  // the planner measures the unfused plan beside the fused one
  bool run_unfused_ = false;        // chosen (or being measured)
  std::vector<std::string> unfused_plan_lines_;  // its op lines, logged if it is chosen
  GemmImpl fused_impl_ = GemmImpl::kAuto;
  Conv2dImpl fused_conv_impl_ = Conv2dImpl::kAuto;
  std::variant<std::monostate, ReducedLayers<bf16>, ReducedLayers<fp16>> reduced_;
  std::unique_ptr<onnx_import::ReducedOps> reduced_ops_;  // unfused plan in bf16 / fp16
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
