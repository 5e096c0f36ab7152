#include "kaas/kernels/sparse_conv_dense.h"

#include <algorithm>
#include <array>
#include <string>

#include "kaas/backends/buffer.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/backends/cpu/host_team.h"
#include "kaas/kernels/cpu/sparse_dense_simd.h"
#include "kaas/kernels/detail/checks.h"
#include "kaas/kernels/detail/impl_tables.h"
#include "kaas/kernels/impl_table.h"
#include "kaas/kernels/scan.h"

namespace kaas {

using detail::str;

namespace {

bool host_cpu(const Queue& queue) {
  return host_simd(queue.backend_id());
}

// Step 1 on the CPU backends: per image, which inputs are non-zero, OR-ed over the kernel's
// columns and then its rows; then the active positions numbered in order.
int64_t host_index(const Queue& queue, View<const float, 4> images, int64_t kh, int64_t kw,
                   View<int32_t, 3> index, View1<int32_t> offsets, View1<int32_t> positions) {
  const int64_t n = images.extent[0], h = images.extent[1], w = images.extent[2];
  const int64_t c = images.extent[3], oh = index.extent[1], ow = index.extent[2];
  const HostThreads threads = traits_of(queue.backend_id()).threads;
  std::vector<int64_t> first(size_t(n) + 1, 0);  // per image, its first position's number
  host::for_shares(threads, true, n, [&](int64_t image_begin, int64_t image_end) {
    for (int64_t i = image_begin; i < image_end; ++i) {
      std::vector<uint8_t> nonzero(size_t(h * w)), columns(size_t(h * ow));
      if (c == 1 && images.stride[2] == 1) {
        for (int64_t y = 0; y < h; ++y) {
          const float* row = &images(i, y, 0, 0);
          uint8_t* out = &nonzero[size_t(y * w)];
          for (int64_t x = 0; x < w; ++x) out[x] = row[x] != 0.0f;
        }
      } else {
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x) {
            uint8_t any = 0;
            for (int64_t k = 0; k < c; ++k) any |= images(i, y, x, k) != 0.0f;
            nonzero[size_t(y * w + x)] = any;
          }
      }
      for (int64_t y = 0; y < h; ++y) {  // x innermost: vectorised
        uint8_t* out = &columns[size_t(y * ow)];
        const uint8_t* in = &nonzero[size_t(y * w)];
        for (int64_t x = 0; x < ow; ++x) out[x] = in[x];
        for (int64_t d = 1; d < kw; ++d)
          for (int64_t x = 0; x < ow; ++x) out[x] |= in[x + d];
      }
      int32_t* out = &index(i, 0, 0);
      int64_t active = 0;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) out[y * ow + x] = 0;
        for (int64_t d = 0; d < kh; ++d)
          for (int64_t x = 0; x < ow; ++x) out[y * ow + x] |= columns[size_t((y + d) * ow + x)];
        for (int64_t x = 0; x < ow; ++x) active += out[y * ow + x];
      }
      first[size_t(i) + 1] = active;
    }
  });
  for (int64_t i = 0; i < n; ++i) first[size_t(i) + 1] += first[size_t(i)];
  const int64_t count = first[size_t(n)];
  require(positions.extent[0] >= count && positions.stride[0] == 1, "sparse_conv_index",
          "positions extent", ">= " + str(count) + " (the active positions)",
          str(positions.extent[0]));
  const int64_t per_image = oh * ow;
  host::for_shares(threads, true, n, [&](int64_t image_begin, int64_t image_end) {
    for (int64_t i = image_begin; i < image_end; ++i) {
      int32_t* flat = index.data + i * per_image;
      int32_t* offs = offsets.data + i * per_image;
      int32_t next = int32_t(first[size_t(i)]);
      for (int64_t j = 0; j < per_image; ++j) {
        const bool active = flat[j] != 0;
        offs[j] = next;
        if (active) positions.data[next] = int32_t(i * per_image + j);
        flat[j] = active ? next : -1;
        next += active;
      }
    }
  });
  return count;
}

}  // namespace

std::vector<float> sparse_conv_constant(const std::vector<float>& conv_bias, int64_t channels,
                                        const Epilogue& conv_epilogue) {
  require(conv_bias.empty() || int64_t(conv_bias.size()) == channels, "sparse_conv_constant",
          "conv bias extent", "0 or " + str(channels), str(int64_t(conv_bias.size())));
  std::vector<float> c(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k)
    c[size_t(k)] = apply(conv_epilogue, conv_bias.empty() ? 0.0f : conv_bias[size_t(k)]);
  return c;
}

std::vector<float> sparse_dense1_constant(const std::vector<float>& conv_constant,
                                          const float* dense1_weight, int64_t k, int64_t n1,
                                          const float* dense1_bias) {
  const int64_t channels = int64_t(conv_constant.size());
  require(channels > 0 && k % channels == 0, "sparse_dense1_constant", "K",
          "a multiple of the conv channels (" + str(channels) + ")", str(k));
  std::vector<double> sum(static_cast<size_t>(n1), 0.0);
  for (int64_t row = 0; row < k; ++row) {
    const double c = conv_constant[size_t(row % channels)];
    if (c == 0.0) continue;  // relu(bias) is often 0: nothing to add
    const float* w = dense1_weight + row * n1;
    for (int64_t j = 0; j < n1; ++j) sum[size_t(j)] += c * double(w[j]);
  }
  std::vector<float> out(static_cast<size_t>(n1));
  for (int64_t j = 0; j < n1; ++j)
    out[size_t(j)] = float(sum[size_t(j)] + (dense1_bias ? double(dense1_bias[j]) : 0.0));
  return out;
}

int64_t sparse_conv_index(const Queue& queue, View<const float, 4> images, int64_t kernel_h,
                          int64_t kernel_w, View<int32_t, 3> index, View1<int32_t> offsets,
                          View1<int32_t> scan_workspace, View1<int32_t> positions,
                          LaunchConfig config) {
  constexpr const char* kWhere = "sparse_conv_index";
  detail::check_view(images, kWhere, "images");
  detail::check_view(index, kWhere, "index");
  detail::check_config(config, kWhere);
  const auto& x = images.extent;
  require(kernel_h >= 1 && kernel_w >= 1 && x[1] >= kernel_h && x[2] >= kernel_w, kWhere,
          "images height x width", "at least the kernel's " + str(kernel_h) + "x" + str(kernel_w),
          str(x[1]) + "x" + str(x[2]));
  const int64_t oh = x[1] - kernel_h + 1, ow = x[2] - kernel_w + 1, total = x[0] * oh * ow;
  require(index.extent[0] == x[0] && index.extent[1] == oh && index.extent[2] == ow, kWhere,
          "index shape", shape_string(std::array<int64_t, 3>{x[0], oh, ow}),
          shape_string(index.extent));
  require(index.stride[2] == 1 && index.stride[1] == ow && index.stride[0] == oh * ow, kWhere,
          "index", "contiguous", "strided");
  require(offsets.extent[0] >= total && offsets.stride[0] == 1, kWhere, "offsets extent",
          ">= " + str(total), str(offsets.extent[0]));
  if (total == 0) return 0;
  if (host_cpu(queue) && images.stride[3] == 1) {
    return host_index(queue, images, kernel_h, kernel_w, index, offsets, positions);
  }
  KAAS_LAUNCH(queue, sparse_activity_launch, queue, images, kernel_h, kernel_w, index);
  View1<int32_t> flat = make_view(index.data, total);
  View1<int32_t> offs = make_view(offsets.data, total);
  exclusive_scan(queue, View1<const int32_t>(flat), offs, scan_workspace);
  int32_t last[2] = {0, 0};
  queue.backend().copy(&last[0], offs.data + total - 1, sizeof(int32_t), CopyKind::kDeviceToHost,
                       queue.native_stream());
  queue.backend().copy(&last[1], flat.data + total - 1, sizeof(int32_t), CopyKind::kDeviceToHost,
                       queue.native_stream());
  queue.wait();
  const int64_t count = int64_t(last[0]) + last[1];
  require(positions.extent[0] >= count && positions.stride[0] == 1, kWhere, "positions extent",
          ">= " + str(count) + " (the active positions)", str(positions.extent[0]));
  KAAS_LAUNCH(queue, sparse_compact_launch, queue, flat, View1<const int32_t>(offs), positions);
  return count;
}

namespace {

// Steps 2 and 3 as the tables' rows see them (checked calls).
struct DeltaCall {
  const Queue* queue;
  View<const float, 4> images;
  const SparseConvWeights* weights;
  View1<const int32_t> positions;
  View2<float> delta;
  LaunchConfig config;
};
struct Dense1Call {
  const Queue* queue;
  View<const int32_t, 3> index;
  View2<const float> delta;
  int64_t delta_first;
  const SparseWindows* windows;
  const SparseDense1Weights* weights;
  View2<float> out;
  LaunchConfig config;
};

std::string config_unfit(const LaunchConfig& config) {
  return config.groups == 0 && config.group_size == 0
             ? std::string()
             : std::string("a launch configuration (the portable kernel's)");
}

template <class Call>
std::string sparse_no_skip(const Call&) {
  return {};
}

// The conv at the listed positions in vectors of `lanes` output channels, up to 4 vectors.
std::string delta_unfit(const DeltaCall& c, int64_t lanes) {
  const auto& images = c.images;
  const int64_t oc = c.weights->conv_weight.extent[0];
  if (oc % lanes != 0 || oc > 4 * lanes) {
    return "C_out = " + str(oc) + ": needs a multiple of " + str(lanes) + " up to " +
           str(4 * lanes);
  }
  const bool contiguous = images.stride[3] == 1 && images.stride[2] == images.extent[3] &&
                          images.stride[1] == images.extent[2] * images.extent[3] &&
                          images.stride[0] == images.extent[1] * images.stride[1];
  if (!contiguous || c.delta.stride[1] != 1 || c.positions.stride[0] != 1) {
    return "needs contiguous images, delta rows and positions";
  }
  return config_unfit(c.config);
}

void run_delta_simd(const DeltaCall& c, bool avx512) {
  const SparseConvWeights& weights = *c.weights;
  const auto& w = weights.conv_weight.extent;
  // The weight tap-major ([kh][kw][c][oc]) so each tap's channels are one contiguous row.
  std::vector<float> weight_t(size_t(w[0] * w[1] * w[2] * w[3]));
  for (int64_t o = 0; o < w[0]; ++o)
    for (int64_t ch = 0; ch < w[1]; ++ch)
      for (int64_t dy = 0; dy < w[2]; ++dy)
        for (int64_t dx = 0; dx < w[3]; ++dx)
          weight_t[size_t(((dy * w[3] + dx) * w[1] + ch) * w[0] + o)] =
              weights.conv_weight(o, ch, dy, dx);
  std::vector<float> bias;
  if (weights.conv_bias.extent[0] > 0)
    for (int64_t o = 0; o < w[0]; ++o) bias.push_back(weights.conv_bias[o]);
  std::vector<float> constant;
  for (int64_t o = 0; o < w[0]; ++o) constant.push_back(weights.conv_constant[o]);
  simd::SparseConvArgs args{};
  args.images = c.images.data;
  args.height = c.images.extent[1], args.width = c.images.extent[2];
  args.channels = c.images.extent[3];
  args.weight_t = weight_t.data();
  args.bias = bias.empty() ? nullptr : bias.data();
  args.epilogue = weights.conv_epilogue;
  args.constant = constant.data();
  args.positions = c.positions.data;
  args.count = c.positions.extent[0];
  args.kernel_h = w[2], args.kernel_w = w[3];
  args.out_h = c.images.extent[1] - w[2] + 1, args.out_w = c.images.extent[2] - w[3] + 1;
  args.oc = w[0];
  args.delta = c.delta.data, args.delta_stride = c.delta.stride[0];
  args.threads = traits_of(c.queue->backend_id()).threads;
  avx512 ? simd::sparse_conv_delta_avx512(args) : simd::sparse_conv_delta_avx2(args);
}

// Rows of windows against W1 in column tiles of `tile` (4 vectors).
std::string dense1_unfit(const Dense1Call& c, int64_t tile) {
  const int64_t n1 = c.out.extent[1];
  if (n1 % tile != 0) return "N1 = " + str(n1) + " is not a multiple of " + str(tile);
  const SparseWindows& windows = *c.windows;
  const bool unit = c.weights->weight.stride[1] == 1 && c.out.stride[1] == 1 &&
                    c.delta.stride[1] == 1 && windows.image.stride[0] == 1 &&
                    windows.y.stride[0] == 1 && windows.x.stride[0] == 1 &&
                    c.weights->constant.stride[0] == 1;
  if (!unit) return "needs unit strides along W1's, delta's and out's rows and the windows";
  return config_unfit(c.config);
}

void run_dense1_simd(const Dense1Call& c, bool avx512) {
  const SparseWindows& windows = *c.windows;
  const SparseDense1Weights& weights = *c.weights;
  simd::SparseDense1Args args{};
  args.index = c.index.data;
  for (int d = 0; d < 3; ++d) args.index_stride[d] = c.index.stride[d];
  args.delta = c.delta.data, args.delta_stride = c.delta.stride[0];
  args.channels = c.delta.extent[1];
  args.delta_first = c.delta_first, args.delta_rows = c.delta.extent[0];
  args.image = windows.image.data, args.y = windows.y.data, args.x = windows.x.data;
  args.out_h = windows.out_h, args.out_w = windows.out_w;
  args.weight = weights.weight.data, args.weight_stride = weights.weight.stride[0];
  args.constant = weights.constant.data, args.epilogue = weights.epilogue;
  args.out = c.out.data, args.out_stride = c.out.stride[0], args.rows = c.out.extent[0];
  args.n1 = c.out.extent[1];
  args.threads = traits_of(c.queue->backend_id()).threads;
  avx512 ? simd::sparse_dense1_avx512(args) : simd::sparse_dense1_avx2(args);
}

// Both steps: the AVX-512 and AVX2 kernels compute each sum in the portable kernel's order with
// fused multiply-adds (one bit class); the portable kernels are the oracle.
const ImplRow<SparseImpl, DeltaCall> kDeltaRows[] = {
    {SparseImpl::kAvx512, "avx512", IsaTier::kAvx512, "fma chain",
     [](const Queue& q) { return compiled_host_simd(q, simd::sparse_dense1_avx512_compiled()); },
     [](const DeltaCall& c) { return delta_unfit(c, 16); }, sparse_no_skip<DeltaCall>,
     [](const DeltaCall& c) { run_delta_simd(c, true); }},
    {SparseImpl::kAvx2, "avx2", IsaTier::kAvx2, "fma chain",
     [](const Queue& q) { return compiled_host_simd(q, simd::sparse_dense1_avx2_compiled()); },
     [](const DeltaCall& c) { return delta_unfit(c, 8); }, sparse_no_skip<DeltaCall>,
     [](const DeltaCall& c) { run_delta_simd(c, false); }},
    {SparseImpl::kPortable, "portable", IsaTier::kPortable, "portable", any_backend,
     always_fits<DeltaCall>, sparse_no_skip<DeltaCall>,
     [](const DeltaCall& c) {
       KAAS_LAUNCH(*c.queue, sparse_conv_delta_launch, *c.queue, c.images, *c.weights, c.positions,
                   c.delta, c.config);
     }},
};
const ImplRow<SparseImpl, Dense1Call> kDense1Rows[] = {
    {SparseImpl::kAvx512, "avx512", IsaTier::kAvx512, "fma chain",
     [](const Queue& q) { return compiled_host_simd(q, simd::sparse_dense1_avx512_compiled()); },
     [](const Dense1Call& c) { return dense1_unfit(c, 64); }, sparse_no_skip<Dense1Call>,
     [](const Dense1Call& c) { run_dense1_simd(c, true); }},
    {SparseImpl::kAvx2, "avx2", IsaTier::kAvx2, "fma chain",
     [](const Queue& q) { return compiled_host_simd(q, simd::sparse_dense1_avx2_compiled()); },
     [](const Dense1Call& c) { return dense1_unfit(c, 32); }, sparse_no_skip<Dense1Call>,
     [](const Dense1Call& c) { run_dense1_simd(c, false); }},
    {SparseImpl::kPortable, "portable", IsaTier::kPortable, "portable", any_backend,
     always_fits<Dense1Call>, sparse_no_skip<Dense1Call>,
     [](const Dense1Call& c) {
       KAAS_LAUNCH(*c.queue, sparse_dense1_launch, *c.queue, c.index, c.delta, c.delta_first,
                   *c.windows, *c.weights, c.out, c.config);
     }},
};

ImplTable<SparseImpl, DeltaCall> delta_table() {
  return {"sparse conv", "sparse_conv_dense", kDeltaRows};
}
ImplTable<SparseImpl, Dense1Call> dense1_table() {
  return {"sparse first layer", "sparse_conv_dense", kDense1Rows};
}

// Calls with the layouts the models and cases use (contiguous, default launch), for questions.
DeltaCall contiguous_delta_call(const Queue& queue, const SparseConvWeights& weights,
                                int64_t channels) {
  DeltaCall call{&queue, {}, &weights, {}, {}, {}};
  call.images = make_view<4>(static_cast<const float*>(nullptr), {1, 1, 1, channels});
  call.positions = make_view(static_cast<const int32_t*>(nullptr), 1);
  call.delta = make_view<2>(static_cast<float*>(nullptr), {1, weights.conv_weight.extent[0]});
  return call;
}

// A first-layer call with those layouts; it points into itself, so it stays where it is built.
struct ContiguousDense1 {
  SparseWindows windows;
  SparseDense1Weights weights;
  Dense1Call call;

  ContiguousDense1(const Queue& queue, int64_t channels, int64_t n1) {
    windows.image = windows.y = windows.x = make_view(static_cast<const int32_t*>(nullptr), 1);
    weights.weight = make_view<2>(static_cast<const float*>(nullptr), {1, n1});
    weights.constant = make_view(static_cast<const float*>(nullptr), n1);
    call = {&queue,
            make_view<3>(static_cast<const int32_t*>(nullptr), {1, 1, 1}),
            make_view<2>(static_cast<const float*>(nullptr), {1, channels}),
            0,
            &windows,
            &weights,
            make_view<2>(static_cast<float*>(nullptr), {1, n1}),
            {}};
  }
  ContiguousDense1(const ContiguousDense1&) = delete;
  ContiguousDense1& operator=(const ContiguousDense1&) = delete;
};

}  // namespace

std::string_view to_string(SparseImpl impl) {
  switch (impl) {
    case SparseImpl::kAuto:
      return "auto";
    case SparseImpl::kPortable:
      return "portable";
    case SparseImpl::kAvx2:
      return "avx2";
    case SparseImpl::kAvx512:
      return "avx512";
  }
  return "unknown";
}

SparseImpl sparse_impl_from_name(std::string_view name) {
  for (SparseImpl impl :
       {SparseImpl::kAuto, SparseImpl::kPortable, SparseImpl::kAvx2, SparseImpl::kAvx512}) {
    if (to_string(impl) == name) return impl;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "sparse impl: expected auto, portable, avx2 or avx512, received '" +
                  escape_for_message(name, 64) + "'");
}

std::vector<std::string> sparse_impls_for(const Queue& queue, int64_t conv_channels, int64_t n1) {
  const int64_t no_extent[4] = {conv_channels, 1, 1, 1};
  SparseConvWeights conv;
  conv.conv_weight = make_view<4>(static_cast<const float*>(nullptr), no_extent);
  const DeltaCall delta = contiguous_delta_call(queue, conv, 1);
  const ContiguousDense1 first_layer(queue, conv_channels, n1);
  const std::vector<std::string> step2 = delta_table().runnable(delta);
  std::vector<std::string> both;
  for (const std::string& name : dense1_table().runnable(first_layer.call)) {
    if (std::find(step2.begin(), step2.end(), name) != step2.end()) both.push_back(name);
  }
  return both;
}

const char* sparse_dense1_impl(const Queue& queue, int64_t n1) {
  const ContiguousDense1 first_layer(queue, 1, n1);
  const ImplTable<SparseImpl, Dense1Call> table = dense1_table();
  return table.find(table.choose(SparseImpl::kAuto, SparseImpl::kAuto, first_layer.call))
      ->name.data();
}

std::vector<ImplTableInfo> sparse_impl_tables() {
  return {delta_table().info(), dense1_table().info()};
}

void sparse_conv_delta(const Queue& queue, View<const float, 4> images,
                       const SparseConvWeights& weights, View1<const int32_t> positions,
                       View2<float> delta, LaunchConfig config, SparseImpl impl) {
  constexpr const char* kWhere = "sparse_conv_delta";
  detail::check_view(images, kWhere, "images");
  detail::check_view(weights.conv_weight, kWhere, "conv_weight");
  detail::check_view(delta, kWhere, "delta");
  detail::check_config(config, kWhere);
  const auto& w = weights.conv_weight.extent;
  detail::check_same_extent(images.extent[3], w[1], kWhere, "conv_weight input channels");
  require(weights.conv_bias.extent[0] == 0 || weights.conv_bias.extent[0] == w[0], kWhere,
          "conv_bias extent", "0 or " + str(w[0]), str(weights.conv_bias.extent[0]));
  detail::check_same_extent(w[0], weights.conv_constant.extent[0], kWhere, "conv_constant extent");
  require(delta.extent[0] >= positions.extent[0] && delta.extent[1] == w[0], kWhere, "delta shape",
          "at least [" + str(positions.extent[0]) + ", " + str(w[0]) + "]",
          shape_string(delta.extent));
  if (positions.extent[0] == 0) return;
  const DeltaCall call{&queue, images, &weights, positions, delta, config};
  const ImplTable<SparseImpl, DeltaCall> table = delta_table();
  table.run(table.choose(impl, SparseImpl::kAuto, call), call);
}

void sparse_dense1(const Queue& queue, View<const int32_t, 3> index, View2<const float> delta,
                   int64_t delta_first, const SparseWindows& windows,
                   const SparseDense1Weights& weights, View2<float> out, LaunchConfig config,
                   SparseImpl impl) {
  constexpr const char* kWhere = "sparse_dense1";
  detail::check_view(index, kWhere, "index");
  detail::check_view(delta, kWhere, "delta");
  detail::check_view(weights.weight, kWhere, "weight");
  detail::check_view(out, kWhere, "out");
  detail::check_config(config, kWhere);
  const int64_t rows = out.extent[0], n1 = out.extent[1], channels = delta.extent[1];
  for (const auto* v : {&windows.image, &windows.y, &windows.x})
    detail::check_same_extent(rows, v->extent[0], kWhere, "windows (one per output row)");
  require(windows.out_h >= 1 && windows.out_w >= 1 && windows.out_h <= index.extent[1] &&
              windows.out_w <= index.extent[2],
          kWhere, "window",
          std::string("1..") + str(index.extent[1]) + " x 1.." + str(index.extent[2]),
          str(windows.out_h) + " x " + str(windows.out_w));
  detail::check_same_extent(windows.out_h * windows.out_w * channels, weights.weight.extent[0],
                            kWhere, "weight rows (window positions x channels)");
  detail::check_same_extent(n1, weights.weight.extent[1], kWhere, "weight columns");
  detail::check_same_extent(n1, weights.constant.extent[0], kWhere, "constant extent");
  if (rows == 0) return;
  // The windows must lie inside the index: one look at each on the host where it can read them.
  if (queue.backend().device_memory_is_host()) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t img = windows.image[r], y = windows.y[r], x = windows.x[r];
      require(img >= 0 && img < index.extent[0] && y >= 0 && y + windows.out_h <= index.extent[1] &&
                  x >= 0 && x + windows.out_w <= index.extent[2],
              kWhere, std::string("window ") + str(r), "inside the index",
              std::string("image ") + str(img) + " at " + str(y) + "," + str(x));
    }
  }
  const Dense1Call call{&queue, index, delta, delta_first, &windows, &weights, out, config};
  const ImplTable<SparseImpl, Dense1Call> table = dense1_table();
  table.run(table.choose(impl, SparseImpl::kAuto, call), call);
}

int64_t sparse_conv_dense1_grouped(const Queue& queue, View<const float, 4> images,
                                   const SparseConvWeights& conv, View1<const int32_t> positions,
                                   View<const int32_t, 3> index, const SparseRange* ranges,
                                   const SparseWindows& windows, const SparseDense1Weights& dense1,
                                   View2<float> delta, View2<float> out) {
  const int64_t rows = out.extent[0], capacity = delta.extent[0];
  int64_t groups = 0;
  for (int64_t r0 = 0; r0 < rows; ++groups) {
    const int64_t first = ranges[r0].first;
    require(ranges[r0].last - first <= capacity, "sparse_conv_dense1_grouped",
            std::string("window ") + str(r0) + "'s active positions",
            "at most the delta capacity " + str(capacity), str(ranges[r0].last - first));
    int64_t r1 = r0 + 1;
    while (r1 < rows && ranges[r1].last - first <= capacity) ++r1;
    const int64_t last = ranges[r1 - 1].last;
    View1<const int32_t> group_positions = positions;
    group_positions.data += first * positions.stride[0];
    group_positions.extent[0] = last - first;
    View2<float> group_delta = delta;
    group_delta.extent[0] = last - first;
    sparse_conv_delta(queue, images, conv, group_positions, group_delta);
    SparseWindows group = windows;
    for (auto* v : {&group.image, &group.y, &group.x}) {
      v->data += r0 * v->stride[0];
      v->extent[0] = r1 - r0;
    }
    View2<float> group_out = out;
    group_out.data += r0 * out.stride[0];
    group_out.extent[0] = r1 - r0;
    sparse_dense1(queue, index, View2<const float>(group_delta), first, group, dense1, group_out);
    r0 = r1;
  }
  return groups;
}

}  // namespace kaas
