// dense / GEMM (kernels/gemm.h): the cases of cases/gemm_cases.cc per backend and
// implementation, among them the EmTrkMichelId shapes (92,928 -> 128, the layer with 84% of the
// FLOPs; 128 -> 32) by batch, with OpenBLAS sgemm and oneDNN inner product as peers in the same
// run.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/gemm_cases.h"
#include "kaas/build_config.h"

#if KAAS_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if KAAS_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace kaas::bench {
namespace {

double dense_flops(int64_t batch, int64_t in, int64_t out) {
  return 2.0 * batch * in * out;
}

#if KAAS_HAVE_OPENBLAS
void dense_openblas(benchmark::State& state, int64_t in, int64_t out) {
  const int64_t batch = state.range(0);  // the case's M
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
  const int64_t batch = state.range(0);  // the case's M
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

void register_gemm() {
  // min_time 0.3 s: the large dense layers take ~0.1 s per iteration on the portable path.
  register_kernel_cases("gemm", [](benchmark::internal::Benchmark* b) { b->MinTime(0.3); });
  for (const cases::GemmCase& c : cases::gemm_shapes()) {
    if (!c.dense || c.integers) continue;
    const std::string shape = "dense_" + std::to_string(c.k) + "x" + std::to_string(c.n);
    [[maybe_unused]] auto configure = [&](benchmark::internal::Benchmark* b) {
      b->Arg(c.m)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(0.3);
    };
#if KAAS_HAVE_OPENBLAS
    configure(benchmark::RegisterBenchmark((shape + "/peer/openblas_sgemm").c_str(), dense_openblas,
                                           c.k, c.n));
#endif
#if KAAS_BENCH_HAVE_DNNL
    configure(
        benchmark::RegisterBenchmark((shape + "/peer/onednn").c_str(), dense_onednn, c.k, c.n));
#endif
  }
}

KAAS_BENCHMARKS(register_gemm);

}  // namespace
}  // namespace kaas::bench
