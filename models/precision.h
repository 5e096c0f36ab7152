#pragma once
// The arithmetic precision a model runs its heavy layers in: fp32, or bf16 / fp16 weights and
// activations with fp32 accumulation (see kernels/conv2d.h and kernels/gemm.h). Chosen per model:
// config.pbtxt parameter `precision`, kaas-infer --precision, the direct client's parameters.

#include <string>
#include <string_view>

namespace kaas::models {

enum class Precision { kFp32, kBf16, kFp16 };

std::string_view to_string(Precision precision);  // "fp32", "bf16", "fp16"
// Throws kaas::Error kInvalidArgument naming `where` and the accepted names.
Precision precision_from_string(std::string_view name, const std::string& where);

}  // namespace kaas::models
