#pragma once
// CPU fast paths of conv2d (see kernels/conv2d.h): direct NHWC kernels vectorised over output
// channels, one with AVX2 + FMA (conv2d_avx2.cc, compiled with -mavx2 -mfma) and one with
// AVX-512 (conv2d_avx512.cc, compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq
// -mfma). Plain C++ (+ OpenMP), each in its own translation unit and never built by a GPU
// compiler; call a variant only when conv2d_avx2_available() (AVX2) or
// conv2d_avx512_available() (AVX-512) is true.

#include <cstdint>

#include "kaas/backends/backend_traits.h"

#include "kaas/kernels/activation.h"

namespace kaas::simd {

// How input and output are stored; the weights and bias are always fp32 (widened by the caller).
enum class Conv2dStorage { kFloat32, kBf16, kFp16 };

struct Conv2dNhwcArgs {
  Conv2dStorage storage = Conv2dStorage::kFloat32;  // 16-bit types: AVX-512 variant only
  const float* input;                               // [n][h][w][c], channel stride 1 (kFloat32)
  const uint16_t* input16;                          // the same for kBf16 / kFp16 (bit patterns)
  int64_t in_stride_n, in_stride_h, in_stride_w;
  const float* weight;  // OIHW with any strides
  int64_t weight_stride[4];
  const float* bias;  // nullptr: no bias
  int64_t bias_stride;
  float* output;       // [n][oh][ow][c], channel stride 1 (kFloat32)
  uint16_t* output16;  // the same for kBf16 / kFp16, rounded to nearest even
  int64_t out_stride_n, out_stride_h, out_stride_w;
  int64_t batch, in_channels, in_h, in_w, out_channels, out_h, out_w, kernel_h, kernel_w;
  int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  Epilogue epilogue;
  HostThreads threads;  // who spreads rows over threads (host_team.h)
};

// False where this file was built without AVX2/FMA (non-x86 targets).
bool conv2d_nhwc_avx2_compiled();
void conv2d_nhwc_avx2(const Conv2dNhwcArgs& args);

// False where this file was built without AVX-512 (non-x86 targets).
bool conv2d_nhwc_avx512_compiled();
void conv2d_nhwc_avx512(const Conv2dNhwcArgs& args);

// AVX512-BF16 (conv2d_avx512_bf16.cc, compiled with -mavx512bf16 as well): bf16 storage only,
// the taps of a kernel row multiplied in pairs with vdpbf16ps. `applies`: bf16 storage, dense
// pixels (in_stride_w == C_in), dilation_w 1 and a kernel that fits its fixed-size tables.
constexpr int64_t kBf16ConvMaxRowTaps = 4096;  // kernel_w * C_in
constexpr int64_t kBf16ConvMaxKernelRows = 64;
bool conv2d_nhwc_avx512_bf16_compiled();
bool conv2d_nhwc_avx512_bf16_applies(const Conv2dNhwcArgs& args);
void conv2d_nhwc_avx512_bf16(const Conv2dNhwcArgs& args);

}  // namespace kaas::simd
