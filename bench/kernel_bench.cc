// kaas-kernel-bench: EmTrkMichelId and kNN at the kernel level, with nothing but the kernels
// component (no ONNX, no Google Benchmark), so a bare GPU node measures the model's real shapes:
//  - emtrk: the fused conv-dense-heads network (kernels/conv_dense_heads.h) with EmTrkMichelId's
//    shapes (48x48x1 patches, conv 48 x 5x5 + ReLU, dense 92,928 -> 128 ReLU, dense 128 -> 32
//    ReLU, softmax(3) and sigmoid(1) heads) from weights in memory: seeded random ones, or the
//    .npy files kaas-make-emtrk-model --weights reads (--weights DIR). Per batch and storage
//    precision: the median time of a call on device-resident inputs, patches/s, GFLOP/s, and
//    the largest difference of the first patches' outputs from a double-precision host forward
//    pass (fails above the precision's tolerance).
//  - knn: K = 16 neighbours in D = 3, uniform points and clustered ones (toy-event hits: wire,
//    drift time, charge), N = 100k and 1M; the median time, and the rows equal to the serial
//    backend's (the N = 100k sets).
// --tsv FILE writes one row per measurement (scripts/gpu_check.sh turns them into its results
// file); --save-weights DIR writes the weights, a batch of inputs and kaas's outputs as .npy for a
// peer framework to run the same network on (bench/peers/torch_emtrk.py).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cases/knn_cases.h"
#include "examples/lartpc/toy_event.h"
#include "kaas/backends/backend.h"
#include "kaas/backends/buffer.h"
#include "kaas/backends/half.h"
#include "kaas/common/cli.h"
#include "kaas/common/error.h"
#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/convert.h"
#include "kaas/kernels/knn.h"
#include "kaas/models/npy.h"

namespace {

using kaas::Queue;

constexpr int64_t kPatch = 48, kKernel = 5, kFilters = 48, kConvOut = kPatch - kKernel + 1;
constexpr int64_t kFlat = kConvOut * kConvOut * kFilters;  // 92,928
constexpr int64_t kHidden1 = 128, kHidden2 = 32, kClasses = 3;
constexpr double kFlopsPerPatch = 2.0 * double(kConvOut * kConvOut * kFilters * kKernel * kKernel) +
                                  2.0 * double(kFlat * kHidden1) +
                                  2.0 * double(kHidden1 * kHidden2) +
                                  2.0 * double(kHidden2 * kClasses) + 2.0 * double(kHidden2);
constexpr int64_t kCheckedPatches = 4;

struct Options {
  std::string backend = "auto";
  std::vector<int64_t> batches = {1, 256, 1024, 4096};
  std::vector<std::string> precisions = {"fp32", "bf16", "fp16"};
  std::vector<int64_t> knn_points = {100'000, 1'000'000};
  std::string only;  // "emtrk", "knn" or both
  double seconds = 1.0;
  std::string weights_dir, save_dir, tsv;
};

// One tensor of the network: its .npy name (as kaas-make-emtrk-model --weights reads them), shape
// and values.
struct Weight {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct Network {
  Weight conv_w{"conv2d_kernel", {kFilters, 1, kKernel, kKernel}, {}};
  Weight conv_b{"conv2d_bias", {kFilters}, {}};
  Weight w1{"dense_kernel", {kFlat, kHidden1}, {}};  // rows in NHWC flatten order
  Weight b1{"dense_bias", {kHidden1}, {}};
  Weight w2{"dense_1_kernel", {kHidden1, kHidden2}, {}};
  Weight b2{"dense_1_bias", {kHidden2}, {}};
  Weight wa{"em_trk_none_netout_kernel", {kHidden2, kClasses}, {}};
  Weight ba{"em_trk_none_netout_bias", {kClasses}, {}};
  Weight wb{"michel_netout_kernel", {kHidden2, 1}, {}};
  Weight bb{"michel_netout_bias", {1}, {}};
  std::vector<Weight*> all() { return {&conv_w, &conv_b, &w1, &b1, &w2, &b2, &wa, &ba, &wb, &bb}; }
};

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Uniform(-a, a) with a = sqrt(6 / fan_in) (He), biases small: activations stay O(1).
Network random_network(uint32_t seed) {
  Network net;
  std::mt19937 rng(seed);
  for (Weight* w : net.all()) {
    const bool bias = w->shape.size() == 1;
    const int64_t fan_in = bias ? 1 : count(w->shape) / w->shape.back();
    const int64_t fan = w == &net.conv_w ? kKernel * kKernel : fan_in;
    const float a = bias ? 0.05f : std::sqrt(6.0f / float(fan));
    std::uniform_real_distribution<float> u(-a, a);
    w->values.resize(size_t(count(w->shape)));
    for (float& v : w->values) v = u(rng);
  }
  return net;
}

Network load_network(const std::string& dir) {
  Network net;
  for (Weight* w : net.all()) {
    const auto path = std::filesystem::path(dir) / (w->name + ".npy");
    const kaas::models::HostTensor t = kaas::models::read_npy(path, w->name);
    kaas::require(t.dtype == kaas::models::DataType::kFloat32 && t.shape == w->shape,
                  "kaas-kernel-bench", path.string(), "FP32 " + kaas::shape_string(w->shape),
                  kaas::shape_string(t.shape));
    const auto values = t.values<float>();
    w->values.assign(values.begin(), values.end());
  }
  return net;
}

void save_array(const std::string& dir, const std::string& name, const std::vector<int64_t>& shape,
                const float* data) {
  const auto t =
      kaas::models::HostTensor::make<float>(name, kaas::models::DataType::kFloat32, shape,
                                            std::span<const float>(data, size_t(count(shape))));
  kaas::models::write_npy(std::filesystem::path(dir) / (name + ".npy"), t);
}

// The forward pass in double precision on the host, for one patch [48, 48] (NHWC, C = 1).
std::vector<double> reference_forward(const Network& net, const float* patch) {
  std::vector<double> conv(static_cast<size_t>(kFlat));
  for (int64_t h = 0; h < kConvOut; ++h)
    for (int64_t w = 0; w < kConvOut; ++w)
      for (int64_t o = 0; o < kFilters; ++o) {
        double s = net.conv_b.values[size_t(o)];
        for (int64_t kh = 0; kh < kKernel; ++kh)
          for (int64_t kw = 0; kw < kKernel; ++kw)
            s += double(net.conv_w.values[size_t((o * kKernel + kh) * kKernel + kw)]) *
                 double(patch[(h + kh) * kPatch + w + kw]);
        conv[size_t((h * kConvOut + w) * kFilters + o)] = std::max(s, 0.0);
      }
  auto dense = [](const std::vector<double>& x, const Weight& w, const Weight& b, bool relu) {
    const int64_t in = w.shape[0], out = w.shape[1];
    std::vector<double> y(static_cast<size_t>(out));
    for (int64_t j = 0; j < out; ++j) y[size_t(j)] = b.values[size_t(j)];
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < out; ++j)
        y[size_t(j)] += x[size_t(i)] * w.values[size_t(i * out + j)];
    if (relu)
      for (double& v : y) v = std::max(v, 0.0);
    return y;
  };
  const auto h1 = dense(conv, net.w1, net.b1, true);
  const auto h2 = dense(h1, net.w2, net.b2, true);
  auto a = dense(h2, net.wa, net.ba, false);
  const auto b = dense(h2, net.wb, net.bb, false);
  const double top = *std::max_element(a.begin(), a.end());
  double sum = 0;
  for (double& v : a) sum += (v = std::exp(v - top));
  std::vector<double> out;
  for (double v : a) out.push_back(v / sum);
  out.push_back(1.0 / (1.0 + std::exp(-b[0])));
  return out;
}

// Median seconds of `call` (which waits for the queue), after one warm-up call, repeated for
// about `seconds` and at least 3 times.
double median_seconds(const std::function<void()>& call, double seconds) {
  using clock = std::chrono::steady_clock;
  call();
  std::vector<double> times;
  const auto start = clock::now();
  while (times.size() < 3 ||
         (std::chrono::duration<double>(clock::now() - start).count() < seconds &&
          times.size() < 1000)) {
    const auto t0 = clock::now();
    call();
    times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

FILE* tsv_file = nullptr;

void emit(const std::string& backend, const std::string& bench, const std::string& precision,
          const std::string& shape, int64_t items, double seconds, double gflops, double check,
          const std::string& note) {
  std::printf("%-8s | %-6s | %-5s | %-36s | %10.3f | %12.0f | %8.1f | %9.2e | %s\n",
              backend.c_str(), bench.c_str(), precision.c_str(), shape.c_str(), seconds * 1e3,
              double(items) / seconds, gflops, check, note.c_str());
  if (tsv_file != nullptr)
    std::fprintf(tsv_file, "%s\t%s\t%s\t%s\t%lld\t%.9g\t%.6g\t%.6g\t%s\n", backend.c_str(),
                 bench.c_str(), precision.c_str(), shape.c_str(), static_cast<long long>(items),
                 seconds, gflops, check, note.c_str());
}

// The network's weights on the device, stored as T where the plan reads 16-bit operands.
template <class T>
struct DeviceNetwork {
  kaas::DeviceBuffer<float> conv_b, b1, w2, b2, wa, ba, wb, bb;
  kaas::DeviceBuffer<T> conv_w, w1;
};

template <class T>
kaas::DeviceBuffer<T> stored_as(const Queue& queue, const std::vector<float>& values) {
  auto full = kaas::to_device(queue, values);
  if constexpr (std::is_same_v<T, float>) {
    return full;
  } else {
    auto narrow = kaas::make_device_buffer<T>(queue, values.size());
    kaas::convert(queue, kaas::View1<const float>(full.view()), narrow.view());
    queue.wait();
    return narrow;
  }
}

kaas::DenseLayer layer(const kaas::DeviceBuffer<float>& w, const kaas::DeviceBuffer<float>& b,
                       int64_t in, int64_t out, kaas::Activation act) {
  kaas::DenseLayer l;
  l.w = kaas::make_view<2>(static_cast<const float*>(w.data()), {in, out});
  l.b = kaas::make_view(static_cast<const float*>(b.data()), out);
  l.epilogue.activation = act;
  return l;
}

// Tolerances of the first patches' outputs (probabilities) against the double forward pass.
double tolerance(const std::string& precision) {
  return precision == "fp32" ? 1e-4 : precision == "fp16" ? 1e-2 : 3e-2;
}

template <class T>
DeviceNetwork<T> network_on_device(const Queue& queue, const Network& net) {
  return DeviceNetwork<T>{
      kaas::to_device(queue, net.conv_b.values), kaas::to_device(queue, net.b1.values),
      kaas::to_device(queue, net.w2.values),     kaas::to_device(queue, net.b2.values),
      kaas::to_device(queue, net.wa.values),     kaas::to_device(queue, net.ba.values),
      kaas::to_device(queue, net.wb.values),     kaas::to_device(queue, net.bb.values),
      stored_as<T>(queue, net.conv_w.values),    stored_as<T>(queue, net.w1.values)};
}

// The device weights as conv_dense_heads reads them.
template <class T>
kaas::ConvDenseHeadsWeights<T> heads_weights(const DeviceNetwork<T>& d) {
  kaas::ConvDenseHeadsWeights<T> weights;
  weights.conv_weight =
      kaas::make_view<4>(static_cast<const T*>(d.conv_w.data()), {kFilters, 1, kKernel, kKernel});
  weights.conv_bias = kaas::make_view(static_cast<const float*>(d.conv_b.data()), kFilters);
  weights.conv.layout = kaas::Layout::kNHWC;
  weights.conv.epilogue.activation = kaas::Activation::kRelu;
  weights.dense1_weight = kaas::make_view<2>(static_cast<const T*>(d.w1.data()), {kFlat, kHidden1});
  weights.dense1_bias = kaas::make_view(static_cast<const float*>(d.b1.data()), kHidden1);
  weights.dense1_epilogue.activation = kaas::Activation::kRelu;
  weights.hidden = layer(d.w2, d.b2, kHidden1, kHidden2, kaas::Activation::kRelu);
  weights.head_a = layer(d.wa, d.ba, kHidden2, kClasses, kaas::Activation::kNone);
  weights.head_b = layer(d.wb, d.bb, kHidden2, 1, kaas::Activation::kSigmoid);
  return weights;
}

// The slab as the ONNX model's fused plan sizes it (models/onnx_model.h defaults): tiles of up
// to 256 patches; on the CPU the conv rows that fit 8 MiB, on a GPU the whole conv output.
template <class T>
kaas::ConvDenseHeadsWorkspace slab_plan(const Queue& queue, int64_t largest) {
  kaas::ConvDenseHeadsWorkspace workspace;
  workspace.batch_tile = std::min<int64_t>(largest, 256);
  const int64_t budget =
      kaas::conv_dense_heads_slab_budget(queue.backend(), kConvOut, kConvOut, kFilters,
                                         workspace.batch_tile, 8 << 20, int64_t(sizeof(T)));
  workspace.rows_per_pass = kaas::conv_dense_heads_slab_rows(
      kConvOut, kConvOut, kFilters, workspace.batch_tile, budget, int64_t(sizeof(T)));
  return workspace;
}

// The largest difference of the first patches' outputs from the double forward pass on the
// inputs as stored.
template <class T>
double worst_difference(const Network& net, const std::vector<float>& host_input, int64_t batch,
                        const std::vector<float>& got_a, const std::vector<float>& got_b) {
  std::vector<float> stored_input(host_input.begin(),
                                  host_input.begin() + kCheckedPatches * kPatch * kPatch);
  if constexpr (!std::is_same_v<T, float>) {
    for (float& v : stored_input) v = kaas::math::to_float(kaas::math::round_to<T>(v));
  }
  double worst = 0;
  for (int64_t p = 0; p < std::min(batch, kCheckedPatches); ++p) {
    const auto want = reference_forward(net, stored_input.data() + p * kPatch * kPatch);
    for (int64_t c = 0; c < kClasses; ++c)
      worst = std::max(worst, std::abs(double(got_a[size_t(p * kClasses + c)]) - want[size_t(c)]));
    worst = std::max(worst, std::abs(double(got_b[size_t(p)]) - want[kClasses]));
  }
  return worst;
}

template <class T>
bool bench_emtrk(const Queue& queue, const Network& net, const Options& options,
                 const std::string& precision) {
  const DeviceNetwork<T> d = network_on_device<T>(queue, net);
  const kaas::ConvDenseHeadsWeights<T> weights = heads_weights(d);

  bool ok = true;
  const int64_t largest = *std::max_element(options.batches.begin(), options.batches.end());
  // Inputs uniform in [-5, 15], the rescaled ADC range of LArSoft's DataProviderAlg.
  std::vector<float> host_input(size_t(largest * kPatch * kPatch));
  std::mt19937 rng(20261125);
  std::uniform_real_distribution<float> adc(-5.0f, 15.0f);
  for (float& v : host_input) v = adc(rng);
  const auto input = stored_as<T>(queue, host_input);
  auto dense1 = kaas::make_device_buffer<float>(queue, size_t(largest * kHidden1));
  auto out_a = kaas::make_device_buffer<float>(queue, size_t(largest * kClasses));
  auto out_b = kaas::make_device_buffer<float>(queue, size_t(largest));
  kaas::ConvDenseHeadsWorkspace workspace = slab_plan<T>(queue, largest);
  auto slab = kaas::make_device_buffer<T>(
      queue, size_t(workspace.batch_tile * workspace.rows_per_pass * kConvOut * kFilters));
  workspace.slab = slab.data();
  for (int64_t batch : options.batches) {
    workspace.dense1 = kaas::make_view<2>(dense1.data(), {batch, kHidden1});
    const auto in =
        kaas::make_view<4>(static_cast<const T*>(input.data()), {batch, kPatch, kPatch, 1});
    const auto a = kaas::make_view<2>(out_a.data(), {batch, kClasses});
    const auto b = kaas::make_view<2>(out_b.data(), {batch, 1});
    auto call = [&] {
      kaas::conv_dense_heads<T>(queue, in, weights, workspace, a, b);
      queue.wait();
    };
    const double seconds = median_seconds(call, options.seconds);
    // The first patches against the double forward pass on the inputs as stored.
    const std::vector<float> got_a = kaas::to_host(queue, out_a),
                             got_b = kaas::to_host(queue, out_b);
    const double worst = worst_difference<T>(net, host_input, batch, got_a, got_b);
    const bool passed = worst <= tolerance(precision);
    ok = ok && passed;
    emit(std::string(queue.backend().name()), "emtrk", precision, "batch " + std::to_string(batch),
         batch, seconds, kFlopsPerPatch * double(batch) / seconds / 1e9, worst,
         passed ? ""
                : "FAIL: outputs differ from the double forward pass by more than " +
                      std::to_string(tolerance(precision)));
    if (!options.save_dir.empty() && std::is_same_v<T, float> && batch == largest) {
      save_array(options.save_dir, "check_input", {batch, kPatch, kPatch, 1}, host_input.data());
      save_array(options.save_dir, "check_em_trk_none", {batch, kClasses}, got_a.data());
      save_array(options.save_dir, "check_michel", {batch, 1}, got_b.data());
    }
  }
  return ok;
}

// Points for the kNN rows: uniform in [0, 1)^3 as one event, or toy-event hits (one event per
// plane; wire and drift in cm, charge / 10) up to n points.
kaas::cases::PointSet knn_points(bool clustered, int64_t n) {
  if (!clustered) return kaas::cases::uniform_points(n, 3, 1);
  kaas::cases::PointSet set;
  set.dims = 3;
  set.splits = {0};
  for (uint64_t e = 1; set.size() < n; ++e) {
    const auto event = kaas::examples::make_toy_event({}, e);
    for (int plane = 0; plane < int(event.planes.size()) && set.size() < n; ++plane) {
      for (const auto& hit : event.hits) {
        if (hit.plane != plane || set.size() >= n) continue;
        set.coords.insert(set.coords.end(),
                          {float(hit.wire) * 0.5f, hit.peak_tick * 0.08f, hit.peak_adc / 10.0f});
      }
      set.splits.push_back(set.size());
    }
  }
  return set;
}

struct KnnRun {
  std::vector<int32_t> indices;
  double seconds = 0;
};

KnnRun run_knn(const Queue& queue, const kaas::cases::PointSet& set, int k, double seconds) {
  const int64_t n = set.size();
  const auto points = kaas::to_device(queue, set.coords);
  const auto splits = kaas::to_device(queue, set.splits);
  auto indices = kaas::make_device_buffer<int32_t>(queue, size_t(n * k));
  auto distances = kaas::make_device_buffer<float>(queue, size_t(n * k));
  auto call = [&] {
    kaas::knn(queue, kaas::make_view<2>(static_cast<const float*>(points.data()), {n, set.dims}),
              kaas::View1<const int64_t>(splits.view()), k,
              kaas::make_view<2>(indices.data(), {n, int64_t(k)}),
              kaas::make_view<2>(distances.data(), {n, int64_t(k)}));
    queue.wait();
  };
  KnnRun run;
  run.seconds = median_seconds(call, seconds);
  run.indices = kaas::to_host(queue, indices);
  return run;
}

void bench_knn(const Queue& queue, const Options& options) {
  constexpr int kK = 16;
  const Queue serial(kaas::find_backend("serial"));
  for (bool clustered : {false, true}) {
    for (int64_t n : options.knn_points) {
      const auto set = knn_points(clustered, n);
      const KnnRun run = run_knn(queue, set, kK, options.seconds);
      std::string note;
      double differing = -1;
      if (n <= 100'000) {  // the serial backend's rows to compare with
        const KnnRun reference =
            queue.backend().name() == "serial" ? run : run_knn(serial, set, kK, 0);
        int64_t rows = 0;
        for (int64_t i = 0; i < set.size(); ++i)
          rows += !std::equal(run.indices.begin() + i * kK, run.indices.begin() + (i + 1) * kK,
                              reference.indices.begin() + i * kK);
        differing = double(rows);
        note = std::to_string(rows) + " rows differ from serial";
      }
      emit(std::string(queue.backend().name()), "knn", "fp32",
           std::string(clustered ? "clustered" : "uniform") + " N=" + std::to_string(set.size()) +
               " D=3 K=16 events=" + std::to_string(set.splits.size() - 1),
           set.size(), run.seconds, 0, differing, note);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-kernel-bench: EmTrkMichelId (fused conv-dense-heads) and kNN at the kernel level"};
  Options o;
  app.add_option("--backend", o.backend, "backend (serial, openmp, gpu_emu, cuda, hip, auto)");
  app.add_option("--batches", o.batches, "EmTrkMichelId batch sizes")->delimiter(',');
  app.add_option("--precisions", o.precisions, "fp32, bf16, fp16")
      ->delimiter(',')
      ->check(kaas::cli::one_of({"fp32", "bf16", "fp16"}));
  app.add_option("--knn-points", o.knn_points, "kNN point counts")->delimiter(',');
  app.add_option("--only", o.only, "run only one part")->check(kaas::cli::one_of({"emtrk", "knn"}));
  app.add_option("--seconds", o.seconds, "time per measurement (at least 3 calls)");
  app.add_option("--weights", o.weights_dir,
                 "EmTrkMichelId weights as .npy (kaas-make-emtrk-model names)");
  app.add_option("--save-weights", o.save_dir,
                 "write the weights, the largest batch's inputs and kaas's fp32 outputs as .npy");
  app.add_option("--tsv", o.tsv, "write the measurements as tab-separated rows");
  if (const auto status = app.parse(argc, argv)) return *status;
  try {
    const kaas::Backend& backend =
        o.backend == "auto" ? kaas::default_backend() : kaas::find_backend(o.backend);
    if (!backend.available()) {
      std::fprintf(stderr, "kaas-kernel-bench: backend %s is not available here: %s\n",
                   std::string(backend.name()).c_str(), backend.unavailable_reason().c_str());
      return 2;
    }
    for (int64_t b : o.batches)
      kaas::require(b >= 1, "kaas-kernel-bench", "--batches", ">= 1", std::to_string(b));
    if (!o.tsv.empty()) {
      tsv_file = std::fopen(o.tsv.c_str(), "w");
      kaas::require(tsv_file != nullptr, "kaas-kernel-bench", "--tsv", "a writable file", o.tsv);
      std::fprintf(tsv_file,
                   "backend\tbench\tprecision\tshape\titems\tseconds\tgflops\tcheck\tnote\n");
    }
    Queue queue(backend);
    std::printf("%-8s | %-6s | %-5s | %-36s | %10s | %12s | %8s | %9s | %s\n", "backend", "bench",
                "prec", "shape", "median ms", "items/s", "GFLOP/s", "check", "note");
    bool ok = true;
    if (o.only.empty() || o.only == "emtrk") {
      const Network net =
          o.weights_dir.empty() ? random_network(20261125) : load_network(o.weights_dir);
      if (!o.save_dir.empty()) {
        std::filesystem::create_directories(o.save_dir);
        for (const Weight* w : const_cast<Network&>(net).all())
          save_array(o.save_dir, w->name, w->shape, w->values.data());
      }
      for (const std::string& p : o.precisions) {
        if (p == "fp32") ok = bench_emtrk<float>(queue, net, o, p) && ok;
        if (p == "bf16") ok = bench_emtrk<kaas::bf16>(queue, net, o, p) && ok;
        if (p == "fp16") ok = bench_emtrk<kaas::fp16>(queue, net, o, p) && ok;
      }
    }
    if (o.only.empty() || o.only == "knn") bench_knn(queue, o);
    if (tsv_file != nullptr) std::fclose(tsv_file);
    return ok ? 0 : 1;
  } catch (const kaas::Error& e) {
    std::fprintf(stderr, "kaas-kernel-bench: %s\n", e.what());
    return 2;
  }
}
