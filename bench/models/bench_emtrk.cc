// EmTrkMichelId, the whole patch CNN (models/emtrk_onnx_generator.h: Conv 48x5x5 + ReLU -> Flatten
// -> Dense 128 -> Dense 32 -> softmax and sigmoid heads), from host input patches to host outputs:
//  - kaas: the ONNX model (Keras graph style, generated weights) through make_onnx_model and
//    Model::run, fused conv-dense-heads plan and unfused plan, serial and openmp backends;
//  - peer oneDNN: the same network as oneDNN primitives on the same weights (convolution with
//    ReLU post-op, inner products, softmax), checked once against kaas's outputs;
//  - peer onnxruntime: the same model file in onnxruntime's CPU provider
//    (bench/peers/onnxruntime_emtrk.py, run once per shape through popen with the Python in
//    KAAS_BENCH_PYTHON, default <repo>/.venv/bin/python; its per-run times are replayed as
//    manual iteration times).
// Names: emtrk/<implementation>/<batch>/threads:<t>; the OpenMP thread count is set with
// omp_set_num_threads around each benchmark (oneDNN and OpenBLAS use the same OpenMP runtime).
// Inputs are uniform in [-5, 15] (the rescaled ADC range of LArSoft's DataProviderAlg).

#include <benchmark/benchmark.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/counters.h"
#include "bench/registry.h"
#include "kaas/backends/backend.h"
#include "kaas/backends/backend_traits.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/npy.h"
#include "kaas/models/onnx_model.h"
#include "kaas/models/tensor.h"

#if KAAS_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#ifndef KAAS_BENCH_PEERS_DIR
#define KAAS_BENCH_PEERS_DIR "bench/peers"
#endif
#ifndef KAAS_BENCH_SOURCE_DIR
#define KAAS_BENCH_SOURCE_DIR "."
#endif

namespace kaas::bench {
namespace {

constexpr int64_t kPatch = 48, kKernel = 5, kFilters = 48, kConvOut = kPatch - kKernel + 1;
constexpr int64_t kFlat = kConvOut * kConvOut * kFilters;  // 92,928
constexpr int64_t kHidden1 = 128, kHidden2 = 32, kClasses = 3;
constexpr uint32_t kSeed = 20261122;

// FLOP per patch: conv, dense 92928 -> 128, dense 128 -> 32, the two heads (28,444,416).
constexpr double kFlopsPerPatch = 2.0 * double(kConvOut * kConvOut * kFilters * kKernel * kKernel) +
                                  2.0 * double(kFlat * kHidden1) +
                                  2.0 * double(kHidden1 * kHidden2) +
                                  2.0 * double(kHidden2 * kClasses) + 2.0 * double(kHidden2 * 1);

// The model, generated once, and its file for the onnxruntime peer (removed at exit).
struct EmTrkModel {
  onnx::ModelProto proto;
  std::string path;
  // $KAAS_BENCH_EMTRK_MODEL (e.g. the trained model.onnx; it must be of EmTrkMichelId's Keras
  // shape) or the generated weights. Dense plans do the same work for any weights; the sparse
  // plan skips the conv channels that are 0, which depends on them.
  EmTrkModel()
      : proto(std::getenv("KAAS_BENCH_EMTRK_MODEL") != nullptr
                  ? models::read_onnx_file(std::getenv("KAAS_BENCH_EMTRK_MODEL"))
                  : models::generate_emtrk_onnx({models::EmTrkGraphStyle::kKeras, kSeed})) {}
  ~EmTrkModel() {
    if (!path.empty()) unlink(path.c_str());
  }
  const std::string& file() {  // empty when it cannot be written
    if (!path.empty()) return path;
    char name[] = "/tmp/kaas_emtrk_bench_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) return path;
    close(fd);
    std::ofstream out(name, std::ios::binary | std::ios::trunc);
    if (out && proto.SerializeToOstream(&out) && out.flush()) {
      path = name;
    } else {
      unlink(name);
    }
    return path;
  }
};

EmTrkModel& emtrk_model() {
  static EmTrkModel model;
  return model;
}

models::HostTensor random_patches(int64_t batch) {
  std::mt19937 rng(12345u + uint32_t(batch));
  std::uniform_real_distribution<float> dist(-5.0f, 15.0f);
  std::vector<float> values(size_t(batch * kPatch * kPatch));
  for (auto& v : values) v = dist(rng);
  return models::HostTensor::make<float>("main_input", models::DataType::kFloat32,
                                         {batch, kPatch, kPatch, 1}, values);
}

// Zero-suppressed patches: a straight band of charge through each patch (random direction, through
// a random point of the central quarter), as wide as makes `occupancy` of the pixels non-zero; the
// rest exactly 0. occupancy 1: random_patches (noise everywhere).
models::HostTensor band_patches(int64_t batch, double occupancy) {
  if (occupancy >= 1.0) return random_patches(batch);
  std::mt19937 rng(777u + uint32_t(batch));
  std::uniform_real_distribution<float> charge(0.5f, 15.0f), angle(0.0f, 3.14159265f),
      centre(kPatch * 0.375f, kPatch * 0.625f);
  std::vector<float> values(size_t(batch * kPatch * kPatch), 0.0f);
  const float half_width = float(occupancy) * kPatch / 2;
  for (int64_t p = 0; p < batch; ++p) {
    const float a = angle(rng), cy = centre(rng), cx = centre(rng);
    for (int64_t i = 0; i < kPatch; ++i)
      for (int64_t j = 0; j < kPatch; ++j) {
        const float distance =
            std::abs(-(float(i) - cy) * std::sin(a) + (float(j) - cx) * std::cos(a));
        if (distance < half_width) values[size_t((p * kPatch + i) * kPatch + j)] = charge(rng);
      }
  }
  return models::HostTensor::make<float>("main_input", models::DataType::kFloat32,
                                         {batch, kPatch, kPatch, 1}, values);
}

// Sets the OpenMP thread count for one benchmark and restores it afterwards.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

void set_patch_counters(benchmark::State& state, int64_t batch, int threads) {
  state.SetItemsProcessed(state.iterations() * batch);
  set_flops(state, kFlopsPerPatch * double(batch));
  state.counters["threads"] = threads;
}

std::unique_ptr<models::Model> make_kaas_model(
    const Backend& backend, int64_t batch, models::FusedPlan fused,
    models::Precision precision = models::Precision::kFp32) {
  models::OnnxModelOptions options;
  options.name = "emtrk";
  options.max_batch = batch;
  options.fused = fused;
  options.precision = precision;
  return models::make_onnx_model(emtrk_model().proto, backend, options);
}

void emtrk_kaas(benchmark::State& state, const Backend* backend, models::FusedPlan fused,
                models::Precision precision) {
  const int64_t batch = state.range(0);
  const int threads = int(state.range(1));
  const OmpThreads omp_threads(threads);
  backend->set_caller_threads(threads);  // the tbb backend's count (OpenMP's is set above)
  try {
    const auto model = make_kaas_model(*backend, batch, fused, precision);
    const std::vector<models::HostTensor> inputs = {random_patches(batch)};
    for (auto _ : state) {
      auto outputs = model->run(inputs);
      benchmark::DoNotOptimize(outputs.data());
    }
    set_patch_counters(state, batch, threads);
    if (precision != models::Precision::kFp32)
      set_bf16_peak_fraction(state, kFlopsPerPatch * double(batch));
    // The plan, and what the planner chose with the candidates' measured times.
    const auto plan = model->describe();
    std::string label = plan.back();
    for (const std::string& line : plan) {
      if (line.rfind("planner: ", 0) == 0) label += "; " + line;
    }
    state.SetLabel(label);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  backend->set_caller_threads(0);
}

// The fused plan on zero-suppressed patches (band_patches) with the sparse execution off, pinned
// or chosen per batch by the planner (OnnxModelOptions::sparse). Counters: the non-zero pixel
// fraction, the fraction of conv positions whose window touches charge, and whether the last run
// took the sparse execution.
void emtrk_sparse(benchmark::State& state, const Backend* backend, models::SparsePlan plan,
                  double occupancy) {
  const int64_t batch = state.range(0);
  const int threads = int(state.range(1));
  const OmpThreads omp_threads(threads);
  try {
    models::OnnxModelOptions options;
    options.name = "emtrk";
    options.max_batch = batch;
    options.fused = models::FusedPlan::kRequire;
    options.sparse = plan;
    const auto model = models::make_onnx_device_model(emtrk_model().proto, *backend, options);
    const std::vector<models::HostTensor> inputs = {band_patches(batch, occupancy)};
    const auto pixels = inputs[0].values<float>();
    const double nonzero =
        double(std::count_if(pixels.begin(), pixels.end(), [](float v) { return v != 0.0f; })) /
        double(pixels.size());
    for (auto _ : state) {
      auto outputs = model->run(inputs);
      benchmark::DoNotOptimize(outputs.data());
    }
    set_patch_counters(state, batch, threads);
    state.counters["pixels_nonzero"] = nonzero;
    state.counters["positions_active"] = model->last_run().active;
    state.counters["ran_sparse"] = model->last_run().sparse ? 1 : 0;
    std::string label;
    for (const std::string& line : model->describe()) {
      if (line.rfind("sparse planner: ", 0) == 0 || line.rfind("planner: ", 0) == 0)
        label += (label.empty() ? "" : "; ") + line;
    }
    state.SetLabel(label);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

#if KAAS_BENCH_HAVE_DNNL
// The network in oneDNN primitives. The conv kernel is OIHW (ONNX), the Keras dense kernels are
// [in, out] (read as io); oneDNN reorders all weights once into the layouts it chose.
class OneDnnEmTrk {
 public:
  // bf16: the conv and the first inner product on bf16 source and weights (oneDNN's bf16
  // kernels, fp32 accumulation), the conv output bf16, everything after it fp32.
  OneDnnEmTrk(const onnx::ModelProto& model, int64_t batch, bool bf16)
      : eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
    using namespace dnnl;
    using tag = memory::format_tag;
    using dt = memory::data_type;
    const dt cdt = bf16 ? dt::bf16 : dt::f32;
    const memory::dims src_dims = {batch, 1, kPatch, kPatch};
    const memory::dims conv_w_dims = {kFilters, 1, kKernel, kKernel};
    const memory::dims conv_dst_dims = {batch, kFilters, kConvOut, kConvOut};
    // Conv: NHWC source and destination, weights in oneDNN's choice, ReLU post-op.
    const convolution_forward::primitive_desc conv_pd(
        convolution_forward::desc(
            prop_kind::forward_inference, algorithm::convolution_direct,
            memory::desc(src_dims, cdt, tag::nhwc), memory::desc(conv_w_dims, cdt, tag::any),
            memory::desc({kFilters}, dt::f32, tag::x), memory::desc(conv_dst_dims, cdt, tag::nhwc),
            {1, 1}, {0, 0}, {0, 0}),
        relu_attr(), eng_);
    src_user_ = memory(memory::desc(src_dims, dt::f32, tag::nhwc), eng_);
    src_ = bf16 ? memory(conv_pd.src_desc(), eng_) : src_user_;
    if (bf16) add(reorder(src_user_, src_), {{DNNL_ARG_FROM, src_user_}, {DNNL_ARG_TO, src_}});
    conv_dst_ = memory(conv_pd.dst_desc(), eng_);
    add(convolution_forward(conv_pd),
        {{DNNL_ARG_SRC, src_},
         {DNNL_ARG_WEIGHTS,
          weights(model, "conv2d/kernel", conv_w_dims, tag::oihw, conv_pd.weights_desc())},
         {DNNL_ARG_BIAS, bias(model, "conv2d/bias", kFilters)},
         {DNNL_ARG_DST, conv_dst_}});
    // Dense 92928 -> 128: the NHWC conv output of one patch is the Keras flatten order (h, w, c),
    // so it is read as plain [batch, 92928] rows (oneDNN picks a slow gemm for a 4D source).
    const memory flat(memory::desc({batch, kFlat}, cdt, tag::nc), eng_,
                      conv_dst_.get_data_handle());
    memory hidden1 = inner_product(model, "dense", flat, {kHidden1, kFlat}, tag::io,
                                   {batch, kHidden1}, relu_attr(), cdt);
    memory hidden2 = inner_product(model, "dense_1", hidden1, {kHidden2, kHidden1}, tag::io,
                                   {batch, kHidden2}, relu_attr());
    memory logits = inner_product(model, "em_trk_none_netout", hidden2, {kClasses, kHidden2},
                                  tag::io, {batch, kClasses}, primitive_attr());
    const softmax_forward::primitive_desc softmax_pd(
        softmax_forward::desc(prop_kind::forward_inference, logits.get_desc(), 1), eng_);
    classes_ = memory(softmax_pd.dst_desc(), eng_);
    add(softmax_forward(softmax_pd), {{DNNL_ARG_SRC, logits}, {DNNL_ARG_DST, classes_}});
    post_ops sigmoid;
    sigmoid.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
    primitive_attr sigmoid_attr;
    sigmoid_attr.set_post_ops(sigmoid);
    michel_ = inner_product(model, "michel_netout", hidden2, {1, kHidden2}, tag::io, {batch, 1},
                            sigmoid_attr);
    implementations_ = conv_pd.impl_info_str();
  }

  void run(const float* patches) {
    std::copy_n(patches, src_user_.get_desc().get_size() / sizeof(float),
                static_cast<float*>(src_user_.get_data_handle()));
    for (size_t i = 0; i < steps_.size(); ++i) steps_[i].execute(strm_, args_[i]);
    strm_.wait();
  }
  const float* classes() const { return static_cast<const float*>(classes_.get_data_handle()); }
  const float* michel() const { return static_cast<const float*>(michel_.get_data_handle()); }
  std::string label() const { return "oneDNN conv " + implementations_ + ", dense " + dense_impl_; }

 private:
  static dnnl::primitive_attr relu_attr() {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    return attr;
  }

  static const onnx::TensorProto& initializer(const onnx::ModelProto& model,
                                              const std::string& name) {
    for (const auto& t : model.graph().initializer()) {
      if (t.name() == name) return t;
    }
    throw std::runtime_error("EmTrk model has no initializer " + name);
  }

  // The initializer's raw floats as user memory of the given logical dims and format, reordered
  // into `wanted`.
  dnnl::memory weights(const onnx::ModelProto& model, const std::string& name,
                       const dnnl::memory::dims& dims, dnnl::memory::format_tag user_tag,
                       const dnnl::memory::desc& wanted) {
    const std::string& raw = initializer(model, name).raw_data();
    dnnl::memory user({dims, dnnl::memory::data_type::f32, user_tag}, eng_);
    if (raw.size() != user.get_desc().get_size())
      throw std::runtime_error("EmTrk initializer " + name + " has an unexpected size");
    std::copy_n(raw.data(), raw.size(), static_cast<char*>(user.get_data_handle()));
    dnnl::memory out(wanted, eng_);
    dnnl::reorder(user, out).execute(strm_, user, out);
    strm_.wait();
    return out;
  }

  dnnl::memory bias(const onnx::ModelProto& model, const std::string& name, int64_t size) {
    const dnnl::memory::desc md({size}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x);
    return weights(model, name, {size}, dnnl::memory::format_tag::x, md);
  }

  // Inner product `name` (Keras kernel `name`/kernel [in, out] read as `user_tag` over the
  // logical weight dims {out, ...}) from `src` into a new plain [batch, out] memory.
  dnnl::memory inner_product(const onnx::ModelProto& model, const std::string& name,
                             const dnnl::memory& src, const dnnl::memory::dims& weight_dims,
                             dnnl::memory::format_tag user_tag, const dnnl::memory::dims& dst_dims,
                             const dnnl::primitive_attr& attr,
                             dnnl::memory::data_type weight_type = dnnl::memory::data_type::f32) {
    using namespace dnnl;
    const inner_product_forward::primitive_desc pd(
        inner_product_forward::desc(
            prop_kind::forward_inference, src.get_desc(),
            memory::desc(weight_dims, weight_type, memory::format_tag::any),
            memory::desc({weight_dims[0]}, memory::data_type::f32, memory::format_tag::x),
            memory::desc(dst_dims, memory::data_type::f32, memory::format_tag::nc)),
        attr, eng_);
    memory dst(pd.dst_desc(), eng_);
    add(inner_product_forward(pd), {{DNNL_ARG_SRC, src},
                                    {DNNL_ARG_WEIGHTS, weights(model, name + "/kernel", weight_dims,
                                                               user_tag, pd.weights_desc())},
                                    {DNNL_ARG_BIAS, bias(model, name + "/bias", weight_dims[0])},
                                    {DNNL_ARG_DST, dst}});
    if (name == "dense") dense_impl_ = pd.impl_info_str();
    return dst;
  }

  void add(dnnl::primitive p, std::unordered_map<int, dnnl::memory> args) {
    steps_.push_back(std::move(p));
    args_.push_back(std::move(args));
  }

  dnnl::engine eng_;
  dnnl::stream strm_;
  std::vector<dnnl::primitive> steps_;
  std::vector<std::unordered_map<int, dnnl::memory>> args_;
  dnnl::memory src_user_, src_, conv_dst_, classes_, michel_;
  std::string dense_impl_, implementations_;
};

// Largest |oneDNN - kaas| over both outputs, kaas on the openmp backend (fused plan when it
// applies) at the current thread count.
double onednn_vs_kaas(OneDnnEmTrk& onednn, const models::HostTensor& patches, int64_t batch) {
  const Backend* backend = nullptr;
  for (const Backend* b : compiled_backends()) {
    // A host backend, the one on OpenMP threads (oneDNN's own) first.
    const BackendTraits traits = traits_of(b->id());
    if (b->available() && traits.host_simd &&
        (backend == nullptr || traits.threads == HostThreads::kOpenmp)) {
      backend = b;
    }
  }
  if (backend == nullptr) return INFINITY;
  const auto model = make_kaas_model(*backend, batch, models::FusedPlan::kAuto);
  const auto outputs = model->run(std::span<const models::HostTensor>(&patches, 1));
  onednn.run(patches.values<float>().data());
  const auto classes = outputs[0].values<float>(), michel = outputs[1].values<float>();
  if (classes.size() != size_t(batch * kClasses) || michel.size() != size_t(batch)) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < classes.size(); ++i)
    worst = std::max(worst, double(std::fabs(classes[i] - onednn.classes()[i])));
  for (size_t i = 0; i < michel.size(); ++i)
    worst = std::max(worst, double(std::fabs(michel[i] - onednn.michel()[i])));
  return worst;
}

void emtrk_onednn(benchmark::State& state, bool bf16, double occupancy) {
  const int64_t batch = state.range(0);
  const int threads = int(state.range(1));
  const OmpThreads omp_threads(threads);
  try {
    OneDnnEmTrk onednn(emtrk_model().proto, batch, bf16);
    const auto patches = band_patches(batch, occupancy);
    const double diff = onednn_vs_kaas(onednn, patches, batch);
    // bf16 against kaas fp32: the accuracy bound of the reduced-precision tests.
    const double allowed = bf16 ? 0.02 : 1e-4;
    if (!(diff <= allowed)) {
      state.SkipWithError(("oneDNN and kaas fp32 outputs differ by " + std::to_string(diff) +
                           " (> " + std::to_string(allowed) +
                           "): the peer does not compute the same network")
                              .c_str());
      return;
    }
    const float* input = patches.values<float>().data();
    for (auto _ : state) {
      onednn.run(input);
      benchmark::DoNotOptimize(onednn.classes());
    }
    set_patch_counters(state, batch, threads);
    if (bf16) set_bf16_peak_fraction(state, kFlopsPerPatch * double(batch));
    state.counters["max_abs_diff_vs_kaas"] = diff;
    state.SetLabel(onednn.label());
  } catch (const std::exception& e) {  // dnnl::error and kaas::Error are std::exceptions
    state.SkipWithError(e.what());
  }
}
#endif

// The onnxruntime peer: one python process per shape (cached for Google Benchmark's repeated
// calls), its per-run times replayed as manual iteration times.
struct PeerRuns {
  std::vector<double> seconds;
  std::string description;  // the script's second line, or the failure
};

constexpr double kPeerMinTime = 0.3;  // seconds of timed runs inside the python process

std::string peer_python() {
  const char* env = std::getenv("KAAS_BENCH_PYTHON");
  return env != nullptr && *env != '\0' ? env : KAAS_BENCH_SOURCE_DIR "/.venv/bin/python";
}

const PeerRuns& onnxruntime_runs(int64_t batch, int threads, double occupancy) {
  static std::map<std::tuple<int64_t, int, double>, PeerRuns> cache;
  const auto key = std::make_tuple(batch, threads, occupancy);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  PeerRuns& runs = cache[key];
  const std::string& model_file = emtrk_model().file();
  if (model_file.empty()) {
    runs.description = "cannot write the EmTrk model file for the onnxruntime peer";
    return runs;
  }
  // Zero-suppressed patches go to the peer as a .npy file: the same values kaas runs.
  std::string patches_file;
  if (occupancy < 1.0) {
    patches_file = model_file + ".zs" + std::to_string(int(occupancy * 100)) + "_" +
                   std::to_string(batch) + ".npy";
    models::write_npy(patches_file, band_patches(batch, occupancy));
  }
  const std::string command = peer_python() + " " KAAS_BENCH_PEERS_DIR "/onnxruntime_emtrk.py " +
                              model_file + " " + std::to_string(batch) + " " +
                              std::to_string(threads) + " " + std::to_string(kPeerMinTime) + " " +
                              patches_file + " 2>&1";
  std::string output;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
    const int status = pclose(pipe);
    if (!patches_file.empty()) unlink(patches_file.c_str());
    std::istringstream lines(output);
    std::string times;
    if (status == 0 && std::getline(lines, times)) {
      std::istringstream values(times);
      double t = 0;
      while (values >> t) runs.seconds.push_back(t);
      std::getline(lines, runs.description);
    }
  }
  if (runs.seconds.empty()) {
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    const size_t last_line = output.rfind('\n');
    runs.description = "onnxruntime peer failed (" + command + "): " +
                       (last_line == std::string::npos ? output : output.substr(last_line + 1));
  }
  return runs;
}

void emtrk_onnxruntime(benchmark::State& state, double occupancy) {
  const int64_t batch = state.range(0);
  const int threads = int(state.range(1));
  const PeerRuns& runs = onnxruntime_runs(batch, threads, occupancy);
  if (runs.seconds.empty()) {
    state.SkipWithError(runs.description.c_str());
    return;
  }
  size_t i = 0;
  for (auto _ : state) state.SetIterationTime(runs.seconds[i++ % runs.seconds.size()]);
  set_patch_counters(state, batch, threads);
  state.counters["runs_measured"] = double(runs.seconds.size());
  state.SetLabel(runs.description);
}

void register_emtrk() {
  const std::vector<int64_t> batches = {1, 16, 64, 256, 1024};
  auto configure = [&](benchmark::internal::Benchmark* b, const std::vector<int>& threads) {
    for (int t : threads) {
      for (int64_t batch : batches) b->Args({batch, t});
    }
    b->ArgNames({"", "threads"})->Unit(benchmark::kMillisecond);
    return b;
  };
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || !host_simd(backend->id())) continue;
    const std::string name(backend->name());
    const std::vector<int> threads = traits_of(backend->id()).threads != HostThreads::kCaller
                                         ? std::vector<int>{1, 2}
                                         : std::vector<int>{1};
    configure(
        benchmark::RegisterBenchmark(("emtrk/" + name + "/fused").c_str(), emtrk_kaas, backend,
                                     models::FusedPlan::kAuto, models::Precision::kFp32),
        threads)
        ->UseRealTime();
    for (const auto precision : {models::Precision::kBf16, models::Precision::kFp16}) {
      const std::string fused = "emtrk/" + name + "/fused_" + std::string(to_string(precision));
      configure(benchmark::RegisterBenchmark(fused.c_str(), emtrk_kaas, backend,
                                             models::FusedPlan::kRequire, precision),
                threads)
          ->UseRealTime();
    }
    for (const auto plan :
         {models::SparsePlan::kDense, models::SparsePlan::kSparse, models::SparsePlan::kAuto}) {
      for (const double occupancy : {0.1, 1.0}) {
        const std::string bench = "emtrk/" + name + "/zs" + std::to_string(int(occupancy * 100)) +
                                  "_" + std::string(to_string(plan));
        configure(
            benchmark::RegisterBenchmark(bench.c_str(), emtrk_sparse, backend, plan, occupancy),
            threads)
            ->UseRealTime();
      }
    }
    configure(
        benchmark::RegisterBenchmark(("emtrk/" + name + "/unfused").c_str(), emtrk_kaas, backend,
                                     models::FusedPlan::kOff, models::Precision::kFp32),
        threads)
        ->UseRealTime();
  }
#if KAAS_BENCH_HAVE_DNNL
  configure(benchmark::RegisterBenchmark("emtrk/peer_onednn", emtrk_onednn, false, 1.0), {1, 2})
      ->UseRealTime();
  configure(benchmark::RegisterBenchmark("emtrk/peer_onednn_bf16", emtrk_onednn, true, 1.0), {1, 2})
      ->UseRealTime();
  // The same zero-suppressed patches as emtrk/<backend>/zs10_* (dense peers: the same work).
  configure(benchmark::RegisterBenchmark("emtrk/peer_onednn_zs10", emtrk_onednn, false, 0.1), {2})
      ->UseRealTime();
#endif
  configure(benchmark::RegisterBenchmark("emtrk/peer_onnxruntime", emtrk_onnxruntime, 1.0), {1, 2})
      ->UseManualTime();
  configure(benchmark::RegisterBenchmark("emtrk/peer_onnxruntime_zs10", emtrk_onnxruntime, 0.1),
            {2})
      ->UseManualTime();
}

KAAS_BENCHMARKS(register_emtrk);

}  // namespace
}  // namespace kaas::bench
