#include "kaas/kernels/softmax.h"

#include "kaas/kernels/detail/checks.h"

namespace kaas {

void softmax(const Queue& queue, SoftmaxKind kind, View<const float, 3> x, View<float, 3> y,
             LaunchConfig config) {
  require(kind == SoftmaxKind::kSoftmax || kind == SoftmaxKind::kLogSoftmax, "softmax", "kind",
          "kSoftmax or kLogSoftmax", std::to_string(static_cast<int>(kind)));
  detail::check_view(x, "softmax", "x");
  detail::check_view(y, "softmax", "y");
  for (int d = 0; d < 3; ++d) {
    detail::check_same_extent(x.extent[d], y.extent[d], "softmax",
                              "y extent[" + std::to_string(d) + "] (same as x)");
  }
  detail::check_config(config, "softmax");
  if (x.size() == 0) return;
  KAAS_RETURN_LAUNCH(queue, softmax_launch, queue, kind, x, y, config);
}

void softmax(const Queue& queue, SoftmaxKind kind, const float* x, float* y, const int64_t* extents,
             int rank, int64_t axis) {
  require(rank >= 1 && rank <= 8, "softmax", "rank", "1..8", std::to_string(rank));
  require(axis >= -rank && axis < rank, "softmax", "axis",
          "in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]",
          std::to_string(axis));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= extents[d];
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= extents[d];
  const int64_t shape[3] = {outer, extents[axis], inner};
  softmax(queue, kind, make_view<3>(x, shape), make_view<3>(y, shape));
}

void activate(const Queue& queue, const Epilogue& epilogue, View1<const float> x, View1<float> y,
              LaunchConfig config) {
  require(epilogue.activation == Activation::kNone || epilogue.activation == Activation::kRelu ||
              epilogue.activation == Activation::kLeakyRelu ||
              epilogue.activation == Activation::kSigmoid,
          "activate", "activation", "none, relu, leaky_relu or sigmoid",
          std::to_string(static_cast<int>(epilogue.activation)));
  detail::check_view(x, "activate", "x");
  detail::check_view(y, "activate", "y");
  detail::check_same_extent(x.extent[0], y.extent[0], "activate", "y extent (same as x)");
  detail::check_config(config, "activate");
  KAAS_RETURN_LAUNCH(queue, activate_launch, queue, epilogue, x, y, config);
}

}  // namespace kaas
