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

// A family of node tests: folder/family exactly, or every folder/family* when prefix.
struct OnnxNodeFamily {
  std::string folder, family;
  bool prefix = false;
  bool matches(const std::string& folder_name, const std::string& name) const;
};

// The families the importer's op table names (models/onnx_ops/<op>.cc), every op's own.
std::vector<OnnxNodeFamily> onnx_node_families();

// Every test of those families in the test data.
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
