#pragma once
// The tail of a classifier as one kernel: per row r of x,
//   h        = hidden.epilogue(x[r] . hidden.w + hidden.b)
//   out_a[r] = softmax(h . head_a.w + head_a.b)
//   out_b[r] = head_b.epilogue(h . head_b.w + head_b.b)
// (EmTrkMichelId: Dense 32 ReLU, then em_trk_none Softmax [3] and michel Sigmoid [1]). One
// element per row keeps h in registers; the weights are small and shared by every row.

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/kernels/activation.h"

namespace kaas {

struct DenseLayer {
  View2<const float> w;  // [in, out] (a transposed [out, in] weight is passed with swapped strides)
  View1<const float> b;  // [out] or empty
  Epilogue epilogue;
};

inline constexpr int kMlpHeadsMaxHidden = 64;
inline constexpr int kMlpHeadsMaxOutputs = 16;

void mlp_two_heads(const Queue& queue, View2<const float> x, const DenseLayer& hidden,
                   const DenseLayer& head_a, const DenseLayer& head_b, View2<float> out_a,
                   View2<float> out_b, LaunchConfig config = {});

KAAS_DECLARE_LAUNCHER(void, mlp_two_heads_launch,
                      (const Queue&, View2<const float>, DenseLayer, DenseLayer, DenseLayer,
                       View2<float>, View2<float>, LaunchConfig))

}  // namespace kaas
