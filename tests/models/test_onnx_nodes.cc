// ONNX's own backend node tests for every operator the importer maps (the families each op of
// the op table names), on every backend; docs/models.md's op list checked against the table.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kaas/models/onnx_ops/table.h"
#include "tests/models/onnx_node_cases.h"
#include "tests/support/backends_under_test.h"

namespace kaas::testing {
namespace {

struct NodeParam {
  const Backend* backend;
  OnnxNodeCase test_case;
};

class OnnxNodeTest : public ::testing::TestWithParam<NodeParam> {};

TEST_P(OnnxNodeTest, MatchesOnnxExpectedOutputs) {
  const auto& [backend, test_case] = GetParam();
  const OnnxCaseResult result = run_onnx_node_case(*backend, test_case);
  if (!result.ran) {
    // Only these may be rejected, each for the reason given; any other rejection fails.
    const bool expected_rejection =
        test_case.name.ends_with("_expanded") ||            // ReduceMax/Exp/... decompositions
        test_case.name == "node/test_add_uint8" ||          // UINT8 data: kaas models are FLOAT
        test_case.name == "node/test_identity_opt" ||       // optional type
        test_case.name == "node/test_identity_sequence" ||  // sequence type
        test_case.name.starts_with("node/test_dropout_default_mask") ||  // training mask output
        test_case.name == "node/test_constant";  // a constant graph: no runtime input
    ASSERT_TRUE(expected_rejection) << test_case.name << " rejected: " << result.skip_reason;
    GTEST_SKIP() << test_case.name << ": " << result.skip_reason;
  }
  EXPECT_GT(result.outputs_compared, 0);
  EXPECT_EQ(result.mismatches, 0) << result.first_mismatch;
}

std::vector<NodeParam> all_params() {
  std::vector<NodeParam> params;
  for (const Backend* b : backends_under_test()) {
    for (const auto& c : onnx_node_cases()) params.push_back({b, c});
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<NodeParam>& info) {
  std::string name = std::string(info.param.backend->name()) + "_" + info.param.test_case.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);
INSTANTIATE_TEST_SUITE_P(Onnx, OnnxNodeTest, ::testing::ValuesIn(all_params()), param_name);

// The data must be there (scripts/test.sh installs libonnx-testdata), and the set of cases must
// not shrink silently.
TEST(OnnxNodeTestData, EveryRequiredFamilyIsPresent) {
  const auto cases = onnx_node_cases();
  ASSERT_FALSE(cases.empty()) << "no ONNX node tests under " << onnx_testdata_root()
                              << " (Debian package libonnx-testdata)";
  for (const char* family : {"node/test_conv_with_",
                             "node/test_gemm_",
                             "node/test_matmul_2d",
                             "node/test_matmul_3d",
                             "node/test_matmul_4d",
                             "node/test_softmax_",
                             "node/test_logsoftmax_",
                             "node/test_sigmoid",
                             "node/test_relu",
                             "node/test_leakyrelu",
                             "node/test_add",
                             "node/test_concat_",
                             "node/test_flatten_",
                             "node/test_reshape_",
                             "node/test_transpose_",
                             "node/test_identity",
                             "node/test_dropout_default",
                             "pytorch-converted/test_Conv2d",
                             "pytorch-converted/test_Linear",
                             "pytorch-converted/test_Softmax",
                             "pytorch-converted/test_LogSoftmax",
                             "pytorch-converted/test_ReLU",
                             "pytorch-converted/test_LeakyReLU",
                             "pytorch-converted/test_Sigmoid"}) {
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const auto& c) {
      return c.name.rfind(family, 0) == 0;
    })) << family;
  }
  // Every family an op names has cases (a misspelt family would select nothing).
  for (const auto& f : onnx_node_families()) {
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(),
                            [&](const auto& c) {
                              return f.matches(c.directory.parent_path().filename().string(),
                                               c.directory.filename().string());
                            }))
        << f.folder << "/" << f.family;
  }
  EXPECT_EQ(cases.size(), 134u) << "libonnx-testdata 1.12 has 134 such cases";
}

// docs/models.md's op list (after "ops (`models/onnx_ops/table.h`): ", up to ";", notes in
// parentheses ignored) is the table's, in table order.
TEST(OnnxOpTable, TheModelsPageListsTheTable) {
  std::ifstream in(KAAS_OP_LIST_DOC);
  ASSERT_TRUE(in) << KAAS_OP_LIST_DOC;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::string marker = "ops (`models/onnx_ops/table.h`): ";
  const size_t begin = text.find(marker);
  ASSERT_NE(begin, std::string::npos) << "docs/models.md lost its ONNX op list: " << marker;
  const size_t end = text.find(';', begin);
  ASSERT_NE(end, std::string::npos);
  std::string listed, item;
  int depth = 0;
  auto flush = [&] {
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    if (first != std::string::npos)
      listed.append(listed.empty() ? "" : ", ").append(item.substr(first, last - first + 1));
    item.clear();
  };
  for (size_t i = begin + marker.size(); i < end; ++i) {
    const char c = text[i];
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0) {
      flush();
    } else if (depth == 0 && c != ')') {
      if (!std::isspace(static_cast<unsigned char>(c)) || (!item.empty() && item.back() != ' '))
        item += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
    }
  }
  flush();
  EXPECT_EQ(listed, models::onnx_import::supported_op_types())
      << "docs/models.md's ONNX op list differs from models/onnx_ops/table.h";
}

}  // namespace
}  // namespace kaas::testing
