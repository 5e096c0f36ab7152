#include "cases/patches_cases.h"

#include <algorithm>
#include <random>

#include "cases/guarded.h"
#include "cases/reference.h"

namespace kaas::cases {

PatchesInputs patches_inputs(const PatchesCase& c) {
  PatchesInputs in;
  in.image = random_floats(size_t(c.wires * c.ticks), uint32_t(17 + c.hits), c.adc_lo, c.adc_hi);
  std::mt19937 rng(5);
  in.wire.resize(size_t(c.hits));
  in.time.resize(size_t(c.hits));
  for (int64_t h = 0; h < c.hits; ++h) {
    in.wire[h] = int32_t(rng() % uint64_t(c.wires));
    in.time[h] = float(rng() % uint64_t(c.ticks * 10)) / 10.0f;
  }
  if (c.hits >= 4) {
    in.wire[0] = 0, in.time[0] = 0.0f;
    in.wire[1] = int32_t(c.wires - 1), in.time[1] = float(c.ticks) - 0.5f;
    in.wire[3] = in.wire[2], in.time[3] = in.time[2];  // a repeated (wire, bin): its real patch
  }
  return in;
}

std::vector<float> host_downsample(const std::vector<float>& image, int64_t wires, int64_t ticks,
                                   const PatchParams& p) {
  const int64_t bins = ticks / p.drift_window;
  const float out_range = p.out_max - p.out_min, adc_range = p.adc_max - p.adc_min;
  std::vector<float> down(size_t(wires * bins));
  for (int64_t w = 0; w < wires; ++w) {
    for (int64_t b = 0; b < bins; ++b) {
      float sum = 0.0f;
      for (int t = 0; t < p.drift_window; ++t) sum += image[w * ticks + b * p.drift_window + t];
      const float clamped = std::min(std::max(sum / float(p.drift_window), p.adc_min), p.adc_max);
      down[w * bins + b] = (clamped - p.adc_min) * out_range / adc_range + p.out_min;
    }
  }
  return down;
}

std::vector<float> host_patches(const std::vector<float>& down, int64_t wires, int64_t bins,
                                const std::vector<int32_t>& wire, const std::vector<float>& time,
                                const PatchParams& p) {
  const int64_t pw = p.patch_wires, pb = p.patch_bins;
  const float zero = patch_zero_level(p);
  std::vector<float> patches(wire.size() * size_t(pw * pb));
  for (size_t h = 0; h < wire.size(); ++h) {
    const int64_t b0 = int64_t(time[h]) / p.drift_window - pb / 2, w0 = wire[h] - pw / 2;
    for (int64_t i = 0; i < pw; ++i) {
      for (int64_t j = 0; j < pb; ++j) {
        const int64_t w = w0 + i, b = b0 + j;
        patches[(h * pw + i) * pb + j] =
            w >= 0 && w < wires && b >= 0 && b < bins ? down[w * bins + b] : zero;
      }
    }
  }
  return patches;
}

std::vector<uint8_t> host_fiducial(int64_t wires, int64_t bins, const std::vector<int32_t>& wire,
                                   const std::vector<float>& time, const PatchParams& p) {
  const int64_t mw = p.patch_wires / 8, mb = p.patch_bins / 8;
  std::vector<uint8_t> fiducial(wire.size());
  for (size_t h = 0; h < wire.size(); ++h) {
    const int64_t b = int64_t(time[h]) / p.drift_window;
    fiducial[h] = wire[h] >= mw && wire[h] < wires - mw && b >= mb && b < bins - mb;
  }
  return fiducial;
}

std::vector<PatchesCase> patches_shapes() {
  // 500 bins and 3 trailing ticks; then a ProtoDUNE-like plane (960 wires x 6000 ticks).
  return {{200, 3003, 700, -100.0f, 300.0f},
          {960, 6000, 1'500, -20.0f, 200.0f},
          {960, 6000, 15'000, -20.0f, 200.0f}};
}

namespace {

class PatchesInstance : public Instance {
 public:
  PatchesInstance(const Queue& queue, const PatchesCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        bins_(downsampled_bins(c.ticks, PatchParams{})),
        in_(patches_inputs(c)),
        image_(queue, in_.image),
        wire_(queue, in_.wire),
        time_(queue, in_.time),
        down_(queue, size_t(c.wires * bins_)),
        patches_(queue, size_t(c.hits * 48 * 48)),
        fiducial_(queue, size_t(c.hits)) {}
  void run() override {
    downsample_image(queue_,
                     make_view<2>(static_cast<const float*>(image_.data()), {c_.wires, c_.ticks}),
                     make_view<2>(down_.data(), {c_.wires, bins_}), params_, options_.config);
    extract_patches(
        queue_, make_view<2>(static_cast<const float*>(down_.data()), {c_.wires, bins_}), c_.ticks,
        wire_.const_view(), time_.const_view(), make_view<3>(patches_.data(), {c_.hits, 48, 48}),
        fiducial_.view(), params_, options_.config);
  }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto down = down_.read(&guard_writes);
    const auto patches = patches_.read(&guard_writes);
    const auto fiducial = fiducial_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const auto want_down = host_downsample(in_.image, c_.wires, c_.ticks, params_);
    for (size_t i = 0; i < down.size(); ++i) {
      checker.bits(down[i], want_down[i], "downsampled", int64_t(i));
    }
    const auto want = host_patches(want_down, c_.wires, bins_, in_.wire, in_.time, params_);
    for (size_t i = 0; i < patches.size(); ++i) {
      checker.bits(patches[i], want[i], "patch cell", int64_t(i));
    }
    const auto want_fiducial = host_fiducial(c_.wires, bins_, in_.wire, in_.time, params_);
    for (size_t h = 0; h < fiducial.size(); ++h) {
      checker.exact(int(fiducial[h]), int(want_fiducial[h]), "fiducial", int64_t(h));
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  PatchesCase c_;
  RunOptions options_;
  PatchParams params_;
  int64_t bins_;
  PatchesInputs in_;
  Guarded<float> image_;
  Guarded<int32_t> wire_;
  Guarded<float> time_, down_, patches_;
  Guarded<uint8_t> fiducial_;
};

}  // namespace

std::vector<Case> patches_cases() {
  std::vector<Case> cases;
  for (const PatchesCase& c : patches_shapes()) {
    const std::string plane = std::to_string(c.wires) + "x" + std::to_string(c.ticks);
    Case k;
    k.kernel = "patches";
    k.name = "patches_plane" + plane + "/{backend}/" + std::to_string(c.hits);
    k.title = "patches " + plane + " " + std::to_string(c.hits) + " hits";
    // image read once, patches written once
    k.bytes = 4.0 * (double(c.wires * c.ticks) + double(c.hits) * 48 * 48);
    k.reference_ops = double(c.wires * c.ticks) + double(c.hits) * 48 * 48;
    k.items = double(c.hits);
    k.items_name = "hits/s";
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<PatchesInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
