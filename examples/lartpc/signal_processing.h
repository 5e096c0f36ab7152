#pragma once
// The toy's readout and the signal processing production runs on it before hit finding.
// Readout: each wire's residual pedestal, its own (incoherent) noise, a low-frequency waveform
// shared by the wires of one front-end board (coherent noise, with a per-wire gain), and dead
// wires that read 0. Processing, as LArSoft's noise filter and ROI finder do it in spirit:
//   1. dead wires (the channel-status list) are set to 0;
//   2. each wire's baseline (its median) is subtracted;
//   3. coherent noise: at each tick the median over a board's live wires is subtracted (samples
//      above `protect_adc` are charge and left out of the median);
//   4. each wire's noise rms is estimated robustly (1.4826 x the median absolute value);
//   5. regions of interest: where the 5-tick mean exceeds roi_threshold_sigma x rms / sqrt(5),
//      widened by roi_pad_ticks on each side; outside them the signal is exactly 0.

#include <cstdint>

#include "examples/lartpc/toy_event.h"
#include "examples/lartpc/toy_physics.h"

namespace kaas::examples {

// Adds the readout noise to a plane holding the particles' charge and marks its dead wires.
void add_readout_noise(PlaneImage& plane, const ReadoutNoiseConfig& noise, Rng& rng);

// Steps 1-5 above, in place; returns the number of samples inside ROIs. `board_wires` groups
// the wires for the coherent-noise median (the readout's boards).
int64_t process_signal(PlaneImage& plane, const SignalProcessingConfig& config, int board_wires);

}  // namespace kaas::examples
