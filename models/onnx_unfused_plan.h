#pragma once
// One of OnnxModel's plans: every op on its own, in graph order, through the ONNX op table; the
// intermediates share pooled buffers by liveness and Flatten/Reshape alias their input's. In
// bf16 / fp16 the heavy Conv and Gemm run reduced (onnx_reduced_ops.h). Internal to models/.

#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/queue.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_reduced_ops.h"
#include "kaas/models/onnx_value_storage.h"
#include "kaas/models/precision.h"

namespace kaas::models::onnx_import {

class UnfusedPlan {
 public:
  // Lays out the inputs, intermediates and outputs in `storage` for the largest shapes.
  UnfusedPlan(const Queue& queue, const Graph& graph, const std::vector<Shape>& max_shapes,
              ValueStorage& storage, Precision precision);

  // "Conv conv2d -> [1,44,44,48]" per op, at the largest shapes: the plan log's graph lines.
  const std::vector<std::string>& op_lines() const { return op_lines_; }
  // "precision fp32: every op", or a line per op that runs reduced.
  std::vector<std::string> precision_lines() const;

  // Runs the graph on the inputs in storage for `shapes` (the batch being run).
  void run(const std::vector<Shape>& shapes) const;

 private:
  const Queue& queue_;
  const Graph& graph_;
  ValueStorage& storage_;
  std::vector<std::string> op_lines_;
  std::unique_ptr<ReducedOps> reduced_ops_;
};

}  // namespace kaas::models::onnx_import
