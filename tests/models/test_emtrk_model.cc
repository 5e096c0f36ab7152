#include "models/emtrk_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/onnx_node_runner.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

using models::EmTrkGraphStyle;

int64_t parameter_count(const onnx::ModelProto& model) {
  int64_t total = 0;
  for (const auto& t : model.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    total += n;
  }
  return total;
}

std::vector<std::string> op_types(const onnx::ModelProto& model) {
  std::vector<std::string> ops;
  for (const auto& n : model.graph().node()) ops.push_back(n.op_type());
  return ops;
}

TEST(EmTrkModel, KerasGraphHasTheProductionStructureAndNames) {
  const auto model = models::make_emtrk_model();
  EXPECT_EQ(parameter_count(model), models::kEmTrkParameters);
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"Transpose", "Conv", "Relu", "Transpose", "Dropout",
                                      "Flatten", "Gemm", "Relu", "Dropout", "Gemm", "Relu",
                                      "Identity", "Gemm", "Softmax", "Gemm", "Sigmoid"}));
  ASSERT_EQ(model.graph().input_size(), 1);
  EXPECT_EQ(model.graph().input(0).name(), "main_input");
  const auto& dims = model.graph().input(0).type().tensor_type().shape().dim();
  ASSERT_EQ(dims.size(), 4);
  EXPECT_EQ(dims[0].dim_param(), "batch");
  EXPECT_EQ(dims[1].dim_value(), 48);
  EXPECT_EQ(dims[2].dim_value(), 48);
  EXPECT_EQ(dims[3].dim_value(), 1);
  ASSERT_EQ(model.graph().output_size(), 2);
  EXPECT_EQ(model.graph().output(0).name(), "em_trk_none_netout/Softmax");
  EXPECT_EQ(model.graph().output(1).name(), "michel_netout/Sigmoid");
}

TEST(EmTrkModel, PyTorchGraphHasTheSameParameters) {
  const auto model = models::make_emtrk_model({EmTrkGraphStyle::kPyTorch});
  EXPECT_EQ(parameter_count(model), models::kEmTrkParameters);
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"Conv", "Relu", "Flatten", "Gemm", "Relu", "Gemm", "Relu",
                                      "Gemm", "Softmax", "Gemm", "Sigmoid"}));
}

TEST(EmTrkModel, GenerationIsDeterministicAndSeeded) {
  std::string a, b, c;
  ASSERT_TRUE(models::make_emtrk_model().SerializeToString(&a));
  ASSERT_TRUE(models::make_emtrk_model().SerializeToString(&b));
  ASSERT_TRUE(models::make_emtrk_model({EmTrkGraphStyle::kKeras, 7}).SerializeToString(&c));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), b.size());
}

// The generated PyTorch-style graph run end to end on kaas kernels, against a double-precision
// forward pass of the same weights.
class EmTrkForwardTest : public ::testing::TestWithParam<const Backend*> {};

const float* initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return reinterpret_cast<const float*>(t.raw_data().data());
  }
  throw std::runtime_error("no initializer " + name);
}

TEST_P(EmTrkForwardTest, MatchesDoubleReferenceOnRandomPatches) {
  const auto model = models::make_emtrk_model({EmTrkGraphStyle::kPyTorch});
  const int64_t batch = GetParam()->id() == BackendId::kGpuEmu ? 2 : 5;
  const auto patches = random_floats(batch * 48 * 48, 99, -5.0f, 15.0f);
  const auto outputs = run_onnx_graph(*GetParam(), model, {{{batch, 1, 48, 48}, patches}});
  ASSERT_EQ(outputs.size(), 2u);
  ASSERT_EQ(outputs[0].size(), size_t(batch * 3));
  ASSERT_EQ(outputs[1].size(), size_t(batch * 1));
  const float *cw = initializer(model, "conv2d/kernel"), *cb = initializer(model, "conv2d/bias");
  const float *w1 = initializer(model, "dense/kernel"), *b1 = initializer(model, "dense/bias");
  const float *w2 = initializer(model, "dense_1/kernel"), *b2 = initializer(model, "dense_1/bias");
  const float *w3 = initializer(model, "em_trk_none_netout/kernel"),
              *b3 = initializer(model, "em_trk_none_netout/bias");
  const float *w4 = initializer(model, "michel_netout/kernel"),
              *b4 = initializer(model, "michel_netout/bias");
  for (int64_t n = 0; n < batch; ++n) {
    std::vector<double> conv(48 * 44 * 44);  // NCHW flatten order (PyTorch)
    for (int c = 0; c < 48; ++c)
      for (int h = 0; h < 44; ++h)
        for (int w = 0; w < 44; ++w) {
          double sum = cb[c];
          for (int kh = 0; kh < 5; ++kh)
            for (int kw = 0; kw < 5; ++kw)
              sum += double(patches[n * 2304 + (h + kh) * 48 + w + kw]) * cw[c * 25 + kh * 5 + kw];
          conv[(c * 44 + h) * 44 + w] = std::max(sum, 0.0);
        }
    auto dense = [](const std::vector<double>& x, const float* w, const float* b, int in, int out,
                    bool relu) {
      std::vector<double> y(out);
      for (int o = 0; o < out; ++o) {
        double sum = b[o];
        for (int i = 0; i < in; ++i) sum += x[i] * w[int64_t(o) * in + i];  // PyTorch [out, in]
        y[o] = relu ? std::max(sum, 0.0) : sum;
      }
      return y;
    };
    const auto h1 = dense(conv, w1, b1, 92928, 128, true);
    const auto h2 = dense(h1, w2, b2, 128, 32, true);
    const auto logits = dense(h2, w3, b3, 32, 3, false);
    const auto michel = dense(h2, w4, b4, 32, 1, false);
    const double m = std::max({logits[0], logits[1], logits[2]});
    const double z = std::exp(logits[0] - m) + std::exp(logits[1] - m) + std::exp(logits[2] - m);
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(outputs[0][n * 3 + k], std::exp(logits[k] - m) / z, 1e-5) << n << "," << k;
    EXPECT_NEAR(outputs[1][n], 1.0 / (1.0 + std::exp(-michel[0])), 1e-5) << n;
  }
}

KAAS_INSTANTIATE_FOR_BACKENDS(EmTrkForwardTest);

}  // namespace
}  // namespace kaas::testing
