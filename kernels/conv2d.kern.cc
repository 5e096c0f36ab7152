// Portable direct 2-D convolution for one backend: an implicit GEMM per convolution group,
//   out[co][m] = sum_r W[co][r] * X[r][m],  r = (ci, kh, kw),  m = (n, oh, ow),
// where X is never materialised: each group stages a chunk of X (kChunk reduction rows x tp
// output pixels, gathered from the input with the padding as zeros) and the matching weight
// chunk (tc output channels x kChunk) in shared memory, and accumulates a tc x tp output tile.
// Each element computes 4 x 4 micro-tiles (registers on a GPU, one SIMD-friendly block on the
// CPU); the accumulators survive the chunk loop's sync()s in shared memory.

#include "kaas/kernels/conv2d.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

constexpr int64_t kChunk = 16;          // reduction rows staged per step
constexpr int64_t kTileOutputs = 2048;  // tc * tp
constexpr int64_t kMicro = 4;           // micro-tile edge
constexpr int kDefaultGroupSize = static_cast<int>(kTileOutputs / (kMicro * kMicro));

struct Conv2dTiling {
  int64_t tc;  // output channels per tile (multiple of kMicro)
  int64_t tp;  // output pixels per tile (multiple of kMicro)
};

// T: the storage type of input and weight (float, bf16 or fp16), widened to float as they are
// staged; the output is T too, rounded once at the store. Accumulation and bias are fp32.
template <class T>
struct Conv2dKernel {
  static constexpr const char* kName = "conv2d";
  KAAS_KERNEL void operator()(const Ctx& ctx, View<const T, 4> in, View<const T, 4> w,
                              View1<const float> bias, View<T, 4> out, Conv2dGeometry g,
                              Conv2dTiling t) const {
    const int64_t batch = in.extent[0], height = in.extent[2], width = in.extent[3];
    const int64_t cout_g = w.extent[0] / g.groups, cin_g = w.extent[1];
    const int64_t kh_n = w.extent[2], kw_n = w.extent[3], khw = kh_n * kw_n;
    const int64_t oh_n = out.extent[2], ow_n = out.extent[3], ohw = oh_n * ow_n;
    const int64_t kred = cin_g * khw, pixels = batch * ohw;
    const int64_t tc = t.tc, tp = t.tp;
    const int64_t ctiles = (cout_g + tc - 1) / tc, mtiles = (pixels + tp - 1) / tp;
    const bool has_bias = bias.extent[0] > 0;

    float* acc = ctx.shared<float>();  // [tc][tp]
    float* xs = acc + tc * tp;         // [kChunk][tp]
    float* ws = xs + kChunk * tp;      // [tc][kChunk]
    const int64_t micro_cols = tp / kMicro;

    for (int64_t tile : uniform_groups(ctx, g.groups * ctiles * mtiles)) {
      const int64_t grp = tile / (ctiles * mtiles);
      const int64_t rest = tile - grp * (ctiles * mtiles);
      const int64_t c0 = (rest / mtiles) * tc, m0 = (rest % mtiles) * tp;

      for (int64_t o : group_elements(ctx, tc * tp)) acc[o] = 0.0f;

      for (int64_t r0 = 0; r0 < kred; r0 += kChunk) {
        const int64_t rlen = math::min<int64_t>(kChunk, kred - r0);
        // Stage X: consecutive elements take consecutive pixels (coalesced along a row).
        for (int64_t i : group_elements(ctx, kChunk * tp)) {
          const int64_t r = i / tp, p = i - r * tp;
          const int64_t rg = r0 + r, m = m0 + p;
          float v = 0.0f;
          if (r < rlen && m < pixels) {
            const int64_t ci = rg / khw, kk = rg - ci * khw;
            const int64_t kh = kk / kw_n, kw = kk - kh * kw_n;
            const int64_t n = m / ohw, mm = m - n * ohw;
            const int64_t oh = mm / ow_n, ow = mm - oh * ow_n;
            const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
            const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
            if (ih >= 0 && ih < height && iw >= 0 && iw < width) {
              v = math::to_float(in(n, grp * cin_g + ci, ih, iw));
            }
          }
          xs[i] = v;
        }
        // Stage W, zero outside the group's channels and the reduction.
        for (int64_t i : group_elements(ctx, tc * kChunk)) {
          const int64_t c = i / kChunk, r = i - c * kChunk;
          const int64_t co = c0 + c, rg = r0 + r;
          float v = 0.0f;
          if (co < cout_g && r < rlen) {
            const int64_t ci = rg / khw, kk = rg - ci * khw;
            const int64_t kh = kk / kw_n, kw = kk - kh * kw_n;
            v = math::to_float(w(grp * cout_g + co, ci, kh, kw));
          }
          ws[i] = v;
        }
        ctx.sync();
        for (int64_t u : group_elements(ctx, (tc / kMicro) * micro_cols)) {
          const int64_t mc = u / micro_cols, mp = u - mc * micro_cols;
          float* a0 = acc + (mc * kMicro) * tp + mp * kMicro;
          float a[kMicro][kMicro];
          for (int i = 0; i < kMicro; ++i) {
            for (int j = 0; j < kMicro; ++j) a[i][j] = a0[i * tp + j];
          }
          const float* wrow = ws + (mc * kMicro) * kChunk;
          const float* xcol = xs + mp * kMicro;
          for (int64_t r = 0; r < rlen; ++r) {
            float wv[kMicro], xv[kMicro];
            for (int i = 0; i < kMicro; ++i) wv[i] = wrow[i * kChunk + r];
            for (int j = 0; j < kMicro; ++j) xv[j] = xcol[r * tp + j];
            for (int i = 0; i < kMicro; ++i) {
              for (int j = 0; j < kMicro; ++j) a[i][j] += wv[i] * xv[j];
            }
          }
          for (int i = 0; i < kMicro; ++i) {
            for (int j = 0; j < kMicro; ++j) a0[i * tp + j] = a[i][j];
          }
        }
        ctx.sync();  // xs/ws are restaged, acc is read by other elements below
      }

      // Same element-to-slot mapping as the zeroing above, so no sync() is needed between
      // this tile's stores and the next tile's zeroing.
      for (int64_t o : group_elements(ctx, tc * tp)) {
        const int64_t c = o / tp, p = o - c * tp;
        const int64_t co = c0 + c, m = m0 + p;
        if (co < cout_g && m < pixels) {
          const int64_t n = m / ohw, mm = m - n * ohw;
          const int64_t oh = mm / ow_n, ow = mm - oh * ow_n;
          const int64_t channel = grp * cout_g + co;
          float v = acc[o];
          if (has_bias) v += bias[channel];
          out(n, channel, oh, ow) = math::round_to<T>(apply(g.epilogue, v));
        }
      }
    }
  }
};

// Channel tile with the least padding of the group's output channels (ties: the wider tile).
int64_t channel_tile(int64_t cout_g) {
  int64_t best = 32, best_padded = ((cout_g + 31) / 32) * 32;
  for (int64_t tc : {16, 8, 4}) {
    const int64_t padded = ((cout_g + tc - 1) / tc) * tc;
    if (padded < best_padded) best = tc, best_padded = padded;
  }
  return best;
}

template <class T>
void conv2d_launch_typed(const Queue& queue, View<const T, 4> input, View<const T, 4> weight,
                         View1<const float> bias, View<T, 4> output, Conv2dGeometry geometry,
                         LaunchConfig config) {
  const int64_t cout_g = weight.extent[0] / geometry.groups;
  const int64_t pixels = output.extent[0] * output.extent[2] * output.extent[3];
  if (cout_g == 0 || pixels == 0) return;
  Conv2dTiling tiling;
  tiling.tc = channel_tile(cout_g);
  tiling.tp = kTileOutputs / tiling.tc;
  const int64_t tiles = geometry.groups * ((cout_g + tiling.tc - 1) / tiling.tc) *
                        ((pixels + tiling.tp - 1) / tiling.tp);
  const int size = config.group_size_or(kDefaultGroupSize);
  const int64_t groups = config.groups_or(grid_groups(queue, tiles));
  const size_t shared_bytes =
      sizeof(float) *
      static_cast<size_t>(tiling.tc * tiling.tp + kChunk * tiling.tp + tiling.tc * kChunk);
  launch(queue, groups, size, shared_bytes, Conv2dKernel<T>{}, input, weight, bias, output,
         geometry, tiling);
}

}  // namespace

void conv2d_launch(const Queue& queue, View<const float, 4> input, View<const float, 4> weight,
                   View1<const float> bias, View<float, 4> output, Conv2dGeometry geometry,
                   LaunchConfig config) {
  conv2d_launch_typed(queue, input, weight, bias, output, geometry, config);
}
void conv2d_launch(const Queue& queue, View<const bf16, 4> input, View<const bf16, 4> weight,
                   View1<const float> bias, View<bf16, 4> output, Conv2dGeometry geometry,
                   LaunchConfig config) {
  conv2d_launch_typed(queue, input, weight, bias, output, geometry, config);
}
void conv2d_launch(const Queue& queue, View<const fp16, 4> input, View<const fp16, 4> weight,
                   View1<const float> bias, View<fp16, 4> output, Conv2dGeometry geometry,
                   LaunchConfig config) {
  conv2d_launch_typed(queue, input, weight, bias, output, geometry, config);
}

}  // namespace kaas::KAAS_BACKEND_NS
