#include "kaas/models/emtrk_onnx_generator.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>

#include "kaas/backends/half.h"
#include "kaas/common/error.h"
#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/planner.h"
#include "kaas/models/npy.h"

#include "kaas/models/onnx_model.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/generated_emtrk.h"
#include "tests/support/omp_threads.h"
#include "tests/support/reference.h"
#include "tests/support/scoped_env.h"

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
  const auto& model = generated_emtrk();
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
  const auto& model = generated_emtrk(EmTrkGraphStyle::kPyTorch);
  EXPECT_EQ(parameter_count(model), models::kEmTrkParameters);
  EXPECT_EQ(op_types(model),
            (std::vector<std::string>{"Conv", "Relu", "Flatten", "Gemm", "Relu", "Gemm", "Relu",
                                      "Gemm", "Softmax", "Gemm", "Sigmoid"}));
}

TEST(EmTrkModel, GenerationIsDeterministicAndSeeded) {
  std::string a, b, c;
  ASSERT_TRUE(generated_emtrk().SerializeToString(&a));
  ASSERT_TRUE(models::generate_emtrk_onnx().SerializeToString(&b));
  ASSERT_TRUE(models::generate_emtrk_onnx({EmTrkGraphStyle::kKeras, 7}).SerializeToString(&c));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), b.size());
}

// Every initializer of `model` written as <dir>/<name with '/' as '_'>.npy (Keras layout).
void write_weights(const onnx::ModelProto& model, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (const auto& t : model.graph().initializer()) {
    std::string file = t.name();
    std::replace(file.begin(), file.end(), '/', '_');
    const std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    const auto* values = reinterpret_cast<const float*>(t.raw_data().data());
    models::write_npy(
        dir / (file + ".npy"),
        models::HostTensor::make<float>(t.name(), models::DataType::kFloat32, dims,
                                        std::span(values, t.raw_data().size() / sizeof(float))));
  }
}

class EmTrkWeightsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kaas_emtrk_weights_" + std::to_string(::getpid()));
    write_weights(generated_emtrk(EmTrkGraphStyle::kKeras, 5), dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  models::EmTrkGeneratorOptions trained(EmTrkGraphStyle style) const {
    models::EmTrkGeneratorOptions options;
    options.style = style;
    options.weights_dir = dir_;
    return options;
  }
  std::filesystem::path dir_;
};

TEST_F(EmTrkWeightsDir, KerasModelCarriesTheFilesUnchanged) {
  const auto& generated = generated_emtrk(EmTrkGraphStyle::kKeras, 5);
  const auto loaded = models::generate_emtrk_onnx(trained(EmTrkGraphStyle::kKeras));
  ASSERT_EQ(loaded.graph().initializer_size(), generated.graph().initializer_size());
  for (int i = 0; i < loaded.graph().initializer_size(); ++i) {
    EXPECT_EQ(loaded.graph().initializer(i).name(), generated.graph().initializer(i).name());
    EXPECT_EQ(loaded.graph().initializer(i).raw_data(), generated.graph().initializer(i).raw_data())
        << loaded.graph().initializer(i).name();
  }
}

// Weights kept as data in FP16 (data/emtrk-toy) load widened: each initializer holds exactly
// the FP16 values as FP32.
TEST_F(EmTrkWeightsDir, Fp16FilesLoadWidenedExactly) {
  const auto& generated = generated_emtrk(EmTrkGraphStyle::kKeras, 5);
  const auto half_dir = dir_ / "fp16";
  std::filesystem::create_directories(half_dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().extension() != ".npy") continue;
    const auto t = models::read_npy(entry.path(), "w");
    std::vector<fp16> halves;
    for (float v : t.values<float>()) halves.push_back(math::to_fp16(v));
    models::write_npy(
        half_dir / entry.path().filename(),
        models::HostTensor::make<fp16>("w", models::DataType::kFloat16, t.shape, halves));
  }
  auto options = trained(EmTrkGraphStyle::kKeras);
  options.weights_dir = half_dir;
  const auto loaded = models::generate_emtrk_onnx(options);
  ASSERT_EQ(loaded.graph().initializer_size(), generated.graph().initializer_size());
  for (int i = 0; i < loaded.graph().initializer_size(); ++i) {
    const auto& want = generated.graph().initializer(i).raw_data();
    const auto& got = loaded.graph().initializer(i).raw_data();
    ASSERT_EQ(got.size(), want.size()) << loaded.graph().initializer(i).name();
    const auto* w = reinterpret_cast<const float*>(want.data());
    const auto* g = reinterpret_cast<const float*>(got.data());
    for (size_t k = 0; k < want.size() / sizeof(float); ++k)
      ASSERT_EQ(g[k], math::to_float(math::to_fp16(w[k])))
          << loaded.graph().initializer(i).name() << " value " << k;
  }
}

// The PyTorch graph transposes the dense kernels and reorders the first one's rows to the NCHW
// flatten order: with one input channel NHWC and NCHW patches are the same numbers, so both
// graphs must give the same outputs.
TEST_F(EmTrkWeightsDir, PyTorchGraphOfTheSameWeightsGivesTheSameOutputs) {
  const int64_t batch = 3;
  const auto patches = random_floats(batch * 48 * 48, 17, -5.0f, 15.0f);
  models::OnnxModelOptions options;
  options.max_batch = batch;
  std::vector<std::vector<float>> outputs;
  for (auto style : {EmTrkGraphStyle::kKeras, EmTrkGraphStyle::kPyTorch}) {
    const auto model = models::make_onnx_model(models::generate_emtrk_onnx(trained(style)),
                                               find_backend("serial"), options);
    const std::vector<int64_t> shape = style == EmTrkGraphStyle::kKeras
                                           ? std::vector<int64_t>{batch, 48, 48, 1}
                                           : std::vector<int64_t>{batch, 1, 48, 48};
    const auto out = model->run(std::vector{
        models::HostTensor::make<float>("main_input", models::DataType::kFloat32, shape, patches)});
    ASSERT_EQ(out.size(), 2u);
    std::vector<float> both(out[0].values<float>().begin(), out[0].values<float>().end());
    both.insert(both.end(), out[1].values<float>().begin(), out[1].values<float>().end());
    outputs.push_back(both);
  }
  ASSERT_EQ(outputs[0].size(), size_t(batch * 4));
  for (size_t i = 0; i < outputs[0].size(); ++i)
    EXPECT_NEAR(outputs[0][i], outputs[1][i], 1e-5) << i;
}

TEST_F(EmTrkWeightsDir, AWrongOrMissingFileIsNamed) {
  models::write_npy(dir_ / "dense_1_kernel.npy",
                    models::HostTensor::make<float>("x", models::DataType::kFloat32, {32, 128},
                                                    std::vector<float>(32 * 128, 0.0f)));
  try {
    models::generate_emtrk_onnx(trained(EmTrkGraphStyle::kKeras));
    FAIL() << "a transposed dense_1 kernel was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dense_1_kernel.npy: expected FP32 or FP16 [128,32], "
                                         "found FP32 [32,128]"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(dir_ / "michel_netout_bias.npy");
  std::filesystem::remove(dir_ / "dense_1_kernel.npy");
  write_weights(generated_emtrk(EmTrkGraphStyle::kKeras, 5), dir_ / "copy");
  std::filesystem::copy_file(dir_ / "copy" / "dense_1_kernel.npy", dir_ / "dense_1_kernel.npy");
  try {
    models::generate_emtrk_onnx(trained(EmTrkGraphStyle::kKeras));
    FAIL() << "a missing file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("michel_netout_bias.npy"), std::string::npos) << e.what();
  }
}

// Both generated graphs imported and run end to end on kaas kernels, fused and unfused, against
// a double-precision forward pass of the same weights.
struct ForwardParam {
  const Backend* backend;
  EmTrkGraphStyle style;
  models::FusedPlan plan;
};

class EmTrkForwardTest : public ::testing::TestWithParam<ForwardParam> {};

const float* initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer()) {
    if (t.name() == name) return reinterpret_cast<const float*>(t.raw_data().data());
  }
  throw std::runtime_error("no initializer " + name);
}

TEST_P(EmTrkForwardTest, MatchesDoubleReferenceOnRandomPatches) {
  const auto [backend, style, plan] = GetParam();
  const bool keras = style == EmTrkGraphStyle::kKeras;
  const auto& proto = generated_emtrk(style);
  const int64_t batch = 5;
  const auto patches = random_floats(batch * 48 * 48, 99, -5.0f, 15.0f);
  models::OnnxModelOptions options;
  options.max_batch = 8;
  options.fused = plan;
  options.fused_batch_tile = 3;                    // several batch tiles and several row slabs
  options.fused_slab_bytes = 3 * 44 * 48 * 4 * 7;  // 7 conv rows per slab: 44 = 6 x 7 + 2
  const auto model = models::make_onnx_model(proto, *backend, options);
  const std::string plan_line = model->describe().back();
  EXPECT_EQ(plan_line.rfind(plan == models::FusedPlan::kOff ? "plan: unfused" : "plan: fused", 0),
            0u)
      << plan_line;
  const std::vector<int64_t> shape =
      keras ? std::vector<int64_t>{batch, 48, 48, 1} : std::vector<int64_t>{batch, 1, 48, 48};
  const auto outputs = model->run(std::vector{
      models::HostTensor::make<float>("main_input", models::DataType::kFloat32, shape, patches)});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].name, "em_trk_none_netout/Softmax");
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{batch, 3}));
  EXPECT_EQ(outputs[1].shape, (std::vector<int64_t>{batch, 1}));
  const auto softmax_out = outputs[0].values<float>(), michel_out = outputs[1].values<float>();
  const float *cw = initializer(proto, "conv2d/kernel"), *cb = initializer(proto, "conv2d/bias");
  const float *w1 = initializer(proto, "dense/kernel"), *b1 = initializer(proto, "dense/bias");
  const float *w2 = initializer(proto, "dense_1/kernel"), *b2 = initializer(proto, "dense_1/bias");
  const float *w3 = initializer(proto, "em_trk_none_netout/kernel"),
              *b3 = initializer(proto, "em_trk_none_netout/bias");
  const float *w4 = initializer(proto, "michel_netout/kernel"),
              *b4 = initializer(proto, "michel_netout/bias");
  for (int64_t n = 0; n < batch; ++n) {
    std::vector<double> conv(48 * 44 * 44);  // in the flatten order of the graph
    for (int c = 0; c < 48; ++c)
      for (int h = 0; h < 44; ++h)
        for (int w = 0; w < 44; ++w) {
          double sum = cb[c];
          for (int kh = 0; kh < 5; ++kh)
            for (int kw = 0; kw < 5; ++kw)
              sum += double(patches[n * 2304 + (h + kh) * 48 + w + kw]) * cw[c * 25 + kh * 5 + kw];
          conv[keras ? (h * 44 + w) * 48 + c : (c * 44 + h) * 44 + w] = std::max(sum, 0.0);
        }
    auto dense = [keras](const std::vector<double>& x, const float* w, const float* b, int in,
                         int out, bool relu) {
      std::vector<double> y(out);
      for (int o = 0; o < out; ++o) {
        double sum = b[o];
        for (int i = 0; i < in; ++i)  // Keras [in, out], PyTorch [out, in]
          sum += x[i] * (keras ? w[int64_t(i) * out + o] : w[int64_t(o) * in + i]);
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
      EXPECT_NEAR(softmax_out[n * 3 + k], std::exp(logits[k] - m) / z, 1e-5) << n << "," << k;
    EXPECT_NEAR(michel_out[n], 1.0 / (1.0 + std::exp(-michel[0])), 1e-5) << n;
  }
}

std::vector<ForwardParam> forward_params() {
  std::vector<ForwardParam> params;
  for (const Backend* b : backends_under_test()) {
    for (auto style : {EmTrkGraphStyle::kKeras, EmTrkGraphStyle::kPyTorch}) {
      for (auto plan : {models::FusedPlan::kRequire, models::FusedPlan::kOff})
        params.push_back({b, style, plan});
    }
  }
  return params;
}

std::string forward_name(const ::testing::TestParamInfo<ForwardParam>& info) {
  return std::string(info.param.backend->name()) +
         (info.param.style == EmTrkGraphStyle::kKeras ? "_keras" : "_pytorch") +
         (info.param.plan == models::FusedPlan::kOff ? "_unfused" : "_fused");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EmTrkForwardTest);
INSTANTIATE_TEST_SUITE_P(Backends, EmTrkForwardTest, ::testing::ValuesIn(forward_params()),
                         forward_name);

// The Keras graph as tf2onnx writes it (Flatten as Reshape to [-1, 92928], MatMul + Add) gets
// the Keras graph's fused plan, in fp32 and bf16, with the same bits.
TEST(EmTrkSpellings, Tf2onnxGetsTheKerasPlanAndBits) {
  const auto& keras = generated_emtrk(EmTrkGraphStyle::kKeras, 4);
  const auto& tf2onnx = generated_emtrk(EmTrkGraphStyle::kTf2onnx, 4);
  int reshapes = 0, matmuls = 0;
  for (const auto& node : tf2onnx.graph().node()) {
    reshapes += node.op_type() == "Reshape";
    matmuls += node.op_type() == "MatMul";
    EXPECT_NE(node.op_type(), "Flatten");
    EXPECT_NE(node.op_type(), "Gemm");
  }
  EXPECT_EQ(reshapes, 1);
  EXPECT_EQ(matmuls, 4);
  const int64_t batch = 3;
  const auto patches = random_floats(batch * 48 * 48, 97, -5.0f, 15.0f);
  const std::vector<models::HostTensor> inputs{models::HostTensor::make<float>(
      "main_input", models::DataType::kFloat32, {batch, 48, 48, 1}, patches)};
  for (auto precision : {models::Precision::kFp32, models::Precision::kBf16}) {
    SCOPED_TRACE(std::string(models::to_string(precision)));
    models::OnnxModelOptions options;
    options.max_batch = batch;
    options.fused = models::FusedPlan::kRequire;
    options.precision = precision;
    options.planner = planner::Mode::kFixed;
    const auto a = models::make_onnx_model(keras, find_backend("serial"), options);
    const auto b = models::make_onnx_model(tf2onnx, find_backend("serial"), options);
    const auto plan_a = a->describe(), plan_b = b->describe();
    std::string summary_b = plan_b.back();  // the same plan, named after the MatMul nodes
    for (size_t at; (at = summary_b.find("/MatMul")) != std::string::npos;) summary_b.erase(at, 7);
    EXPECT_EQ(plan_a.back(), summary_b);
    EXPECT_NE(std::find(plan_b.begin(), plan_b.end(),
                        "Reshape flatten/Reshape to [-1,92928] is Flatten(axis=1): rewritten"),
              plan_b.end());
    const auto out_a = a->run(inputs), out_b = b->run(inputs);
    ASSERT_EQ(out_a.size(), out_b.size());
    for (size_t o = 0; o < out_a.size(); ++o) EXPECT_EQ(out_a[o].bytes, out_b[o].bytes) << o;
  }
}

// Outside the fused plan (here: switched off) bf16 and fp16 run per op: the conv and the first
// dense layer on 16-bit weights and inputs, the small layers fp32, within the fused plan's
// accuracy of the fp32 outputs.
TEST(EmTrkPrecision, UnfusedGraphsRunBf16AndFp16PerOp) {
  const auto& keras = generated_emtrk(EmTrkGraphStyle::kKeras, 4);
  const int64_t batch = 5;
  const auto patches = random_floats(batch * 48 * 48, 98, -5.0f, 15.0f);
  const std::vector<models::HostTensor> inputs{models::HostTensor::make<float>(
      "main_input", models::DataType::kFloat32, {batch, 48, 48, 1}, patches)};
  models::OnnxModelOptions options;
  options.max_batch = batch;
  options.fused = models::FusedPlan::kOff;
  options.planner = planner::Mode::kFixed;
  const auto fp32 = models::make_onnx_model(keras, find_backend("serial"), options)->run(inputs);
  for (auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
    const std::string name(models::to_string(precision));
    SCOPED_TRACE(name);
    options.precision = precision;
    const auto model = models::make_onnx_model(keras, find_backend("serial"), options);
    const auto plan = model->describe();
    int conv_lines = 0, gemm_lines = 0;
    for (const std::string& line : plan) {
      if (!line.starts_with("precision " + name + ": ")) continue;
      conv_lines += line.find("(Conv) " + name) != std::string::npos;
      gemm_lines += line.find("(Gemm) " + name) != std::string::npos;
    }
    EXPECT_EQ(conv_lines, 1);
    EXPECT_EQ(gemm_lines, 1) << "only the 92928 x 128 layer is heavy";
    EXPECT_EQ(plan.back(), "plan: unfused (fused plan disabled)");
    const auto reduced = model->run(inputs);
    ASSERT_EQ(reduced.size(), fp32.size());
    double worst = 0;
    bool differs = false;
    for (size_t o = 0; o < fp32.size(); ++o) {
      const auto a = fp32[o].values<float>(), b = reduced[o].values<float>();
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, double(std::fabs(a[i] - b[i])));
        differs = differs || a[i] != b[i];
      }
    }
    EXPECT_LT(worst, 0.02);
    EXPECT_TRUE(differs) << "the 16-bit layers must really have run";
  }
}

// A Reshape that is not a flatten stays a Reshape (and the fused plan does not apply).
TEST(EmTrkSpellings, AReshapeToAnotherShapeIsNotFlatten) {
  onnx::ModelProto proto = generated_emtrk(EmTrkGraphStyle::kTf2onnx, 4);
  for (auto& init : *proto.mutable_graph()->mutable_initializer()) {
    if (init.name() != "flatten/Const:0") continue;
    init.set_int64_data(0, -1);
    init.set_int64_data(1, 92928 / 2);  // [-1, 46464]: two rows per patch, then MatMul fails
  }
  try {
    models::OnnxModelOptions options;
    options.max_batch = 2;
    models::make_onnx_model(proto, find_backend("serial"), options);
    ADD_FAILURE() << "a [-1, 46464] reshape feeding a 92928-row MatMul was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

// The sparse execution chosen patch by patch (SparsePlan::kAuto with the planner measuring): in a
// batch of empty and charged patches the empty ones run sparse and the charged ones what the
// load-time timings predict faster; every patch's scores are the dense plan's within 1e-5 and
// the same bits as when it runs alone or in another batch. The plan log gives the timings.
TEST(EmTrkPlanner, TheSparseChoiceIsMadePatchByPatch) {
  // It reads the plan log of a fresh measurement: no cache whatever the caller's environment
  // (ctest sets KAAS_PLANNER_CACHE=off, a run by hand may not).
  const ScopedEnv no_cache("KAAS_PLANNER_CACHE", "off");
  const Backend& serial = find_backend("serial");
  const auto& proto = generated_emtrk(EmTrkGraphStyle::kKeras, 5);
  const int64_t batch = 4, values = 48 * 48;
  models::OnnxModelOptions options;
  options.max_batch = batch;
  options.planner = planner::Mode::kMeasure;
  options.sparse = models::SparsePlan::kAuto;
  const auto model = models::make_onnx_device_model(proto, serial, options);
  options.sparse = models::SparsePlan::kDense;
  const auto dense = models::make_onnx_model(proto, serial, options);
  const models::SparseNetwork* net = model->sparse_network();
  ASSERT_NE(net, nullptr);
  EXPECT_GT(net->dense_row_s, 0);
  EXPECT_GT(net->sparse_full_row_s, net->sparse_empty_row_s);
  const auto plan = model->describe();
  EXPECT_TRUE(std::any_of(plan.begin(), plan.end(), [](const std::string& line) {
    return line.rfind("sparse planner: 64 rows in batches of 4: dense ", 0) == 0;
  }));
  // Patches 0 and 2 empty but for one charged pixel, 1 and 3 charged everywhere.
  std::vector<float> x = random_floats(batch * values, 77, 0.5f, 15.0f);
  for (int64_t p : {0, 2}) {
    std::fill_n(x.begin() + p * values, values, 0.0f);
    x[size_t(p * values + 24 * 48 + 24)] = 3.0f;
  }
  auto tensor = [](std::vector<float> v, int64_t n) {
    return std::vector<models::HostTensor>{models::HostTensor::make<float>(
        "main_input", models::DataType::kFloat32, {n, 48, 48, 1}, v)};
  };
  const auto got = model->run(tensor(x, batch));
  const int64_t sparse_rows = model->last_run().sparse_rows;
  EXPECT_EQ(sparse_rows, net->sparse_pays(1.0) ? 4 : 2);
  const auto want = dense->run(tensor(x, batch));
  for (size_t o = 0; o < want.size(); ++o) {
    const auto a = got[o].values<float>(), b = want[o].values<float>();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << o << " " << i;
  }
  for (int64_t p = 0; p < batch; ++p) {
    const std::vector<float> one(x.begin() + p * values, x.begin() + (p + 1) * values);
    const auto alone = model->run(tensor(one, 1));
    for (size_t o = 0; o < got.size(); ++o) {
      const int64_t width = got[o].shape[1];
      for (int64_t j = 0; j < width; ++j)
        EXPECT_EQ(alone[o].values<float>()[size_t(j)],
                  got[o].values<float>()[size_t(p * width + j)])
            << "patch " << p << " output " << o;
    }
  }
}

// The openmp backend where this build has it and it runs here, else nullptr (the planner's
// batch split needs a team of threads).
const Backend* available_openmp() {
  for (const Backend* b : compiled_backends())
    if (b->id() == BackendId::kOpenmp && b->available()) return b;
  return nullptr;
}

// When the batch split is measured faster at the planning batch, the split follows the batch
// (the kernels split below the batch where the batch split was measured faster): a patch gets
// the same bits in a batch of 40 (over the 32 measured), of 8 and alone.
TEST(EmTrkPlanner, TheSplitFollowsTheBatchWithTheSameBits) {
  const Backend* found = available_openmp();
  if (found == nullptr) GTEST_SKIP() << "no openmp backend in this build";
  const OmpThreadsForTest omp(2);
  const auto& proto = generated_emtrk(EmTrkGraphStyle::kKeras, 5);
  models::OnnxModelOptions options;
  options.max_batch = 48;
  options.planner = planner::Mode::kMeasure;
  options.sparse = models::SparsePlan::kDense;
  planner::forget_process_decisions();
  const auto model = models::make_onnx_model(proto, *found, options);
  std::string line;
  for (const auto& l : model->describe())
    if (l.rfind("planner: ", 0) == 0) line = l;
  std::printf("[ planner  ] %s\n", line.c_str());
  if (line.find(": batch split,") != std::string::npos) {
    EXPECT_NE(line.find("; at batch 32: "), std::string::npos) << line;
    EXPECT_NE(line.find("(the batch split from batch "), std::string::npos) << line;
  } else {
    EXPECT_EQ(line.find("at batch 32"), std::string::npos) << line;
  }
  const int64_t n = 40;
  const auto patches = random_floats(n * 48 * 48, 97, -5.0f, 15.0f);
  auto run_rows = [&](int64_t first, int64_t rows) {
    const std::vector<models::HostTensor> inputs{models::HostTensor::make<float>(
        "main_input", models::DataType::kFloat32, {rows, 48, 48, 1},
        std::span(patches).subspan(size_t(first * 48 * 48), size_t(rows * 48 * 48)))};
    return model->run(inputs);
  };
  const auto whole = run_rows(0, n);
  for (int64_t rows : {int64_t(8), int64_t(1)}) {
    for (int64_t first = 0; first < n; first += rows) {
      const auto part = run_rows(first, rows);
      for (size_t o = 0; o < part.size(); ++o) {
        const size_t row_bytes = part[o].bytes.size() / size_t(rows);
        ASSERT_TRUE(std::equal(part[o].bytes.begin(), part[o].bytes.end(),
                               whole[o].bytes.begin() + ptrdiff_t(size_t(first) * row_bytes)))
            << "output " << o << ", rows " << first << " in batches of " << rows << ": " << line;
      }
    }
  }
}

// The batch split's smaller slab passes (each thread's share within fused_thread_slab_bytes, a
// planner candidate) give the bits of the fixed plan's larger passes, and the plan says so.
TEST(EmTrkPlanner, TheBatchSplitsSmallerSlabsGiveTheSameBits) {
  const Backend* found = available_openmp();
  if (found == nullptr) GTEST_SKIP() << "no openmp backend in this build";
  const OmpThreadsForTest omp(2);
  if (conv_dense_heads_batch_threads(Queue(*found)) < 2) GTEST_SKIP() << "one thread only";
  const auto& proto = generated_emtrk(EmTrkGraphStyle::kKeras, 5);
  const int64_t batch = 8, row_bytes = 44 * 48 * 4;
  const auto patches = random_floats(batch * 48 * 48, 96, -5.0f, 15.0f);
  const std::vector<models::HostTensor> inputs{models::HostTensor::make<float>(
      "main_input", models::DataType::kFloat32, {batch, 48, 48, 1}, patches)};
  const std::string gemm = gemm_avx512_available() ? "avx512"
                           : gemm_avx2_available() ? "avx2"
                                                   : "auto";
  auto run_with = [&](const std::string& candidate, std::string& summary) {
    models::OnnxModelOptions options;
    options.max_batch = batch;
    options.sparse = models::SparsePlan::kDense;
    options.planner = planner::Mode::kFixed;
    options.fused_slab_bytes = batch * row_bytes * 4;         // 4 conv rows per pass
    options.fused_thread_slab_bytes = batch / 2 * row_bytes;  // a thread's share: 1 row
    options.fused_candidate = candidate;
    const auto model = models::make_onnx_model(proto, *found, options);
    summary = model->describe().back();
    return model->run(inputs);
  };
  std::string fixed_summary, large_summary, small_summary;
  const auto fixed = run_with("", fixed_summary);
  const auto large = run_with("batch split, " + gemm, large_summary);
  const auto small = run_with("batch split, " + gemm + ", slab 1 row", small_summary);
  EXPECT_NE(fixed_summary.find(": Conv+Relu 4 output rows x 8 patches"), std::string::npos)
      << fixed_summary;
  EXPECT_NE(large_summary.find(": Conv+Relu 4 output rows x 8 patches"), std::string::npos)
      << large_summary;
  EXPECT_NE(small_summary.find(": Conv+Relu 1 output rows x 8 patches"), std::string::npos)
      << small_summary;
  ASSERT_EQ(fixed.size(), 2u);
  for (size_t o = 0; o < fixed.size(); ++o) {
    EXPECT_EQ(fixed[o].bytes, large[o].bytes) << o;
    EXPECT_EQ(fixed[o].bytes, small[o].bytes) << o;
  }
}

// The planner's measured choice (thread split x first-layer GEMM) gives the fixed rule's bits in
// fp32, and the plan log names the choice and the candidates' times.
TEST(EmTrkPlanner, AMeasuredPlanGivesTheFixedPlansBits) {
  const Backend* found = available_openmp();
  if (found == nullptr) GTEST_SKIP() << "no openmp backend in this build";
  const Backend& openmp = *found;
  const auto& proto = generated_emtrk(EmTrkGraphStyle::kKeras, 5);
  const int64_t batch = 6;
  const auto patches = random_floats(batch * 48 * 48, 98, -5.0f, 15.0f);
  const std::vector<models::HostTensor> inputs{models::HostTensor::make<float>(
      "main_input", models::DataType::kFloat32, {batch, 48, 48, 1}, patches)};
  auto run_with = [&](planner::Mode mode, std::vector<std::string>& plan) {
    models::OnnxModelOptions options;
    options.max_batch = batch;
    options.planner = mode;
    options.sparse = models::SparsePlan::kDense;  // the dense candidates only (sparse: below)
    const auto model = models::make_onnx_model(proto, openmp, options);
    plan = model->describe();
    return model->run(inputs);
  };
  std::vector<std::string> fixed_plan, measured_plan;
  const auto fixed = run_with(planner::Mode::kFixed, fixed_plan);
  const auto measured = run_with(planner::Mode::kMeasure, measured_plan);
  ASSERT_EQ(fixed.size(), measured.size());
  // Every fused candidate gives the same bits; the unfused plan (also a candidate in fp32)
  // accumulates the first dense layer in other blocks: the same values to rounding.
  const bool unfused = measured_plan.back().rfind("plan: unfused", 0) == 0;
  for (size_t o = 0; o < fixed.size(); ++o) {
    if (!unfused) {
      EXPECT_EQ(fixed[o].bytes, measured[o].bytes) << o;
      continue;
    }
    const auto a = fixed[o].values<float>(), b = measured[o].values<float>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << o << " " << i;
  }
  auto planner_line = [](const std::vector<std::string>& plan) {
    for (const auto& line : plan)
      if (line.rfind("planner: ", 0) == 0) return line;
    return std::string();
  };
  EXPECT_NE(planner_line(fixed_plan).find("kernels split"), std::string::npos)
      << planner_line(fixed_plan);
  EXPECT_NE(planner_line(fixed_plan).find("(fixed rule)"), std::string::npos);
  // Several candidates: two GEMM widths, or a batch split over several threads.
  const bool several = (gemm_avx512_available() && gemm_avx2_available()) ||
                       conv_dense_heads_batch_threads(Queue(openmp)) > 1;
  if (several) {
    EXPECT_NE(planner_line(measured_plan).find("measured "), std::string::npos)
        << planner_line(measured_plan);
  }
  EXPECT_NE(planner_line(measured_plan).find("unfused"), std::string::npos)
      << "fp32 on a CPU backend: the unfused plan is a candidate: " << planner_line(measured_plan);
  EXPECT_TRUE(unfused || measured_plan.back().rfind("plan: fused", 0) == 0) << measured_plan.back();
  if (unfused) {  // the log lists what runs: the unfused ops, not the fused plan's layers
    const auto has = [&](const std::string& prefix) {
      return std::any_of(measured_plan.begin(), measured_plan.end(),
                         [&](const std::string& line) { return line.rfind(prefix, 0) == 0; });
    };
    EXPECT_TRUE(has("precision fp32: every op"));
    EXPECT_TRUE(has("Conv"));
    EXPECT_FALSE(has("precision fp32: dense (Gemm)"));
  }
  EXPECT_EQ(fixed_plan.back().rfind("plan: fused", 0), 0u) << fixed_plan.back();
}

}  // namespace
}  // namespace kaas::testing
