#pragma once
// Hit -> patch extraction for the EmTrkMichelId CNN, with LArSoft DataProviderAlg semantics,
// and the per-cluster aggregation of hit scores (LArSoft MVAWrapperBase::pAccumulate).
//
// 1. downsample_image: one plane's wire x tick image (raw ADC, FP32) -> wire x bin image, each
//    bin the mean of `drift_window` ticks, then clamped to [adc_min, adc_max] and mapped linearly
//    onto [out_min, out_max]. bins = ticks / drift_window (integer division, as LArSoft): the
//    trailing ticks that do not fill a window are not used.
// 2. extract_patches: for hit h at (wire w, peak time t), patch[h][i][j] = down(w - pw/2 + i,
//    floor(t / drift_window) - pb/2 + j), i < pw wires, j < pb bins (48 x 48: wires w-24..w+23,
//    bins b-24..b+23); cells outside the downsampled image hold the scaled value of ADC 0. The
//    layout [H, pw, pb] is the CNN's NHWC [H, 48, 48, 1]. A hit in the trailing ticks (bin ==
//    bins) is valid: its patch is built the same way. fiducial[h] = 1 when the hit is at least
//    pw/8 wires and pb/8 bins from every plane edge (6 and 6 for 48 x 48), else 0.
//    Deliberate difference from LArSoft: a hit repeating the previous hit's (wire, bin) gets its
//    real patch here (LArSoft's patch cache hands it an all-zero patch).
// 3. aggregate_clusters: out[c] = renormalised weighted geometric mean over the cluster's hits of
//    the 4 scores [track, em, none, michel], each clamped to [1e-6, 1 - 1e-6], weights = fiducial
//    flags. Deliberate differences from LArSoft: a cluster whose hits are all non-fiducial (0/0,
//    NaN in LArSoft) is averaged with equal weights instead; an empty cluster gives 0.25 each
//    (LArSoft's empty branch).
// Hits outside the image (wire not in [0, wires), time not in [0, ticks)) are rejected before any
// patch is written, with the first such hit named; this check reads one value back, so it
// synchronises the queue.

#include <cstdint>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

struct PatchParams {
  int drift_window = 6;                      // ticks per bin (DriftWindow)
  float adc_min = -50.0f, adc_max = 150.0f;  // clamp range of the mean ADC
  float out_min = -5.0f, out_max = 15.0f;    // mapped onto this range
  int patch_wires = 48, patch_bins = 48;
};

int64_t downsampled_bins(int64_t ticks, const PatchParams& params);
// The value cells outside the image take: ADC 0 after scaling (0 with the defaults).
float patch_zero_level(const PatchParams& params);

void downsample_image(const Queue& queue, View2<const float> image, View2<float> downsampled,
                      const PatchParams& params = {}, LaunchConfig config = {});

void extract_patches(const Queue& queue, View2<const float> downsampled, int64_t ticks,
                     View1<const int32_t> hit_wire, View1<const float> hit_time,
                     View<float, 3> patches, View1<uint8_t> fiducial,
                     const PatchParams& params = {}, LaunchConfig config = {});

// The plane and hit windows for the sparse plan (kernels/sparse_conv_dense.h): `padded`
// [wires + patch_wires, bins + patch_bins] is the downsampled plane inside a border of ADC-0
// cells (patch_wires / 2 rows above, patch_bins / 2 columns to the left), so hit h's patch is
// padded rows row[h] ... and columns column[h] ... (row = wire, column = floor(time /
// drift_window)); fiducial as extract_patches. The same hit check as extract_patches.
void patch_windows(const Queue& queue, View2<const float> downsampled, int64_t ticks,
                   View1<const int32_t> hit_wire, View1<const float> hit_time, View2<float> padded,
                   View1<int32_t> row, View1<int32_t> column, View1<uint8_t> fiducial,
                   const PatchParams& params = {});

// scores [H, 4]; cluster c owns cluster_hits[cluster_splits[c] .. cluster_splits[c+1]).
void aggregate_clusters(const Queue& queue, View2<const float> scores,
                        View1<const uint8_t> fiducial, View1<const int64_t> cluster_splits,
                        View1<const int32_t> cluster_hits, View2<float> out,
                        LaunchConfig config = {});

// Internal: kernel launchers and the scalars they take.
struct PatchScaling {
  int window;
  float adc_min, adc_max, out_min;
  float out_range, adc_range;  // out = (clamp(v) - adc_min) * out_range / adc_range + out_min
};
KAAS_DECLARE_LAUNCHER(void, downsample_launch,
                      (const Queue&, View2<const float>, View2<float>, PatchScaling, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, hit_check_launch,
                      (const Queue&, int64_t, int64_t, View1<const int32_t>, View1<const float>,
                       View1<int32_t>))
KAAS_DECLARE_LAUNCHER(void, patch_launch,
                      (const Queue&, View2<const float>, View1<const int32_t>, View1<const float>,
                       View<float, 3>, View1<uint8_t>, PatchScaling, float, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, pad_launch,
                      (const Queue&, View2<const float>, View2<float>, int64_t, int64_t, float))
KAAS_DECLARE_LAUNCHER(void, window_launch,
                      (const Queue&, int64_t, int64_t, View1<const int32_t>, View1<const float>,
                       View1<int32_t>, View1<int32_t>, View1<uint8_t>, int, int64_t, int64_t))
KAAS_DECLARE_LAUNCHER(void, aggregate_launch,
                      (const Queue&, View2<const float>, View1<const uint8_t>, View1<const int64_t>,
                       View1<const int32_t>, View2<float>, LaunchConfig))

}  // namespace kaas
