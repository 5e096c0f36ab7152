#pragma once
// 2-D convolution (ONNX Conv semantics): NCHW or NHWC activations, OIHW weights, stride,
// explicit or automatic (VALID / SAME_UPPER / SAME_LOWER) padding, dilation, groups (depthwise
// included), optional bias and a fused activation.
//
// Implementations, in the oneDNN manner of an ordered list:
//  - kPortable: the single-source direct kernel (kernels/conv2d.kern.cc), an implicit GEMM over
//    shared-memory tiles, on every backend. It is the oracle the other paths are tested against.
//  - kAvx2: an AVX2/FMA direct kernel for the serial and openmp backends
//    (kernels/cpu/conv2d_avx2.cc), for NHWC with groups == 1 and channel-contiguous
//    input/output, on CPUs that have AVX2 and FMA.
//  - kAvx512: the same direct kernel with AVX-512 (16-lane vectors, 48 channels x 8
//    pixels per block, non-temporal stores for large aligned outputs;
//    kernels/cpu/conv2d_avx512.cc), under the same conditions, on CPUs with
//    AVX-512 F, BW, VL and DQ (and FMA).
//  - kAvx512Bf16: bf16 activations only, on CPUs with AVX512-BF16 as well: the same direct kernel
//    with a kernel row's taps multiplied in pairs by vdpbf16ps (kernels/cpu/conv2d_avx512_bf16.cc),
//    for dense pixels (channel-contiguous input, pixel stride C_in) and dilation_w 1. Chosen by
//    name only (the EmTrkMichelId planner measures it); the products are exact in fp32 and the
//    additions pairwise, and vdpbf16ps treats subnormal inputs as zero.
//  - kAuto picks the widest CPU fast path this CPU has (kAvx512, else kAvx2) where it
//    applies and C_out >= 8 (where the benchmark shows it wins), kPortable otherwise.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/half.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/kernels/activation.h"

namespace kaas {

enum class Layout { kNCHW, kNHWC };
enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };  // ONNX auto_pad
enum class Conv2dImpl { kAuto, kPortable, kAvx2, kAvx512, kAvx512Bf16 };

struct Conv2dParams {
  Layout layout = Layout::kNCHW;  // of input and output; weight is always OIHW
                                  // [C_out, C_in/groups, KH, KW]
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;  // when auto_pad == kNotSet
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t groups = 1;
  Epilogue epilogue;                    // fused activation
  Conv2dImpl impl = Conv2dImpl::kAuto;  // which implementation runs (see above)
};

struct Conv2dShape {
  int64_t batch, in_channels, in_h, in_w, out_channels, out_h, out_w, pad_top, pad_left, pad_bottom,
      pad_right;
};

// Validates params against the input/weight extents (input in the logical NCHW/NHWC order of
// params.layout, weight OIHW) and returns the output geometry with resolved pads; throws
// kInvalidArgument "conv2d: <argument>: expected <x>, received <y>" otherwise. Explicit pads
// together with auto_pad != kNotSet are rejected (ONNX forbids the combination).
Conv2dShape conv2d_output_shape(const Conv2dParams& params, const int64_t (&input_extents)[4],
                                const int64_t (&weight_extents)[4]);

// output = activation(conv(input, weight) + bias). bias: extent 0 (no bias) or [C_out].
// input/output in params.layout order; any strides. Everything is checked before a launch.
void conv2d(const Queue& queue, View<const float, 4> input, View<const float, 4> weight,
            View1<const float> bias, View<float, 4> output, const Conv2dParams& params,
            LaunchConfig config = {});

// Reduced precision: input, weight and output stored as bf16 (or all fp16), widened to fp32 for
// the products, accumulated in fp32 with an fp32 bias and activation, the output rounded once
// (to nearest even). kAuto runs the AVX-512 path (which loads and stores the 16-bit types
// itself) where it applies, else kPortable; kAvx2 is not offered.
void conv2d(const Queue& queue, View<const bf16, 4> input, View<const bf16, 4> weight,
            View1<const float> bias, View<bf16, 4> output, const Conv2dParams& params,
            LaunchConfig config = {});
void conv2d(const Queue& queue, View<const fp16, 4> input, View<const fp16, 4> weight,
            View1<const float> bias, View<fp16, 4> output, const Conv2dParams& params,
            LaunchConfig config = {});

// The implementation conv2d() runs for these arguments (kPortable, kAvx2 or kAvx512;
// params.impl is honoured when it applies). Throws like conv2d() for bad arguments, and for
// kAvx2 / kAvx512 where that fast path does not apply.
Conv2dImpl conv2d_chosen_impl(const Queue& queue, View<const float, 4> input,
                              View<const float, 4> weight, View<float, 4> output,
                              const Conv2dParams& params);
// The implementations (kernels/impl_table.h rows, by name, preference order) that can run these
// arguments here (tier, backend, layout). Only extents, strides and params are read.
std::vector<std::string> conv2d_impls_for(const Queue& queue, View<const float, 4> input,
                                          View<const float, 4> weight, View<float, 4> output,
                                          const Conv2dParams& params);
std::vector<std::string> conv2d_impls_for(const Queue& queue, View<const bf16, 4> input,
                                          View<const bf16, 4> weight, View<bf16, 4> output,
                                          const Conv2dParams& params);
std::vector<std::string> conv2d_impls_for(const Queue& queue, View<const fp16, 4> input,
                                          View<const fp16, 4> weight, View<fp16, 4> output,
                                          const Conv2dParams& params);
// Whether this CPU has the instructions the CPU fast path needs (AVX2 and FMA).
bool conv2d_avx2_available();
// Whether this CPU has the instructions the AVX-512 fast path needs (AVX-512 F/BW/VL/DQ, FMA).
bool conv2d_avx512_available();
// ... and kAvx512Bf16 (AVX512-BF16 as well).
bool conv2d_avx512_bf16_available();

std::string_view to_string(Conv2dImpl impl);
std::string_view to_string(Layout layout);
std::string_view to_string(AutoPad auto_pad);

// What the portable launcher receives: views in logical NCHW order (NHWC views arrive with
// permuted strides) and the resolved geometry.
struct Conv2dGeometry {
  int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, groups;
  Epilogue epilogue;
};

KAAS_DECLARE_LAUNCHER(void, conv2d_launch,
                      (const Queue&, View<const float, 4>, View<const float, 4>, View1<const float>,
                       View<float, 4>, Conv2dGeometry, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, conv2d_launch,
                      (const Queue&, View<const bf16, 4>, View<const bf16, 4>, View1<const float>,
                       View<bf16, 4>, Conv2dGeometry, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, conv2d_launch,
                      (const Queue&, View<const fp16, 4>, View<const fp16, 4>, View1<const float>,
                       View<fp16, 4>, Conv2dGeometry, LaunchConfig))

}  // namespace kaas
