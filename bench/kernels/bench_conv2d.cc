// conv2d (kernels/conv2d.h): the cases of cases/conv2d_cases.cc per backend and implementation,
// among them the EmTrkMichelId first layer (5x5, 1 -> 48 channels, VALID, 48x48 NHWC patches,
// bias + ReLU) by batch, with oneDNN's convolution_forward (post-op ReLU, layouts of its choice,
// execution only) as the peer in the same run.

#include <benchmark/benchmark.h>

#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/conv2d_cases.h"
#include "cases/reference.h"

#if KAAS_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace kaas::bench {
namespace {

#if KAAS_BENCH_HAVE_DNNL
constexpr int64_t kIn = 48, kOut = 44, kChannels = 48, kKernel = 5;

double emtrk_flops(int64_t batch) {
  return 2.0 * double(batch) * kOut * kOut * kChannels * kKernel * kKernel;
}

std::vector<float> random_values(size_t n, unsigned seed) {
  return cases::random_floats(n, seed);
}

void conv2d_onednn(benchmark::State& state) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  const int64_t batch = state.range(0);
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const memory::dims src_dims = {batch, 1, kIn, kIn}, wei_dims = {kChannels, 1, kKernel, kKernel},
                     bia_dims = {kChannels}, dst_dims = {batch, kChannels, kOut, kOut};
  const convolution_forward::desc desc(
      prop_kind::forward_inference, algorithm::convolution_direct,
      memory::desc(src_dims, dt::f32, tag::any), memory::desc(wei_dims, dt::f32, tag::any),
      memory::desc(bia_dims, dt::f32, tag::x), memory::desc(dst_dims, dt::f32, tag::any), {1, 1},
      {0, 0}, {0, 0});
  post_ops ops;
  ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  primitive_attr attr;
  attr.set_post_ops(ops);
  const convolution_forward::primitive_desc pd(desc, attr, eng);
  // User data in NHWC / OIHW, reordered once (outside the timing) to oneDNN's choice.
  const auto hx = random_values(size_t(batch * kIn * kIn), 1);
  const auto hw = random_values(size_t(kChannels * kKernel * kKernel), 2);
  auto hb = random_values(kChannels, 3);
  memory user_src({src_dims, dt::f32, tag::nhwc}, eng, const_cast<float*>(hx.data()));
  memory user_wei({wei_dims, dt::f32, tag::oihw}, eng, const_cast<float*>(hw.data()));
  memory bia({bia_dims, dt::f32, tag::x}, eng, hb.data());
  memory src(pd.src_desc(), eng), wei(pd.weights_desc(), eng), dst(pd.dst_desc(), eng);
  reorder(user_src, src).execute(strm, user_src, src);
  reorder(user_wei, wei).execute(strm, user_wei, wei);
  strm.wait();
  convolution_forward conv(pd);
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bia}, {DNNL_ARG_DST, dst}};
  for (auto _ : state) {
    conv.execute(strm, args);
    strm.wait();
  }
  state.SetLabel(pd.impl_info_str());
  set_flops(state, emtrk_flops(batch));
  state.counters["patches_per_s"] =
      benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
}
#endif

void register_conv2d() {
  register_kernel_cases("conv2d");
#if KAAS_BENCH_HAVE_DNNL
  for (int64_t batch : cases::conv_emtrk_batches()) {
    benchmark::RegisterBenchmark("conv2d_emtrk/peer_onednn", conv2d_onednn)
        ->Arg(batch)
        ->ArgName("batch")
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
#endif
}

KAAS_BENCHMARKS(register_conv2d);

}  // namespace
}  // namespace kaas::bench
