// The sparse conv + first dense layer for one backend (semantics in kernels/sparse_conv_dense.h).

#include "kaas/kernels/sparse_conv_dense.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// 1 where the conv window at the position reads a non-zero value, else 0.
struct ActivityKernel {
  static constexpr const char* kName = "sparse_conv_index.activity";
  KAAS_KERNEL void operator()(const Ctx& ctx, View<const float, 4> images, int64_t kh, int64_t kw,
                              View<int32_t, 3> flags) const {
    const int64_t oh = flags.extent[1], ow = flags.extent[2], channels = images.extent[3];
    for (int64_t i : uniform_elements(ctx, flags.extent[0] * oh * ow)) {
      const int64_t n = i / (oh * ow), y = i / ow % oh, x = i % ow;
      int32_t touched = 0;
      for (int64_t dy = 0; dy < kh; ++dy)
        for (int64_t dx = 0; dx < kw; ++dx)
          for (int64_t c = 0; c < channels; ++c) touched |= images(n, y + dy, x + dx, c) != 0.0f;
      flags(n, y, x) = touched;
    }
  }
};

// index[i] = its number among the active positions (offsets[i]) or -1; positions lists them.
struct CompactKernel {
  static constexpr const char* kName = "sparse_conv_index.compact";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<int32_t> index, View1<const int32_t> offsets,
                              View1<int32_t> positions) const {
    for (int64_t i : uniform_elements(ctx, index.extent[0])) {
      const bool active = index[i] != 0;
      if (active) positions[offsets[i]] = static_cast<int32_t>(i);
      index[i] = active ? offsets[i] : -1;
    }
  }
};

// One group per active position, its elements over the output channels.
struct ConvDeltaKernel {
  static constexpr const char* kName = "sparse_conv_delta";
  KAAS_KERNEL void operator()(const Ctx& ctx, View<const float, 4> images, SparseConvWeights w,
                              View1<const int32_t> positions, View2<float> delta) const {
    const auto& e = w.conv_weight.extent;  // [OC, C, KH, KW]
    const int64_t oh = images.extent[1] - e[2] + 1, ow = images.extent[2] - e[3] + 1;
    for (int64_t p : uniform_groups(ctx, positions.extent[0])) {
      const int64_t flat = positions[p];
      const int64_t n = flat / (oh * ow), y = flat / ow % oh, x = flat % ow;
      for (int64_t oc : group_elements(ctx, e[0])) {
        float sum = w.conv_bias.extent[0] > 0 ? w.conv_bias[oc] : 0.0f;
        for (int64_t c = 0; c < e[1]; ++c)
          for (int64_t dy = 0; dy < e[2]; ++dy)
            for (int64_t dx = 0; dx < e[3]; ++dx)
              sum += images(n, y + dy, x + dx, c) * w.conv_weight(oc, c, dy, dx);
        delta(p, oc) = apply(w.conv_epilogue, sum) - w.conv_constant[oc];
      }
    }
  }
};

// One group per (tile of windows, column chunk), its elements over the chunk's columns: each
// element owns one column of the tile's rows, so no element reads another's writes. The branch
// on a position's activity is the same for every element of the group.
struct Dense1Kernel {
  static constexpr const char* kName = "sparse_dense1";
  KAAS_KERNEL void operator()(const Ctx& ctx, View<const int32_t, 3> index,
                              View2<const float> delta, int64_t first, SparseWindows windows,
                              SparseDense1Weights w, View2<float> out, int64_t tile,
                              int64_t chunk) const {
    const int64_t rows = out.extent[0], n1 = out.extent[1], channels = delta.extent[1];
    const int64_t tiles = math::ceil_div(rows, tile), chunks = math::ceil_div(n1, chunk);
    const int64_t positions = windows.out_h * windows.out_w;
    for (int64_t g : uniform_groups(ctx, tiles * chunks)) {
      const int64_t r0 = g / chunks * tile, r1 = math::min(rows, r0 + tile);
      const int64_t c0 = g % chunks * chunk, width = math::min(n1, c0 + chunk) - c0;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j : group_elements(ctx, width)) out(r, c0 + j) = w.constant[c0 + j];
      for (int64_t p = 0; p < positions; ++p) {
        const int64_t py = p / windows.out_w, px = p % windows.out_w;
        for (int64_t r = r0; r < r1; ++r) {
          const int32_t a = index(windows.image[r], windows.y[r] + py, windows.x[r] + px);
          if (a < 0) continue;
          const int64_t row = a - first;
          for (int64_t j : group_elements(ctx, width)) {
            float sum = out(r, c0 + j);
            for (int64_t c = 0; c < channels; ++c)
              sum += delta(row, c) * w.weight(p * channels + c, c0 + j);
            out(r, c0 + j) = sum;
          }
        }
      }
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j : group_elements(ctx, width))
          out(r, c0 + j) = apply(w.epilogue, out(r, c0 + j));
    }
  }
};

}  // namespace

void sparse_activity_launch(const Queue& queue, View<const float, 4> images, int64_t kh, int64_t kw,
                            View<int32_t, 3> flags) {
  const int64_t elements = flags.extent[0] * flags.extent[1] * flags.extent[2];
  launch(queue, element_grid(queue, elements, 256), 256, 0, ActivityKernel{}, images, kh, kw,
         flags);
}

void sparse_compact_launch(const Queue& queue, View1<int32_t> index, View1<const int32_t> offsets,
                           View1<int32_t> positions) {
  launch(queue, element_grid(queue, index.extent[0], 256), 256, 0, CompactKernel{}, index, offsets,
         positions);
}

void sparse_conv_delta_launch(const Queue& queue, View<const float, 4> images,
                              SparseConvWeights weights, View1<const int32_t> positions,
                              View2<float> delta, LaunchConfig config) {
  const int size = config.group_size_or(64);
  const int64_t groups = config.groups_or(grid_groups(queue, positions.extent[0]));
  launch(queue, groups, size, 0, ConvDeltaKernel{}, images, weights, positions, delta);
}

void sparse_dense1_launch(const Queue& queue, View<const int32_t, 3> index,
                          View2<const float> delta, int64_t first, SparseWindows windows,
                          SparseDense1Weights weights, View2<float> out, LaunchConfig config) {
  const int64_t tile = 16, chunk = 128;
  const int size = config.group_size_or(128);
  const int64_t groups = config.groups_or(grid_groups(
      queue, math::ceil_div(out.extent[0], tile) * math::ceil_div(out.extent[1], chunk)));
  launch(queue, groups, size, 0, Dense1Kernel{}, index, delta, first, windows, weights, out, tile,
         chunk);
}

}  // namespace kaas::KAAS_BACKEND_NS
