// dense / GEMM at the EmTrkMichelId shapes (92,928 -> 128, the layer with 84% of the FLOPs;
// 128 -> 32), per backend and implementation, with OpenBLAS sgemm and oneDNN inner product as
// peers in the same run; softmax on the classifier head and on long lines.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/registry.h"
#include "kaas/backends/buffer.h"
#include "kaas/build_config.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/softmax.h"

#if KAAS_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if KAAS_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace kaas::bench {
namespace {

constexpr int64_t kDenseIn = 92'928;  // 44 x 44 x 48 conv outputs
constexpr int64_t kDenseOut = 128;

double dense_flops(int64_t batch, int64_t in, int64_t out) {
  return 2.0 * batch * in * out;
}

void dense_kaas(benchmark::State& state, const Backend* backend, GemmImpl impl, int64_t in,
                int64_t out) {
  const int64_t batch = state.range(0);
  Queue queue(*backend);
  auto x = make_device_buffer<float>(queue, batch * in),
       w = make_device_buffer<float>(queue, in * out);
  auto b = make_device_buffer<float>(queue, out), y = make_device_buffer<float>(queue, batch * out);
  const std::vector<float> xs(batch * in, 0.01f), ws(in * out, 0.001f), bs(out, 0.1f);
  copy_to_device(queue, std::span<const float>(xs), x);
  copy_to_device(queue, std::span<const float>(ws), w);
  copy_to_device(queue, std::span<const float>(bs), b);
  const auto xv = make_view<2>(static_cast<const float*>(x.data()), {batch, in});
  const auto wv = make_view<2>(static_cast<const float*>(w.data()), {in, out});
  const auto yv = make_view<2>(y.data(), {batch, out});
  for (auto _ : state) {
    dense(queue, xv, wv, b.view(), yv, {Activation::kRelu, 0}, impl);
    queue.wait();
  }
  set_flops(state, dense_flops(batch, in, out));
  const GemmImpl chosen =
      gemm_chosen_impl(queue, xv, wv, yv, GemmParams{false, false, 1, 1, {}, impl});
  state.SetLabel(chosen == GemmImpl::kVendor          ? gemm_vendor_name(queue)
                 : chosen == GemmImpl::kCpuFastAvx512 ? "cpu_fast_avx512"
                                                      : "portable tiled");
}

#if KAAS_HAVE_OPENBLAS
void dense_openblas(benchmark::State& state, int64_t in, int64_t out) {
  const int64_t batch = state.range(0);
  std::vector<float> x(batch * in, 0.01f), w(in * out, 0.001f), y(batch * out);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(batch), int(out), int(in), 1.0f,
                x.data(), int(in), w.data(), int(out), 0.0f, y.data(), int(out));
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, dense_flops(batch, in, out));
  state.SetLabel(std::string("cblas_sgemm, core ") + openblas_get_corename());
}
#endif

#if KAAS_BENCH_HAVE_DNNL
// oneDNN inner product (weights reordered once into its preferred layout), bias + ReLU post-op.
void dense_onednn(benchmark::State& state, int64_t in, int64_t out) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const int64_t batch = state.range(0);
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const memory::desc src_md({batch, in}, dt::f32, tag::nc), bias_md({out}, dt::f32, tag::a);
  const memory::desc dst_md({batch, out}, dt::f32, tag::nc);
  const memory::desc w_any({out, in}, dt::f32, tag::any), w_plain({out, in}, dt::f32, tag::oi);
  post_ops ops;
  ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  primitive_attr attr;
  attr.set_post_ops(ops);
  const inner_product_forward::primitive_desc pd(
      inner_product_forward::desc(prop_kind::forward_inference, src_md, w_any, bias_md, dst_md),
      attr, eng);
  std::vector<float> x(batch * in, 0.01f), w(in * out, 0.001f), b(out, 0.1f), y(batch * out);
  memory src(src_md, eng, x.data()), weights_plain(w_plain, eng, w.data()),
      bias(bias_md, eng, b.data());
  memory dst(dst_md, eng, y.data()), weights(pd.weights_desc(), eng);
  reorder(weights_plain, weights).execute(strm, weights_plain, weights);
  inner_product_forward ip(pd);
  for (auto _ : state) {
    ip.execute(strm, {{DNNL_ARG_SRC, src},
                      {DNNL_ARG_WEIGHTS, weights},
                      {DNNL_ARG_BIAS, bias},
                      {DNNL_ARG_DST, dst}});
    strm.wait();
  }
  set_flops(state, dense_flops(batch, in, out));
  state.SetLabel("oneDNN inner_product " + std::string(pd.impl_info_str()));
}
#endif

void softmax_kaas(benchmark::State& state, const Backend* backend, int64_t length) {
  const int64_t rows = state.range(0);
  Queue queue(*backend);
  auto x = make_device_buffer<float>(queue, rows * length),
       y = make_device_buffer<float>(queue, rows * length);
  const std::vector<float> xs(rows * length, 0.5f);
  copy_to_device(queue, std::span<const float>(xs), x);
  for (auto _ : state) {
    softmax(queue, SoftmaxKind::kSoftmax,
            make_view<3>(static_cast<const float*>(x.data()), {rows, length, 1}),
            make_view<3>(y.data(), {rows, length, 1}));
    queue.wait();
  }
  set_bandwidth(state, 8.0 * rows * length);
}

void register_dense() {
  const std::vector<int64_t> batches = {1, 16, 64, 256, 1024};
  auto configure = [&](benchmark::internal::Benchmark* b) {
    for (int64_t batch : batches) b->Arg(batch);
    b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
  };
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || backend->id() == BackendId::kGpuEmu) continue;
    const std::string name(backend->name());
    configure(benchmark::RegisterBenchmark(("dense_92928x128/" + name + "/portable").c_str(),
                                           dense_kaas, backend, GemmImpl::kPortable, kDenseIn,
                                           kDenseOut));
    configure(benchmark::RegisterBenchmark(("dense_92928x128/" + name + "/auto").c_str(),
                                           dense_kaas, backend, GemmImpl::kAuto, kDenseIn,
                                           kDenseOut));
    configure(benchmark::RegisterBenchmark(("dense_128x32/" + name + "/portable").c_str(),
                                           dense_kaas, backend, GemmImpl::kPortable, kDenseOut,
                                           int64_t{32}));
    configure(benchmark::RegisterBenchmark(("dense_128x32/" + name + "/auto").c_str(), dense_kaas,
                                           backend, GemmImpl::kAuto, kDenseOut, int64_t{32}));
    for (int64_t length : {int64_t{3}, int64_t{1000}}) {
      benchmark::RegisterBenchmark(("softmax_len" + std::to_string(length) + "/" + name).c_str(),
                                   softmax_kaas, backend, length)
          ->Arg(length == 3 ? 52'000 : 256)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
#if KAAS_HAVE_OPENBLAS
  configure(benchmark::RegisterBenchmark("dense_92928x128/peer/openblas_sgemm", dense_openblas,
                                         kDenseIn, kDenseOut));
  configure(benchmark::RegisterBenchmark("dense_128x32/peer/openblas_sgemm", dense_openblas,
                                         kDenseOut, int64_t{32}));
#endif
#if KAAS_BENCH_HAVE_DNNL
  configure(benchmark::RegisterBenchmark("dense_92928x128/peer/onednn", dense_onednn, kDenseIn,
                                         kDenseOut));
  configure(benchmark::RegisterBenchmark("dense_128x32/peer/onednn", dense_onednn, kDenseOut,
                                         int64_t{32}));
#endif
}

KAAS_BENCHMARKS(register_dense);

}  // namespace
}  // namespace kaas::bench
