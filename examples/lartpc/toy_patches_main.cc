// kaas-toy-patches: a training set for EmTrkMichelId from toy events. Each event's hits go
// through kaas-reco's own preprocessing (prepare_planes, prepare_patches: the patches the model
// is served), a seeded sample of at most --per-class hits of each truth label (--track-hits of
// track) is kept (Michel hits are ~2 % of an event, so sampling per class balances the set) plus
// samples of the hard cases: other hits near Michel electrons (--near-michel) and EM hits with
// few EM neighbours (--sparse-em: delta rays, shower tips); the patches and labels are written
// as .npy:
//   patches.npy  float32 [N, 48, 48, 1]  main_input layout (NHWC: wires x drift bins)
//   label.npy    int32 [N]   0 track, 1 em (showers and Michel electrons), 2 none (noise)
//   michel.npy   float32 [N] 1 for a Michel-electron hit
//   event.npy    int32 [N]   event number (for a validation split by event)
//   hit.npy      float32 [N, 3]  plane, wire, peak tick (for looking at the mistakes)
// Only fiducial hits are kept (their patch lies inside the plane).

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <random>

#include "examples/lartpc/metrics.h"
#include "examples/lartpc/reco.h"
#include "examples/lartpc/toy_options.h"
#include "kaas/backends/backend.h"
#include "kaas/common/cli.h"
#include "kaas/models/npy.h"

namespace {

using namespace kaas;
using namespace kaas::examples;

// Near a Michel electron: on its plane, within a quarter patch in wires and drift bins. The
// muon's last hits and the Michel's neighbours are what the Michel head must tell apart, and a
// uniform sample of tracks holds few of them.
std::vector<bool> near_michel(const ToyEvent& event, const PatchParams& params) {
  std::vector<size_t> michel;
  for (size_t i = 0; i < event.hits.size(); ++i)
    if (event.hits[i].truth == Truth::kMichel) michel.push_back(i);
  const int wire_reach = params.patch_wires / 4;
  const float tick_reach = float(params.patch_bins / 4 * params.drift_window);
  std::vector<bool> near(event.hits.size(), false);
  for (size_t i = 0; i < event.hits.size(); ++i) {
    const Hit& h = event.hits[i];
    if (h.truth == Truth::kMichel) continue;
    for (size_t m : michel) {
      const Hit& mh = event.hits[m];
      if (mh.plane == h.plane && std::abs(mh.wire - h.wire) <= wire_reach &&
          std::fabs(mh.peak_tick - h.peak_tick) <= tick_reach) {
        near[i] = true;
        break;
      }
    }
  }
  return near;
}

// EM hits with few EM hits around them (at most 16 within 4 cm on their plane): delta rays and
// shower tips, the EM deposits that look most like a Michel electron (the hard negatives of the
// Michel head; a uniform EM sample is mostly shower cores).
std::vector<bool> sparse_em(const ToyEvent& event) {
  constexpr double kRadiusCm = 4.0, kWireCm = 0.48, kTickCm = 0.08;
  constexpr int kMostNeighbours = 16;
  std::vector<bool> sparse(event.hits.size(), false);
  // Hits are plane by plane, wire by wire: look only at wires within the radius.
  const int wire_reach = int(kRadiusCm / kWireCm);
  for (size_t i = 0; i < event.hits.size(); ++i) {
    const Hit& h = event.hits[i];
    if (h.truth != Truth::kEm) continue;
    int neighbours = 0;
    for (size_t j = i; j-- > 0 && neighbours <= kMostNeighbours;) {
      const Hit& o = event.hits[j];
      if (o.plane != h.plane || h.wire - o.wire > wire_reach) break;
      const double dw = (o.wire - h.wire) * kWireCm, dt = (o.peak_tick - h.peak_tick) * kTickCm;
      neighbours += o.truth == Truth::kEm && dw * dw + dt * dt <= kRadiusCm * kRadiusCm;
    }
    for (size_t j = i + 1; j < event.hits.size() && neighbours <= kMostNeighbours; ++j) {
      const Hit& o = event.hits[j];
      if (o.plane != h.plane || o.wire - h.wire > wire_reach) break;
      const double dw = (o.wire - h.wire) * kWireCm, dt = (o.peak_tick - h.peak_tick) * kTickCm;
      neighbours += o.truth == Truth::kEm && dw * dw + dt * dt <= kRadiusCm * kRadiusCm;
    }
    sparse[i] = neighbours <= kMostNeighbours;
  }
  return sparse;
}

// The hits of one event to keep: up to `per_class` of each truth label and up to `near` other
// hits near Michel electrons, each chosen by a seeded shuffle; returned in event order (so they
// stay grouped by plane), each hit once.
std::vector<size_t> sample_hits(const ToyEvent& event, int64_t per_class, int64_t track_hits,
                                int64_t near, int64_t sparse, const PatchParams& params,
                                uint64_t seed) {
  // By truth label, then near a Michel electron, then sparse EM.
  std::array<std::vector<size_t>, 6> groups;
  const std::vector<bool> is_near = near_michel(event, params);
  const std::vector<bool> is_sparse = sparse > 0 ? sparse_em(event) : std::vector<bool>();
  for (size_t i = 0; i < event.hits.size(); ++i)
    groups[is_near[i]                           ? 4
           : !is_sparse.empty() && is_sparse[i] ? 5
                                                : size_t(event.hits[i].truth)]
        .push_back(i);
  std::mt19937_64 engine(seed);
  std::vector<size_t> kept;
  for (size_t g = 0; g < groups.size(); ++g) {
    auto& hits = groups[g];
    // Fisher-Yates on the first `take` places only (mt19937_64's output is standardised).
    const int64_t wanted = g == 4                       ? near
                           : g == 5                     ? sparse
                           : g == size_t(Truth::kTrack) ? track_hits
                                                        : per_class;
    const size_t take = std::min(hits.size(), size_t(wanted));
    for (size_t i = 0; i < take; ++i) std::swap(hits[i], hits[i + engine() % (hits.size() - i)]);
    kept.insert(kept.end(), hits.begin(), hits.begin() + std::ptrdiff_t(take));
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

struct Options {
  ToyEventConfig toy;
  int events = 10, first_event = 0;
  int64_t per_class = 1000, near = 1000, track_hits = -1, sparse = 0;
  std::string out_dir, backend_name = "auto";
};

void add_options(kaas::cli::App& app, Options& o) {
  app.add_option("--out", o.out_dir, "directory for the .npy files")->required();
  app.add_option("--events", o.events, "events")->check(kaas::cli::range(1, 100000));
  app.add_option("--first-event", o.first_event, "number of the first event")
      ->check(kaas::cli::range(0, 1 << 30));
  app.add_option("--per-class", o.per_class, "hits kept per truth label and event")
      ->check(kaas::cli::range(int64_t(1), int64_t(1) << 24));
  app.add_option("--track-hits", o.track_hits,
                 "track hits kept per event (default --per-class; events hold about twice as "
                 "many track as EM hits)")
      ->check(kaas::cli::range(int64_t(1), int64_t(1) << 24));
  app.add_option("--sparse-em", o.sparse,
                 "also keep this many EM hits with few EM neighbours per event (delta rays, "
                 "shower tips: the Michel head's hard negatives)")
      ->check(kaas::cli::range(int64_t(0), int64_t(1) << 24));
  app.add_option("--near-michel", o.near,
                 "also keep this many other hits near Michel electrons per event")
      ->check(kaas::cli::range(int64_t(0), int64_t(1) << 24));
  app.add_option("--backend", o.backend_name, "backend for the patch extraction");
  kaas::examples::add_toy_event_options(app, o.toy);
}

// The per-patch labels, small enough to hold until the end.
struct Labels {
  std::vector<int32_t> labels, event_numbers;
  std::vector<float> michel, hit_positions;
  std::array<int64_t, 4> kept_by_truth{};
};

// Event `e`'s sampled fiducial hits: their patches appended to `patches`, their labels to
// `out`.
void add_event(const Queue& queue, const ToyEvent& event, int e, const Options& o,
               const PatchParams& params, models::NpyRowWriter& patches, Labels& out) {
  const int64_t patch_size = int64_t(params.patch_wires) * params.patch_bins;
  const std::vector<size_t> kept =
      sample_hits(event, o.per_class, o.track_hits < 0 ? o.per_class : o.track_hits, o.near,
                  o.sparse, params, o.toy.seed * 1000003u + uint64_t(e));
  // The planes with only the kept hits: their patches come out in `kept` order.
  std::vector<PlaneInputs> planes = prepare_planes(queue, event, params);
  for (auto& plane : planes) {
    plane.hit_wire.clear();
    plane.hit_tick.clear();
  }
  for (size_t i : kept) {
    const Hit& h = event.hits[i];
    planes[size_t(h.plane)].hit_wire.push_back(h.wire);
    planes[size_t(h.plane)].hit_tick.push_back(h.peak_tick);
  }
  const PatchInputs inputs = prepare_patches(queue, planes, params);
  for (size_t k = 0; k < kept.size(); ++k) {
    if (!inputs.fiducial[k]) continue;
    const Hit& h = event.hits[kept[k]];
    const auto* patch = inputs.patches.data() + k * size_t(patch_size);
    patches.append(patch, 1);
    out.labels.push_back(truth_class(h.truth));
    out.michel.push_back(h.truth == Truth::kMichel ? 1.0f : 0.0f);
    out.event_numbers.push_back(e);
    out.hit_positions.insert(out.hit_positions.end(), {float(h.plane), float(h.wire), h.peak_tick});
    ++out.kept_by_truth[size_t(h.truth)];
  }
}

void write_labels(const std::filesystem::path& dir, const Labels& per_patch) {
  const int64_t n = int64_t(per_patch.labels.size());
  using models::DataType;
  using models::HostTensor;
  models::write_npy(dir / "label.npy",
                    HostTensor::make<int32_t>("label", DataType::kInt32, {n}, per_patch.labels));
  models::write_npy(dir / "michel.npy",
                    HostTensor::make<float>("michel", DataType::kFloat32, {n}, per_patch.michel));
  models::write_npy(dir / "event.npy", HostTensor::make<int32_t>("event", DataType::kInt32, {n},
                                                                 per_patch.event_numbers));
  models::write_npy(dir / "hit.npy", HostTensor::make<float>("hit", DataType::kFloat32, {n, 3},
                                                             per_patch.hit_positions));
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{"kaas-toy-patches: EmTrkMichelId training patches and labels from toy events"};
  Options o;
  add_options(app, o);
  if (const auto status = app.parse(argc, argv)) return *status;
  try {
    const Queue queue(find_backend(o.backend_name));
    const PatchParams params;
    namespace fs = std::filesystem;
    const fs::path dir(o.out_dir);
    fs::create_directories(dir);
    // The patches go to disk event by event (9 KB each: 13 GB for 240 training events); the
    // per-patch labels are small and written at the end.
    models::NpyRowWriter patches(dir / "patches.npy", models::DataType::kFloat32,
                                 {params.patch_wires, params.patch_bins, 1});
    Labels per_patch;
    const bool show_progress = isatty(STDERR_FILENO);
    // The next event is generated on another thread while this one's patches are cut (each
    // event is seeded by its number alone, so the order of work does not change a bit).
    const auto generate = [&toy = o.toy](int e) {
      return std::async(std::launch::async, make_toy_event, std::cref(toy), uint64_t(e));
    };
    std::future<ToyEvent> next_event = generate(o.first_event);
    for (int e = o.first_event; e < o.first_event + o.events; ++e) {
      const ToyEvent event = next_event.get();
      if (e + 1 < o.first_event + o.events) next_event = generate(e + 1);
      add_event(queue, event, e, o, params, patches, per_patch);
      if (show_progress)
        std::fprintf(stderr, "\revent %d/%d: %zu patches", e - o.first_event + 1, o.events,
                     per_patch.labels.size());
    }
    if (show_progress) std::fprintf(stderr, "\n");
    patches.finish();
    write_labels(dir, per_patch);
    const auto& kept_by_truth = per_patch.kept_by_truth;
    std::printf(
        "wrote %lld patches to %s (track %lld, em %lld, michel %lld, none %lld; %d events)\n",
        static_cast<long long>(per_patch.labels.size()), o.out_dir.c_str(),
        static_cast<long long>(kept_by_truth[1]), static_cast<long long>(kept_by_truth[2]),
        static_cast<long long>(kept_by_truth[3]), static_cast<long long>(kept_by_truth[0]),
        o.events);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-toy-patches: %s\n", e.what());
    return 1;
  }
  return 0;
}
