#pragma once
// ONNX's own backend tests (Debian libonnx-testdata) run through the kaas ONNX importer: each
// case is a model.onnx of one or a few nodes with input_*.pb tensors and expected output_*.pb.

#include <filesystem>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"

namespace kaas::testing {

struct OnnxNodeCase {
  std::filesystem::path directory;  // .../node/test_conv_with_strides_padding
  std::string name;                 // "node/test_conv_with_strides_padding"
};

// Every node / pytorch-converted test of the operators the importer maps (Conv, Gemm, MatMul,
// Add, Relu, LeakyRelu, Sigmoid, Softmax, LogSoftmax, Flatten, Reshape, Transpose, Concat,
// Dropout, Identity, Constant).
std::vector<OnnxNodeCase> onnx_node_cases();
std::filesystem::path onnx_testdata_root();

struct OnnxCaseResult {
  bool ran = false;  // false: the importer rejected the model as unsupported (skip_reason)
  std::string skip_reason;
  int outputs_compared = 0;
  int64_t mismatches = 0;
  std::string first_mismatch;
};

// Imports, runs every test_data_set_* and compares with ONNX's tolerance (rtol 1e-3, atol 1e-7).
// kUnimplemented from the importer is a skip; any other error is thrown.
OnnxCaseResult run_onnx_node_case(const Backend& backend, const OnnxNodeCase& c);

}  // namespace kaas::testing
