// The reproducibility contract (docs/reproducibility.md) on the host CPU backends, for the three
// spellings of EmTrkMichelId: a row's outputs are the same bits alone or at any position of a
// batch, with any companions, on serial, openmp or tbb with any thread count, in the fused or the
// unfused plan, whatever the model's max batch (the fused plan's slab size); and the outputs of
// a fixed input are the committed digests of the instruction-set tier the process runs on
// (ctest runs one entry per tier, KAAS_MAX_CPU_ISA; a tier the CPU lacks is skipped), so every
// machine that runs the tests checks the promise across machines.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/backend_traits.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/kernels/planner.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/knn_model.h"
#include "kaas/models/onnx_model.h"
#include "tests/support/generated_emtrk.h"
#include "tests/support/omp_threads.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

using models::EmTrkGraphStyle;

constexpr int64_t kSide = 48, kPatchValues = kSide * kSide, kPatches = 12;

// Noise, zero-suppressed bands of several widths, a few isolated hits and an empty patch.
std::vector<float> test_patches() {
  std::vector<float> p = random_floats(kPatches * kPatchValues, 2026, -5.0f, 15.0f);
  for (int64_t i = 0; i < kPatches; ++i) {
    float* patch = p.data() + i * kPatchValues;
    if (i == 3) std::fill(patch, patch + kPatchValues, 0.0f);
    if (i % 3 == 1)  // a band of 2 * i + 4 live wires
      for (int64_t w = 0; w < kSide; ++w)
        if (w < 20 || w >= 24 + 2 * i) std::fill(patch + w * kSide, patch + (w + 1) * kSide, 0.0f);
    if (i == 8)
      for (int64_t v = 0; v < kPatchValues; ++v)
        if (v % 97 != 0) patch[v] = 0.0f;
  }
  return p;
}

const char* name_of(EmTrkGraphStyle style) {
  return style == EmTrkGraphStyle::kKeras     ? "keras"
         : style == EmTrkGraphStyle::kTf2onnx ? "tf2onnx"
                                              : "pytorch";
}

// A graph spelling of EmTrkMichelId (seed 4), generated when first used in this process.
struct Spelling {
  EmTrkGraphStyle style;
  const onnx::ModelProto& proto() const { return generated_emtrk(style, 4); }
};

const std::vector<Spelling>& spellings() {
  static const std::vector<Spelling> all{
      {EmTrkGraphStyle::kKeras}, {EmTrkGraphStyle::kTf2onnx}, {EmTrkGraphStyle::kPyTorch}};
  return all;
}

// The host CPU backends compiled in (serial, openmp, tbb) and the thread counts each is run with.
std::vector<const char*> cpu_backends() {
  std::vector<const char*> names;
  for (const Backend* b : compiled_backends())
    if (host_simd(b->id()) && b->available()) names.push_back(b->name().data());
  return names;
}

std::vector<int> thread_counts(const char* backend) {
  return runs_parallel(find_backend(backend)) ? std::vector{1, 2, 3} : std::vector{1};
}

std::unique_ptr<models::Model> load(const Spelling& s, const char* backend, models::FusedPlan fused,
                                    int64_t max_batch,
                                    models::Precision precision = models::Precision::kFp32) {
  models::OnnxModelOptions options;
  options.max_batch = max_batch;
  options.fused = fused;
  options.precision = precision;
  options.planner = planner::Mode::kFixed;
  options.sparse = models::SparsePlan::kDense;
  return models::make_onnx_model(s.proto(), find_backend(backend), options);
}

// Each row's outputs (the softmax head's, then the sigmoid head's) as bytes.
std::vector<std::vector<std::byte>> run_rows(models::Model& model, const Spelling& s,
                                             const std::vector<float>& patches, int64_t first,
                                             int64_t count) {
  const std::vector<int64_t> shape = s.style == EmTrkGraphStyle::kPyTorch
                                         ? std::vector<int64_t>{count, 1, kSide, kSide}
                                         : std::vector<int64_t>{count, kSide, kSide, 1};
  const std::vector<float> rows(patches.begin() + first * kPatchValues,
                                patches.begin() + (first + count) * kPatchValues);
  const auto out = model.run(std::vector{
      models::HostTensor::make<float>("main_input", models::DataType::kFloat32, shape, rows)});
  std::vector<std::vector<std::byte>> by_row(static_cast<size_t>(count));
  for (const auto& tensor : out) {
    const size_t row_bytes = tensor.bytes.size() / size_t(count);
    for (int64_t r = 0; r < count; ++r)
      by_row[size_t(r)].insert(by_row[size_t(r)].end(), tensor.bytes.begin() + r * row_bytes,
                               tensor.bytes.begin() + (r + 1) * row_bytes);
  }
  return by_row;
}

TEST(Reproducibility, ARowsBitsDoNotDependOnBatchThreadsBackendPlanOrMaxBatch) {
  const auto patches = test_patches();
  for (const Spelling& s : spellings()) {
    SCOPED_TRACE(name_of(s.style));
    // Each patch alone, on serial, in the unfused plan.
    std::vector<std::vector<std::byte>> alone;
    {
      const auto model = load(s, "serial", models::FusedPlan::kOff, 1);
      for (int64_t i = 0; i < kPatches; ++i) alone.push_back(run_rows(*model, s, patches, i, 1)[0]);
    }
    struct Plan {
      models::FusedPlan fused;
      int64_t max_batch;  // 256: the fused plan's slab passes take 3 conv rows, 12: all 44
      const char* name;
    };
    for (const char* backend : cpu_backends()) {
      for (const Plan& plan : {Plan{models::FusedPlan::kRequire, 12, "fused, max batch 12"},
                               Plan{models::FusedPlan::kRequire, 256, "fused, max batch 256"},
                               Plan{models::FusedPlan::kOff, 12, "unfused"}}) {
        const auto model = load(s, backend, plan.fused, plan.max_batch);
        for (int threads : thread_counts(backend)) {
          const OmpThreadsForTest omp(threads);
          // All 12; 3 from the fifth (start, middle and end of a batch); the last alone.
          for (const auto& [first, count] :
               {std::pair<int64_t, int64_t>{0, kPatches}, {4, 3}, {11, 1}}) {
            const auto rows = run_rows(*model, s, patches, first, count);
            for (int64_t r = 0; r < count; ++r)
              EXPECT_EQ(rows[size_t(r)], alone[size_t(first + r)])
                  << backend << ", " << plan.name << ", " << threads << " threads: patch "
                  << first + r << " at row " << r << " of a batch of " << count;
          }
        }
      }
    }
  }
}

// bf16 and fp16 (the fused plan; their own bits, one class per precision and tier): a row's bits
// do not depend on its batch, the thread count, the backend or the max batch either.
TEST(Reproducibility, SixteenBitRowsDoNotDependOnBatchThreadsBackendOrMaxBatch) {
  const auto patches = test_patches();
  for (auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
    for (const Spelling& s : {spellings()[0], spellings()[2]}) {  // Keras (= tf2onnx), PyTorch
      SCOPED_TRACE(std::string(name_of(s.style)) + " " + std::string(models::to_string(precision)));
      std::vector<std::vector<std::byte>> alone;
      {
        const auto model = load(s, "serial", models::FusedPlan::kRequire, 1, precision);
        for (int64_t i = 0; i < kPatches; ++i)
          alone.push_back(run_rows(*model, s, patches, i, 1)[0]);
      }
      for (const char* backend : cpu_backends()) {
        for (int64_t max_batch : {int64_t(12), int64_t(256)}) {
          const auto model = load(s, backend, models::FusedPlan::kRequire, max_batch, precision);
          for (int threads : thread_counts(backend)) {
            const OmpThreadsForTest omp(threads);
            for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, kPatches}, {4, 3}}) {
              const auto rows = run_rows(*model, s, patches, first, count);
              for (int64_t r = 0; r < count; ++r)
                EXPECT_EQ(rows[size_t(r)], alone[size_t(first + r)])
                    << backend << ", max batch " << max_batch << ", " << threads
                    << " threads: patch " << first + r << " at row " << r << " of " << count;
            }
          }
        }
      }
    }
  }
}

// The sparse plan (other bits than the dense one) is taken patch by patch by timings that belong
// to the model: two loads standing for two processes -- another backend, max batch and thread
// count, the process memory of decisions forgotten between them -- share the model's plan file:
// the second reads the first's timings, and every patch gets the same bits in both, alone or in
// a batch.
TEST(Reproducibility, SparseAutoTakesTheModelsPlanFileSoProcessesAgree) {
  const auto patches = test_patches();
  const Spelling& s = spellings()[0];
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kaas_reproducibility_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto load_auto = [&](const char* backend, int64_t max_batch) {
    models::OnnxModelOptions options;
    options.max_batch = max_batch;
    options.planner = planner::Mode::kMeasure;
    options.sparse = models::SparsePlan::kAuto;
    options.plan_file = (dir / "kaas_plan.tsv").string();
    planner::forget_process_decisions();
    return models::make_onnx_model(s.proto(), find_backend(backend), options);
  };
  auto sparse_line = [](const models::Model& model) {
    for (const auto& line : model.describe())
      if (line.rfind("sparse planner:", 0) == 0) return line;
    return std::string("(none)");
  };
  std::vector<std::vector<std::vector<std::byte>>> batched, alone;
  std::vector<std::tuple<const char*, int64_t, int>> processes{{"openmp", kPatches, 2},
                                                               {"serial", 4, 1}};
  for (const char* backend : cpu_backends())
    if (std::string(backend) == "tbb") processes.emplace_back("tbb", 5, 2);
  for (const auto& [backend, max_batch, threads] : processes) {
    const OmpThreadsForTest omp(threads);
    const auto model = load_auto(backend, max_batch);
    SCOPED_TRACE(std::string(backend) + ": " + sparse_line(*model));
    EXPECT_EQ(sparse_line(*model).find("the model's plan file") != std::string::npos,
              std::string(backend) != "openmp");
    std::vector<std::vector<std::byte>> rows;
    for (int64_t first = 0; first < kPatches; first += max_batch) {
      const auto part = run_rows(*model, s, patches, first, std::min(max_batch, kPatches - first));
      rows.insert(rows.end(), part.begin(), part.end());
    }
    batched.push_back(rows);
    alone.emplace_back();
    for (int64_t i = 0; i < kPatches; ++i)
      alone.back().push_back(run_rows(*model, s, patches, i, 1)[0]);
  }
  std::filesystem::remove_all(dir);
  for (size_t p = 0; p < batched.size(); ++p) {
    for (int64_t i = 0; i < kPatches; ++i) {
      EXPECT_EQ(batched[0][size_t(i)], batched[p][size_t(i)]) << "process " << p << ", patch " << i;
      EXPECT_EQ(batched[p][size_t(i)], alone[p][size_t(i)]) << "process " << p << ", patch " << i;
    }
  }
}

// The default repository's kNN model: ragged events (one of each size from 1 to 40 points, and
// 600 in one), methods auto, brute force and binned: the same indices and distances on
// serial, on openmp and tbb with 1 to 3 threads and on gpu_emu.
TEST(Reproducibility, KnnRowsDoNotDependOnThreadsOrBackend) {
  std::vector<int64_t> splits{0};
  for (int64_t size = 1; size <= 40; ++size) splits.push_back(splits.back() + size);
  splits.push_back(splits.back() + 600);
  const int64_t n = splits.back(), dims = 3;
  const std::vector<float> points = random_floats(n * dims, 31, -50.0f, 50.0f);
  const std::vector<models::HostTensor> inputs{
      models::HostTensor::make<float>("points", models::DataType::kFloat32, {n, dims}, points),
      models::HostTensor::make<int64_t>("row_splits", models::DataType::kInt64,
                                        {int64_t(splits.size())}, splits)};
  for (KnnMethod method : {KnnMethod::kAuto, KnnMethod::kBruteForce, KnnMethod::kBinned}) {
    models::KnnModelOptions options;
    options.method = method;
    std::vector<std::vector<std::byte>> first;
    std::vector<const char*> backends = cpu_backends();
    backends.push_back("gpu_emu");
    for (const char* backend : backends) {
      const auto model = models::make_knn_model(find_backend(backend), options);
      for (int threads : thread_counts(backend)) {
        const OmpThreadsForTest omp(threads);
        std::vector<std::vector<std::byte>> got;
        for (const auto& tensor : model->run(inputs)) got.push_back(tensor.bytes);
        if (first.empty()) first = got;
        EXPECT_EQ(got, first) << "method " << int(method) << ", " << backend << ", " << threads
                              << " threads";
      }
    }
  }
}

// The tier the kernels choose from: what the CPU has, capped by KAAS_MAX_CPU_ISA.
std::string tier() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512bf16) return "avx512_bf16";
  if (f.avx512f) return "avx512";
  if (f.avx2 && f.fma) return "avx2";
  return "portable";
}

uint64_t fnv1a(const std::vector<std::vector<std::byte>>& rows) {
  uint64_t h = 14695981039346656037ull;
  for (const auto& row : rows)
    for (std::byte b : row) h = (h ^ uint64_t(b)) * 1099511628211ull;
  return h;
}

// FNV-1a 64 of the 12 test patches' outputs, fused plan, openmp, per spelling, precision and
// tier. fp32 is the same on avx2, avx512 and avx512_bf16 (the same FMA chains per GEMM element
// and K chunk, the same conv order); the portable kernels chain all of K and sum the conv in
// another order. Regenerate after a change
// that moves bits on purpose: the failure prints the digest (and say why in the commit).
const std::map<std::string, uint64_t> kDigests = {
    {"keras fp32 portable", 0x154c61e19c1f0091},
    {"keras bf16 portable", 0x54a2c2fb43fa7e23},
    {"tf2onnx fp32 portable", 0x154c61e19c1f0091},
    {"tf2onnx bf16 portable", 0x54a2c2fb43fa7e23},
    {"pytorch fp32 portable", 0x1a5d7648a778a988},
    {"pytorch bf16 portable", 0xf4645679bccd6a48},
    {"keras fp32 avx2", 0x8c63c033715dadbb},
    {"keras bf16 avx2", 0x54a2c2fb43fa7e23},
    {"tf2onnx fp32 avx2", 0x8c63c033715dadbb},
    {"tf2onnx bf16 avx2", 0x54a2c2fb43fa7e23},
    {"pytorch fp32 avx2", 0x2d7a90a00b069a49},
    {"pytorch bf16 avx2", 0xf4645679bccd6a48},
    {"keras fp32 avx512", 0x8c63c033715dadbb},
    {"keras bf16 avx512", 0x2ab74ac51b54427f},
    {"tf2onnx fp32 avx512", 0x8c63c033715dadbb},
    {"tf2onnx bf16 avx512", 0x2ab74ac51b54427f},
    {"pytorch fp32 avx512", 0x2d7a90a00b069a49},
    {"pytorch bf16 avx512", 0x8b64b2d8c9607fa6},
    {"keras bf16 avx512_bf16", 0x2ab74ac51b54427f},
    {"tf2onnx fp32 avx512_bf16", 0x8c63c033715dadbb},
    {"tf2onnx bf16 avx512_bf16", 0x2ab74ac51b54427f},
    {"pytorch fp32 avx512_bf16", 0x2d7a90a00b069a49},
    {"pytorch bf16 avx512_bf16", 0x8b64b2d8c9607fa6},
    {"keras fp32 avx512_bf16", 0x8c63c033715dadbb},
};

TEST(Reproducibility, OutputsOfAFixedInputAreTheCommittedDigestsOfThisTier) {
  const std::string cap = cpu_isa_cap() == std::string("all") ? "avx512_bf16" : cpu_isa_cap();
  if (cap != tier())
    GTEST_SKIP() << "KAAS_MAX_CPU_ISA=" << cap << ": this CPU's best tier is " << tier();
  const auto patches = test_patches();
  for (const Spelling& s : spellings()) {
    for (auto precision : {models::Precision::kFp32, models::Precision::kBf16}) {
      const std::string key = std::string(name_of(s.style)) + " " +
                              std::string(models::to_string(precision)) + " " + tier();
      const auto model = load(s, "openmp", models::FusedPlan::kRequire, kPatches, precision);
      const uint64_t digest = fnv1a(run_rows(*model, s, patches, 0, kPatches));
      const auto want = kDigests.find(key);
      if (want == kDigests.end()) {
        ADD_FAILURE() << "no committed digest for '" << key << "': this run gives 0x" << std::hex
                      << digest;
        continue;
      }
      EXPECT_EQ(digest, want->second) << key << ": 0x" << std::hex << digest;
    }
  }
}

}  // namespace
}  // namespace kaas::testing
