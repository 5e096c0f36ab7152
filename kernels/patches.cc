#include "kaas/kernels/patches.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/kernels/detail/checks.h"

namespace kaas {

namespace {

PatchScaling scaling_of(const PatchParams& p) {
  return {p.drift_window,       p.adc_min, p.adc_max, p.out_min, p.out_max - p.out_min,
          p.adc_max - p.adc_min};
}

void check_params(const PatchParams& p, const char* where) {
  require(p.drift_window >= 1, where, "drift_window", ">= 1", std::to_string(p.drift_window));
  require(p.adc_max > p.adc_min, where, "adc_max", "> adc_min (" + std::to_string(p.adc_min) + ")",
          std::to_string(p.adc_max));
  require(p.patch_wires >= 1 && p.patch_bins >= 1, where, "patch size", ">= 1 x 1",
          std::to_string(p.patch_wires) + " x " + std::to_string(p.patch_bins));
}

}  // namespace

int64_t downsampled_bins(int64_t ticks, const PatchParams& params) {
  return params.drift_window > 0 ? ticks / params.drift_window : 0;
}

float patch_zero_level(const PatchParams& params) {
  const PatchScaling s = scaling_of(params);
  const float clamped = std::min(std::max(0.0f, s.adc_min), s.adc_max);
  return (clamped - s.adc_min) * s.out_range / s.adc_range + s.out_min;
}

void downsample_image(const Queue& queue, View2<const float> image, View2<float> downsampled,
                      const PatchParams& params, LaunchConfig config) {
  const char* where = "downsample_image";
  check_params(params, where);
  detail::check_view(image, where, "image");
  detail::check_view(downsampled, where, "downsampled");
  detail::check_config(config, where);
  detail::check_same_extent(image.extent[0], downsampled.extent[0], where,
                            "downsampled wires (image wires)");
  detail::check_same_extent(downsampled_bins(image.extent[1], params), downsampled.extent[1], where,
                            "downsampled bins (image ticks / drift_window)");
  if (downsampled.size() == 0) return;
  KAAS_RETURN_LAUNCH(queue, downsample_launch, queue, image, downsampled, scaling_of(params),
                     config);
}

// Rejects the first hit outside the image (one value read back: synchronises the queue).
static void check_hits_inside(const Queue& queue, int64_t wires, int64_t ticks,
                              View1<const int32_t> hit_wire, View1<const float> hit_time,
                              const char* where) {
  auto first_bad = make_device_buffer<int32_t>(queue, 1);
  const std::vector<int32_t> none = {INT32_MAX};
  copy_to_device(queue, std::span<const int32_t>(none), first_bad);
  KAAS_LAUNCH(queue, hit_check_launch, queue, wires, ticks, hit_wire, hit_time, first_bad.view());
  const int32_t bad = to_host(queue, first_bad)[0];
  if (bad != INT32_MAX) {
    const auto w = to_host(queue, make_view(&hit_wire[bad], 1));
    const auto t = to_host(queue, make_view(&hit_time[bad], 1));
    std::ostringstream expected, received;  // (g++ 12 misreports "literal" + std::string&&)
    expected << "inside the image: wire in [0, " << wires << "), time in [0, " << ticks << ")";
    received << "(" << w[0] << ", " << t[0] << ")";
    require(false, where, "hit " + std::to_string(bad) + " (wire, time)", expected.str(),
            received.str());
  }
}

void extract_patches(const Queue& queue, View2<const float> downsampled, int64_t ticks,
                     View1<const int32_t> hit_wire, View1<const float> hit_time,
                     View<float, 3> patches, View1<uint8_t> fiducial, const PatchParams& params,
                     LaunchConfig config) {
  const char* where = "extract_patches";
  check_params(params, where);
  detail::check_view(downsampled, where, "downsampled");
  detail::check_view(hit_wire, where, "hit_wire");
  detail::check_view(hit_time, where, "hit_time");
  detail::check_view(patches, where, "patches");
  detail::check_view(fiducial, where, "fiducial");
  detail::check_config(config, where);
  const int64_t hits = hit_wire.extent[0];
  detail::check_same_extent(downsampled_bins(ticks, params), downsampled.extent[1], where,
                            "downsampled bins (ticks / drift_window)");
  detail::check_same_extent(hits, hit_time.extent[0], where, "hit_time extent (hits)");
  detail::check_same_extent(hits, patches.extent[0], where, "patches extent[0] (hits)");
  detail::check_same_extent(hits, fiducial.extent[0], where, "fiducial extent (hits)");
  detail::check_same_extent(params.patch_wires, patches.extent[1], where,
                            "patches extent[1] (patch_wires)");
  detail::check_same_extent(params.patch_bins, patches.extent[2], where,
                            "patches extent[2] (patch_bins)");
  require(hits <= INT32_MAX, where, "hits", "< 2^31", std::to_string(hits));
  if (hits == 0) return;

  check_hits_inside(queue, downsampled.extent[0], ticks, hit_wire, hit_time, where);
  KAAS_RETURN_LAUNCH(queue, patch_launch, queue, downsampled, hit_wire, hit_time, patches, fiducial,
                     scaling_of(params), patch_zero_level(params), config);
}

void patch_windows(const Queue& queue, View2<const float> downsampled, int64_t ticks,
                   View1<const int32_t> hit_wire, View1<const float> hit_time, View2<float> padded,
                   View1<int32_t> row, View1<int32_t> column, View1<uint8_t> fiducial,
                   const PatchParams& params) {
  const char* where = "patch_windows";
  check_params(params, where);
  detail::check_view(downsampled, where, "downsampled");
  detail::check_view(padded, where, "padded");
  const int64_t hits = hit_wire.extent[0];
  const int64_t wires = downsampled.extent[0], bins = downsampled.extent[1];
  detail::check_same_extent(downsampled_bins(ticks, params), bins, where,
                            "downsampled bins (ticks / drift_window)");
  detail::check_same_extent(wires + params.patch_wires, padded.extent[0], where,
                            "padded rows (wires + patch_wires)");
  detail::check_same_extent(bins + params.patch_bins, padded.extent[1], where,
                            "padded columns (bins + patch_bins)");
  for (const int64_t extent :
       {hit_time.extent[0], row.extent[0], column.extent[0], fiducial.extent[0]})
    detail::check_same_extent(hits, extent, where, "hit_time, row, column and fiducial extents");
  require(hits <= INT32_MAX, where, "hits", "< 2^31", std::to_string(hits));
  KAAS_LAUNCH(queue, pad_launch, queue, downsampled, padded, params.patch_wires / 2,
              params.patch_bins / 2, patch_zero_level(params));
  if (hits == 0) return;
  check_hits_inside(queue, wires, ticks, hit_wire, hit_time, where);
  KAAS_LAUNCH(queue, window_launch, queue, wires, bins, hit_wire, hit_time, row, column, fiducial,
              params.drift_window, params.patch_wires, params.patch_bins);
}

void aggregate_clusters(const Queue& queue, View2<const float> scores,
                        View1<const uint8_t> fiducial, View1<const int64_t> cluster_splits,
                        View1<const int32_t> cluster_hits, View2<float> out, LaunchConfig config) {
  const char* where = "aggregate_clusters";
  detail::check_view(scores, where, "scores");
  detail::check_view(fiducial, where, "fiducial");
  detail::check_view(cluster_splits, where, "cluster_splits");
  detail::check_view(cluster_hits, where, "cluster_hits");
  detail::check_view(out, where, "out");
  detail::check_config(config, where);
  detail::check_same_extent(4, scores.extent[1], where,
                            "scores extent[1] ([track, em, none, michel])");
  detail::check_same_extent(4, out.extent[1], where, "out extent[1]");
  detail::check_same_extent(scores.extent[0], fiducial.extent[0], where, "fiducial extent (hits)");
  detail::check_same_extent(out.extent[0] + 1, cluster_splits.extent[0], where,
                            "cluster_splits extent (clusters + 1)");
  const auto splits = to_host(queue, cluster_splits);
  require(splits.front() == 0, where, "cluster_splits[0]", "0", std::to_string(splits.front()));
  for (size_t c = 1; c < splits.size(); ++c) {
    require(splits[c] >= splits[c - 1], where, "cluster_splits[" + std::to_string(c) + "]",
            ">= " + std::to_string(splits[c - 1]) + " (non-decreasing)", std::to_string(splits[c]));
  }
  require(splits.back() == cluster_hits.extent[0], where, "cluster_splits[last]",
          std::to_string(cluster_hits.extent[0]) + " (cluster_hits extent)",
          std::to_string(splits.back()));
  const auto hits = to_host(queue, cluster_hits);
  for (size_t m = 0; m < hits.size(); ++m) {
    require(hits[m] >= 0 && hits[m] < scores.extent[0], where,
            "cluster_hits[" + std::to_string(m) + "]",
            "a hit index in [0, " + std::to_string(scores.extent[0]) + ")",
            std::to_string(hits[m]));
  }
  if (out.extent[0] == 0) return;
  KAAS_RETURN_LAUNCH(queue, aggregate_launch, queue, scores, fiducial, cluster_splits, cluster_hits,
                     out, config);
}

}  // namespace kaas
