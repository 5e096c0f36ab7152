#pragma once
// A toy LArTPC event for the reconstruction demo: wire x tick ADC images for several planes with
// straight tracks (muons), Michel electrons (a short track at the end of some muons), EM
// showers (branching segments) and noise, and a threshold hit finder. Seeded and deterministic
// (mt19937_64 and the project's own transforms, not the implementation-defined <random>
// distributions). About 50k hits per event with the defaults.

#include <cstdint>
#include <vector>

namespace kaas::examples {

enum class Truth : uint8_t { kNone = 0, kTrack = 1, kEm = 2, kMichel = 3 };

struct ToyEventConfig {
  int planes = 3;
  int wires = 960;
  int ticks = 6000;
  int tracks_per_plane = 64;  // muons; ~30 % end in a Michel electron
  int showers_per_plane = 12;
  float noise_adc = 2.5f;       // Gaussian noise per sample
  float threshold_adc = 15.0f;  // hit finder threshold
  uint64_t seed = 1;
};

struct Hit {
  int32_t plane, wire;
  float peak_tick;  // sub-tick (parabola through the peak and its neighbours)
  float peak_adc, integral;
  Truth truth;  // what deposited most charge at the peak
};

struct PlaneImage {
  int wires = 0, ticks = 0;
  std::vector<float> adc;      // [wires][ticks]
  std::vector<uint8_t> truth;  // [wires][ticks], Truth of the largest deposit
};

struct ToyEvent {
  std::vector<PlaneImage> planes;
  std::vector<Hit> hits;  // plane by plane, wire by wire, in tick order
  int64_t muons = 0, michels = 0, showers = 0;
};

ToyEvent make_toy_event(const ToyEventConfig& config, uint64_t event_number);

// Regions of consecutive samples above the threshold on one wire; one hit per local maximum.
std::vector<Hit> find_hits(const PlaneImage& plane, int plane_index, float threshold_adc);

}  // namespace kaas::examples
