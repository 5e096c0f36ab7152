#pragma once
// A toy LArTPC event for the reconstruction demo: wire x tick images for several planes as the
// network sees them in production. Particles (toy_physics.h): stopping and through-going muons
// with a Bragg rise and delta rays, Michel electrons from the Michel spectrum, EM showers. The
// readout (signal_processing.h): incoherent and coherent wire noise, dead wires. Then the signal
// processing production applies before any hit finding: coherent-noise removal and regions of
// interest around charge, the signal exactly 0 outside them (what LArSoft's recob::Wire holds),
// and a threshold hit finder on that signal. Seeded and deterministic (mt19937_64 and the
// project's own transforms, not the implementation-defined <random> distributions). About 50k
// hits per event with the defaults.

#include <cstdint>
#include <vector>

namespace kaas::examples {

enum class Truth : uint8_t { kNone = 0, kTrack = 1, kEm = 2, kMichel = 3 };

// The readout's noise (ADC): each wire's own, and the part shared by the wires of one front-end
// board (coherent), plus wires that read nothing.
struct ReadoutNoiseConfig {
  float incoherent_adc = 2.5f;  // Gaussian per sample; each wire's rms varies by +-15 %
  float coherent_adc = 3.0f;    // rms of the low-frequency waveform a board's wires share
  int board_wires = 48;         // wires per front-end board (the coherent groups)
  float baseline_adc = 3.0f;    // rms of each wire's residual pedestal offset
  float dead_wire_fraction = 0.01f;
};

// What production's signal processing does before hit finding.
struct SignalProcessingConfig {
  bool remove_coherent_noise = true;
  float roi_threshold_sigma = 4.0f;  // ROI seed: 5-tick mean above this many noise sigmas
  int roi_pad_ticks = 16;            // ROIs widened by this much on each side
  float protect_adc = 15.0f;  // samples above this are charge, not noise, for the noise medians
};

struct ToyEventConfig {
  int planes = 3;
  int wires = 960;
  int ticks = 6000;
  int tracks_per_plane = 32;  // cosmic muons entering the plane
  // Muons that stop in the plane if their range (40-240 cm) ends before its edge; the others
  // leave it.
  float stopping_fraction = 0.8f;
  float michel_probability = 0.67f;  // stopping muons that decay to a Michel electron
  int showers_per_plane = 12;
  ReadoutNoiseConfig noise;
  SignalProcessingConfig processing;
  float threshold_adc = 15.0f;  // hit finder threshold on the processed signal
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
  std::vector<float> adc;      // [wires][ticks]: the processed signal, 0 outside ROIs
  std::vector<uint8_t> truth;  // [wires][ticks], Truth of the largest deposit
  std::vector<uint8_t> dead;   // [wires], 1 for a dead wire (the channel-status list)
};

// Where a stopping muon ended, and whether it decayed to a Michel electron (the others are mu-
// captured on argon nuclei): the truth of the cluster-level Michel selection (metrics.h).
struct StoppingEnd {
  int plane = 0;
  float wire = 0, tick = 0;  // the end point, in wire and tick units
  bool decayed = false;
};

struct ToyEvent {
  std::vector<PlaneImage> planes;
  std::vector<Hit> hits;  // plane by plane, wire by wire, in tick order
  std::vector<StoppingEnd> stopping_ends;
  int64_t muons = 0, stopping_muons = 0, michels = 0, showers = 0, delta_rays = 0;
  int64_t roi_samples = 0;  // samples inside regions of interest (the rest are exactly 0)
};

ToyEvent make_toy_event(const ToyEventConfig& config, uint64_t event_number);

// Regions of consecutive samples above the threshold on one wire; one hit per local maximum.
std::vector<Hit> find_hits(const PlaneImage& plane, int plane_index, float threshold_adc);

}  // namespace kaas::examples
