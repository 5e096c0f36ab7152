#pragma once
// The charge the toy LArTPC's particles leave on one plane, with the physics EmTrkMichelId's
// patches see. Positions are in cm on the plane (x across the wires, y along the drift) and are
// drawn as wire x tick: a wire every kWirePitchCm, a tick every kCmPerTick (ProtoDUNE-SP: 4.8 mm
// pitch, 0.5 us ticks at 1.6 mm/us drift). What each element models:
// - Stopping muons lose energy at dE/dx(R) = 8.0 R^-0.37 MeV/cm (R the residual range in cm),
//   never below the minimum-ionising 2.1 MeV/cm: a power law close to the PDG muon range tables
//   in liquid argon, so the charge rises over the last ~10 cm (the Bragg peak). Through-going
//   muons stay minimum ionising. Muons scatter (Highland formula, X0 = 14 cm), visibly only
//   near their end.
// - The charge that survives recombination follows Birks' law with ArgoNeuT's parameters at
//   500 V/cm: dQ/dx ~ 0.8 dE/dx / (1 + 0.0696 cm/MeV dE/dx), so the Bragg peak is compressed.
// - Energy loss per step fluctuates as a Landau (Moyal) distribution: long tail, rare big steps.
// - Cosmic muons enter the plane at its edge; through-going ones leave it, stopping ones end
//   inside: every track end inside the plane is a stopping muon's.
// - Delta rays: knock-on electrons along muons at the Bethe rate 0.0966 MeV/cm / T^2 per MeV of
//   kinetic energy T, drawn above 3 MeV (below, the Landau fluctuation carries them), emitted
//   at cos(theta) = sqrt(T / (T + 2 m_e)).
// - Michel electrons: from 67 % of stopping muons (mu+ all decay; mu- in argon are captured
//   ~75 % of the time; mu+/mu- = 1.25), energy from the Michel spectrum x^2 (3 - 2x),
//   x = E / 52.8 MeV, starting at the muon's end in a random direction.
// - Electrons (Michel, delta rays) ionise 2.1 MeV/cm, scatter strongly at low energy (Highland)
//   so they wander, and occasionally radiate a hard photon (probability step / 2 X0 per step, a
//   1/y spectrum of the energy fraction y > 0.1): it flies an exponential distance (mean 9/7 X0)
//   and leaves a detached Compton-electron deposit, labelled EM (a Michel electron's photons
//   are EM activity in LArSoft's training labels too: only the decay electron's own
//   ionisation is Michel).
// - Showers as before: segments that split in two with decreasing energy.

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "examples/lartpc/toy_event.h"

namespace kaas::examples {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kWirePitchCm = 0.48, kCmPerTick = 0.08;
inline constexpr double kMichelEndpointMeV = 52.8;

struct Vec2 {
  double x = 0, y = 0;  // cm
};

// Uniform [0, 1), standard normal and Moyal (Landau approximation) variates from mt19937_64's
// fully specified output (not the implementation-defined <random> distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return double(engine_() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {  // Box-Muller
    const double u = uniform() > 1e-300 ? uniform() : 1e-300, v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * kPi * v);
  }
  // Moyal variate: -ln(Z^2) for a standard normal Z.
  double moyal() {
    const double z = normal();
    return -std::log(z * z + 1e-300);
  }

 private:
  std::mt19937_64 engine_;
};

// Where a muon from `from` along `angle` leaves the rectangle [0, width] x [0, height] (cm).
double distance_to_exit(Vec2 from, double angle, double width, double height);

// Muon stopping power at residual range `range_cm` (minimum ionising when not stopping).
double muon_dedx(double range_cm);
// Collected charge per cm (MeV-equivalent) for an energy loss dE/dx: Birks' recombination.
double collected_dqdx(double dedx);
// A Michel electron's energy in MeV, drawn from the Michel spectrum.
double michel_energy(Rng& rng);

// Paints particles' charge into a plane's ADC and truth images.
class Painter {
 public:
  Painter(PlaneImage& image, Rng& rng);

  struct MuonEnd {
    Vec2 position;
    double angle = 0;
  };
  // A muon from `start` along `angle` (radians, 0 = across the wires) for `length_cm`; when
  // `stopping`, with its Bragg rise and scattering towards the end. Returns where it ends.
  MuonEnd muon(Vec2 start, double angle, double length_cm, bool stopping);
  // An electron of kinetic energy `energy_mev` (Michel, delta ray or Compton electron).
  void electron(Vec2 start, double angle, double energy_mev, Truth truth, int generation = 0);
  // An EM shower, as the toy has always drawn them (ADC-scaled segments).
  void shower(double wire, double tick, double angle, double energy, int depth);

  // Charge at one point: a Gaussian pulse in drift time on the nearest wire; `charge` is the
  // collected charge in MeV-equivalent.
  void deposit(Vec2 at, double charge, Truth truth);

  int64_t delta_rays() const { return delta_rays_; }

 private:
  void deposit_adc(double wire, double tick, double amplitude, Truth truth);
  void segment(double w0, double t0, double w1, double t1, double amplitude, Truth truth);

  PlaneImage& image_;
  Rng& rng_;
  // The charge each particle class (track, EM, Michel) left in each pixel: a pixel's truth is
  // the class with the most, as LArSoft's training labels take the particle with the largest
  // deposit in the tick.
  std::array<std::vector<float>, 3> class_adc_;
  int64_t delta_rays_ = 0;
};

}  // namespace kaas::examples
