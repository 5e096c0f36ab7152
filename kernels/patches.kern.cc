// Patch extraction and cluster aggregation for one backend (semantics in kernels/patches.h).

#include "kaas/kernels/patches.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// Mean of the window, clamped and mapped linearly. Written as (v - min) * range_out / range_adc
// + out_min: no multiply-add for a compiler to contract into an FMA, so every backend and the
// host reference round alike, and ADC 0 maps to exactly 0 with the defaults.
KAAS_DEVICE inline float scale_sample(const PatchScaling& s, float mean) {
  const float clamped = math::min(math::max(mean, s.adc_min), s.adc_max);
  return (clamped - s.adc_min) * s.out_range / s.adc_range + s.out_min;
}

// 1 when the hit is at least pw/8 wires and pb/8 bins from every plane edge.
KAAS_DEVICE inline uint8_t is_fiducial(int64_t wire, int64_t bin, int64_t wires, int64_t bins,
                                       int64_t pw, int64_t pb) {
  const int64_t margin_w = pw / 8, margin_b = pb / 8;
  return wire >= margin_w && wire < wires - margin_w && bin >= margin_b && bin < bins - margin_b;
}

struct DownsampleKernel {
  static constexpr const char* kName = "downsample_image";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> image, View2<float> down,
                              PatchScaling s) const {
    const int64_t bins = down.extent[1];
    for (int64_t i : uniform_elements(ctx, down.extent[0] * bins)) {
      const int64_t wire = i / bins, bin = i % bins;
      float sum = 0.0f;
      for (int t = 0; t < s.window; ++t) sum += image(wire, bin * s.window + t);
      down(wire, bin) = scale_sample(s, sum / float(s.window));
    }
  }
};

// first_bad[0] = lowest index of a hit outside the image (left as is when all are inside).
struct HitCheckKernel {
  static constexpr const char* kName = "extract_patches.check";
  KAAS_KERNEL void operator()(const Ctx& ctx, int64_t wires, int64_t ticks,
                              View1<const int32_t> wire, View1<const float> time,
                              View1<int32_t> first_bad) const {
    for (int64_t h : uniform_elements(ctx, wire.extent[0])) {
      const float t = time[h];
      const bool inside = wire[h] >= 0 && wire[h] < wires && t >= 0.0f && t < float(ticks);
      if (!inside) ctx.atomic_min(&first_bad[0], static_cast<int32_t>(h));
    }
  }
};

// One logical group per hit; row by row (wires), its elements fill the row's bins: contiguous
// reads and writes on every backend, and no division per cell.
struct PatchKernel {
  static constexpr const char* kName = "extract_patches";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> down, View1<const int32_t> wire,
                              View1<const float> time, View<float, 3> patches,
                              View1<uint8_t> fiducial, PatchScaling s, float zero_level) const {
    const int64_t wires = down.extent[0], bins = down.extent[1];
    const int64_t pw = patches.extent[1], pb = patches.extent[2];
    for (int64_t h : uniform_groups(ctx, wire.extent[0])) {
      const int64_t bin = static_cast<int64_t>(time[h]) / s.window;  // time >= 0: floor
      const int64_t w0 = wire[h] - pw / 2, b0 = bin - pb / 2;
      // The bins of a patch row that lie inside the image: [j_lo, j_hi).
      const int64_t j_lo = math::max<int64_t>(0, -b0), j_hi = math::min<int64_t>(pb, bins - b0);
      for (int64_t i = 0; i < pw; ++i) {
        const int64_t w = w0 + i;
        const bool wire_inside = w >= 0 && w < wires;
        for (int64_t j : group_elements(ctx, pb)) {
          patches(h, i, j) = wire_inside && j >= j_lo && j < j_hi ? down(w, b0 + j) : zero_level;
        }
      }
      for ([[maybe_unused]] int64_t e : group_elements(ctx, 1))
        fiducial[h] = is_fiducial(wire[h], bin, wires, bins, pw, pb);
    }
  }
};

// The plane inside a border of ADC-0 cells: padded(i, j) = down(i - pw/2, j - pb/2).
struct PadKernel {
  static constexpr const char* kName = "patch_windows.pad";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> down, View2<float> padded,
                              int64_t top, int64_t left, float zero_level) const {
    const int64_t wires = down.extent[0], bins = down.extent[1], width = padded.extent[1];
    for (int64_t i : uniform_elements(ctx, padded.extent[0] * width)) {
      const int64_t w = i / width - top, b = i % width - left;
      padded(i / width, i % width) =
          w >= 0 && w < wires && b >= 0 && b < bins ? down(w, b) : zero_level;
    }
  }
};

// A hit's patch origin in the padded plane is (wire, bin): the padding is half a patch.
struct WindowKernel {
  static constexpr const char* kName = "patch_windows";
  KAAS_KERNEL void operator()(const Ctx& ctx, int64_t wires, int64_t bins,
                              View1<const int32_t> wire, View1<const float> time,
                              View1<int32_t> row, View1<int32_t> column, View1<uint8_t> fiducial,
                              int window, int64_t pw, int64_t pb) const {
    for (int64_t h : uniform_elements(ctx, wire.extent[0])) {
      const int64_t bin = static_cast<int64_t>(time[h]) / window;  // time >= 0: floor
      row[h] = wire[h];
      column[h] = static_cast<int32_t>(bin);
      fiducial[h] = is_fiducial(wire[h], bin, wires, bins, pw, pb);
    }
  }
};

// One element per cluster: weighted geometric mean of the clamped scores, renormalised.
struct AggregateKernel {
  static constexpr const char* kName = "aggregate_clusters";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> scores,
                              View1<const uint8_t> fiducial, View1<const int64_t> splits,
                              View1<const int32_t> hits, View2<float> out) const {
    constexpr float kLow = 1e-6f, kHigh = 1.0f - 1e-6f;
    for (int64_t c : uniform_elements(ctx, out.extent[0])) {
      const int64_t first = splits[c], last = splits[c + 1];
      if (first == last) {
        for (int k = 0; k < 4; ++k) out(c, k) = 0.25f;
        continue;
      }
      float weight_sum = 0.0f;
      for (int64_t m = first; m < last; ++m) weight_sum += fiducial[hits[m]] ? 1.0f : 0.0f;
      const bool equal_weights = weight_sum == 0.0f;  // all hits non-fiducial
      if (equal_weights) weight_sum = float(last - first);
      float log_acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int64_t m = first; m < last; ++m) {
        const int32_t h = hits[m];
        const float w = equal_weights || fiducial[h] ? 1.0f : 0.0f;
        if (w == 0.0f) continue;
        for (int k = 0; k < 4; ++k) {
          log_acc[k] += math::log(math::min(math::max(scores(h, k), kLow), kHigh));
        }
      }
      float mean[4], total = 0.0f;
      for (int k = 0; k < 4; ++k) {
        mean[k] = math::exp(log_acc[k] / weight_sum);
        total += mean[k];
      }
      for (int k = 0; k < 4; ++k) out(c, k) = mean[k] / total;
    }
  }
};

}  // namespace

void downsample_launch(const Queue& queue, View2<const float> image, View2<float> down,
                       PatchScaling scaling, LaunchConfig config) {
  const int size = config.group_size_or(256);
  const int64_t groups = config.groups_or(element_grid(queue, down.size(), size));
  launch(queue, groups, size, 0, DownsampleKernel{}, image, down, scaling);
}

void hit_check_launch(const Queue& queue, int64_t wires, int64_t ticks, View1<const int32_t> wire,
                      View1<const float> time, View1<int32_t> first_bad) {
  launch(queue, element_grid(queue, wire.extent[0], 256), 256, 0, HitCheckKernel{}, wires, ticks,
         wire, time, first_bad);
}

void patch_launch(const Queue& queue, View2<const float> down, View1<const int32_t> wire,
                  View1<const float> time, View<float, 3> patches, View1<uint8_t> fiducial,
                  PatchScaling scaling, float zero_level, LaunchConfig config) {
  const int size = config.group_size_or(64);  // one 48-bin row per pass
  const int64_t groups = config.groups_or(grid_groups(queue, wire.extent[0]));
  launch(queue, groups, size, 0, PatchKernel{}, down, wire, time, patches, fiducial, scaling,
         zero_level);
}

void pad_launch(const Queue& queue, View2<const float> down, View2<float> padded, int64_t top,
                int64_t left, float zero_level) {
  launch(queue, element_grid(queue, padded.extent[0] * padded.extent[1], 256), 256, 0, PadKernel{},
         down, padded, top, left, zero_level);
}

void window_launch(const Queue& queue, int64_t wires, int64_t bins, View1<const int32_t> wire,
                   View1<const float> time, View1<int32_t> row, View1<int32_t> column,
                   View1<uint8_t> fiducial, int window, int64_t pw, int64_t pb) {
  launch(queue, element_grid(queue, wire.extent[0], 256), 256, 0, WindowKernel{}, wires, bins, wire,
         time, row, column, fiducial, window, pw, pb);
}

void aggregate_launch(const Queue& queue, View2<const float> scores, View1<const uint8_t> fiducial,
                      View1<const int64_t> splits, View1<const int32_t> hits, View2<float> out,
                      LaunchConfig config) {
  const int size = config.group_size_or(128);
  const int64_t groups = config.groups_or(element_grid(queue, out.extent[0], size));
  launch(queue, groups, size, 0, AggregateKernel{}, scores, fiducial, splits, hits, out);
}

}  // namespace kaas::KAAS_BACKEND_NS
