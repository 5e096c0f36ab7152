#pragma once
// The conv and first dense layer of a conv-dense-heads network (conv_dense_heads.h) on
// zero-suppressed input, exactly, skipping the windows that see only zeros.
//
// Where a conv window reads only zeros its output is act(bias), the same per channel wherever it
// is, so the first dense layer splits into one constant vector and the positions that touch
// charge:
//   dense1 = b1 + sum_k act_conv(k) W1[k]
//          = [b1 + sum_k c(k) W1[k]]  +  sum_{active k} (act_conv(k) - c(k)) W1[k]
// with c(k) = act(conv_bias[channel of k]). The bracket is computed once at load
// (sparse_dense1_constant); per call only the active positions are convolved and accumulated.
//
// The work is phrased over source images and windows, so one kernel set serves both shapes:
//  - a batch of patches: each patch is its own image and its own window at (0, 0);
//  - a plane: one (padded) plane image, one window per hit at its patch origin: the conv runs
//    once per plane position however many hits' patches contain it.
// Steps (each a single-source kernel):
//  1. sparse_conv_index: per conv output position of every image, whether its window touches a
//     non-zero value; the active ones are numbered (exclusive scan) and listed. Returns how many
//     (reads one value back: it synchronises the queue).
//  2. sparse_conv_delta: the conv at the listed positions only: act(bias + w . x) - c.
//  3. sparse_dense1: per window, constant + the delta rows of its active positions times the
//     matching rows of W1, then the first layer's activation. Windows are taken in tiles; every
//     window's sum runs over its positions in order, so its result does not depend on the others
//     in the call. Inner loops gather active positions; no branch per element.
// The CPU backends run step 3 on an AVX-512 or AVX2 kernel where the CPU has one (same sums,
// fused multiply-adds), else the portable kernel.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/kernels/activation.h"

namespace kaas {

struct SparseConvWeights {
  View<const float, 4> conv_weight;  // [OC, C, KH, KW]
  View1<const float> conv_bias;      // [OC] or empty
  Epilogue conv_epilogue;            // after the bias
  View1<const float> conv_constant;  // [OC]: act(bias), the output of an all-zero window
};

struct SparseDense1Weights {
  View2<const float> weight;    // [K, N1] row-major, K = OH * OW * OC in (row, column, channel)
  View1<const float> constant;  // [N1]: b1 + sum_k conv_constant(k) W1[k]
  Epilogue epilogue;            // the first dense layer's activation
};

// The windows of a call: window r reads image[image_of[r]] rows y[r] ... and columns x[r] ...
// of the conv output (its input window starts at the same row and column).
struct SparseWindows {
  View1<const int32_t> image, y, x;
  int64_t out_h = 0, out_w = 0;  // conv output positions per window (44 x 44 for EmTrkMichelId)
};

// act(bias) per channel, and b1 + sum_k c(k) W1[k] for W1 [K, N1] row-major with K a multiple of
// the channels; host values, summed in double.
std::vector<float> sparse_conv_constant(const std::vector<float>& conv_bias, int64_t channels,
                                        const Epilogue& conv_epilogue);
std::vector<float> sparse_dense1_constant(const std::vector<float>& conv_constant,
                                          const float* dense1_weight, int64_t k, int64_t n1,
                                          const float* dense1_bias);

// Step 1. images [n, H, W, C]; index [n, H - KH + 1, W - KW + 1] (int32) is overwritten with the
// active positions' numbers (-1: inactive); positions [at least the count] lists their flat
// index into `index` in order; scan_workspace of exclusive_scan_workspace_size(queue, size of
// index). Returns the count.
int64_t sparse_conv_index(const Queue& queue, View<const float, 4> images, int64_t kernel_h,
                          int64_t kernel_w, View<int32_t, 3> index, View1<int32_t> offsets,
                          View1<int32_t> scan_workspace, View1<int32_t> positions,
                          LaunchConfig config = {});

// Steps 2 and 3 each choose from a table (kernels/impl_table.h, kernels/sparse_conv_dense.cc):
// the AVX-512 and AVX2 kernels on the host CPU backends where the shapes fit, else the portable
// kernel; all compute each sum in one order with fused multiply-adds.
enum class SparseImpl { kAuto, kPortable, kAvx2, kAvx512 };
std::string_view to_string(SparseImpl impl);
SparseImpl sparse_impl_from_name(std::string_view name);  // throws kInvalidArgument

// Step 2. delta [count, OC] for positions[0 .. count).
void sparse_conv_delta(const Queue& queue, View<const float, 4> images,
                       const SparseConvWeights& weights, View1<const int32_t> positions,
                       View2<float> delta, LaunchConfig config = {},
                       SparseImpl impl = SparseImpl::kAuto);

// Step 3. out [windows, N1]. delta holds the active positions numbered delta_first onwards (a
// group of windows needs only the numbers its windows reach).
void sparse_dense1(const Queue& queue, View<const int32_t, 3> index, View2<const float> delta,
                   int64_t delta_first, const SparseWindows& windows,
                   const SparseDense1Weights& weights, View2<float> out, LaunchConfig config = {},
                   SparseImpl impl = SparseImpl::kAuto);

// Steps 2 and 3 for windows whose active positions are numbered [range[r].first, range[r].last)
// (both non-decreasing in r: patches in order, or hits in order of their window's first row),
// in groups of consecutive windows whose positions fit `delta` ([capacity, OC]). Returns the
// number of groups.
struct SparseRange {
  int64_t first, last;
};
int64_t sparse_conv_dense1_grouped(const Queue& queue, View<const float, 4> images,
                                   const SparseConvWeights& conv, View1<const int32_t> positions,
                                   View<const int32_t, 3> index, const SparseRange* ranges,
                                   const SparseWindows& windows, const SparseDense1Weights& dense1,
                                   View2<float> delta, View2<float> out);

// Which implementation sparse_dense1's kAuto runs on `queue` for contiguous operands ("avx512",
// "avx2" or "portable").
const char* sparse_dense1_impl(const Queue& queue, int64_t n1);
// The rows both steps can run on `queue` for contiguous operands of these sizes, by name.
std::vector<std::string> sparse_impls_for(const Queue& queue, int64_t conv_channels, int64_t n1);

// Internal: kernel launchers.
KAAS_DECLARE_LAUNCHER(void, sparse_activity_launch,
                      (const Queue&, View<const float, 4>, int64_t, int64_t, View<int32_t, 3>))
KAAS_DECLARE_LAUNCHER(void, sparse_compact_launch,
                      (const Queue&, View1<int32_t>, View1<const int32_t>, View1<int32_t>))
KAAS_DECLARE_LAUNCHER(void, sparse_conv_delta_launch,
                      (const Queue&, View<const float, 4>, SparseConvWeights, View1<const int32_t>,
                       View2<float>, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, sparse_dense1_launch,
                      (const Queue&, View<const int32_t, 3>, View2<const float>, int64_t,
                       SparseWindows, SparseDense1Weights, View2<float>, LaunchConfig))

}  // namespace kaas
