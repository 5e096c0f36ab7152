#pragma once
// Runs ONNX's own backend node tests (Debian libonnx-testdata) on a kaas backend: a model.onnx
// of one or a few nodes, its input_*.pb tensors and the expected output_*.pb tensors. A small
// interpreter maps each node onto a kaas kernel; it is test support, not the model importer.

#include <filesystem>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "backends/backend.h"

namespace kaas::testing {

struct OnnxNodeCase {
  std::filesystem::path directory;  // .../node/test_conv_with_strides_padding
  std::string name;                 // "node/test_conv_with_strides_padding"
};

// The cases kaas must pass: every float conv/gemm/matmul/softmax/logsoftmax/sigmoid/relu/
// leakyrelu node test and the pytorch-converted Conv2d/Linear/Softmax/LogSoftmax ones.
std::vector<OnnxNodeCase> required_onnx_node_cases();
std::filesystem::path onnx_testdata_root();

struct OnnxCaseResult {
  bool ran = false;  // false: the graph needs an op kaas does not have (skip_reason)
  std::string skip_reason;
  int outputs_compared = 0;
  int64_t mismatches = 0;
  std::string first_mismatch;
};

// Loads, runs every test_data_set_* and compares with ONNX's tolerance (rtol 1e-3, atol 1e-7).
OnnxCaseResult run_onnx_node_case(const Backend& backend, const OnnxNodeCase& c);

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Runs a whole graph (ops as above plus Flatten, Dropout, Identity) on `backend`; inputs in the
// order of the graph's non-initializer inputs, outputs in graph order. Throws std::runtime_error
// for an unsupported graph.
std::vector<std::vector<float>> run_onnx_graph(const Backend& backend,
                                               const onnx::ModelProto& model,
                                               const std::vector<HostTensor>& inputs);

}  // namespace kaas::testing
