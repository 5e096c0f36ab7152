#include "kaas/kernels/mlp_heads.h"

#include <string>

#include "kaas/kernels/detail/checks.h"

namespace kaas {

namespace {

void check_layer(const DenseLayer& layer, int64_t in, int64_t max_out, const char* name) {
  const std::string n = name;
  detail::check_view(layer.w, "mlp_two_heads", (n + ".w").c_str());
  detail::check_view(layer.b, "mlp_two_heads", (n + ".b").c_str());
  detail::check_same_extent(in, layer.w.extent[0], "mlp_two_heads", n + ".w rows");
  require(layer.w.extent[1] >= 1 && layer.w.extent[1] <= max_out, "mlp_two_heads", n + ".w columns",
          "1.." + std::to_string(max_out), std::to_string(layer.w.extent[1]));
  require(layer.b.extent[0] == 0 || layer.b.extent[0] == layer.w.extent[1], "mlp_two_heads",
          n + ".b extent", "0 or " + std::to_string(layer.w.extent[1]),
          std::to_string(layer.b.extent[0]));
}

}  // namespace

void mlp_two_heads(const Queue& queue, View2<const float> x, const DenseLayer& hidden,
                   const DenseLayer& head_a, const DenseLayer& head_b, View2<float> out_a,
                   View2<float> out_b, LaunchConfig config) {
  detail::check_view(x, "mlp_two_heads", "x");
  check_layer(hidden, x.extent[1], kMlpHeadsMaxHidden, "hidden");
  check_layer(head_a, hidden.w.extent[1], kMlpHeadsMaxOutputs, "head_a");
  check_layer(head_b, hidden.w.extent[1], kMlpHeadsMaxOutputs, "head_b");
  detail::check_view(out_a, "mlp_two_heads", "out_a");
  detail::check_view(out_b, "mlp_two_heads", "out_b");
  detail::check_same_extent(x.extent[0], out_a.extent[0], "mlp_two_heads", "out_a rows");
  detail::check_same_extent(x.extent[0], out_b.extent[0], "mlp_two_heads", "out_b rows");
  detail::check_same_extent(head_a.w.extent[1], out_a.extent[1], "mlp_two_heads", "out_a columns");
  detail::check_same_extent(head_b.w.extent[1], out_b.extent[1], "mlp_two_heads", "out_b columns");
  detail::check_config(config, "mlp_two_heads");
  if (x.extent[0] == 0) return;
  KAAS_RETURN_LAUNCH(queue, mlp_two_heads_launch, queue, x, hidden, head_a, head_b, out_a, out_b,
                     config);
}

}  // namespace kaas
