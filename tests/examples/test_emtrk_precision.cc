// EmTrkMichelId in bf16 / fp16 against the same model in fp32, on realistic inputs: the patches
// of every hit of kaas-toy-event events through the patch extraction kaas-reco uses (tracks,
// showers, Michel electrons and noise at ADC scale), not random noise. Measures top-class
// agreement of the track / EM / none softmax and the max and 99th-percentile |score difference|
// over all four scores, per precision, and checks them against the thresholds:
// agreement >= 99.5 %, max |difference| <= 0.02.
//
// What it costs and why it stays honest: the 16-bit properties are the kernels' arithmetic, and
// serial and openmp give the same bits (CpuBackendsGiveTheSameBits), so they are checked once,
// on one CPU backend (openmp, serial where openmp is not built), and on gpu_emu's portable
// kernels. They are checked on the worst cases of a large realistic sample rather than on the
// whole sample: fp32 runs on all of it (the fast path on every CPU), and bf16 / fp16 run on the
// patches whose scores are most sensitive to a change of the logits (a score p moves by about
// p (1 - p) times the change, so the patches with a score nearest 0.5 move most and are the only
// ones whose top class can flip).

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>

#include "examples/lartpc/reco.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/onnx_model.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/generated_emtrk.h"

namespace kaas::testing {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int64_t kSamplePatches = 1024;  // the sanitizers check memory, not accuracy
constexpr int64_t kWorstPatches = 64;
#else
constexpr int64_t kSamplePatches = 20480;  // the realistic sample (fp32 on all of it)
constexpr int64_t kWorstPatches = 1024;    // its most sensitive patches (bf16 / fp16 on these)
#endif
constexpr int64_t kBatch = 256;

// The emulated GPU runs the portable kernels with a fiber switch per sync(), about 30 ms per
// patch and precision here: it checks the single-source kernels on the 48 most sensitive
// patches of the sample (16 under a sanitizer, which annotates every switch).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int64_t kEmulatorPatches = 16;
#else
constexpr int64_t kEmulatorPatches = 48;
#endif

int64_t sample_wanted() {
  const char* text = std::getenv("KAAS_PRECISION_PATCHES");
  if (text != nullptr) return std::max<int64_t>(1, std::atoll(text));
  return kSamplePatches;
}

// The CPU backend that checks the 16-bit properties for both (their bits are equal): openmp,
// serial where openmp does not run.
const Backend& accuracy_backend() {
  for (const Backend* b : compiled_backends())
    if (b->id() == BackendId::kOpenmp && b->available()) return *b;
  return find_backend("serial");
}

bool is_accuracy_backend(const Backend& backend) {
  return &backend == &accuracy_backend();
}

// The patches of every hit of as many toy events as it takes, [n, 48, 48] (the model's NHWC
// input with one channel).
const std::vector<float>& realistic_patches(int64_t wanted) {
  static std::vector<float> patches;
  static int64_t made = 0;
  if (made >= wanted) return patches;
  patches.clear();
  made = 0;
  const Backend& serial = find_backend("serial");
  Queue queue(serial);
  examples::ToyEventConfig config;
  config.wires = 480;  // about 12k hits per event: several events, several seeds
  config.ticks = 4000;
  for (uint64_t event = 0; made < wanted; ++event) {
    const examples::ToyEvent toy = examples::make_toy_event(config, event);
    const auto planes = examples::prepare_planes(queue, toy);
    const auto inputs = examples::prepare_patches(queue, planes);
    const int64_t n = std::min<int64_t>(int64_t(inputs.fiducial.size()), wanted - made);
    patches.insert(patches.end(), inputs.patches.begin(), inputs.patches.begin() + n * 48 * 48);
    made += n;
  }
  return patches;
}

struct Scores {
  std::vector<float> softmax, michel;  // [n, 3], [n]
};

Scores run_model(const Backend& backend, models::Precision precision,
                 const std::vector<float>& patches, int64_t n,
                 models::EmTrkGraphStyle style = models::EmTrkGraphStyle::kKeras,
                 models::FusedPlan fused = models::FusedPlan::kRequire,
                 const std::string& fused_candidate = "") {
  models::OnnxModelOptions options;
  options.fused_candidate = fused_candidate;
  options.name = "emtrk_" + std::string(to_string(precision));
  options.max_batch = kBatch;
  options.fused = fused;
  options.precision = precision;
  const auto model = models::make_onnx_model(generated_emtrk(style), backend, options);
  Scores scores;
  for (int64_t begin = 0; begin < n; begin += kBatch) {
    const int64_t rows = std::min(kBatch, n - begin);
    // The PyTorch graph takes NCHW [rows, 1, 48, 48]: the same values for one channel.
    const std::vector<int64_t> shape = style == models::EmTrkGraphStyle::kKeras
                                           ? std::vector<int64_t>{rows, 48, 48, 1}
                                           : std::vector<int64_t>{rows, 1, 48, 48};
    const auto input = models::HostTensor::make<float>(
        model->signature().inputs[0].name, models::DataType::kFloat32, shape,
        std::span<const float>(patches.data() + begin * 48 * 48, size_t(rows * 48 * 48)));
    const auto out = model->run(std::vector<models::HostTensor>{input});
    const auto s = out[0].values<float>(), m = out[1].values<float>();
    scores.softmax.insert(scores.softmax.end(), s.begin(), s.end());
    scores.michel.insert(scores.michel.end(), m.begin(), m.end());
  }
  return scores;
}

struct Agreement {
  double top_class = 0, max_diff = 0, p99_diff = 0;
};

Agreement compare(const Scores& reference, const Scores& reduced, int64_t n) {
  Agreement a;
  int64_t same = 0;
  std::vector<double> diffs;
  for (int64_t i = 0; i < n; ++i) {
    const float* r = &reference.softmax[size_t(i * 3)];
    const float* q = &reduced.softmax[size_t(i * 3)];
    same += std::max_element(r, r + 3) - r == std::max_element(q, q + 3) - q;
    for (int c = 0; c < 3; ++c) diffs.push_back(std::abs(double(r[c]) - double(q[c])));
    diffs.push_back(
        std::abs(double(reference.michel[size_t(i)]) - double(reduced.michel[size_t(i)])));
  }
  std::sort(diffs.begin(), diffs.end());
  a.top_class = double(same) / double(n);
  a.max_diff = diffs.back();
  a.p99_diff = diffs[size_t(0.99 * double(diffs.size() - 1))];
  return a;
}

// Patches [rows] of `patches` (rows of 48 x 48), in that order.
std::vector<float> select_patches(const std::vector<float>& patches,
                                  const std::vector<int64_t>& rows) {
  std::vector<float> out;
  out.reserve(rows.size() * 48 * 48);
  for (const int64_t r : rows)
    out.insert(out.end(), patches.begin() + r * 48 * 48, patches.begin() + (r + 1) * 48 * 48);
  return out;
}

Scores select_scores(const Scores& scores, const std::vector<int64_t>& rows) {
  Scores out;
  for (const int64_t r : rows) {
    out.softmax.insert(out.softmax.end(), scores.softmax.begin() + r * 3,
                       scores.softmax.begin() + (r + 1) * 3);
    out.michel.push_back(scores.michel[size_t(r)]);
  }
  return out;
}

// Softmax margin of a row: its top score less its second.
double top_two_margin(const Scores& scores, int64_t row) {
  std::array<float, 3> p{};
  std::copy_n(scores.softmax.begin() + row * 3, 3, p.begin());
  std::sort(p.begin(), p.end());
  return double(p[2]) - double(p[1]);
}

// The worst cases of a sample for reduced precision, from its fp32 scores: the half with the
// smallest softmax margins (the only rows whose top class can flip), a quarter with the Michel
// score nearest 0.5 (where the sigmoid moves most), and a quarter spread evenly over the rest
// (a control: the ordinary patches). margin_outside: the smallest margin outside the set.
struct WorstCases {
  std::vector<int64_t> rows;      // the worst set: margin half, Michel quarter, controls
  std::vector<int64_t> controls;  // its ordinary quarter
  double margin_outside = 1.0;
};

WorstCases worst_cases(const Scores& fp32, int64_t n, int64_t count) {
  count = std::min(count, n);
  std::vector<int64_t> by_margin(size_t(n), 0), by_michel;
  std::iota(by_margin.begin(), by_margin.end(), 0);
  std::vector<double> margin(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) margin[size_t(i)] = top_two_margin(fp32, i);
  std::stable_sort(by_margin.begin(), by_margin.end(),
                   [&](int64_t a, int64_t b) { return margin[size_t(a)] < margin[size_t(b)]; });
  std::vector<char> taken(size_t(n), 0);
  WorstCases worst;
  const auto take = [&](int64_t r) {
    if (taken[size_t(r)] || int64_t(worst.rows.size()) >= count) return;
    taken[size_t(r)] = 1;
    worst.rows.push_back(r);
  };
  for (int64_t i = 0; i < count / 2; ++i) take(by_margin[size_t(i)]);
  by_michel = by_margin;
  std::stable_sort(by_michel.begin(), by_michel.end(), [&](int64_t a, int64_t b) {
    return std::abs(fp32.michel[size_t(a)] - 0.5f) < std::abs(fp32.michel[size_t(b)] - 0.5f);
  });
  for (int64_t i = 0; i < n && int64_t(worst.rows.size()) < count * 3 / 4; ++i)
    take(by_michel[size_t(i)]);
  const int64_t rest = count - int64_t(worst.rows.size());
  const size_t sensitive = worst.rows.size();
  for (int64_t i = 0; rest > 0 && i < rest; ++i) take(i * n / rest);
  worst.controls.assign(worst.rows.begin() + int64_t(sensitive), worst.rows.end());
  for (int64_t i = 0; i < n && int64_t(worst.rows.size()) < count; ++i) take(by_margin[size_t(i)]);
  for (int64_t i = 0; i < n; ++i)
    if (!taken[size_t(i)]) worst.margin_outside = std::min(worst.margin_outside, margin[size_t(i)]);
  return worst;
}

// The realistic sample with its fp32 scores and its worst cases, computed once per process on
// the CPU backend that checks the 16-bit properties (openmp, serial where openmp does not run:
// the same bits, CpuBackendsGiveTheSameBits). Every instance selects its patches from it, the
// emulated GPU's and a GPU's too; the host backends' instances share one process
// (tests/CMakeLists.txt), so the 20,480-patch fp32 pass runs once.
struct Sample {
  int64_t n = 0;
  const std::vector<float>* patches = nullptr;
  Scores fp32;
  WorstCases worst;
};

const Sample& cpu_sample() {
  static Sample sample;
  if (sample.n > 0) return sample;
  sample.n = sample_wanted();
  sample.patches = &realistic_patches(sample.n);
  sample.fp32 = run_model(accuracy_backend(), models::Precision::kFp32, *sample.patches, sample.n);
  sample.worst = worst_cases(sample.fp32, sample.n, kWorstPatches);
  return sample;
}

// A smaller selection for the costlier checks: `count / 2` of the sample's most sensitive rows
// (spread over the margin and Michel parts of the worst set) followed by `count / 2` ordinary
// ones (its controls).
struct MixedRows {
  std::vector<int64_t> rows;
  int64_t ordinary = 0;  // the last `ordinary` rows are controls
};

MixedRows mixed_rows(int64_t count) {
  const Sample& sample = cpu_sample();
  const auto& worst = sample.worst;
  const int64_t sensitive = int64_t(worst.rows.size() - worst.controls.size());
  const int64_t half = std::min<int64_t>(count / 2, int64_t(worst.controls.size()));
  MixedRows mixed;
  for (int64_t i = 0; i < half; ++i) mixed.rows.push_back(worst.rows[size_t(i * sensitive / half)]);
  const int64_t controls = int64_t(worst.controls.size());
  for (int64_t i = 0; i < half; ++i)
    mixed.rows.push_back(worst.controls[size_t(i * controls / half)]);
  mixed.ordinary = half;
  return mixed;
}

// The whole worst set of a sample of `sample_n`: max |diff| <= 0.02 on it, at most 0.5 % of the
// sample's top classes flipped, and no row outside the set can have flipped (a flip moves the
// two top scores by the margin together, so it needs margin < 2 max |diff|).
void expect_sample_accuracy(const Agreement& a, int64_t n, const Sample& sample,
                            const std::string& what) {
  const int64_t flips = int64_t(std::lround((1.0 - a.top_class) * double(n)));
  EXPECT_GE(1.0 - double(flips) / double(sample.n), 0.995)
      << what << ": " << flips << " top-class flips among the " << n << " worst of " << sample.n
      << " patches";
  EXPECT_LE(a.max_diff, 0.02) << what;
  EXPECT_GT(a.max_diff, 0.0) << what << ": no difference at all: not reduced";
  EXPECT_LT(2.0 * a.max_diff, sample.worst.margin_outside)
      << what << ": rows outside the worst set could flip; take more rows";
}

// A mixed selection: max |diff| <= 0.02 on all its rows, top-class agreement >= 99.5 % on its
// ordinary rows (as on a random sample).
void expect_mixed_accuracy(const Scores& fp32, const Scores& reduced, const MixedRows& mixed,
                           const std::string& what) {
  const int64_t n = int64_t(mixed.rows.size());
  const Agreement all = compare(fp32, reduced, n);
  int64_t same = 0;
  for (int64_t i = n - mixed.ordinary; i < n; ++i) {
    const float* r = &fp32.softmax[size_t(i * 3)];
    const float* q = &reduced.softmax[size_t(i * 3)];
    same += std::max_element(r, r + 3) - r == std::max_element(q, q + 3) - q;
  }
  EXPECT_GE(double(same) / double(std::max<int64_t>(1, mixed.ordinary)), 0.995)
      << what << ": top-class agreement on " << mixed.ordinary << " ordinary patches";
  EXPECT_LE(all.max_diff, 0.02) << what << " (" << n << " patches, half the most sensitive)";
  EXPECT_GT(all.max_diff, 0.0) << what << ": no difference at all: not reduced";
}

class EmTrkPrecision : public ::testing::TestWithParam<const Backend*> {};

TEST_P(EmTrkPrecision, ReducedPrecisionAgreesWithFp32OnTheWorstPatches) {
  const Backend& backend = *GetParam();
  const bool emulator = backend.id() == BackendId::kGpuEmu;
  if (!emulator && !is_accuracy_backend(backend))
    GTEST_SKIP() << "checked on openmp, whose bits serial gives too (CpuBackendsGiveTheSameBits)";
  if (emulator) {
    const MixedRows mixed = mixed_rows(kEmulatorPatches);
    const Sample& sample = cpu_sample();
    const auto patches = select_patches(*sample.patches, mixed.rows);
    const int64_t n = int64_t(mixed.rows.size());
    const Scores fp32 = run_model(backend, models::Precision::kFp32, patches, n);
    for (const auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
      const Scores reduced = run_model(backend, precision, patches, n);
      const Agreement a = compare(fp32, reduced, n);
      std::printf(
          "[ accuracy ] backend %s precision %s, %lld patches (half the most sensitive): "
          "top-class agreement %.4f %%, max |diff| %.3g\n",
          std::string(backend.name()).c_str(), std::string(to_string(precision)).c_str(),
          (long long)n, 100.0 * a.top_class, a.max_diff);
      expect_mixed_accuracy(fp32, reduced, mixed, std::string(to_string(precision)));
    }
    return;
  }
  const Sample& sample = cpu_sample();
  for (const float v : sample.fp32.softmax) ASSERT_TRUE(std::isfinite(v));
  const auto& rows = sample.worst.rows;
  const int64_t k = int64_t(rows.size());
  const auto patches = select_patches(*sample.patches, rows);
  const Scores fp32 = select_scores(sample.fp32, rows);
  for (const auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
    const Scores reduced = run_model(backend, precision, patches, k);
    ASSERT_EQ(reduced.softmax.size(), fp32.softmax.size());
    const Agreement a = compare(fp32, reduced, k);
    const int64_t flips = int64_t(std::lround((1.0 - a.top_class) * double(k)));
    // Over the whole sample: the rows outside the worst set keep their class (checked below),
    // so the sample's agreement is 1 - flips / n.
    const double sample_agreement = 1.0 - double(flips) / double(sample.n);
    std::printf(
        "[ accuracy ] backend %s precision %s: %lld worst of %lld patches: %lld top-class flips "
        "(sample agreement %.4f %%), max |diff| %.3g, p99 |diff| %.3g; smallest margin outside "
        "%.3g\n",
        std::string(backend.name()).c_str(), std::string(to_string(precision)).c_str(),
        (long long)k, (long long)sample.n, (long long)flips, 100.0 * sample_agreement, a.max_diff,
        a.p99_diff, sample.worst.margin_outside);
    if (const char* report = std::getenv("KAAS_PRECISION_REPORT")) {
      std::ofstream(report, std::ios::app)
          << "{\"backend\": \"" << backend.name() << "\", \"precision\": \"" << to_string(precision)
          << "\", \"patches\": " << sample.n << ", \"worst_patches\": " << k
          << ", \"top_class_agreement\": " << sample_agreement
          << ", \"max_abs_diff\": " << a.max_diff << ", \"p99_abs_diff\": " << a.p99_diff << "}\n";
    }
    expect_sample_accuracy(a, k, sample, std::string(to_string(precision)));
  }
}

// serial and openmp run the same kernels; openmp only spreads the groups over threads. The fused
// plans give the same bits on both, which is why their accuracy is checked on one of them. Run
// in the openmp instance (it needs both). The unfused plan does not yet (on AVX2 its dense
// layers go through OpenBLAS, whose summation follows the threads): its accuracy is checked on
// every backend.
TEST_P(EmTrkPrecision, CpuBackendsGiveTheSameBits) {
  const Backend& backend = *GetParam();
  if (backend.id() != BackendId::kOpenmp) GTEST_SKIP() << "compared in the openmp run";
  const Backend& serial = find_backend("serial");
  const auto rows = mixed_rows(64).rows;
  const Sample& sample = cpu_sample();
  const auto patches = select_patches(*sample.patches, rows);
  const int64_t n = int64_t(rows.size());
  const auto keras = models::EmTrkGraphStyle::kKeras;
  const auto same_bits = [&](const Scores& a, const Scores& b, const std::string& what) {
    ASSERT_EQ(a.softmax.size(), b.softmax.size()) << what;
    for (size_t i = 0; i < a.softmax.size(); ++i)
      ASSERT_EQ(a.softmax[i], b.softmax[i]) << what << ": softmax value " << i;
    for (size_t i = 0; i < a.michel.size(); ++i)
      ASSERT_EQ(a.michel[i], b.michel[i]) << what << ": michel value " << i;
  };
  for (const auto precision :
       {models::Precision::kFp32, models::Precision::kBf16, models::Precision::kFp16}) {
    const std::string name(to_string(precision));
    same_bits(run_model(serial, precision, patches, n, keras),
              run_model(backend, precision, patches, n, keras), name + " fused");
  }
  const auto pytorch = models::EmTrkGraphStyle::kPyTorch;
  same_bits(run_model(serial, models::Precision::kBf16, patches, n, pytorch),
            run_model(backend, models::Precision::kBf16, patches, n, pytorch), "PyTorch bf16");
}

// The PyTorch graph: NCHW input (run as NHWC, one channel) and transB dense weights (stored
// transposed by the importer) through the bf16 plan.
TEST_P(EmTrkPrecision, PyTorchGraphInBf16AgreesWithFp32) {
  const Backend& backend = *GetParam();
  const bool emulator = backend.id() == BackendId::kGpuEmu;
  if (!emulator && !is_accuracy_backend(backend))
    GTEST_SKIP() << "checked on openmp, whose bits serial gives too (CpuBackendsGiveTheSameBits)";
  const MixedRows mixed = mixed_rows(emulator ? 16 : 256);
  const int64_t n = int64_t(mixed.rows.size());
  const auto patches = select_patches(*cpu_sample().patches, mixed.rows);
  const auto style = models::EmTrkGraphStyle::kPyTorch;
  const Scores fp32 = run_model(backend, models::Precision::kFp32, patches, n, style);
  const Scores bf16 = run_model(backend, models::Precision::kBf16, patches, n, style);
  expect_mixed_accuracy(fp32, bf16, mixed, "PyTorch graph bf16");
}

TEST_P(EmTrkPrecision, APatchScoresTheSameWhateverItIsBatchedWith) {
  const Backend& backend = *GetParam();
  const int64_t n = backend.id() == BackendId::kGpuEmu ? 24 : 64;
  const auto& patches = realistic_patches(n);
  for (const auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
    const Scores batched = run_model(backend, precision, patches, n);
    for (int64_t i : {int64_t(0), n / 2 + 1, n - 1}) {
      const std::vector<float> one(patches.begin() + i * 48 * 48,
                                   patches.begin() + (i + 1) * 48 * 48);
      const Scores alone = run_model(backend, precision, one, 1);
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(alone.softmax[size_t(c)], batched.softmax[size_t(i * 3 + c)])
            << to_string(precision) << " patch " << i;
      EXPECT_EQ(alone.michel[0], batched.michel[size_t(i)]) << to_string(precision);
    }
  }
}

// Without the fused plan bf16 / fp16 run per op (the conv and the first dense layer reduced):
// the same accuracy bounds against the unfused fp32 plan.
TEST_P(EmTrkPrecision, UnfusedPlanRunsReducedPrecisionPerOp) {
  const Backend& backend = *GetParam();
  const bool emulator = backend.id() == BackendId::kGpuEmu;
  const MixedRows mixed = mixed_rows(emulator ? 16 : 256);
  const int64_t n = int64_t(mixed.rows.size());
  const auto patches = select_patches(*cpu_sample().patches, mixed.rows);
  const auto keras = models::EmTrkGraphStyle::kKeras;
  const auto off = models::FusedPlan::kOff;
  const Scores fp32 = run_model(backend, models::Precision::kFp32, patches, n, keras, off);
  for (const auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
    const Scores reduced = run_model(backend, precision, patches, n, keras, off);
    expect_mixed_accuracy(fp32, reduced, mixed, std::string(to_string(precision)) + " unfused");
  }
}

// The planner's bf16 candidates that the fixed rules never take (vdpbf16ps for the first dense
// layer, and for the conv as well), pinned by name: the same accuracy bounds. A name that is not
// a candidate is rejected with the list.
TEST_P(EmTrkPrecision, EveryBf16PlannerCandidateKeepsTheAccuracy) {
  const Backend& backend = *GetParam();
  if (backend.id() != BackendId::kSerial && backend.id() != BackendId::kOpenmp)
    GTEST_SKIP() << "the planner's candidates are the CPU backends' kernels";
  const auto keras = models::EmTrkGraphStyle::kKeras;
  const auto require = models::FusedPlan::kRequire;
  const auto& one = realistic_patches(1);
  try {
    run_model(backend, models::Precision::kBf16, one, 1, keras, require, "kernels split, sse");
    ADD_FAILURE() << "an unknown candidate was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused_candidate: expected one of \"kernels split, "),
              std::string::npos)
        << e.what();
  }
  if (!gemm_avx512_bf16_available() || !conv2d_avx512_bf16_available())
    GTEST_SKIP() << "this CPU (or KAAS_MAX_CPU_ISA) lacks AVX512-BF16: no vdpbf16ps candidate";
  if (!is_accuracy_backend(backend))
    GTEST_SKIP() << "checked on openmp, whose bits serial gives too (CpuBackendsGiveTheSameBits)";
  const Sample& sample = cpu_sample();
  const auto& rows = sample.worst.rows;
  const int64_t n = int64_t(rows.size());
  const auto patches = select_patches(*sample.patches, rows);
  const Scores fp32 = select_scores(sample.fp32, rows);
  for (const char* candidate : {"kernels split, avx512_bf16 vdpbf16ps",
                                "kernels split, avx512_bf16 vdpbf16ps conv and dense"}) {
    const Scores reduced =
        run_model(backend, models::Precision::kBf16, patches, n, keras, require, candidate);
    expect_sample_accuracy(compare(fp32, reduced, n), n, sample, candidate);
  }
}

TEST_P(EmTrkPrecision, AnUnknownPrecisionIsNamed) {
  try {
    models::precision_from_string("fp8", "model 'emtrk'");
    ADD_FAILURE() << "fp8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "model 'emtrk': precision: expected fp32, bf16 or fp16, received 'fp8'");
  }
}

KAAS_INSTANTIATE_FOR_BACKENDS(EmTrkPrecision);

}  // namespace
}  // namespace kaas::testing
