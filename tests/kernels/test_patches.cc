#include "kaas/kernels/patches.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cases/patches_cases.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class PatchesTest : public ::testing::TestWithParam<const Backend*> {};

using cases::host_downsample;

struct Extracted {
  std::vector<float> down, patches;
  std::vector<uint8_t> fiducial;
};

Extracted run(const Queue& queue, const std::vector<float>& image, int64_t wires, int64_t ticks,
              const std::vector<int32_t>& wire, const std::vector<float>& time,
              const PatchParams& p) {
  const int64_t bins = downsampled_bins(ticks, p), hits = int64_t(wire.size());
  GuardedArray<float> dimage(queue, image), ddown(queue, wires * bins);
  GuardedArray<int32_t> dwire(queue, wire);
  GuardedArray<float> dtime(queue, time), dpatches(queue, hits * p.patch_wires * p.patch_bins);
  GuardedArray<uint8_t> dfid(queue, hits);
  downsample_image(queue,
                   make_view<2>(static_cast<const float*>(dimage.view().data), {wires, ticks}),
                   make_view<2>(ddown.view().data, {wires, bins}), p);
  extract_patches(
      queue, make_view<2>(static_cast<const float*>(ddown.view().data), {wires, bins}), ticks,
      dwire.const_view(), dtime.const_view(),
      make_view<3>(dpatches.view().data, {hits, int64_t(p.patch_wires), int64_t(p.patch_bins)}),
      dfid.view(), p);
  return {ddown.read(), dpatches.read(), dfid.read()};
}

TEST_P(PatchesTest, DownsamplingUsesWholeWindowsScalesAndClamps) {
  Queue queue(*GetParam());
  const int64_t wires = 3, ticks = 40;  // 6 bins of 6 ticks; ticks 36..39 are the remainder
  std::vector<float> image(wires * ticks);
  for (int64_t w = 0; w < wires; ++w)
    for (int64_t t = 0; t < ticks; ++t)
      image[w * ticks + t] = float((t % 6) * 2 + w);  // mean 5 + w
  for (int64_t w = 0; w < wires; ++w)
    for (int64_t t = 36; t < 40; ++t) image[w * ticks + t] = 1e6f;  // must not leak into any bin
  image[1 * ticks + 12] = -1e4f;  // bin 2 of wire 1 clamps at -50 -> -5
  image[2 * ticks + 30] = 1e4f;   // bin 5 of wire 2 clamps at 150 -> 15
  const auto result = run(queue, image, wires, ticks, {}, {}, PatchParams{});
  ASSERT_EQ(result.down.size(), size_t(wires * 6));
  for (int64_t w = 0; w < wires; ++w) {
    for (int64_t b = 0; b < 6; ++b) {
      if ((w == 1 && b == 2) || (w == 2 && b == 5)) continue;
      EXPECT_FLOAT_EQ(result.down[w * 6 + b], 0.5f + 0.1f * float(w)) << w << "," << b;
    }
  }
  EXPECT_EQ(result.down[1 * 6 + 2], -5.0f);
  EXPECT_EQ(result.down[2 * 6 + 5], 15.0f);
  EXPECT_EQ(patch_zero_level(PatchParams{}), 0.0f);
}

TEST_P(PatchesTest, CornerPatchesAreFilledWithTheZeroLevel) {
  Queue queue(*GetParam());
  PatchParams p;
  p.patch_wires = 4, p.patch_bins = 4, p.adc_min = -1000, p.adc_max = 1000, p.out_min = -1000,
  p.out_max = 1000;                     // identity scaling
  const int64_t wires = 5, ticks = 30;  // 5 bins
  std::vector<float> image(wires * ticks);
  for (int64_t w = 0; w < wires; ++w)
    for (int64_t t = 0; t < ticks; ++t)
      image[w * ticks + t] = float(10 * w + t / 6 + 1);  // bin value 10w+b+1
  // hits: bottom-left corner, top-right corner (time in the last bin, tick remainder 5)
  const auto r = run(queue, image, wires, ticks, {0, 4}, {0.0f, 29.5f}, p);
  const float z = patch_zero_level(p);
  const float first[16] = {z, z, z, z, z, z, z,  z,
                           z, z, 1, 2, z, z, 11, 12};  // wires -2..1, bins -2..1
  const float last[16] = {23, 24, 25, z, 33, 34, 35, z,
                          43, 44, 45, z, z,  z,  z,  z};  // wires 2..5, bins 2..5
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(r.patches[c], first[c]) << "first patch cell " << c;
    EXPECT_EQ(r.patches[16 + c], last[c]) << "last patch cell " << c;
  }
}

TEST_P(PatchesTest, FiducialFlagsUseAnEighthOfThePatch) {
  Queue queue(*GetParam());
  const int64_t wires = 100, ticks = 600;  // 100 bins; margins 6 wires, 6 bins
  const std::vector<float> image(wires * ticks, 1.0f);
  const std::vector<int32_t> wire = {5, 6, 93, 94, 50, 50, 50, 50};
  const std::vector<float> time = {300,   300,   300,    300,
                                   35.9f, 36.0f, 563.9f, 564.0f};  // bins 5, 6, 93, 94
  const auto r = run(queue, image, wires, ticks, wire, time, PatchParams{});
  EXPECT_EQ(r.fiducial, (std::vector<uint8_t>{0, 1, 1, 0, 0, 1, 1, 0}));
}

TEST_P(PatchesTest, RandomHitsMatchThePlainHostReferenceBitForBit) {
  Queue queue(*GetParam());
  const int64_t wires = 200, ticks = 3003;  // 500 bins, 3 remainder ticks
  const auto image = random_floats(wires * ticks, 17, -100.0f, 300.0f);
  std::mt19937 rng(5);
  std::vector<int32_t> wire(700);
  std::vector<float> time(700);
  for (size_t h = 0; h < wire.size(); ++h) {
    wire[h] = int32_t(rng() % wires);
    time[h] = float(rng() % (ticks * 10)) / 10.0f;
  }
  wire[0] = 0, time[0] = 0.0f, wire[1] = int32_t(wires - 1), time[1] = float(ticks) - 0.5f;
  wire[3] = wire[2], time[3] = time[2];  // a repeated (wire, bin): gets its real patch here
  const PatchParams p;
  const auto r = run(queue, image, wires, ticks, wire, time, p);
  const auto down = host_downsample(image, wires, ticks, p);
  ASSERT_EQ(0, std::memcmp(down.data(), r.down.data(), down.size() * sizeof(float)));
  const int64_t bins = ticks / 6;
  int64_t wrong = 0;
  for (size_t h = 0; h < wire.size(); ++h) {
    const int64_t b0 = int64_t(time[h]) / 6 - 24, w0 = wire[h] - 24;
    for (int64_t i = 0; i < 48; ++i) {
      for (int64_t j = 0; j < 48; ++j) {
        const int64_t w = w0 + i, b = b0 + j;
        const float expected =
            w >= 0 && w < wires && b >= 0 && b < bins ? down[w * bins + b] : 0.0f;
        wrong += !same_bits(r.patches[(h * 48 + i) * 48 + j], expected);
      }
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(0, std::memcmp(r.patches.data() + 2 * 48 * 48, r.patches.data() + 3 * 48 * 48,
                           48 * 48 * sizeof(float)));
}

TEST_P(PatchesTest, EmptyHitListAndBadHits) {
  Queue queue(*GetParam());
  const int64_t wires = 20, ticks = 60;
  const std::vector<float> image(wires * ticks, 3.0f);
  EXPECT_TRUE(run(queue, image, wires, ticks, {}, {}, PatchParams{}).patches.empty());
  auto expect_error = [&](std::vector<int32_t> wire, std::vector<float> time,
                          const std::string& message) {
    try {
      run(queue, image, wires, ticks, wire, time, PatchParams{});
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(e.what(), message);
    }
  };
  expect_error({3, -1, 25}, {1, 2, 3},
               "extract_patches: hit 1 (wire, time): expected inside the image: wire in [0, 20), "
               "time in [0, 60), received (-1, 2)");
  expect_error({3, 4}, {1, 60},
               "extract_patches: hit 1 (wire, time): expected inside the image: wire in [0, 20), "
               "time in [0, 60), received (4, 60)");
  expect_error({3}, {NAN},
               "extract_patches: hit 0 (wire, time): expected inside the image: wire in [0, 20), "
               "time in [0, 60), received (3, nan)");
}

// Weighted geometric mean against a double reference, and the documented corner cases.
TEST_P(PatchesTest, ClusterAggregation) {
  Queue queue(*GetParam());
  const std::vector<float> scores = {
      0.7f, 0.2f, 0.1f, 0.05f,  // hit 0 (fiducial)
      0.5f, 0.4f, 0.1f, 0.9f,   // hit 1 (fiducial)
      1.0f, 0.0f, 0.0f, 0.0f,   // hit 2 (not fiducial): must not count where others do
      0.1f, 0.8f, 0.1f, 0.0f,   // hit 3 (not fiducial)
  };
  const std::vector<uint8_t> fiducial = {1, 1, 0, 0};
  // clusters: {0, 1, 2}, {2, 3} (all non-fiducial), {} (empty), {1}
  const std::vector<int64_t> splits = {0, 3, 5, 5, 6};
  const std::vector<int32_t> hits = {0, 1, 2, 2, 3, 1};
  GuardedArray<float> ds(queue, scores), dout(queue, 16);
  GuardedArray<uint8_t> df(queue, fiducial);
  GuardedArray<int64_t> dsplits(queue, splits);
  GuardedArray<int32_t> dhits(queue, hits);
  aggregate_clusters(queue, make_view<2>(static_cast<const float*>(ds.view().data), {4, 4}),
                     df.const_view(), dsplits.const_view(), dhits.const_view(),
                     make_view<2>(dout.view().data, {4, 4}));
  const auto out = dout.read();
  auto reference = [&](std::vector<int> members) {
    std::vector<double> mean(4, 0.0);
    double total = 0;
    for (int k = 0; k < 4; ++k) {
      double log_sum = 0;
      for (int h : members)
        log_sum += std::log(std::clamp(double(scores[h * 4 + k]), 1e-6, 1 - 1e-6));
      mean[k] = std::exp(log_sum / double(members.size()));
      total += mean[k];
    }
    for (auto& m : mean) m /= total;
    return mean;
  };
  const auto c0 = reference({0, 1}), c1 = reference({2, 3}), c3 = reference({1});
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(out[0 * 4 + k], c0[k], 2e-6) << k;
    EXPECT_NEAR(out[1 * 4 + k], c1[k], 2e-6) << k;  // all non-fiducial: equal weights, not NaN
    EXPECT_EQ(out[2 * 4 + k], 0.25f) << k;          // empty cluster
    EXPECT_NEAR(out[3 * 4 + k], c3[k], 2e-6) << k;
  }
  double sum = 0;
  for (int k = 0; k < 4; ++k) sum += out[k];
  EXPECT_NEAR(sum, 1.0, 1e-6);

  const std::vector<int64_t> bad_splits = {0, 3, 5, 5, 7};
  GuardedArray<int64_t> dbad(queue, bad_splits);
  try {
    aggregate_clusters(queue, make_view<2>(static_cast<const float*>(ds.view().data), {4, 4}),
                       df.const_view(), dbad.const_view(), dhits.const_view(),
                       make_view<2>(dout.view().data, {4, 4}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "aggregate_clusters: cluster_splits[last]: expected 6 (cluster_hits extent), received 7");
  }
  const std::vector<int32_t> bad_hits = {0, 1, 2, 2, 3, 9};
  GuardedArray<int32_t> dbadhits(queue, bad_hits);
  try {
    aggregate_clusters(queue, make_view<2>(static_cast<const float*>(ds.view().data), {4, 4}),
                       df.const_view(), dsplits.const_view(), dbadhits.const_view(),
                       make_view<2>(dout.view().data, {4, 4}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "aggregate_clusters: cluster_hits[5]: expected a hit index in [0, 4), received 9");
  }
}

// Every case of cases/patches_cases.cc against its host reference.
TEST_P(PatchesTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "patches");
}

KAAS_INSTANTIATE_FOR_BACKENDS(PatchesTest);

}  // namespace
}  // namespace kaas::testing
