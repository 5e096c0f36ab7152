#include "kaas/models/michel_from_image.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string_view>

#include "kaas/backends/buffer.h"
#include "kaas/common/error.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/onnx_model.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/generated_emtrk.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

using models::DataType;
using models::HostTensor;

class MichelFromImageTest : public ::testing::TestWithParam<const Backend*> {};

struct Event {
  int64_t wires = 70, bins = 90;
  std::vector<float> image;
  std::vector<int32_t> wire;
  std::vector<float> tick;
};

Event make_event(int64_t hits) {
  Event e;
  e.image = random_floats(e.wires * e.bins, 17, -5.0f, 15.0f);
  const auto u = random_floats(hits * 2, 18, 0.0f, 1.0f);
  for (int64_t h = 0; h < hits; ++h) {
    e.wire.push_back(int32_t(u[h * 2] * float(e.wires - 1)));
    e.tick.push_back(u[h * 2 + 1] * float(e.bins * 6 - 1));
  }
  // Corners and the trailing partial window.
  e.wire.insert(e.wire.end(), {0, int32_t(e.wires - 1), 3});
  e.tick.insert(e.tick.end(), {0.0f, float(e.bins * 6 + 4), 200.5f});
  return e;
}

std::vector<HostTensor> inputs_of(const Event& e) {
  const int64_t hits = int64_t(e.wire.size());
  return {HostTensor::make<float>("image", DataType::kFloat32, {e.wires, e.bins}, e.image),
          HostTensor::make<int32_t>("hit_wire", DataType::kInt32, {hits}, e.wire),
          HostTensor::make<float>("hit_tick", DataType::kFloat32, {hits}, e.tick)};
}

// Per-hit scores equal the CNN run on the patches extract_patches makes for the same hits: bit for
// bit on the CPU backends and gpu_emu (the chunk size changes the fused plan's slab partition,
// which changes no bits: docs/reproducibility.md); to 1e-5 on the GPUs, which the contract does
// not cover.
TEST_P(MichelFromImageTest, ChainsPatchExtractionAndTheCnn) {
  const Backend& backend = *GetParam();
  const Event e = make_event(17);
  const int64_t hits = int64_t(e.wire.size());
  const auto cnn = generated_emtrk();
  models::MichelFromImageOptions options;
  options.hits_per_chunk = 7;  // several chunks and a partial last one
  const auto model = models::make_michel_from_image(cnn, backend, options);
  const auto out = model->run(inputs_of(e));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].shape, (std::vector<int64_t>{hits, 4}));
  ASSERT_EQ(out[1].shape, (std::vector<int64_t>{hits}));

  Queue queue(backend);
  const auto image = to_device(queue, e.image);
  const auto wire = to_device(queue, e.wire);
  const auto tick = to_device(queue, e.tick);
  auto patches = make_device_buffer<float>(queue, size_t(hits * 48 * 48));
  auto fiducial = make_device_buffer<uint8_t>(queue, size_t(hits));
  extract_patches(queue, make_view<2>(static_cast<const float*>(image.data()), {e.wires, e.bins}),
                  e.bins * 6 + 5, wire.view(), tick.view(),
                  make_view<3>(patches.data(), {hits, 48, 48}), fiducial.view());
  const auto host_patches = to_host(queue, patches);
  const auto host_fiducial = to_host(queue, fiducial);
  models::OnnxModelOptions cnn_options;
  cnn_options.max_batch = hits;
  const auto reference =
      models::make_onnx_model(cnn, backend, cnn_options)
          ->run(std::vector{HostTensor::make<float>("main_input", DataType::kFloat32,
                                                    {hits, 48, 48, 1}, host_patches)});
  const auto scores = out[0].values<float>();
  const std::string_view name = backend.name();
  const double tolerance = name == "cuda" || name == "hip" ? 1e-5 : 0.0;
  for (int64_t h = 0; h < hits; ++h) {
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(scores[h * 4 + k], reference[0].values<float>()[h * 3 + k], tolerance) << h;
    EXPECT_NEAR(scores[h * 4 + 3], reference[1].values<float>()[h], tolerance) << h;
    EXPECT_EQ(out[1].values<uint8_t>()[h], host_fiducial[h]) << h;
    const float sum = scores[h * 4] + scores[h * 4 + 1] + scores[h * 4 + 2];
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
  EXPECT_EQ(out[1].values<uint8_t>()[hits - 3], 0) << "corner hit is not fiducial";
}

// precision bf16 runs the CNN's conv and first dense layer in bf16: within the accuracy bound of
// the fp32 model, not equal to it, and named in the plan.
TEST_P(MichelFromImageTest, PrecisionRunsTheCnnInBf16) {
  const Backend& backend = *GetParam();
  const Event e = make_event(9);
  const auto cnn = generated_emtrk();
  models::MichelFromImageOptions options;
  const auto fp32 = models::make_michel_from_image(cnn, backend, options)->run(inputs_of(e));
  options.precision = models::Precision::kBf16;
  const auto model = models::make_michel_from_image(cnn, backend, options);
  const auto bf16 = model->run(inputs_of(e));
  const auto a = fp32[0].values<float>(), b = bf16[0].values<float>();
  ASSERT_EQ(a.size(), b.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 0.02) << i;
    differs = differs || a[i] != b[i];
  }
  EXPECT_TRUE(differs) << "the bf16 CNN gave the fp32 bits";
  const auto plan = model->describe();
  EXPECT_TRUE(std::any_of(plan.begin(), plan.end(), [](const std::string& line) {
    return line.find("precision bf16: dense (Gemm) bf16") != std::string::npos;
  }));
}

// A zero-suppressed plane (charge on a few tracks and in one noisy region, exact zeros elsewhere,
// a band along the first wire): the image-level sparse plan gives every hit the dense plan's
// scores within 1e-5 and the same class, and the same fiducial flags; the plane edges and the
// trailing partial window included. A hit out of the image is rejected by both plans alike.
TEST_P(MichelFromImageTest, TheImageLevelSparsePlanGivesTheDensePlansScores) {
  const Backend& backend = *GetParam();
  Event e = make_event(14);
  std::vector<float> zero_suppressed(e.image.size(), 0.0f);
  for (int64_t w = 0; w < e.wires; ++w) {
    for (int64_t b : {w + 5, 2 * w % e.bins, e.bins - 1 - w % 30})
      if (b >= 0 && b < e.bins) zero_suppressed[size_t(w * e.bins + b)] = 3.0f + float(w % 7);
    if (w >= 30 && w < 40)
      for (int64_t b = 50; b < 65; ++b)
        zero_suppressed[size_t(w * e.bins + b)] = e.image[size_t(w * e.bins + b)];
  }
  for (int64_t b = 0; b < e.bins; ++b) zero_suppressed[size_t(b)] = 1.5f;  // the first wire
  e.image = zero_suppressed;
  const auto cnn = generated_emtrk();
  models::MichelFromImageOptions options;
  options.hits_per_chunk = 5;
  options.sparse = models::SparsePlan::kDense;
  const auto dense = models::make_michel_from_image(cnn, backend, options)->run(inputs_of(e));
  options.sparse = models::SparsePlan::kSparse;
  options.sparse_delta_bytes = 1;  // the smallest buffer: one band of conv rows per group
  const auto model = models::make_michel_from_image(cnn, backend, options);
  const auto sparse = model->run(inputs_of(e));
  const auto ran = models::michel_from_image_last_run(*model);
  ASSERT_TRUE(ran.has_value());
  EXPECT_TRUE(ran->sparse);
  EXPECT_GT(ran->active, 0.0);
  EXPECT_LT(ran->active, 0.5);
  EXPECT_GT(ran->groups, 1);
  const int64_t hits = int64_t(e.wire.size());
  const auto a = dense[0].values<float>(), b = sparse[0].values<float>();
  for (int64_t h = 0; h < hits; ++h) {
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(b[h * 4 + k], a[h * 4 + k], 1e-5) << h << "," << k;
    const auto argmax = [h](std::span<const float> s) {
      return std::max_element(s.begin() + h * 4, s.begin() + h * 4 + 3) - (s.begin() + h * 4);
    };
    EXPECT_EQ(argmax(b), argmax(a)) << "hit " << h;
    EXPECT_EQ(sparse[1].values<uint8_t>()[h], dense[1].values<uint8_t>()[h]) << h;
  }
  e.wire[2] = -1;
  EXPECT_THROW(model->run(inputs_of(e)), Error);
}

TEST_P(MichelFromImageTest, BadHitsAndNetworksAreClearErrors) {
  const Backend& backend = *GetParam();
  const auto model = models::make_michel_from_image(generated_emtrk(), backend);
  Event e = make_event(2);
  e.wire[1] = int32_t(e.wires);  // one past the last wire
  try {
    model->run(inputs_of(e));
    ADD_FAILURE() << "a hit outside the image was accepted";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(err.what()).find("wire"), std::string::npos) << err.what();
  }
  Event ok = make_event(2);
  auto in = inputs_of(ok);
  in[2] = HostTensor::make<float>("hit_tick", DataType::kFloat32, {1}, std::vector<float>{1.0f});
  try {
    model->run(in);
    ADD_FAILURE() << "hit_tick shorter than hit_wire was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("hit_tick length"), std::string::npos) << err.what();
  }
  EXPECT_EQ(model->run(inputs_of(ok))[0].shape[0], int64_t(ok.wire.size())) << "still serving";
  models::MichelFromImageOptions small;
  small.patch.patch_wires = small.patch.patch_bins = 32;  // the network takes 48 x 48
  try {
    models::make_michel_from_image(generated_emtrk(), backend, small);
    ADD_FAILURE() << "a CNN of the wrong input size was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("input shape"), std::string::npos) << err.what();
  }
}

KAAS_INSTANTIATE_FOR_BACKENDS(MichelFromImageTest);

}  // namespace
}  // namespace kaas::testing
