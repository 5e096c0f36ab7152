#pragma once
// Activations usable as fused epilogues by every kernel (conv2d, gemm/dense) and as standalone
// elementwise kernels. Host and device code: the same function computes the reference path
// on the CPU and the epilogue inside a GPU kernel.

#include <string>
#include <string_view>

#include "kaas/backends/math.h"
#include "kaas/backends/portability.h"

namespace kaas {

enum class Activation { kNone, kRelu, kLeakyRelu, kSigmoid };

// What a kernel applies to each output value before storing it.
struct Epilogue {
  Activation activation = Activation::kNone;
  float alpha = 0.01f;  // negative slope of kLeakyRelu (ONNX LeakyRelu default)
};

// 1 / (1 + e^-x) without overflow: e^-|x| never exceeds 1.
KAAS_INLINE_HD float stable_sigmoid(float x) {
  const float e = math::exp(-math::abs(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

KAAS_INLINE_HD float apply(const Epilogue& epilogue, float x) {
  switch (epilogue.activation) {
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kLeakyRelu:
      return x >= 0.0f ? x : epilogue.alpha * x;
    case Activation::kSigmoid:
      return stable_sigmoid(x);
    case Activation::kNone:
      break;
  }
  return x;
}

inline std::string_view to_string(Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kLeakyRelu:
      return "leaky_relu";
    case Activation::kSigmoid:
      return "sigmoid";
  }
  return "unknown";
}

}  // namespace kaas
