#pragma once
// The sparse execution of the fused conv-dense-heads plan for patch batches (see
// kernels/sparse_conv_dense.h and OnnxModelOptions::sparse): each patch is its own image and its
// own window; the conv runs only where a window touches charge, the first dense layer adds those
// positions to the constant computed here at load. Internal to models/.

#include <functional>
#include <string>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "kaas/models/onnx_fused.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_model.h"

namespace kaas::models::onnx_import {

class SparseFused {
 public:
  // The network of `plan` (fp32) on `queue`, buffers for batches up to max_batch and conv
  // output deltas up to delta_bytes (at least one patch's).
  SparseFused(const Queue& queue, const Graph& graph, const ConvDenseHeads& plan,
              const std::vector<std::vector<int64_t>>& max_shapes,
              const std::function<float*(int)>& data_of, int64_t max_batch, int64_t delta_bytes);

  const SparseNetwork& network() const { return network_; }
  SparseNetwork& network() { return network_; }

  // Step 1 for the batch in `input` ([n, H, W, C]): returns the fraction of the windows' conv
  // positions that touch charge. run() must follow with the same n and input.
  double index(int64_t n, const float* input);
  // Per patch of the indexed batch, the fraction of its conv positions that touch charge.
  std::vector<double> active_per_row();
  // The rest, for every patch of the batch or the listed ones (ascending): dense1 [rows, N1] is
  // scratch; out_a, out_b the two heads' outputs, one row per patch run.
  void run(int64_t n, const float* input, float* dense1, float* out_a, float* out_b,
           const std::vector<int32_t>* rows = nullptr);

  std::string describe() const;

 private:
  const Queue& queue_;
  SparseNetwork network_;
  int64_t n1_ = 0, last_n_ = 0, active_ = 0;
  DeviceBuffer<float> conv_constant_, dense1_constant_, dense1_weight_, delta_;
  DeviceBuffer<int32_t> index_, offsets_, scan_, positions_, window_image_, window_origin_;
  std::vector<int32_t> host_offsets_;
  bool listed_ = false;  // window_image_ holds a list of patches, not 0, 1, 2, ...

  const int32_t* host_offsets();
};

}  // namespace kaas::models::onnx_import
