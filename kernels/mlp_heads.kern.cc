// mlp_two_heads for one backend (see backends/kernel.h).

#include "kaas/kernels/mlp_heads.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

struct MlpTwoHeadsKernel {
  static constexpr const char* kName = "mlp_two_heads";

  // out[j] = x . w[:, j] + b[j] for j < w.extent[1]: one chain of fused multiply-adds over k
  // from the bias, as gemm computes a layer (the fused and unfused plans give the same bits).
  KAAS_INLINE_HD static void layer(const float* x, int64_t in, const DenseLayer& l, float* out) {
    for (int64_t j = 0; j < l.w.extent[1]; ++j) out[j] = l.b.extent[0] > 0 ? l.b[j] : 0.0f;
    for (int64_t k = 0; k < in; ++k) {
      const float xk = x[k];
      for (int64_t j = 0; j < l.w.extent[1]; ++j) out[j] = math::fma(xk, l.w(k, j), out[j]);
    }
  }

  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> x, DenseLayer hidden,
                              DenseLayer head_a, DenseLayer head_b, View2<float> out_a,
                              View2<float> out_b) const {
    const int64_t in = x.extent[1], n_hidden = hidden.w.extent[1];
    for (int64_t r : uniform_elements(ctx, x.extent[0])) {
      float h[kMlpHeadsMaxHidden];
      for (int64_t j = 0; j < n_hidden; ++j) h[j] = hidden.b.extent[0] > 0 ? hidden.b[j] : 0.0f;
      for (int64_t k = 0; k < in; ++k) {
        const float xk = x(r, k);
        for (int64_t j = 0; j < n_hidden; ++j) h[j] = math::fma(xk, hidden.w(k, j), h[j]);
      }
      for (int64_t j = 0; j < n_hidden; ++j) h[j] = apply(hidden.epilogue, h[j]);

      float a[kMlpHeadsMaxOutputs];
      layer(h, n_hidden, head_a, a);
      float top = a[0];
      for (int64_t j = 1; j < head_a.w.extent[1]; ++j) top = a[j] > top ? a[j] : top;
      float sum = 0.0f;
      for (int64_t j = 0; j < head_a.w.extent[1]; ++j) sum += (a[j] = math::exp(a[j] - top));
      for (int64_t j = 0; j < head_a.w.extent[1]; ++j) out_a(r, j) = a[j] / sum;

      float b[kMlpHeadsMaxOutputs];
      layer(h, n_hidden, head_b, b);
      for (int64_t j = 0; j < head_b.w.extent[1]; ++j) out_b(r, j) = apply(head_b.epilogue, b[j]);
    }
  }
};

void mlp_two_heads_launch(const Queue& queue, View2<const float> x, DenseLayer hidden,
                          DenseLayer head_a, DenseLayer head_b, View2<float> out_a,
                          View2<float> out_b, LaunchConfig config) {
  const int group_size = config.group_size_or(64);
  const int64_t groups = config.groups_or(element_grid(queue, x.extent[0], group_size));
  launch(queue, groups, group_size, 0, MlpTwoHeadsKernel{}, x, hidden, head_a, head_b, out_a,
         out_b);
}

}  // namespace kaas::KAAS_BACKEND_NS
