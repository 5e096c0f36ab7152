#pragma once
// The reconstruction steps of kaas-reco around the inference call: preprocessing a toy event
// into what the models take (downsampled plane images and hit lists, or 48 x 48 patches),
// clustering hits, and aggregating per-hit scores into per-cluster scores. The kernels run on
// the client's backend (kernels/patches.h).

#include <cstdint>
#include <span>
#include <vector>

#include "examples/lartpc/toy_event.h"
#include "kaas/backends/queue.h"
#include "kaas/kernels/patches.h"

namespace kaas::examples {

// One plane as michel_from_image takes it.
struct PlaneInputs {
  int64_t wires = 0, bins = 0, ticks = 0;
  std::vector<float> image;  // downsampled [wires, bins]
  std::vector<int32_t> hit_wire;
  std::vector<float> hit_tick;
};

// Image mode: every plane downsampled (the event's hits are plane by plane).
std::vector<PlaneInputs> prepare_planes(const Queue& queue, const ToyEvent& event,
                                        const PatchParams& params = {});

// Patch mode: the patch of every hit in event order, [hits, pw, pb], and its fiducial flag.
struct PatchInputs {
  std::vector<float> patches;
  std::vector<uint8_t> fiducial;
};
PatchInputs prepare_patches(const Queue& queue, std::span<const PlaneInputs> planes,
                            const PatchParams& params = {});

// How zero-suppressed the network's input is: over the fiducial hits' patches, the pixels that
// are not exactly 0 (charge inside a region of interest) and all pixels.
struct PatchOccupancy {
  int64_t nonzero = 0, pixels = 0;
  double fraction() const { return pixels ? double(nonzero) / double(pixels) : 0.0; }
};
PatchOccupancy patch_occupancy(const PatchInputs& inputs, const PatchParams& params = {});

// Hit clusters: hits of one plane joined when on the same or neighbouring wires with peak
// ticks at most `max_tick_gap` apart (connected components). Cluster c owns
// hits[splits[c] .. splits[c + 1]) (indices into event.hits).
struct Clusters {
  std::vector<int64_t> splits{0};
  std::vector<int32_t> hits;
  size_t size() const { return splits.size() - 1; }
};
Clusters cluster_hits(const ToyEvent& event, float max_tick_gap = 8.0f);

// Per-cluster [track, em, none, michel] from per-hit scores [hits, 4] and fiducial flags
// (aggregate_clusters on `queue`).
std::vector<float> aggregate(const Queue& queue, std::span<const float> scores,
                             std::span<const uint8_t> fiducial, const Clusters& clusters);

}  // namespace kaas::examples
