#pragma once
// Reduced precision for graphs outside the fused plan: each heavy Conv and Gemm (a constant
// weight and at least kMinReducedMacs multiply-adds per batch row) runs on 16-bit weights, rounded
// once at load, and its input rounded to 16 bits per call, accumulating in fp32 (kernels/conv2d.h,
// kernels/gemm.h); the Conv's output is rounded to 16 bits and widened back, the Gemm's stays fp32.
// Every other op, and the small layers (the heads), run fp32, as in the fused plan. Internal to
// models/.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/queue.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_ops/op_def.h"
#include "kaas/models/precision.h"

namespace kaas::models::onnx_import {

inline constexpr int64_t kMinReducedMacs = 65536;

class ReducedOps {
 public:
  // precision bf16 or fp16; max_shapes at the model's largest batch.
  ReducedOps(const Queue& queue, const Graph& graph, const std::vector<Shape>& max_shapes,
             Precision precision);
  ~ReducedOps();
  ReducedOps(const ReducedOps&) = delete;
  ReducedOps& operator=(const ReducedOps&) = delete;

  // One line per op that runs reduced ("precision bf16: <node> (Conv) bf16"), then one for the
  // rest.
  const std::vector<std::string>& plan() const { return plan_; }
  // Runs `op` in reduced precision and returns true; false for ops that run fp32.
  bool run(const RunContext& ctx, const Op& op) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::vector<std::string> plan_;
};

}  // namespace kaas::models::onnx_import
