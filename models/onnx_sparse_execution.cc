#include "kaas/models/onnx_sparse_execution.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>

#include "kaas/kernels/planner.h"

namespace kaas::models::onnx_import {

SparseExecution::SparseExecution(const PlanContext& context, std::function<void()> run_dense,
                                 int64_t max_batch, PlanLog& log)
    : context_(context),
      run_dense_(std::move(run_dense)),
      sparse_(context.queue, context.graph, context.fused, context.max_shapes, context.data_of,
              max_batch, 4 * context.options.fused_slab_bytes),
      dense1_(make_device_buffer<float>(
          context.queue,
          size_t(max_batch *
                 context.max_shapes[context.graph.ops[context.fused.dense1].output][1]))) {
  // The sparse plan's speed depends on how many conv channels the ReLU zeroes: its timings
  // belong to these weights.
  sparse_.network().weights_digest = conv_dense_weights_digest(context.graph, context.fused);
  log.decisions.push_back(sparse_.describe());
  const OnnxModelOptions& options = context_.options;
  const planner::Mode mode = options.planner.value_or(planner::mode_from_environment());
  if (options.sparse == SparsePlan::kSparse) {
    log.decisions.push_back("sparse: every batch (the model's option)");
  } else if (mode == planner::Mode::kFixed) {
    log.decisions.push_back("sparse: not used (the planner's fixed mode runs the dense plan)");
  } else {
    log.decisions.push_back(measure(max_batch));
  }
}

// Seconds per row of the dense plan and of the sparse one on all-charged and all-zero input,
// measured by the planner (kernels/planner.h) and cached with its decisions, so every process
// on this CPU predicts the same and picks the same plan for the same patch; returns the
// plan-log line.
std::string SparseExecution::measure(int64_t batch) {
  const Graph& graph = context_.graph;
  const ConvDenseHeads& fused = context_.fused;
  const Queue& queue = context_.queue;
  const int input = graph.ops[fused.conv].inputs[0];
  const size_t count = size_t(element_count(context_.max_shapes[input]));
  // Every window charged: the rescaled-ADC range of the network's training data, no zeros.
  std::vector<float> charged(count), empty(count, 0.0f);
  for (size_t i = 0; i < count; ++i) charged[i] = sparse_trial_charge(i);
  const auto charged_device = to_device(queue, std::span<const float>(charged));
  const auto empty_device = to_device(queue, std::span<const float>(empty));
  copy_to_device(queue, std::span<const float>(charged), context_.storage_of(input));
  queue.wait();
  context_.shapes = context_.max_shapes;
  auto sparse_on = [&](const float* x) {
    sparse_.index(batch, x);
    sparse_.run(batch, x, dense1_.data(), data(graph.ops[fused.softmax].output),
                data(graph.ops[fused.head_b].output));
    queue.wait();
  };
  // Each candidate processes kTrialRows rows (passes of `batch`), so the timings stored in the
  // model's plan file are per the same number of rows whatever the measuring process's batch.
  const int64_t passes = (kTrialRows + batch - 1) / batch;
  const double rows = double(passes * batch);
  auto repeated = [passes](const std::function<void()>& pass) {
    return [passes, pass] {
      for (int64_t p = 0; p < passes; ++p) pass();
    };
  };
  const std::vector<planner::Candidate> candidates = {
      {"dense", repeated([&] {
         run_dense_();
         queue.wait();
       })},
      {"sparse, every window charged", repeated([&] { sparse_on(charged_device.data()); })},
      {"sparse, no charge", repeated([&] { sparse_on(empty_device.data()); })}};
  // A patch takes the sparse plan (other bits) by these timings: they belong to the model,
  // measured once whatever the backend, threads, dense plan or batch of the process that
  // measures, and kept in the model's plan file, so every process decides alike.
  const auto& conv_out = context_.max_shapes[graph.ops[fused.conv].output];
  const std::string point =
      "sparse conv-dense-heads " + std::string(to_string(context_.options.precision)) + " conv " +
      shape_string(std::vector<int64_t>(conv_out.begin() + 1, conv_out.end())) + " weights " +
      std::to_string(sparse_.network().weights_digest);
  const planner::Decision d =
      planner::choose(point, candidates, planner::Mode::kMeasure, {}, context_.options.plan_file);
  SparseNetwork& net = sparse_.network();
  net.dense_row_s = d.ms[0] / 1e3 / rows;
  net.sparse_full_row_s = d.ms[1] / 1e3 / rows;
  net.sparse_empty_row_s = d.ms[2] / 1e3 / rows;
  const double breakeven = d.ms[1] > d.ms[2] ? (d.ms[0] - d.ms[2]) / (d.ms[1] - d.ms[2]) : 1.0;
  // Timings from the plan file were taken by another process, on about kTrialRows rows in its
  // own batches: the decisions use their ratios, the same in every process.
  char trial[96];
  if (d.from_plan_file)
    std::snprintf(trial, sizeof trial, "the model's plan file (measured on %s)",
                  d.measured_on.substr(0, 48).c_str());
  else
    std::snprintf(trial, sizeof trial, "%lld rows in batches of %lld%s",
                  static_cast<long long>(rows), static_cast<long long>(batch),
                  d.from_cache ? " (cached)" : "");
  char line[400];
  std::snprintf(line, sizeof line,
                "sparse planner: %s: dense %.2f ms, sparse %.2f ms with no charge and %.2f ms "
                "with every window charged: a patch runs sparse below %.0f %% of its positions "
                "active%s",
                trial, d.ms[0], d.ms[2], d.ms[1], std::clamp(breakeven, 0.0, 1.0) * 100,
                d.plan_file_written ? "" : " (the model's plan file could not be written)");
  return line;
}

uint64_t conv_dense_weights_digest(const Graph& graph, const ConvDenseHeads& fused) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values' bits
  for (int v : {graph.ops[fused.conv].inputs[1], graph.ops[fused.dense1].inputs[1]}) {
    const auto& values = graph.values[v].data;
    for (size_t i = 0; i < values.size(); i += 97) {
      uint32_t bits;
      std::memcpy(&bits, &values[i], sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    }
  }
  return h;
}

// Which patches of the batch run sparse: kSparse all; kAuto each patch by its own measured
// occupancy against the load-time timings, so a patch's plan (and its bits) does not depend on
// the patches it is batched with. Fills sparse_rows_ / dense_rows_; returns false when every
// patch runs dense.
bool SparseExecution::choose() {
  const SparseNetwork& net = sparse_.network();
  const SparsePlan mode = context_.options.sparse;
  if (mode != SparsePlan::kSparse && net.dense_row_s <= 0) return false;
  const Queue& queue = context_.queue;
  const int input = context_.graph.ops[context_.fused.conv].inputs[0];
  const int64_t n = context_.shapes[input][0];
  if (mode == SparsePlan::kAuto && queue.backend().device_memory_is_host() &&
      !net.sparse_pays(1.0)) {
    // Input without a single 0 (noise everywhere): every window is active; one look at the
    // values decides, without indexing the batch.
    const float* x = data(input);
    const int64_t count = element_count(context_.shapes[input]);
    if (std::find(x, x + count, 0.0f) == x + count) {
      last_active_ = 1.0;
      return false;
    }
  }
  last_active_ = sparse_.index(n, data(input));
  sparse_rows_.clear();
  dense_rows_.clear();
  if (mode == SparsePlan::kSparse) return true;
  const std::vector<double> active = sparse_.active_per_row();
  for (int64_t r = 0; r < n; ++r)
    (net.sparse_pays(active[size_t(r)]) ? sparse_rows_ : dense_rows_).push_back(int32_t(r));
  if (!queue.backend().device_memory_is_host() && !dense_rows_.empty()) {
    // On a GPU the batch is not split: one plan for all, by the batch's occupancy.
    const bool sparse = net.sparse_pays(last_active_);
    sparse_rows_.clear();
    dense_rows_.clear();
    return sparse;
  }
  return !sparse_rows_.empty();
}

void SparseExecution::run() {
  const Graph& graph = context_.graph;
  auto& shapes = context_.shapes;
  const int input = graph.ops[context_.fused.conv].inputs[0];
  const int64_t n = shapes[input][0];
  const int softmax = graph.ops[context_.fused.softmax].output,
            head_b = graph.ops[context_.fused.head_b].output;
  last_sparse_rows_ = n;
  if (dense_rows_.empty()) {
    sparse_.run(n, data(input), dense1_.data(), data(softmax), data(head_b));
    return;
  }
  // Some patches sparse, some dense (host memory): the sparse ones first, into scratch rows;
  // then the dense ones moved to the front of the input and run as a smaller batch; then every
  // output row put back in its place.
  const int64_t na = shapes[softmax][1], nb = shapes[head_b][1];
  const size_t ns = sparse_rows_.size(), nd = dense_rows_.size();
  std::vector<float> sparse_a(ns * size_t(na)), sparse_b(ns * size_t(nb));
  sparse_.run(n, data(input), dense1_.data(), sparse_a.data(), sparse_b.data(), &sparse_rows_);
  context_.queue.wait();
  const size_t patch = size_t(element_count(shapes[input]) / n);
  float* x = data(input);
  for (size_t i = 0; i < nd; ++i)
    if (size_t(dense_rows_[i]) != i)
      std::memmove(x + i * patch, x + size_t(dense_rows_[i]) * patch, patch * sizeof(float));
  shapes = infer_shapes(graph, int64_t(nd));
  run_dense_();
  context_.queue.wait();
  shapes = infer_shapes(graph, n);
  float* out_a = data(softmax);
  float* out_b = data(head_b);
  for (size_t i = nd; i-- > 0;) {  // back to front: row dense_rows_[i] >= i
    std::memmove(out_a + size_t(dense_rows_[i]) * na, out_a + i * na, size_t(na) * sizeof(float));
    std::memmove(out_b + size_t(dense_rows_[i]) * nb, out_b + i * nb, size_t(nb) * sizeof(float));
  }
  for (size_t i = 0; i < ns; ++i) {
    std::copy_n(&sparse_a[i * size_t(na)], na, out_a + size_t(sparse_rows_[i]) * na);
    std::copy_n(&sparse_b[i * size_t(nb)], nb, out_b + size_t(sparse_rows_[i]) * nb);
  }
  last_sparse_rows_ = int64_t(ns);
}

}  // namespace kaas::models::onnx_import
