#include "kaas/models/onnx_fused_plan.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "kaas/backends/backend_traits.h"
#include "kaas/backends/cpu/cpu_info.h"
#include "kaas/common/error.h"
#include "kaas/kernels/convert.h"
#include "kaas/kernels/impl_table.h"
#include "kaas/kernels/planner.h"
#include "kaas/models/onnx_ops/op_def.h"

namespace kaas::models::onnx_import {
namespace {

// The 16-bit copies: the input (rounded per call), the conv and first dense weights (rounded
// once at load, W1 also packed for the AVX512-BF16 kernel where it runs) and the conv slab.
template <class T>
struct ReducedLayers {
  DeviceBuffer<T> input, conv_weight, dense1_weight, slab;
  std::vector<bf16> dense1_pairs;  // host memory: CPU backends only
  GemmPackedBf16 dense1_packed;
};

template <class T>
std::vector<T> rounded_copy(const std::vector<float>& values) {
  std::vector<T> r(values.size());
  for (size_t i = 0; i < values.size(); ++i) r[i] = math::round_to<T>(values[i]);
  return r;
}

// The decision that runs candidate `name`, or kInvalidArgument naming the candidates.
planner::Decision pinned(const std::vector<planner::Candidate>& candidates,
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

}  // namespace

struct ConvDenseHeadsPlan::Reduced {
  std::variant<ReducedLayers<bf16>, ReducedLayers<fp16>> layers;
};

ConvDenseHeadsPlan::ConvDenseHeadsPlan(const PlanContext& context, int64_t max_batch, PlanLog& log)
    : context_(context), log_(log) {
  const Graph& graph = context.graph;
  const ConvDenseHeads& fused = context.fused;
  const OnnxModelOptions& options = context.options;
  tile_ = std::min<int64_t>(std::max<int64_t>(max_batch, 1), options.fused_batch_tile);
  const Shape& conv_out = context.max_shapes[graph.ops[fused.conv].output];
  const int64_t element_bytes = options.precision == Precision::kFp32 ? 4 : 2;
  const int64_t slab_budget =
      conv_dense_heads_slab_budget(context.queue.backend(), conv_out[1], conv_out[2], conv_out[3],
                                   tile_, options.fused_slab_bytes, element_bytes);
  slab_rows_ = slab_rows(graph, fused, context.max_shapes, tile_, slab_budget, element_bytes);
  rows_per_pass_ = thread_rows_ = slab_rows_;
  // The batch split's smaller passes: a thread's share of the slab within its L2.
  const int threads = conv_dense_heads_batch_threads(context.queue);
  const int64_t thread_budget = options.fused_thread_slab_bytes > 0
                                    ? options.fused_thread_slab_bytes
                                    : int64_t(host_cpu_info().l2_cache_bytes);
  if (options.precision == Precision::kFp32 && host_simd(context.queue.backend_id()) &&
      threads > 1 && thread_budget > 0) {
    thread_rows_ = std::min(
        slab_rows_, slab_rows(graph, fused, context.max_shapes,
                              std::max<int64_t>(tile_ / threads, 1), thread_budget, element_bytes));
  }
  const std::string dense1_impl =
      make_buffers(size_t(tile_ * slab_rows_ * conv_out[2] * conv_out[3]));
  const std::string p(to_string(options.precision));
  const std::string layers = p == "fp32"
                                 ? std::string("fp32")
                                 : p + " weights and activations, fp32 accumulation and bias";
  log_.precision.push_back("precision " + p + ": " + graph.ops[fused.conv].node + " (Conv) " +
                           layers);
  log_.precision.push_back("precision " + p + ": " + graph.ops[fused.dense1].node + " (Gemm) " +
                           layers + ", gemm " + dense1_impl);
  log_.precision.push_back("precision " + p + ": " + graph.ops[fused.dense2].node + ", " +
                           graph.ops[fused.head_a].node + ", " + graph.ops[fused.head_b].node +
                           " fp32 (their outputs fp32)");
  write_summary();
}

void ConvDenseHeadsPlan::write_summary() {
  const Graph& graph = context_.graph;
  const ConvDenseHeads& fused = context_.fused;
  log_.summary = "plan: fused conv-dense-heads: " + graph.ops[fused.conv].op_type + " " +
                 std::to_string(rows_per_pass_) + " output rows x " + std::to_string(tile_) +
                 " patches per slab, accumulated into " + graph.ops[fused.dense1].node + "; " +
                 graph.ops[fused.dense2].node + " and both heads in one kernel";
}

ConvDenseHeadsPlan::~ConvDenseHeadsPlan() = default;

// The slab (fp32, or the 16-bit layers) and the first dense layer's output; returns the first
// layer's gemm as the plan log names it.
std::string ConvDenseHeadsPlan::make_buffers(size_t slab_elements) {
  std::string dense1_impl = "portable";
  switch (context_.options.precision) {
    case Precision::kFp32:
      slab_ = make_device_buffer<float>(context_.queue, slab_elements);
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
  const Shape& dense1_out = context_.max_shapes[context_.graph.ops[context_.fused.dense1].output];
  dense1_ = make_device_buffer<float>(context_.queue, size_t(dense1_out[0] * dense1_out[1]));
  return dense1_impl;
}

// The 16-bit copies of the first layers; returns the first dense layer's gemm.
template <class T>
std::string ConvDenseHeadsPlan::make_reduced(size_t slab_elements) {
  const Queue& queue = context_.queue;
  const Graph& graph = context_.graph;
  ReducedLayers<T> layers;
  const Op& conv = graph.ops[context_.fused.conv];
  const Op& dense1 = graph.ops[context_.fused.dense1];
  layers.input =
      make_device_buffer<T>(queue, size_t(element_count(context_.max_shapes[conv.inputs[0]])));
  const std::vector<T> conv_weight = rounded_copy<T>(graph.values[conv.inputs[1]].data);
  const std::vector<T> dense1_weight = rounded_copy<T>(graph.values[dense1.inputs[1]].data);
  layers.conv_weight = to_device(queue, std::span<const T>(conv_weight));
  layers.dense1_weight = to_device(queue, std::span<const T>(dense1_weight));
  layers.slab = make_device_buffer<T>(queue, slab_elements);
  std::string impl = "portable";
  const bool cpu = host_simd(queue.backend_id());
  const bool trans_b = dense1.attr<GemmParams>().trans_b;
  // What gemm's kAuto will run for every slab pass (N1 % 16 == 0 for the AVX-512 tiles; the
  // packed pairs need an even row length to be sliced per pass).
  const Shape& conv_out = context_.max_shapes[conv.output];
  const int64_t n1 = context_.max_shapes[dense1.output][1], row_values = conv_out[2] * conv_out[3];
  const bool tiles_fit = cpu && n1 % 16 == 0;
  if (tiles_fit && !trans_b && gemm_avx512_available())
    impl = "avx512 (16-bit blocks widened to fp32)";
  if constexpr (std::is_same_v<T, bf16>) {
    // A transposed W1 (PyTorch Linear) is packed in K-pairs for the AVX512-BF16 kernel.
    // A row-major one too, as the planner's vdpbf16ps candidate against the widened blocks.
    if (tiles_fit && row_values % 2 == 0 && gemm_avx512_bf16_available()) {
      const Shape& w1 = graph.values[dense1.inputs[1]].shape;
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
  queue.wait();
  reduced_ = std::make_unique<Reduced>(Reduced{std::move(layers)});
  return impl;
}

// fp32 on a CPU backend with a fast GEMM path: op(W1) packed in column panels once, so above
// a few rows (where threads split columns) a thread streams its own panel of the first dense
// layer's weights; batch 1 splits K by chunks and reads W1 as stored. The same values, so the
// same bits; the cost is a second copy of W1 in host memory (47.6 MB for EmTrkMichelId).
void ConvDenseHeadsPlan::pack_dense1_panels() {
  if (!host_simd(context_.queue.backend_id()) ||
      !(gemm_avx512_available() || gemm_avx2_available()))
    return;
  const Op& dense1 = context_.graph.ops[context_.fused.dense1];
  const Shape& w1 = context_.max_shapes[dense1.inputs[1]];
  const bool trans_b = dense1.attr<GemmParams>().trans_b;
  View2<const float> op_w1 =
      make_view<2>(static_cast<const float*>(context_.data_of(dense1.inputs[1])), {w1[0], w1[1]});
  if (trans_b) {
    std::swap(op_w1.extent[0], op_w1.extent[1]);
    std::swap(op_w1.stride[0], op_w1.stride[1]);
  }
  // AVX2 alone (its CPU, or the ISA cap): panels of its tile width, so its tiles need no strip.
  const int64_t width = gemm_avx512_available() ? kGemmPanelColumns : kGemmAvx2PanelColumns;
  dense1_panel_values_.resize(
      size_t(gemm_packed_panels_elements(op_w1.extent[0], op_w1.extent[1], width)));
  dense1_panels_ = gemm_pack_panels(op_w1, dense1_panel_values_.data(), width);
}

// The first-layer (and conv) kernels the plan may run: the rows of gemm's table
// (kernels/gemm.cc) with a SIMD tier that can run this product here (the tiles, which take K
// chunks and packed panels); for bf16 also the conv on vdpbf16ps.
std::vector<ConvDenseHeadsPlan::Kernels> ConvDenseHeadsPlan::kernel_candidates(int64_t batch,
                                                                               int64_t n1,
                                                                               bool trans_b) {
  const Op& dense1 = context_.graph.ops[context_.fused.dense1];
  std::vector<Kernels> impls;
  const int64_t k1 = context_.max_shapes[dense1.inputs[0]][1];
  const auto tiles = [&](const std::vector<std::string>& rows, std::string_view choice) {
    std::vector<GemmImpl> out;
    for (const std::string& row : rows) {
      if (impl_row_tier(choice, row) != IsaTier::kPortable) out.push_back(gemm_impl_from_name(row));
    }
    return out;
  };
  const Queue& queue = context_.queue;
  if (context_.options.precision == Precision::kFp32) {
    // op(W1) runs packed in panels, row-major whatever its spelling.
    const float* none = nullptr;
    GemmParams params;
    params.rows_independent = true;
    for (GemmImpl impl :
         tiles(gemm_impls_for(queue, make_view<2>(none, {batch, k1}), make_view<2>(none, {k1, n1}),
                              make_view<2>(static_cast<float*>(nullptr), {batch, n1}), params),
               "gemm fp32"))
      impls.push_back({impl, Conv2dImpl::kAuto, std::string(gemm_impl_name(impl))});
    return impls;
  }
  const bf16* none = nullptr;
  GemmParams params;
  params.trans_b = trans_b;
  const auto* bf16_layers =
      reduced_ ? std::get_if<ReducedLayers<bf16>>(&reduced_->layers) : nullptr;
  if (bf16_layers != nullptr && bf16_layers->dense1_packed.pairs != nullptr)
    params.packed_b = &bf16_layers->dense1_packed;
  const auto w1 = trans_b ? make_view<2>(none, {n1, k1}) : make_view<2>(none, {k1, n1});
  // Widened tiles (fp16 too: the same row-major condition), then vdpbf16ps (bf16, packed).
  for (GemmImpl impl :
       tiles(gemm_impls_for(queue, make_view<2>(none, {batch, k1}), w1,
                            make_view<2>(static_cast<float*>(nullptr), {batch, n1}), params),
             "gemm bf16")) {
    if (impl == GemmImpl::kAvx512) {
      impls.push_back({GemmImpl::kAvx512, Conv2dImpl::kAuto, "avx512 widened"});
      continue;
    }
    impls.push_back({GemmImpl::kAvx512Bf16, Conv2dImpl::kAuto, "avx512_bf16 vdpbf16ps"});
    // The conv on vdpbf16ps too (a 5x5 single-channel kernel: 15 pair steps, not 25 FMAs).
    if (conv2d_avx512_bf16_available())
      impls.push_back(
          {GemmImpl::kAvx512Bf16, Conv2dImpl::kAvx512Bf16, "avx512_bf16 vdpbf16ps conv and dense"});
  }
  return impls;
}

// Thread split x first-layer kernels, the kernels split first (today's fixed rule); the batch
// split also with the smaller slab passes (thread_rows_), where they are smaller. Every pass
// cut gives the same bits (the first layer sums K per conv row: docs/reproducibility.md).
std::vector<ConvDenseHeadsPlan::Choice> ConvDenseHeadsPlan::fused_choices(
    const std::vector<Kernels>& impls) const {
  std::vector<Choice> choices;
  for (const Kernels& k : impls) choices.push_back({ConvDenseHeadsSplit::kKernels, k, slab_rows_});
  for (const Kernels& k : impls) {
    choices.push_back({ConvDenseHeadsSplit::kBatch, k, slab_rows_});
    if (thread_rows_ < slab_rows_)
      choices.push_back({ConvDenseHeadsSplit::kBatch, k, thread_rows_});
  }
  return choices;
}

// The planner's candidates on the CPU backends: thread split x first-layer GEMM, today's fixed
// rule (kernel split, kAuto's GEMM) first. Each is timed on `batch` rows of the real shapes; the
// outputs are the same bits for every split and for the fp32 GEMMs (one FMA chain per element
// in either vector width); the bf16 kernels round differently (vdpbf16ps multiplies pairs), so
// the choice is made once, at load, for every batch.
bool ConvDenseHeadsPlan::choose_execution(int64_t batch,
                                          const std::function<void(int64_t)>& run_model,
                                          const std::function<void(int64_t)>& run_unfused) {
  const Queue& queue = context_.queue;
  const OnnxModelOptions& options = context_.options;
  if (!host_simd(queue.backend_id())) return true;
  const Op& dense1 = context_.graph.ops[context_.fused.dense1];
  const int64_t n1 = context_.max_shapes[dense1.output][1];
  const bool trans_b = dense1.attr<GemmParams>().trans_b;
  std::vector<Kernels> impls = kernel_candidates(batch, n1, trans_b);
  if (impls.empty()) impls.push_back({GemmImpl::kAuto, Conv2dImpl::kAuto, "auto"});
  const planner::Mode mode = options.planner.value_or(planner::mode_from_environment());
  if (options.precision != Precision::kFp32 && impls.size() > 1 &&
      mode == planner::Mode::kMeasure && options.fused_candidate.empty())
    impls = {choose_reduced_kernels(impls, batch, run_model)};
  const int threads = conv_dense_heads_batch_threads(queue);
  std::vector<Choice> choices = fused_choices(impls);
  if (threads <= 1 || batch < threads)
    std::erase_if(choices, [](const Choice& c) { return c.split == ConvDenseHeadsSplit::kBatch; });
  std::vector<planner::Candidate> candidates;
  for (const Choice& c : choices) {
    std::string name = std::string(to_string(c.split)) + " split, " + c.kernels.name;
    if (c.rows_per_pass != slab_rows_)
      name +=
          ", slab " + std::to_string(c.rows_per_pass) + (c.rows_per_pass == 1 ? " row" : " rows");
    candidates.push_back({name, [this, c, batch, &run_model] {
                            split_ = c.split;
                            dense1_impl_ = c.kernels.dense1;
                            conv_impl_ = c.kernels.conv;
                            rows_per_pass_ = c.rows_per_pass;
                            run_model(batch);
                          }});
  }
  if (run_unfused) candidates.push_back({"unfused", [batch, &run_unfused] { run_unfused(batch); }});
  if (mode == planner::Mode::kMeasure && candidates.size() > 1) copy_trial_input();
  const Shape& conv_out = context_.max_shapes[context_.graph.ops[context_.fused.conv].output];
  const std::string point = "conv-dense-heads " + std::string(to_string(options.precision)) + " " +
                            std::string(queue.backend().name()) + " threads " +
                            std::to_string(threads) + " conv " +
                            shape_string(Shape(conv_out.begin() + 1, conv_out.end())) + " N1 " +
                            std::to_string(n1) + (trans_b ? " transB" : "") + " slab rows " +
                            std::to_string(slab_rows_) + " batch " + std::to_string(batch);
  const planner::Decision d = options.fused_candidate.empty()
                                  ? planner::choose(point, candidates, mode)
                                  : pinned(candidates, options.fused_candidate);
  log_.decisions.push_back("planner: " + d.describe(point));
  if (d.chosen >= choices.size()) {
    release();  // the unfused plan was measured faster than every fused candidate
    return false;
  }
  split_ = choices[d.chosen].split;
  dense1_impl_ = choices[d.chosen].kernels.dense1;
  conv_impl_ = choices[d.chosen].kernels.conv;
  rows_per_pass_ = choices[d.chosen].rows_per_pass;
  write_summary();
  if (split_ == ConvDenseHeadsSplit::kBatch && options.fused_candidate.empty())
    log_.extend_last_decision(batch_split_threshold(point, batch, run_model));
  return true;
}

// The batch split, chosen at the planning batch, can lose to the kernels split on the smaller
// batches a dynamic batcher forms (batch 32 on a Zen 5 VM: 3.2 ms split by batch, 2.6 ms by
// kernels). The two splits give the same bits, so the split may follow the batch: both are
// timed at 32, 64 and 128 rows, and the batch split runs from the smallest of them where it is
// faster (the planning batch when none). Returns what the plan log adds.
std::string ConvDenseHeadsPlan::batch_split_threshold(
    const std::string& point, int64_t batch, const std::function<void(int64_t)>& run_model) {
  batch_split_from_ = 0;
  const planner::Mode mode = context_.options.planner.value_or(planner::mode_from_environment());
  if (mode != planner::Mode::kMeasure) return {};
  const int threads = conv_dense_heads_batch_threads(context_.queue);
  const ConvDenseHeadsSplit chosen = split_;
  std::string log;
  int64_t from = batch;
  for (const int64_t rows : {int64_t(32), int64_t(64), int64_t(128)}) {
    if (rows >= batch || rows < threads) continue;
    std::vector<planner::Candidate> candidates;
    for (const auto split : {ConvDenseHeadsSplit::kKernels, ConvDenseHeadsSplit::kBatch}) {
      candidates.push_back(
          {std::string(to_string(split)) + " split", [this, split, rows, &run_model] {
             split_ = split;
             run_model(rows);
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
  split_ = chosen;
  batch_split_from_ = from;
  return log + " (the batch split from batch " + std::to_string(from) + ")";
}

// Trial input of the measurements: the rescaled-ADC range of the network's training data, a
// fixed pattern.
void ConvDenseHeadsPlan::copy_trial_input() {
  const int input = context_.graph.ops[context_.fused.conv].inputs[0];
  std::vector<float> values(size_t(element_count(context_.max_shapes[input])));
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(int(i * 7919 % 2000)) / 100 - 5;
  copy_to_device(context_.queue, std::span<const float>(values), context_.storage_of(input));
  context_.queue.wait();
}

// bf16 / fp16: the first-layer kernels differ in their bits (vdpbf16ps multiplies pairs), so
// which one runs is a decision of the model, not of this process, batch or thread count: made
// once on the kernel split, under a point without backend, threads or batch, and kept in the
// model's plan file (docs/reproducibility.md). The split is chosen per process after it.
ConvDenseHeadsPlan::Kernels ConvDenseHeadsPlan::choose_reduced_kernels(
    const std::vector<Kernels>& impls, int64_t batch,
    const std::function<void(int64_t)>& run_model) {
  copy_trial_input();
  std::vector<planner::Candidate> candidates;
  for (const Kernels& k : impls) {
    candidates.push_back({k.name, [this, k, batch, &run_model] {
                            split_ = ConvDenseHeadsSplit::kKernels;
                            dense1_impl_ = k.dense1;
                            conv_impl_ = k.conv;
                            run_model(batch);
                          }});
  }
  const Shape& conv_out = context_.max_shapes[context_.graph.ops[context_.fused.conv].output];
  const std::string point =
      "conv-dense-heads " + std::string(to_string(context_.options.precision)) +
      " kernels (bits) conv " + shape_string(Shape(conv_out.begin() + 1, conv_out.end())) +
      " weights " + std::to_string(conv_dense_weights_digest(context_.graph, context_.fused));
  const planner::Decision d =
      planner::choose(point, candidates, planner::Mode::kMeasure, {}, context_.options.plan_file);
  log_.decisions.push_back("planner: " + d.describe(point));
  return impls[d.chosen];
}

void ConvDenseHeadsPlan::release() {
  slab_ = {};
  dense1_ = {};
  dense1_panels_ = {};
  std::vector<float>().swap(dense1_panel_values_);
  reduced_.reset();
}

void ConvDenseHeadsPlan::run() {
  const std::vector<Shape>& shapes = context_.shapes;
  const int64_t rows = shapes[context_.graph.ops[context_.fused.conv].inputs[0]][0];
  const ConvDenseHeadsSplit split =
      rows < batch_split_from_ ? ConvDenseHeadsSplit::kKernels : split_;
  const FusedBuffers buffers{dense1_.data(), tile_,        rows_per_pass_,
                             split,          dense1_impl_, conv_impl_};
  if (reduced_) {
    if (std::holds_alternative<ReducedLayers<bf16>>(reduced_->layers))
      return run_reduced<bf16>(buffers);
    return run_reduced<fp16>(buffers);
  }
  const Op& conv = context_.graph.ops[context_.fused.conv];
  const Op& dense1 = context_.graph.ops[context_.fused.dense1];
  const FusedOperands<float> operands{context_.data_of(conv.inputs[0]),
                                      context_.data_of(conv.inputs[1]),
                                      context_.data_of(dense1.inputs[1]),
                                      nullptr,
                                      slab_.data(),
                                      dense1_panels_.data != nullptr ? &dense1_panels_ : nullptr};
  run_conv_dense_heads(context_.queue, context_.graph, context_.fused, shapes, context_.data_of,
                       operands, buffers);
}

template <class T>
void ConvDenseHeadsPlan::run_reduced(const FusedBuffers& buffers) {
  auto& layers = std::get<ReducedLayers<T>>(reduced_->layers);
  const int input = context_.graph.ops[context_.fused.conv].inputs[0];
  const int64_t count = element_count(context_.shapes[input]);
  convert(context_.queue, make_view(static_cast<const float*>(context_.data_of(input)), count),
          make_view(layers.input.data(), count));
  const GemmPackedBf16* packed =
      layers.dense1_packed.pairs != nullptr ? &layers.dense1_packed : nullptr;
  const FusedOperands<T> operands{layers.input.data(),         layers.conv_weight.data(),
                                  layers.dense1_weight.data(), packed,
                                  layers.slab.data(),          nullptr};
  run_conv_dense_heads(context_.queue, context_.graph, context_.fused, context_.shapes,
                       context_.data_of, operands, buffers);
}

}  // namespace kaas::models::onnx_import
