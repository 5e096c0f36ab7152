#pragma once
// The fused "conv-dense-heads" plan of the ONNX importer (see onnx_model.h): matching on the
// simplified graph and execution. Internal to models/.

#include <functional>
#include <optional>
#include <string>

#include "kaas/backends/queue.h"
#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/gemm.h"
#include "kaas/models/onnx_graph.h"

namespace kaas::models::onnx_import {

// Indices into Graph::ops of the matched pattern.
struct ConvDenseHeads {
  int conv, flatten, dense1, dense2, head_a, softmax, head_b;
};

// The match, or nullopt with the first reason it does not apply in `why_not`.
std::optional<ConvDenseHeads> match_conv_dense_heads(const Graph& graph, std::string& why_not);

struct FusedBuffers {
  float* dense1;          // [max_batch, N1]
  int64_t batch_tile;     // patches per slab pass
  int64_t rows_per_pass;  // conv output rows per slab: fixed by the plan, not by the batch, so a
                          // patch's result does not depend on what it is batched with
  ConvDenseHeadsSplit split = ConvDenseHeadsSplit::kKernels;  // the planner's choices
  GemmImpl dense1_impl = GemmImpl::kAuto;
  Conv2dImpl conv_impl = Conv2dImpl::kAuto;
};

// What the conv and the first dense layer read and write, stored as T: float (the graph's own
// input and constants), or bf16 / fp16 (the input rounded per call, the weights rounded once at
// load). The conv bias, the accumulation, the second dense layer and the heads stay fp32.
template <class T>
struct FusedOperands {
  const T* input;                                   // the network input as the conv reads it
  const T* conv_weight;                             // OIHW
  const T* dense1_weight;                           // as stored: [K, N1], or [N1, K] with transB
  const GemmPackedBf16* dense1_packed = nullptr;    // op(W1) in K-pairs (bf16, AVX512-BF16 CPUs)
  T* slab;                                          // conv rows waiting for the dense layer
  const GemmPackedPanels* dense1_panels = nullptr;  // op(W1) in column panels (fp32, CPU)
};

// Runs the matched plan for `batch` rows; data_of(value) is the device pointer of a value
// (biases, the later layers' constants and the two outputs).
template <class T>
void run_conv_dense_heads(const Queue& queue, const Graph& graph, const ConvDenseHeads& plan,
                          const std::vector<std::vector<int64_t>>& shapes,
                          const std::function<float*(int)>& data_of,
                          const FusedOperands<T>& operands, const FusedBuffers& buffers);

// A matched dense layer (a hidden layer or a head) as mlp_two_heads takes it.
DenseLayer dense_layer(const Op& op, const std::vector<std::vector<int64_t>>& shapes,
                       const std::function<float*(int)>& data_of);

// Slab rows per pass for a batch tile under a byte budget (at least one row), for slab elements
// of `element_bytes`.
int64_t slab_rows(const Graph& graph, const ConvDenseHeads& plan,
                  const std::vector<std::vector<int64_t>>& shapes, int64_t batch_tile,
                  int64_t slab_bytes, int64_t element_bytes);

}  // namespace kaas::models::onnx_import
