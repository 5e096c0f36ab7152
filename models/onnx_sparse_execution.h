#pragma once
// One of OnnxModel's plans: the fused conv-dense-heads plan's sparse execution for patch batches.
// Which patches of a batch run the sparse steps (each by its own occupancy against the model's
// measured timings, OnnxModelOptions::sparse), running them (onnx_sparse.h), and the others
// through the model's dense plan. Internal to models/.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "kaas/models/onnx_fused.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_model.h"
#include "kaas/models/onnx_sparse.h"
#include "kaas/models/plan_log.h"

namespace kaas::models::onnx_import {

// What the plans of one ONNX model share: its graph, shapes and value storage.
struct PlanContext {
  const Queue& queue;
  const Graph& graph;
  const ConvDenseHeads& fused;
  const std::vector<std::vector<int64_t>>& max_shapes;
  std::vector<std::vector<int64_t>>& shapes;  // of the batch being run
  std::function<float*(int)> data_of;         // a value's device storage
  std::function<const DeviceBuffer<float>&(int)> storage_of;
  const OnnxModelOptions& options;
};

// A digest of the conv and first dense weights: the plan-file keys of the decisions that belong
// to these weights (the sparse plan's timings, the 16-bit first-layer kernels).
uint64_t conv_dense_weights_digest(const Graph& graph, const ConvDenseHeads& fused);

class SparseExecution {
 public:
  // Builds the sparse network for batches up to max_batch and adds its plan-log lines to `log`;
  // in kAuto with the measuring planner, times it against `run_dense` (the model's dense plan,
  // on the batch in context.shapes).
  SparseExecution(const PlanContext& context, std::function<void()> run_dense, int64_t max_batch,
                  PlanLog& log);

  const SparseNetwork& network() const { return sparse_.network(); }

  // Per run, the batch in the input storage: whether any of its patches runs sparse; run()
  // follows when it does.
  bool choose();
  void run();

  // Of the last run: the active fraction of its windows (-1 when it was not indexed) and how
  // many patches ran sparse. Cleared by begin_run().
  void begin_run() {
    last_active_ = -1;
    last_sparse_rows_ = 0;
  }
  double last_active() const { return last_active_; }
  int64_t last_sparse_rows() const { return last_sparse_rows_; }

 private:
  static constexpr int64_t kTrialRows = 64;

  std::string measure(int64_t batch);
  float* data(int value) const { return context_.data_of(value); }

  PlanContext context_;
  std::function<void()> run_dense_;
  SparseFused sparse_;
  DeviceBuffer<float> dense1_;
  double last_active_ = -1;
  int64_t last_sparse_rows_ = 0;
  std::vector<int32_t> sparse_rows_, dense_rows_;  // of the batch being run (kAuto)
};

}  // namespace kaas::models::onnx_import
