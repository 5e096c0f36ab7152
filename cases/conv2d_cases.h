#pragma once
// Cases of kernels/conv2d.h, per implementation, and the host reference the conv2d tests use.

#include <string>
#include <vector>

#include "cases/case.h"
#include "kaas/kernels/conv2d.h"

namespace kaas::cases {

struct ConvCase {
  int64_t batch, in_channels, in_h, in_w, out_channels, kernel_h, kernel_w;
  bool bias;
  Conv2dParams params;
};

struct ConvData {
  std::vector<float> x, w, b;  // input in params.layout, weight OIHW, bias [C_out] or empty
};

std::string describe(const ConvCase& c);
// Offset of logical (n, c, h, w) in a dense tensor of `layout`.
int64_t conv_offset(Layout layout, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h,
                    int64_t w);
void conv_input_extents(const ConvCase& c, int64_t (&e)[4]);
void conv_output_extents(const ConvCase& c, const Conv2dShape& s, int64_t (&e)[4]);
void conv_weight_extents(const ConvCase& c, int64_t (&e)[4]);
Conv2dShape conv_shape(const ConvCase& c);  // throws like conv2d_output_shape
// Integers (x in [-4, 4], w in [-3, 3], b in [-8, 8]: exact results) or floats in [-1, 1].
ConvData conv_data(const ConvCase& c, uint32_t seed, bool integers);
// Pre-activation outputs (output layout) of a direct double-precision convolution, and per
// output sum |a*b| (+ |bias|) for the tolerance.
void conv_reference(const ConvCase& c, const Conv2dShape& s, const ConvData& d,
                    std::vector<double>& y, std::vector<double>& magnitude);
// reduction_tolerance over the C_in/groups x KH x KW products and the bias.
double conv_tolerance(const ConvCase& c, double magnitude);

// The CPU fast paths (both ISAs) that can run `c` on this backend and this CPU.
// The rows of conv2d's table for T activations (kernels/conv2d.cc) that can run `c` on `backend`,
// in the table's preference order: tier, backend and layout as conv2d() decides them.
template <class T>
std::vector<Conv2dImpl> conv_case_impls(const Backend& backend, const ConvCase& c);
Conv2dImpl conv_impl_from_name(std::string_view name);  // throws kInvalidArgument

// The EmTrkMichelId first layer (5x5, 1 -> 48 channels, VALID, 48x48 NHWC patches, ReLU) and
// the batches it is benchmarked at.
ConvCase conv_emtrk_layer(int64_t batch);
std::vector<int64_t> conv_emtrk_batches();

std::vector<Case> conv2d_cases();
// bf16 / fp16 activations and weights (cases/conv2d_reduced_cases.cc); part of conv2d_cases().
std::vector<Case> conv2d_reduced_cases();

}  // namespace kaas::cases
