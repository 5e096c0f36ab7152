// conv2d on the EmTrkMichelId first layer (5x5, 1 -> 48 channels, VALID, 48x48 NHWC patches,
// bias + ReLU) per backend and implementation, with oneDNN's convolution_forward (post-op ReLU,
// layouts of its choice, execution only) as the peer in the same run. The emulated GPU is a
// test device and is not benchmarked.

#include <benchmark/benchmark.h>

#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/counters.h"
#include "bench/registry.h"
#include "kaas/backends/buffer.h"
#include "kaas/kernels/conv2d.h"

#if KAAS_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace kaas::bench {
namespace {

constexpr int64_t kIn = 48, kOut = 44, kChannels = 48, kKernel = 5;

double emtrk_flops(int64_t batch) {
  return 2.0 * double(batch) * kOut * kOut * kChannels * kKernel * kKernel;
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void conv2d_kaas(benchmark::State& state, const Backend* backend, Conv2dImpl impl) {
  const int64_t batch = state.range(0);
  Queue queue(*backend);
  const size_t nx = size_t(batch * kIn * kIn), nw = size_t(kChannels * kKernel * kKernel);
  const size_t ny = size_t(batch * kOut * kOut * kChannels);
  auto x = make_device_buffer<float>(queue, nx), w = make_device_buffer<float>(queue, nw);
  auto b = make_device_buffer<float>(queue, kChannels), y = make_device_buffer<float>(queue, ny);
  const auto hx = random_values(nx, 1), hw = random_values(nw, 2), hb = random_values(kChannels, 3);
  copy_to_device(queue, std::span<const float>(hx), x);
  copy_to_device(queue, std::span<const float>(hw), w);
  copy_to_device(queue, std::span<const float>(hb), b);
  Conv2dParams params;
  params.layout = Layout::kNHWC;
  params.auto_pad = AutoPad::kValid;
  params.epilogue.activation = Activation::kRelu;
  params.impl = impl;
  const auto xv = make_view<4>(static_cast<const float*>(x.data()), {batch, kIn, kIn, 1});
  const auto wv =
      make_view<4>(static_cast<const float*>(w.data()), {kChannels, 1, kKernel, kKernel});
  const auto bv = make_view(static_cast<const float*>(b.data()), kChannels);
  const auto yv = make_view<4>(y.data(), {batch, kOut, kOut, kChannels});
  for (auto _ : state) {
    conv2d(queue, xv, wv, bv, yv, params);
    queue.wait();
  }
  set_flops(state, emtrk_flops(batch));
  state.counters["patches_per_s"] =
      benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
}

#if KAAS_BENCH_HAVE_DNNL
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
  auto with_batches = [](benchmark::internal::Benchmark* b) {
    for (int64_t batch : {1, 16, 64, 256, 1024}) b->Arg(batch);
    b->ArgName("batch")->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || backend->id() == BackendId::kGpuEmu) continue;
    const std::string name(backend->name());
    std::vector<Conv2dImpl> impls = {Conv2dImpl::kPortable};
    const bool cpu = backend->id() == BackendId::kSerial || backend->id() == BackendId::kOpenmp;
    if (cpu && conv2d_cpu_fast_isa_available()) impls.push_back(Conv2dImpl::kCpuFast);
    if (cpu && conv2d_cpu_fast_avx512_isa_available()) {
      impls.push_back(Conv2dImpl::kCpuFastAvx512);
    }
    for (Conv2dImpl impl : impls) {
      with_batches(benchmark::RegisterBenchmark(
          ("conv2d_emtrk/" + name + "/" + std::string(to_string(impl))).c_str(), conv2d_kaas,
          backend, impl));
    }
  }
#if KAAS_BENCH_HAVE_DNNL
  with_batches(benchmark::RegisterBenchmark("conv2d_emtrk/peer_onednn", conv2d_onednn));
#endif
}

KAAS_BENCHMARKS(register_conv2d);

}  // namespace
}  // namespace kaas::bench
