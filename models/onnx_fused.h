#pragma once
// The fused "conv-dense-heads" plan of the ONNX importer (see onnx_model.h): matching on the
// simplified graph and execution. Internal to models/.

#include <functional>
#include <optional>
#include <string>

#include "kaas/backends/queue.h"
#include "kaas/models/onnx_graph.h"

namespace kaas::models::onnx_import {

// Indices into Graph::ops of the matched pattern.
struct ConvDenseHeads {
  int conv, flatten, dense1, dense2, head_a, softmax, head_b;
};

// The match, or nullopt with the first reason it does not apply in `why_not`.
std::optional<ConvDenseHeads> match_conv_dense_heads(const Graph& graph, std::string& why_not);

struct FusedBuffers {
  float* slab;  // slab_elements floats: conv rows waiting for the dense layer
  int64_t slab_elements;
  float* dense1;          // [max_batch, N1]
  int64_t batch_tile;     // patches per slab pass
  int64_t rows_per_pass;  // conv output rows per slab: fixed by the plan, not by the batch, so a
                          // patch's result does not depend on what it is batched with
};

// Runs the matched plan for `batch` rows; data_of(value) is the device pointer of a value
// (inputs, constants and the two outputs).
void run_conv_dense_heads(const Queue& queue, const Graph& graph, const ConvDenseHeads& plan,
                          const std::vector<std::vector<int64_t>>& shapes,
                          const std::function<float*(int)>& data_of, const FusedBuffers& buffers);

// Slab rows per pass for a batch tile under a byte budget (at least one row).
int64_t slab_rows(const Graph& graph, const ConvDenseHeads& plan,
                  const std::vector<std::vector<int64_t>>& shapes, int64_t batch_tile,
                  int64_t slab_bytes);

}  // namespace kaas::models::onnx_import
