#include "examples/lartpc/toy_physics.h"

#include <algorithm>
#include <cmath>

namespace kaas::examples {

namespace {

constexpr double kStepCm = 0.24;  // half a wire pitch
constexpr double kRadiationLengthCm = 14.0;
constexpr double kMipDedx = 2.1;                             // MeV/cm
constexpr double kMuonMass = 105.66, kElectronMass = 0.511;  // MeV
// Peak ADC of a step's pulse per MeV of collected charge: a minimum-ionising step gives ~54 ADC
// on its wire, the scale the toy's hit threshold and the network's input range were set for.
constexpr double kAdcPerCollectedMeV = 153.0;
constexpr double kPulseSigmaTicks = 3.5;
// The Bethe knock-on rate constant K/2 (Z/A) rho for argon, MeV/cm.
constexpr double kDeltaRayRate = 0.0966;
// Knock-ons below 3 MeV (under 1.5 cm, up to three wires) stay part of the muon's own Landau
// fluctuation, as a simulation's production cut leaves them in the restricted energy loss.
constexpr double kDeltaMinMeV = 3.0, kDeltaMaxMeV = 30.0;

// Highland: the plane-projected scattering angle (radians, rms) over `step` cm for a particle of
// kinetic energy `kinetic` and mass `mass`.
double highland(double kinetic, double mass, double step) {
  const double momentum = std::sqrt(kinetic * kinetic + 2.0 * kinetic * mass);
  const double beta_p = momentum * momentum / (kinetic + mass);
  const double t = step / kRadiationLengthCm;
  return 13.6 / beta_p * std::sqrt(t) * (1.0 + 0.038 * std::log(t));
}

// A muon's kinetic energy at residual range R: the integral of muon_dedx.
double muon_kinetic(double range_cm) {
  return std::max(12.7 * std::pow(range_cm, 0.63), kMipDedx * range_cm);
}

// A Landau-distributed factor around 1 on a step's energy loss (mean ~1, capped tail).
double landau_factor(Rng& rng) {
  return std::clamp(0.8 + 0.15 * rng.moyal(), 0.3, 5.0);
}

Vec2 advance(Vec2 p, double angle, double distance) {
  return {p.x + distance * std::cos(angle), p.y + distance * std::sin(angle)};
}

}  // namespace

double distance_to_exit(Vec2 from, double angle, double width, double height) {
  const double dx = std::cos(angle), dy = std::sin(angle);
  double distance = 1e30;
  if (dx > 1e-12) distance = std::min(distance, (width - from.x) / dx);
  if (dx < -1e-12) distance = std::min(distance, -from.x / dx);
  if (dy > 1e-12) distance = std::min(distance, (height - from.y) / dy);
  if (dy < -1e-12) distance = std::min(distance, -from.y / dy);
  return std::max(0.0, distance);
}

double muon_dedx(double range_cm) {
  return std::max(kMipDedx, 8.0 * std::pow(std::max(range_cm, 0.15), -0.37));
}

double collected_dqdx(double dedx) {
  return 0.8 * dedx / (1.0 + 0.0696 * dedx);
}

double michel_energy(Rng& rng) {
  for (;;) {  // rejection sampling of x^2 (3 - 2x), whose maximum on [0, 1] is 1
    const double x = rng.uniform();
    if (rng.uniform() < x * x * (3.0 - 2.0 * x)) return x * kMichelEndpointMeV;
  }
}

Painter::MuonEnd Painter::muon(Vec2 start, double angle, double length_cm, bool stopping) {
  Vec2 at = start;
  for (double travelled = 0; travelled < length_cm; travelled += kStepCm) {
    const double range = length_cm - travelled;
    const double dedx = stopping ? muon_dedx(range) : kMipDedx;
    deposit(at, collected_dqdx(dedx * landau_factor(rng_)) * kStepCm, Truth::kTrack);
    // Knock-on electrons above kDeltaMinMeV: the rate integrated over T^-2 up to kDeltaMaxMeV.
    const double rate = kDeltaRayRate * (1.0 / kDeltaMinMeV - 1.0 / kDeltaMaxMeV);
    if (rng_.uniform() < rate * kStepCm) {
      const double inverse = 1.0 / kDeltaMinMeV - rng_.uniform() * rate / kDeltaRayRate;
      const double kinetic = 1.0 / inverse;
      const double opening = std::acos(std::sqrt(kinetic / (kinetic + 2.0 * kElectronMass)));
      electron(at, angle + (rng_.uniform() < 0.5 ? opening : -opening), kinetic, Truth::kEm);
      ++delta_rays_;
    }
    const double kinetic = stopping ? muon_kinetic(range) : 2000.0;
    angle += rng_.normal() * highland(kinetic, kMuonMass, kStepCm);
    at = advance(at, angle, kStepCm);
  }
  return {at, angle};
}

Painter::Painter(PlaneImage& image, Rng& rng) : image_(image), rng_(rng) {
  for (auto& charge : class_adc_) charge.assign(image.adc.size(), 0.0f);
}

void Painter::electron(Vec2 start, double angle, double energy_mev, Truth truth, int generation) {
  Vec2 at = start;
  double energy = energy_mev;
  while (energy > 0.05) {
    const double loss = std::min(energy, kMipDedx * kStepCm * landau_factor(rng_));
    deposit(at, collected_dqdx(loss / kStepCm) * kStepCm, truth);
    energy -= loss;
    // Occasionally a hard photon (one per two radiation lengths; energy fraction y ~ 1/y in
    // [0.1, 1]) converts away from the track and leaves a detached Compton electron. Softer
    // photons deposit close to the track and are not drawn apart.
    if (energy > 2.0 && rng_.uniform() < 0.5 * kStepCm / kRadiationLengthCm) {
      const double y = 0.1 * std::pow(10.0, rng_.uniform());
      const double photon = y * energy;
      energy -= photon;
      const double flight = -(9.0 / 7.0) * kRadiationLengthCm * std::log(1.0 - rng_.uniform());
      const Vec2 converts = advance(at, angle + rng_.normal() * kElectronMass / photon, flight);
      // A photon's deposits are EM activity even when the parent is a Michel electron: the
      // Michel label is the decay electron's own ionisation, as LArSoft's training labels
      // (nnet::TrainingDataAlg tags kMichel only on the electron's own track ID; its EM
      // daughters' deposits are EM).
      if (generation == 0 && photon > 1.0)
        electron(converts, rng_.uniform(0, 2 * kPi), photon * rng_.uniform(0.3, 0.9), Truth::kEm,
                 generation + 1);
    }
    angle += rng_.normal() * highland(std::max(energy, 0.05), kElectronMass, kStepCm);
    at = advance(at, angle, kStepCm);
  }
}

void Painter::deposit(Vec2 at, double charge, Truth truth) {
  deposit_adc(at.x / kWirePitchCm, at.y / kCmPerTick, charge * kAdcPerCollectedMeV, truth);
}

void Painter::deposit_adc(double wire, double tick, double amplitude, Truth truth) {
  const int w = int(std::lround(wire));
  if (w < 0 || w >= image_.wires) return;
  const int lo = std::max(0, int(tick - 4 * kPulseSigmaTicks)),
            hi = std::min(image_.ticks - 1, int(tick + 4 * kPulseSigmaTicks));
  for (int t = lo; t <= hi; ++t) {
    const double x = (t - tick) / kPulseSigmaTicks;
    const float value = float(amplitude * std::exp(-0.5 * x * x));
    const size_t i = size_t(w) * size_t(image_.ticks) + size_t(t);
    image_.adc[i] += value;
    if (truth == Truth::kNone) continue;
    // Only this class's charge grew: the pixel's largest class is this one or stays. Tails
    // below 1 ADC label nothing.
    const int cls = int(truth) - 1;
    const float grown = class_adc_[size_t(cls)][i] += value;
    const uint8_t held = image_.truth[i];
    if (grown > 1.0f && (held == uint8_t(Truth::kNone) || grown > class_adc_[size_t(held) - 1][i]))
      image_.truth[i] = uint8_t(truth);
  }
}

// A straight segment in ADC units with a Landau-like fluctuation (the showers' building block).
void Painter::segment(double w0, double t0, double w1, double t1, double amplitude, Truth truth) {
  const double length = std::max(std::abs(w1 - w0), std::abs(t1 - t0) / 4.0);
  const int steps = std::max(1, int(length * 2));
  for (int s = 0; s <= steps; ++s) {
    const double f = double(s) / steps;
    const double a =
        amplitude * (0.7 + 0.6 * rng_.uniform() + 0.3 * std::pow(rng_.uniform(), 8) * 6) / 2.0;
    deposit_adc(w0 + f * (w1 - w0), t0 + f * (t1 - t0), a, truth);
  }
}

void Painter::shower(double w, double t, double angle, double energy, int depth) {
  const double length = rng_.uniform(4, 14);
  const double w1 = w + length * std::cos(angle), t1 = t + 6 * length * std::sin(angle);
  segment(w, t, w1, t1, 30 + energy * 10, Truth::kEm);
  if (depth >= 7 || energy < 1.0) return;
  const double split = rng_.uniform(0.3, 0.7);
  shower(w1, t1, angle + rng_.uniform(-0.6, 0.6), energy * split, depth + 1);
  if (rng_.uniform() < 0.8)
    shower(w1, t1, angle + rng_.uniform(-0.6, 0.6), energy * (1 - split), depth + 1);
}

}  // namespace kaas::examples
