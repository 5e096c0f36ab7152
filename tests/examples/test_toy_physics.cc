// The toy detector's physics (examples/lartpc/toy_physics.h) and signal processing
// (signal_processing.h): each modelled fact checked on its own.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "examples/lartpc/signal_processing.h"
#include "examples/lartpc/toy_physics.h"

namespace kaas::examples {
namespace {

PlaneImage empty_plane(int wires, int ticks) {
  PlaneImage plane;
  plane.wires = wires;
  plane.ticks = ticks;
  plane.adc.assign(size_t(wires) * size_t(ticks), 0.0f);
  plane.truth.assign(plane.adc.size(), uint8_t(Truth::kNone));
  return plane;
}

double wire_charge(const PlaneImage& plane, int wire) {
  const float* adc = plane.adc.data() + size_t(wire) * size_t(plane.ticks);
  return std::accumulate(adc, adc + plane.ticks, 0.0);
}

TEST(ToyPhysics, MuonStoppingPowerRisesTowardsTheEnd) {
  EXPECT_DOUBLE_EQ(muon_dedx(200.0), 2.1) << "minimum ionising far from the end";
  EXPECT_GT(muon_dedx(2.0), 2.0 * muon_dedx(50.0));
  for (double r = 0.2; r < 100; r *= 1.5) EXPECT_GE(muon_dedx(r), muon_dedx(r * 1.5)) << r;
  // Recombination: collected charge grows less than the energy loss (Birks).
  EXPECT_LT(collected_dqdx(10.0) / collected_dqdx(2.1), 10.0 / 2.1);
  EXPECT_GT(collected_dqdx(10.0), collected_dqdx(2.1));
}

TEST(ToyPhysics, BraggRiseIsVisibleOnTheLastWires) {
  // A stopping muon along the wire axis: the charge per wire near the end exceeds the
  // charge far from it. Averaged over muons (the Landau tail is wide).
  double end = 0, middle = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PlaneImage plane = empty_plane(200, 400);
    Rng rng(seed);
    Painter paint(plane, rng);
    paint.muon({1.0, 200 * kCmPerTick}, 0.0, 150 * kWirePitchCm, /*stopping=*/true);
    for (int w = 145; w < 149; ++w) end += wire_charge(plane, w);
    for (int w = 50; w < 54; ++w) middle += wire_charge(plane, w);
  }
  EXPECT_GT(end, 1.8 * middle);
}

TEST(ToyPhysics, MichelEnergiesFollowTheMichelSpectrum) {
  Rng rng(7);
  const int n = 40000;
  double sum = 0, above_half = 0, maximum = 0;
  for (int i = 0; i < n; ++i) {
    const double e = michel_energy(rng);
    sum += e;
    above_half += e > kMichelEndpointMeV / 2;
    maximum = std::max(maximum, e);
  }
  // x^2 (3 - 2x): mean x = 0.7, P(x > 1/2) = 1 - (1/4 - 1/32) / (1/2) = 0.8125.
  EXPECT_NEAR(sum / n, 0.7 * kMichelEndpointMeV, 0.01 * kMichelEndpointMeV);
  EXPECT_NEAR(above_half / n, 0.8125, 0.01);
  EXPECT_LE(maximum, kMichelEndpointMeV);
}

TEST(ToyPhysics, DeltaRaysAlongMuonsAtTheBetheRate) {
  // 0.0966 MeV/cm x (1/3 - 1/30) per MeV: ~0.029 knock-on electrons per cm.
  int64_t rays = 0;
  const double length = 100.0;
  const int muons = 60;
  for (int m = 0; m < muons; ++m) {
    PlaneImage plane = empty_plane(400, 2000);
    Rng rng(100 + uint64_t(m));
    Painter paint(plane, rng);
    paint.muon({1.0, 1000 * kCmPerTick}, 0.0, length, /*stopping=*/false);
    rays += paint.delta_rays();
  }
  const double expected = 0.0966 * (1 / 3.0 - 1 / 30.0) * length * muons;
  EXPECT_NEAR(double(rays), expected, 4 * std::sqrt(expected));
}

TEST(ToyPhysics, ElectronsWanderAndDepositTheirEnergy) {
  // A 40 MeV electron's path is not straight: its deposits spread over more than one wire row
  // and drift-time band. Its own ionisation is Michel; a hard photon's detached deposit is EM
  // (LArSoft labels a Michel electron's EM daughters EM). Over seeds, both occur and the
  // electron's own charge is most of it.
  int with_photon = 0;
  double michel = 0, em = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PlaneImage plane = empty_plane(300, 2400);
    Rng rng(seed);
    Painter paint(plane, rng);
    paint.electron({150 * kWirePitchCm, 1200 * kCmPerTick}, 0.0, 40.0, Truth::kMichel);
    int wires_hit = 0;
    for (int w = 0; w < plane.wires; ++w) wires_hit += wire_charge(plane, w) > 0;
    EXPECT_GT(wires_hit, 5) << seed;
    const double em_before = em;
    for (size_t i = 0; i < plane.truth.size(); ++i) {
      ASSERT_TRUE(plane.truth[i] == uint8_t(Truth::kNone) ||
                  plane.truth[i] == uint8_t(Truth::kMichel) ||
                  plane.truth[i] == uint8_t(Truth::kEm))
          << int(plane.truth[i]);
      (plane.truth[i] == uint8_t(Truth::kMichel) ? michel : em) +=
          plane.truth[i] == uint8_t(Truth::kNone) ? 0.0 : plane.adc[i];
    }
    with_photon += em > em_before;
  }
  EXPECT_GT(michel, 2.0 * em);
  EXPECT_GT(with_photon, 0) << "no hard photon in 20 electrons of 40 MeV";
  EXPECT_LT(with_photon, 20);
}

TEST(ToyPhysics, APixelsTruthIsTheClassThatLeftTheMostCharge) {
  PlaneImage plane = empty_plane(20, 200);
  Rng rng(1);
  Painter paint(plane, rng);
  const Vec2 at{10 * kWirePitchCm, 100 * kCmPerTick};
  const size_t peak = size_t(10) * 200 + 100;
  paint.deposit(at, 10.0, Truth::kTrack);
  EXPECT_EQ(plane.truth[peak], uint8_t(Truth::kTrack));
  paint.deposit(at, 4.0, Truth::kEm);  // later but smaller: the track keeps it
  EXPECT_EQ(plane.truth[peak], uint8_t(Truth::kTrack));
  paint.deposit(at, 7.0, Truth::kEm);  // EM now 11 against 10
  EXPECT_EQ(plane.truth[peak], uint8_t(Truth::kEm));
  paint.deposit(at, 2.0, Truth::kTrack);  // 12 against 11
  EXPECT_EQ(plane.truth[peak], uint8_t(Truth::kTrack));
  EXPECT_EQ(plane.truth[size_t(3) * 200 + 100], uint8_t(Truth::kNone)) << "no charge there";
}

TEST(SignalProcessing, NoiseIsRemovedAndTheSignalIsZeroOutsideRegionsOfInterest) {
  // Strong coherent noise (8 ADC rms) on incoherent noise (2.5 ADC): without its removal the
  // ROI finder would open regions along every board's waveform.
  PlaneImage plane = empty_plane(192, 3000);
  ReadoutNoiseConfig noise;
  noise.coherent_adc = 8.0f;
  noise.dead_wire_fraction = 0.05f;
  Rng rng(11);
  // A pulse of 60 ADC peak on wire 100 at tick 1500.
  for (int t = 1480; t < 1520; ++t)
    plane.adc[size_t(100) * 3000 + size_t(t)] =
        60.0f * std::exp(-0.5f * float((t - 1500) * (t - 1500)) / (3.5f * 3.5f));
  add_readout_noise(plane, noise, rng);
  ASSERT_FALSE(plane.dead[100]) << "the seed must leave the pulse's wire alive";
  PlaneImage unfiltered = plane;
  SignalProcessingConfig keep_coherent;
  keep_coherent.remove_coherent_noise = false;
  const double total = double(plane.adc.size());
  const double kept = double(process_signal(unfiltered, keep_coherent, noise.board_wires)) / total;
  const int64_t in_roi = process_signal(plane, SignalProcessingConfig{}, noise.board_wires);
  // Left in, the coherent waveform opens regions of interest wherever it swings high.
  EXPECT_GT(kept, 2.0 * double(in_roi) / total);
  EXPECT_LT(double(in_roi) / total, 0.06) << "noise-only ROIs";
  int64_t zeros = 0, dead = 0;
  for (int w = 0; w < plane.wires; ++w) {
    const float* adc = plane.adc.data() + size_t(w) * 3000;
    if (plane.dead[size_t(w)]) {
      ++dead;
      EXPECT_TRUE(std::all_of(adc, adc + 3000, [](float v) { return v == 0.0f; })) << w;
    }
    zeros += std::count(adc, adc + 3000, 0.0f);
  }
  EXPECT_GT(dead, 0);
  // Outside ROIs exactly 0 (inside, a median-subtracted sample can be 0 too).
  EXPECT_GE(zeros, int64_t(total) - in_roi);
  // The pulse survives with its height (noise and the removed baselines aside) and its ROI.
  const float* pulse = plane.adc.data() + size_t(100) * 3000;
  EXPECT_NEAR(*std::max_element(pulse + 1490, pulse + 1510), 60.0f, 12.0f);
  for (int t = 1490; t <= 1510; ++t) EXPECT_NE(pulse[t], 0.0f) << t;
  EXPECT_EQ(pulse[1000], 0.0f);
}

}  // namespace
}  // namespace kaas::examples
