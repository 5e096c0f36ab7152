#include "examples/lartpc/signal_processing.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace kaas::examples {

namespace {

float median_of(std::vector<float>& values) {
  if (values.empty()) return 0.0f;
  const auto middle = values.begin() + std::ptrdiff_t(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

}  // namespace

void add_readout_noise(PlaneImage& plane, const ReadoutNoiseConfig& noise, Rng& rng) {
  const size_t ticks = size_t(plane.ticks);
  plane.dead.assign(size_t(plane.wires), 0);
  const int board_wires = std::max(1, noise.board_wires);
  std::vector<float> coherent(ticks);
  for (int w = 0; w < plane.wires; ++w) {
    if (w % board_wires == 0) {
      // A board's shared waveform: four sinusoids of random low frequency and phase, rms
      // coherent_adc in all (each sin has rms amplitude / sqrt 2).
      std::fill(coherent.begin(), coherent.end(), 0.0f);
      for (int k = 0; k < 4; ++k) {
        const double amplitude = noise.coherent_adc * std::sqrt(2.0 / 4.0);
        const double cycles_per_tick = rng.uniform(1.0 / 2000.0, 1.0 / 40.0);
        const double phase = rng.uniform(0, 2 * kPi);
        for (size_t t = 0; t < ticks; ++t)
          coherent[t] += float(amplitude * std::sin(2 * kPi * cycles_per_tick * double(t) + phase));
      }
    }
    float* adc = plane.adc.data() + size_t(w) * ticks;
    if (rng.uniform() < noise.dead_wire_fraction) {
      plane.dead[size_t(w)] = 1;
      std::fill(adc, adc + ticks, 0.0f);
      continue;
    }
    const float baseline = float(noise.baseline_adc * rng.normal());
    const float rms = float(noise.incoherent_adc * rng.uniform(0.85, 1.15));
    const float gain = float(rng.uniform(0.9, 1.1));
    for (size_t t = 0; t < ticks; ++t)
      adc[t] += baseline + rms * float(rng.normal()) + gain * coherent[t];
  }
}

int64_t process_signal(PlaneImage& plane, const SignalProcessingConfig& config, int board_wires) {
  const size_t ticks = size_t(plane.ticks);
  const auto wire = [&](int w) { return plane.adc.data() + size_t(w) * ticks; };
  const auto live = [&](int w) { return plane.dead.empty() || !plane.dead[size_t(w)]; };
  std::vector<float> scratch;
  // 1, 2: dead wires to 0, baselines off.
  for (int w = 0; w < plane.wires; ++w) {
    float* adc = wire(w);
    if (!live(w)) {
      std::fill(adc, adc + ticks, 0.0f);
      continue;
    }
    scratch.assign(adc, adc + ticks);
    const float baseline = median_of(scratch);
    for (size_t t = 0; t < ticks; ++t) adc[t] -= baseline;
  }
  // 3: the coherent part, board by board and tick by tick.
  board_wires = std::max(1, board_wires);
  for (int first = 0; config.remove_coherent_noise && first < plane.wires; first += board_wires) {
    const int last = std::min(plane.wires, first + board_wires);
    for (size_t t = 0; t < ticks; ++t) {
      scratch.clear();
      for (int w = first; w < last; ++w)
        if (live(w) && wire(w)[t] < config.protect_adc) scratch.push_back(wire(w)[t]);
      const float common = median_of(scratch);
      for (int w = first; w < last; ++w)
        if (live(w)) wire(w)[t] -= common;
    }
  }
  // 4, 5: noise rms per wire, ROIs, zero outside.
  int64_t roi_samples = 0;
  std::vector<uint8_t> in_roi(ticks);
  const int pad = std::max(0, config.roi_pad_ticks);
  for (int w = 0; w < plane.wires; ++w) {
    if (!live(w)) continue;
    float* adc = wire(w);
    scratch.resize(ticks);
    for (size_t t = 0; t < ticks; ++t) scratch[t] = std::fabs(adc[t]);
    const float rms = 1.4826f * median_of(scratch);
    const float seed = config.roi_threshold_sigma * rms / std::sqrt(5.0f) * 5.0f;  // on a 5-sum
    std::fill(in_roi.begin(), in_roi.end(), 0);
    float sum = 0;
    for (size_t t = 0; t < ticks; ++t) {  // the sum of ticks t-4 .. t, centred on t-2
      sum += adc[t];
      if (t >= 5) sum -= adc[t - 5];
      if (t >= 4 && sum > seed) {
        const size_t centre = t - 2;
        const size_t lo = centre > size_t(pad) ? centre - size_t(pad) : 0;
        const size_t hi = std::min(ticks - 1, centre + size_t(pad));
        std::fill(in_roi.begin() + std::ptrdiff_t(lo), in_roi.begin() + std::ptrdiff_t(hi) + 1, 1);
      }
    }
    for (size_t t = 0; t < ticks; ++t) {
      if (in_roi[t])
        ++roi_samples;
      else
        adc[t] = 0.0f;
    }
  }
  return roi_samples;
}

}  // namespace kaas::examples
