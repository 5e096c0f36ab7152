#pragma once
// CPU fast path of sparse_dense1 (kernels/sparse_conv_dense.h): the same sums as the portable
// kernel, register-blocked. A tile of windows is taken position by position; the windows active
// at a position are gathered (branch-free), then groups of kRows of them share each load of the
// position's W1 rows. Compiled per instruction set (sparse_dense_avx512.cc, sparse_dense_avx2.cc)
// from the template below, included only by those files.

#include <cstdint>

#include "kaas/backends/backend_traits.h"

#include "kaas/kernels/activation.h"

namespace kaas::simd {

struct SparseDense1Args {
  const int32_t* index;  // [images, IH, IW]
  int64_t index_stride[3];
  const float* delta;  // [active, channels], row stride delta_stride, unit column stride
  int64_t delta_stride, channels;
  int64_t delta_first;  // the number of delta's first row
  int64_t delta_rows;
  const uint64_t* nonzero;       // filled by the fast path: per delta row, its non-zero channels
  const int32_t *image, *y, *x;  // per window (unit stride)
  int64_t out_h, out_w;
  const float* weight;  // [K, n1], row stride weight_stride, unit column stride
  int64_t weight_stride;
  const float* constant;  // [n1]
  Epilogue epilogue;
  float* out;                    // [rows, n1], row stride out_stride, unit column stride
  int64_t out_stride, rows, n1;  // n1 a multiple of the instruction set's column block
  HostThreads threads;           // who spreads tiles over threads (host_team.h)
};

// The conv at listed positions (sparse_conv_delta): images [n, h, w, c] contiguous, the weight
// transposed to [kh * kw * c][oc] (tap-major), oc a multiple of the vector width (at most 4
// vectors); delta[p] = act(bias + w . window) - constant.
struct SparseConvArgs {
  const float* images;
  int64_t height, width, channels;
  const float* weight_t;  // [kh * kw * channels][oc]
  const float* bias;      // [oc] or nullptr
  Epilogue epilogue;
  const float* constant;  // [oc]
  const int32_t* positions;
  int64_t count, kernel_h, kernel_w, out_h, out_w, oc;
  float* delta;
  int64_t delta_stride;
  HostThreads threads;
};

bool sparse_dense1_avx512_compiled();
void sparse_conv_delta_avx512(const SparseConvArgs& args);
void sparse_conv_delta_avx2(const SparseConvArgs& args);
void sparse_dense1_avx512(const SparseDense1Args& args);
bool sparse_dense1_avx2_compiled();
void sparse_dense1_avx2(const SparseDense1Args& args);

}  // namespace kaas::simd
