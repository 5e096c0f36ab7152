// The ONNX importer: simplification passes, dynamic batch, buffer reuse, and clear errors for
// unsupported or malformed models and for bad inputs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "kaas/common/error.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/onnx_model.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/generated_emtrk.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

namespace fs = std::filesystem;
using models::DataType;
using models::HostTensor;

// A small graph builder for the tests.
struct GraphBuilder {
  onnx::ModelProto model;
  onnx::GraphProto* g;
  explicit GraphBuilder(int opset = 13) : g(model.mutable_graph()) {
    model.set_ir_version(8);
    model.add_opset_import()->set_version(opset);
    g->set_name("test");
  }
  void input(const std::string& name, std::vector<int64_t> dims,
             int type = onnx::TensorProto::FLOAT) {
    auto* v = g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      d < 0 ? dim->set_dim_param("batch") : dim->set_dim_value(d);
    }
  }
  void output(const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();  // rank unknown
  }
  void constant(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(v.data(), v.size() * sizeof(float));
  }
  void int_constant(const std::string& name, const std::vector<int64_t>& v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  }
  onnx::NodeProto* node(const std::string& op, const std::string& name, std::vector<std::string> in,
                        std::vector<std::string> out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  static void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void int1(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
};

class OnnxImportTest : public ::testing::TestWithParam<const Backend*> {
 protected:
  const Backend& backend() const { return *GetParam(); }
};

HostTensor tensor(const std::string& name, std::vector<int64_t> shape,
                  const std::vector<float>& v) {
  return HostTensor::make<float>(name, DataType::kFloat32, std::move(shape), v);
}

bool log_has(const models::Model& m, const std::string& fragment) {
  for (const auto& line : m.describe()) {
    if (line.find(fragment) != std::string::npos) return true;
  }
  return false;
}

// MatMul + Add + Relu becomes one Gemm with bias and ReLU epilogue; Transpose -> Flatten ->
// dense folds into the weights; results equal a double reference at several batch sizes.
TEST_P(OnnxImportTest, FoldsAndFusesAndKeepsTheResults) {
  GraphBuilder b;
  b.input("x", {-1, 2, 3, 4});
  const auto w = random_floats(24 * 5, 1, -1, 1), bias = random_floats(5, 2, -1, 1);
  b.constant("w", {24, 5}, w);
  b.constant("bias", {5}, bias);
  GraphBuilder::ints(b.node("Transpose", "t", {"x"}, {"xt"}), "perm", {0, 2, 3, 1});
  b.node("Flatten", "f", {"xt"}, {"xf"});
  b.node("MatMul", "mm", {"xf", "w"}, {"y0"});
  b.node("Add", "add", {"y0", "bias"}, {"y1"});
  b.node("Relu", "relu", {"y1"}, {"y"});
  b.output("y");
  models::OnnxModelOptions options;
  options.max_batch = 4;
  const auto model = models::make_onnx_model(b.model, backend(), options);
  EXPECT_TRUE(log_has(*model, "bias bias fused into mm")) << model->describe().front();
  EXPECT_TRUE(log_has(*model, "Relu relu fused into mm"));
  EXPECT_TRUE(log_has(*model, "Transpose t folded into the weights of mm"));
  EXPECT_EQ(model->signature().max_batch, 4);
  EXPECT_EQ(model->signature().outputs[0].shape, (std::vector<int64_t>{-1, 5}));
  for (int64_t n : {1, 3, 4}) {
    const auto x = random_floats(n * 24, 10 + uint32_t(n), -2, 2);
    const auto out = model->run(std::vector{tensor("x", {n, 2, 3, 4}, x)});
    ASSERT_EQ(out[0].shape, (std::vector<int64_t>{n, 5}));
    for (int64_t r = 0; r < n; ++r) {
      for (int o = 0; o < 5; ++o) {
        double sum = bias[o];
        for (int h = 0; h < 3; ++h)
          for (int wi = 0; wi < 4; ++wi)
            for (int c = 0; c < 2; ++c)  // transposed (h, w, c) flatten order
              sum += double(x[((r * 2 + c) * 3 + h) * 4 + wi]) * w[((h * 4 + wi) * 2 + c) * 5 + o];
        EXPECT_NEAR(out[0].values<float>()[r * 5 + o], std::max(sum, 0.0), 1e-5);
      }
    }
  }
}

// Folding rewrites a dense weight in place only when no other op reads it: a weight shared by a
// folded and an unfolded layer stays as stored for the second, and a transposed weight (transB)
// shared by two layers gives each a correct [K, N] copy.
TEST_P(OnnxImportTest, SharedWeightsAreRewrittenForOneLayerOnly) {
  GraphBuilder b;
  b.input("x", {-1, 2, 3, 4});
  const auto w = random_floats(24 * 5, 3, -1, 1), wt = random_floats(5 * 24, 4, -1, 1);
  b.constant("w", {24, 5}, w);
  b.constant("wt", {5, 24}, wt);
  GraphBuilder::ints(b.node("Transpose", "t", {"x"}, {"xt"}), "perm", {0, 2, 3, 1});
  b.node("Flatten", "f1", {"xt"}, {"xf1"});
  b.node("MatMul", "folded", {"xf1", "w"}, {"ya"});
  b.node("Flatten", "f2", {"x"}, {"xf2"});
  b.node("MatMul", "plain", {"xf2", "w"}, {"yb"});
  GraphBuilder::int1(b.node("Gemm", "linear_c", {"xf2", "wt"}, {"yc"}), "transB", 1);
  GraphBuilder::int1(b.node("Gemm", "linear_d", {"xf2", "wt"}, {"yd"}), "transB", 1);
  for (const char* y : {"ya", "yb", "yc", "yd"}) b.output(y);
  models::OnnxModelOptions options;
  options.max_batch = 3;
  const auto model = models::make_onnx_model(b.model, backend(), options);
  EXPECT_TRUE(log_has(*model, "Transpose t folded into the weights of folded"));
  const int64_t n = 3;
  const auto x = random_floats(n * 24, 5, -2, 2);
  const auto out = model->run(std::vector{tensor("x", {n, 2, 3, 4}, x)});
  ASSERT_EQ(out.size(), 4u);
  for (int64_t r = 0; r < n; ++r) {
    for (int o = 0; o < 5; ++o) {
      double folded = 0, plain = 0, linear = 0;
      for (int c = 0; c < 2; ++c)
        for (int h = 0; h < 3; ++h)
          for (int wi = 0; wi < 4; ++wi) {
            const double xv = x[((r * 2 + c) * 3 + h) * 4 + wi];
            const int k = (c * 3 + h) * 4 + wi;  // x's own (c, h, w) flatten order
            folded += xv * w[((h * 4 + wi) * 2 + c) * 5 + o];
            plain += xv * w[k * 5 + o];
            linear += xv * wt[o * 24 + k];
          }
      EXPECT_NEAR(out[0].values<float>()[r * 5 + o], folded, 1e-5);
      EXPECT_NEAR(out[1].values<float>()[r * 5 + o], plain, 1e-5);
      EXPECT_NEAR(out[2].values<float>()[r * 5 + o], linear, 1e-5);
      EXPECT_NEAR(out[3].values<float>()[r * 5 + o], linear, 1e-5);
    }
  }
}

// Concat, Reshape (0 and -1), broadcasting Add, Transpose and Softmax on their own kernels.
TEST_P(OnnxImportTest, DataMovementOps) {
  GraphBuilder b;
  b.input("a", {-1, 3});
  b.input("c", {-1, 2});
  b.constant("row", {1, 5}, {1, 2, 3, 4, 5});
  b.int_constant("shape", {0, -1, 1});
  GraphBuilder::int1(b.node("Concat", "cat", {"a", "c"}, {"ac"}), "axis", 1);
  b.node("Add", "add", {"ac", "row"}, {"s"});
  b.node("Reshape", "rs", {"s", "shape"}, {"s3"});
  GraphBuilder::ints(b.node("Transpose", "tr", {"s3"}, {"st"}), "perm", {0, 2, 1});
  GraphBuilder::int1(b.node("Softmax", "sm", {"st"}, {"p"}), "axis", -1);
  b.output("p");
  b.output("s");
  const auto model = models::make_onnx_model(b.model, backend(), {});
  const int64_t n = 3;
  const auto a = random_floats(n * 3, 5, -1, 1), c = random_floats(n * 2, 6, -1, 1);
  const auto out = model->run(std::vector{tensor("c", {n, 2}, c), tensor("a", {n, 3}, a)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{n, 1, 5}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{n, 5}));
  for (int64_t r = 0; r < n; ++r) {
    double s[5], z = 0, m = -1e30;
    for (int j = 0; j < 5; ++j) {
      s[j] = (j < 3 ? a[r * 3 + j] : c[r * 2 + j - 3]) + (j + 1);
      EXPECT_NEAR(out[1].values<float>()[r * 5 + j], s[j], 1e-6);
      m = std::max(m, s[j]);
    }
    for (double v : s) z += std::exp(v - m);
    for (int j = 0; j < 5; ++j)
      EXPECT_NEAR(out[0].values<float>()[r * 5 + j], std::exp(s[j] - m) / z, 1e-6);
  }
}

// Clip with constant bounds as exporters write them (the node tests feed them at run time): NaN
// passes through, and min > max gives max everywhere (ONNX's rule).
TEST_P(OnnxImportTest, ClipWithConstantBounds) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [lo, hi] : {std::pair{-1.0f, 2.0f}, std::pair{3.0f, 1.0f}}) {
    GraphBuilder b;
    b.input("x", {-1, 3});
    b.constant("lo", {}, {lo});
    b.constant("hi", {}, {hi});
    b.node("Clip", "clip", {"x", "lo", "hi"}, {"y"});
    b.output("y");
    const auto model = models::make_onnx_model(b.model, backend(), {});
    const auto out = model->run(std::vector{tensor("x", {2, 3}, {-5, 0.5f, 5, nan, -1, 2})});
    const auto y = out[0].values<float>();
    const std::vector<float> x{-5, 0.5f, 5, nan, -1, 2};
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << i;
      } else {
        EXPECT_EQ(y[i], std::min(std::max(x[i], lo), hi)) << i;
      }
    }
  }
}

template <class F>
void expect_error(F&& f, ErrorCode code, std::vector<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << fragments.front() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& fragment : fragments)
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST_P(OnnxImportTest, BadInputsAreClearErrorsAndTheModelKeepsServing) {
  GraphBuilder b;
  b.input("x", {-1, 4});
  b.node("Relu", "relu", {"x"}, {"y"});
  b.output("y");
  models::OnnxModelOptions options;
  options.max_batch = 2;
  options.name = "relu_model";
  const auto model = models::make_onnx_model(b.model, backend(), options);
  const std::vector<float> four(4, -1.0f);
  auto run = [&](std::vector<HostTensor> in) { return [&model, in] { model->run(in); }; };
  expect_error(run({tensor("z", {1, 4}, four)}), ErrorCode::kInvalidArgument,
               {"relu_model", "input name", "'z'"});
  expect_error(run({}), ErrorCode::kInvalidArgument, {"input 'x'", "missing"});
  expect_error(run({tensor("x", {1, 4}, four), tensor("x", {1, 4}, four)}),
               ErrorCode::kInvalidArgument, {"given twice"});
  expect_error(run({tensor("x", {1, 5}, std::vector<float>(5))}), ErrorCode::kInvalidArgument,
               {"input 'x' shape", "[-1,4]", "[1,5]"});
  expect_error(run({tensor("x", {3, 4}, std::vector<float>(12))}), ErrorCode::kInvalidArgument,
               {"batch size", "1..2", "3"});
  HostTensor ints{"x", DataType::kInt32, {1, 4}, std::vector<std::byte>(16)};
  expect_error(run({ints}), ErrorCode::kInvalidArgument, {"datatype", "FP32", "INT32"});
  HostTensor short_bytes = tensor("x", {1, 4}, four);
  short_bytes.bytes.resize(12);
  expect_error(run({short_bytes}), ErrorCode::kInvalidArgument, {"byte size", "16", "12"});
  const auto out = model->run(std::vector{tensor("x", {1, 4}, {-1, 2, -3, 4})});
  EXPECT_EQ(std::vector<float>(out[0].values<float>().begin(), out[0].values<float>().end()),
            (std::vector<float>{0, 2, 0, 4}));
}

TEST_P(OnnxImportTest, UnsupportedGraphsNameTheNodeAndOp) {
  {
    GraphBuilder b;
    b.input("x", {-1, 4});
    b.node("Cos", "my_cos", {"x"}, {"y"});
    b.output("y");
    expect_error([&] { models::make_onnx_model(b.model, backend()); }, ErrorCode::kUnimplemented,
                 {"node 'my_cos' (Cos)", "not supported"});
  }
  {
    GraphBuilder b;
    b.input("x", {1, 1, 4, 4, 4});
    b.constant("w", {1, 1, 2, 2, 2}, std::vector<float>(8, 1.0f));
    b.node("Conv", "conv3d", {"x", "w"}, {"y"});
    b.output("y");
    expect_error([&] { models::make_onnx_model(b.model, backend()); }, ErrorCode::kInvalidArgument,
                 {"node 'conv3d' (Conv)", "rank 4"});
  }
  {
    GraphBuilder b;
    b.input("x", {1, 1, 4, 4});
    b.constant("w", {1, 1, 2, 2}, std::vector<float>(4, 1.0f));
    GraphBuilder::ints(b.node("Conv", "c", {"x", "w"}, {"y"}), "strides", {1, 1, 1});
    b.output("y");
    expect_error([&] { models::make_onnx_model(b.model, backend()); }, ErrorCode::kUnimplemented,
                 {"node 'c' (Conv)", "strides has 3 values"});
  }
  {
    GraphBuilder b;
    b.input("x", {-1, 4}, onnx::TensorProto::INT64);
    b.node("Relu", "r", {"x"}, {"y"});
    b.output("y");
    expect_error([&] { models::make_onnx_model(b.model, backend()); }, ErrorCode::kUnimplemented,
                 {"input 'x'", "INT64"});
  }
  {
    GraphBuilder b;
    b.input("x", {-1, 4});
    b.constant("lo", {2}, {0, 1});
    b.node("Clip", "clamp", {"x", "lo"}, {"y"});
    b.output("y");
    expect_error([&] { models::make_onnx_model(b.model, backend()); }, ErrorCode::kInvalidArgument,
                 {"node 'clamp' (Clip)", "min [2] must be a scalar"});
  }
  {
    // A Reshape that hard-codes batch 1 cannot serve a dynamic batch.
    GraphBuilder b;
    b.input("x", {-1, 4});
    b.int_constant("shape", {1, -1});
    b.node("Reshape", "rs", {"x", "shape"}, {"y"});
    b.output("y");
    expect_error([&] { models::make_onnx_model(b.model, backend()); }, ErrorCode::kUnimplemented,
                 {"output 'y'", "batch dimension"});
  }
}

TEST_P(OnnxImportTest, MalformedFilesAreClearErrors) {
  const fs::path dir =
      fs::temp_directory_path() / ("kaas_onnx_import_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string bytes;
  ASSERT_TRUE(generated_emtrk().SerializeToString(&bytes));
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir / name, std::ios::binary) << content;
    return dir / name;
  };
  for (size_t keep : {size_t(0), size_t(10), bytes.size() / 2, bytes.size() - 3}) {
    const auto path = write("truncated.onnx", bytes.substr(0, keep));
    expect_error([&] { models::load_onnx_model(path, backend()); }, ErrorCode::kInvalidArgument,
                 {path.string()});
  }
  const auto text = write("text.onnx", "this is not a model\n");
  expect_error([&] { models::load_onnx_model(text, backend()); }, ErrorCode::kInvalidArgument,
               {text.string(), "not a valid ONNX"});
  expect_error([&] { models::load_onnx_model(dir / "missing.onnx", backend()); },
               ErrorCode::kNotFound, {"missing.onnx"});
  // Parses, but the weight's raw data lost bytes.
  onnx::ModelProto model = generated_emtrk();
  auto* w = model.mutable_graph()->mutable_initializer(0);
  w->set_raw_data(w->raw_data().substr(0, w->raw_data().size() - 4));
  expect_error([&] { models::make_onnx_model(model, backend()); }, ErrorCode::kInvalidArgument,
               {"raw_data has"});
  fs::remove_all(dir);
}

KAAS_INSTANTIATE_FOR_BACKENDS(OnnxImportTest);

}  // namespace
}  // namespace kaas::testing
