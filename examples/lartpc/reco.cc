#include "examples/lartpc/reco.h"

#include <algorithm>
#include <numeric>

#include "kaas/backends/buffer.h"
#include "kaas/common/error.h"

namespace kaas::examples {

std::vector<PlaneInputs> prepare_planes(const Queue& queue, const ToyEvent& event,
                                        const PatchParams& params) {
  std::vector<PlaneInputs> planes(event.planes.size());
  for (size_t p = 0; p < planes.size(); ++p) {
    const PlaneImage& raw = event.planes[p];
    PlaneInputs& in = planes[p];
    in.wires = raw.wires;
    in.ticks = raw.ticks;
    in.bins = downsampled_bins(raw.ticks, params);
    const auto image = to_device(queue, raw.adc);
    auto down = make_device_buffer<float>(queue, size_t(in.wires * in.bins));
    downsample_image(queue,
                     make_view<2>(static_cast<const float*>(image.data()), {in.wires, raw.ticks}),
                     make_view<2>(down.data(), {in.wires, in.bins}), params);
    in.image = to_host(queue, down);
  }
  for (const Hit& h : event.hits) {
    if (h.plane < 0 || size_t(h.plane) >= planes.size())
      throw Error(ErrorCode::kInvalidArgument, "hit on plane " + std::to_string(h.plane) +
                                                   " of a " + std::to_string(planes.size()) +
                                                   "-plane event");
    planes[size_t(h.plane)].hit_wire.push_back(h.wire);
    planes[size_t(h.plane)].hit_tick.push_back(h.peak_tick);
  }
  return planes;
}

PatchOccupancy patch_occupancy(const PatchInputs& inputs, const PatchParams& params) {
  const size_t size = size_t(params.patch_wires) * size_t(params.patch_bins);
  PatchOccupancy out;
  for (size_t h = 0; h < inputs.fiducial.size(); ++h) {
    if (!inputs.fiducial[h]) continue;
    const float* patch = inputs.patches.data() + h * size;
    for (size_t i = 0; i < size; ++i) out.nonzero += patch[i] != 0.0f;
    out.pixels += int64_t(size);
  }
  return out;
}

PatchInputs prepare_patches(const Queue& queue, std::span<const PlaneInputs> planes,
                            const PatchParams& params) {
  const int64_t pw = params.patch_wires, pb = params.patch_bins;
  size_t hits = 0;
  for (const auto& p : planes) hits += p.hit_wire.size();
  PatchInputs out;
  out.patches.resize(hits * size_t(pw * pb));
  out.fiducial.resize(hits);
  size_t first = 0;
  for (const auto& p : planes) {
    const int64_t n = int64_t(p.hit_wire.size());
    if (n == 0) continue;
    const auto image = to_device(queue, p.image);
    const auto wire = to_device(queue, p.hit_wire);
    const auto tick = to_device(queue, p.hit_tick);
    auto patches = make_device_buffer<float>(queue, size_t(n * pw * pb));
    auto fiducial = make_device_buffer<uint8_t>(queue, size_t(n));
    extract_patches(queue, make_view<2>(static_cast<const float*>(image.data()), {p.wires, p.bins}),
                    p.ticks, make_view(static_cast<const int32_t*>(wire.data()), n),
                    make_view(static_cast<const float*>(tick.data()), n),
                    make_view<3>(patches.data(), {n, pw, pb}), make_view(fiducial.data(), n),
                    params);
    copy_to_host(queue, patches,
                 std::span(out.patches).subspan(first * size_t(pw * pb), size_t(n * pw * pb)));
    copy_to_host(queue, fiducial, std::span(out.fiducial).subspan(first, size_t(n)));
    queue.wait();
    first += size_t(n);
  }
  return out;
}

namespace {

// Union-find with path halving.
int32_t root_of(std::vector<int32_t>& parent, int32_t i) {
  while (parent[size_t(i)] != i) {
    parent[size_t(i)] = parent[size_t(parent[size_t(i)])];
    i = parent[size_t(i)];
  }
  return i;
}

}  // namespace

Clusters cluster_hits(const ToyEvent& event, float max_tick_gap) {
  const auto& hits = event.hits;
  const int32_t n = int32_t(hits.size());
  // Hits by (plane, wire, tick), so each wire's hits are one tick-sorted run.
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const Hit &x = hits[size_t(a)], &y = hits[size_t(b)];
    if (x.plane != y.plane) return x.plane < y.plane;
    if (x.wire != y.wire) return x.wire < y.wire;
    return x.peak_tick < y.peak_tick;
  });
  std::vector<int32_t> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  auto join = [&](int32_t a, int32_t b) {
    a = root_of(parent, a);
    b = root_of(parent, b);
    if (a != b) parent[size_t(std::max(a, b))] = std::min(a, b);
  };
  // Runs of one (plane, wire).
  std::vector<size_t> run_start;
  for (size_t i = 0; i < order.size(); ++i) {
    const Hit& h = hits[size_t(order[i])];
    if (i == 0 || h.plane != hits[size_t(order[i - 1])].plane ||
        h.wire != hits[size_t(order[i - 1])].wire)
      run_start.push_back(i);
  }
  run_start.push_back(order.size());
  for (size_t r = 0; r + 1 < run_start.size(); ++r) {
    const size_t begin = run_start[r], end = run_start[r + 1];
    for (size_t i = begin + 1; i < end; ++i) {
      if (hits[size_t(order[i])].peak_tick - hits[size_t(order[i - 1])].peak_tick <= max_tick_gap)
        join(order[i], order[i - 1]);
    }
    // The next wire of the same plane: a two-pointer sweep over both tick-sorted runs.
    if (r + 2 >= run_start.size()) continue;
    const size_t next_end = run_start[r + 2];
    const Hit& here = hits[size_t(order[begin])];
    const Hit& there = hits[size_t(order[end])];
    if (there.plane != here.plane || there.wire != here.wire + 1) continue;
    size_t j = end;
    for (size_t i = begin; i < run_start[r + 1]; ++i) {
      const float t = hits[size_t(order[i])].peak_tick;
      while (j < next_end && hits[size_t(order[j])].peak_tick < t - max_tick_gap) ++j;
      for (size_t k = j; k < next_end && hits[size_t(order[k])].peak_tick <= t + max_tick_gap; ++k)
        join(order[i], order[k]);
    }
  }
  // Clusters numbered by their first hit in event order.
  std::vector<int32_t> cluster_of_root(static_cast<size_t>(n), -1);
  std::vector<int64_t> sizes;
  std::vector<int32_t> cluster(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t root = root_of(parent, i);
    if (cluster_of_root[size_t(root)] < 0) {
      cluster_of_root[size_t(root)] = int32_t(sizes.size());
      sizes.push_back(0);
    }
    cluster[size_t(i)] = cluster_of_root[size_t(root)];
    ++sizes[size_t(cluster[size_t(i)])];
  }
  Clusters out;
  out.splits.resize(sizes.size() + 1, 0);
  for (size_t c = 0; c < sizes.size(); ++c) out.splits[c + 1] = out.splits[c] + sizes[c];
  out.hits.resize(size_t(n));
  std::vector<int64_t> fill(out.splits.begin(), out.splits.end() - 1);
  for (int32_t i = 0; i < n; ++i) out.hits[size_t(fill[size_t(cluster[size_t(i)])]++)] = i;
  return out;
}

std::vector<float> aggregate(const Queue& queue, std::span<const float> scores,
                             std::span<const uint8_t> fiducial, const Clusters& clusters) {
  const int64_t hits = int64_t(fiducial.size()), n = int64_t(clusters.size());
  require(scores.size() == size_t(hits) * 4, "aggregate", "scores size",
          std::to_string(hits * 4) + " (4 per hit)", std::to_string(scores.size()));
  std::vector<float> out(size_t(n) * 4);
  if (n == 0) return out;
  const auto d_scores = to_device(queue, scores);
  const auto d_fiducial = to_device(queue, fiducial);
  const auto d_splits = to_device(queue, clusters.splits);
  const auto d_hits = to_device(queue, clusters.hits);
  auto d_out = make_device_buffer<float>(queue, out.size());
  aggregate_clusters(queue, make_view<2>(static_cast<const float*>(d_scores.data()), {hits, 4}),
                     make_view(static_cast<const uint8_t*>(d_fiducial.data()), hits),
                     make_view(static_cast<const int64_t*>(d_splits.data()), n + 1),
                     make_view(static_cast<const int32_t*>(d_hits.data()), hits),
                     make_view<2>(d_out.data(), {n, 4}));
  copy_to_host(queue, d_out, std::span(out));
  queue.wait();
  return out;
}

}  // namespace kaas::examples
