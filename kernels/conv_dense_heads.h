#pragma once
// A patch classifier of the EmTrkMichelId shape as one fused execution over the kernels:
//   conv   NHWC, valid, stride 1 (+ bias, + activation: conv.epilogue)
//   dense1 the flattened conv output (H, W, C order) . W1 + b1 (+ activation)
//   then mlp_two_heads: a hidden dense layer, a softmax head (out_a) and a second head (out_b).
// The conv output is produced a few rows at a time into a slab and accumulated straight into the
// first dense layer, never written whole (372 KB per EmTrkMichelId patch). It needs no model
// file: the ONNX importer's fused plan (models/onnx_fused.h) maps a matched graph onto it, and
// kaas-kernel-bench runs it from weights in memory.
//
// T is the storage type of the input, the conv weight, the slab and W1: float, or bf16 / fp16
// (accumulation, biases, the later layers and the outputs stay fp32).

#include <cstdint>
#include <string_view>

#include "kaas/backends/backend.h"
#include "kaas/backends/half.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/mlp_heads.h"

namespace kaas {

template <class T>
struct ConvDenseHeadsWeights {
  View<const T, 4> conv_weight;  // [OC, C, KH, KW]
  View1<const float> conv_bias;  // [OC] or empty
  Conv2dParams conv;             // NHWC, valid, stride 1, dilation 1, groups 1 (checked)
  View2<const T> dense1_weight;  // as stored: [K, N1], or [N1, K] when dense1_trans_b
  bool dense1_trans_b = false;
  View1<const float> dense1_bias;                   // [N1] or empty
  Epilogue dense1_epilogue;                         // after the last slab pass
  const GemmPackedBf16* dense1_packed = nullptr;    // op(W1) in K-pairs (bf16 on AVX512-BF16 CPUs)
  const GemmPackedPanels* dense1_panels = nullptr;  // op(W1) in column panels (fp32, CPU)
  DenseLayer hidden, head_a, head_b;                // mlp_two_heads
};

// How the openmp backend's threads share a call (other backends ignore it; the outputs are the
// same bit for bit either way, since each patch's conv and GEMM rows are computed alone):
//  - kKernels: every conv and GEMM pass is split over the threads (any batch; two parallel
//    regions per slab pass);
//  - kBatch: the batch is split into one contiguous share per thread, and each thread runs its
//    share's conv and GEMM passes alone on its own part of the slab: one parallel region per
//    call, no join between passes. Needs a batch tile of at least one patch per thread (else
//    kKernels runs).
enum class ConvDenseHeadsSplit { kKernels, kBatch };

struct ConvDenseHeadsWorkspace {
  View2<float> dense1;        // [batch (at least), N1]: the first dense layer's accumulator
  void* slab = nullptr;       // batch_tile * rows_per_pass * OW * OC elements of T
  int64_t batch_tile = 1;     // patches per slab pass
  int64_t rows_per_pass = 1;  // conv output rows per slab: fixed by the caller, not by the batch,
                              // so a patch's result does not depend on what it is batched with
  ConvDenseHeadsSplit split = ConvDenseHeadsSplit::kKernels;
  GemmImpl dense1_impl = GemmImpl::kAuto;  // of every slab pass's GEMM (rows_independent)
};

std::string_view to_string(ConvDenseHeadsSplit split);

// The threads a kBatch call from this thread would use on `queue` (1: it would run kKernels).
int conv_dense_heads_batch_threads(const Queue& queue);

// Slab rows per pass for a batch tile under a byte budget (at least one, at most out_h).
int64_t conv_dense_heads_slab_rows(int64_t out_h, int64_t out_w, int64_t out_channels,
                                   int64_t batch_tile, int64_t slab_bytes, int64_t element_bytes);

// The slab budget on `backend`: where device memory is the host's, `host_slab_bytes` (the slab
// stays in the last-level cache); on a GPU the whole conv output of a batch tile (one conv and
// one GEMM per tile).
int64_t conv_dense_heads_slab_budget(const Backend& backend, int64_t out_h, int64_t out_w,
                                     int64_t out_channels, int64_t batch_tile,
                                     int64_t host_slab_bytes, int64_t element_bytes);

// How a call ran: the split it used and the threads of its batch-split region (1 otherwise).
struct ConvDenseHeadsRun {
  ConvDenseHeadsSplit split = ConvDenseHeadsSplit::kKernels;
  int threads = 1;
};

// input [n, H, W, C] (NHWC); out_a [n, A] softmax probabilities, out_b [n, B]. Shapes are checked
// (kInvalidArgument naming the operand) before anything runs.
template <class T>
ConvDenseHeadsRun conv_dense_heads(const Queue& queue, View<const T, 4> input,
                                   const ConvDenseHeadsWeights<T>& weights,
                                   const ConvDenseHeadsWorkspace& workspace, View2<float> out_a,
                                   View2<float> out_b);

}  // namespace kaas
