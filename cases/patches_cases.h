#pragma once
// Cases of kernels/patches.h: one plane's downsampling and the 48 x 48 patches of its hits.

#include <vector>

#include "cases/case.h"
#include "kaas/kernels/patches.h"

namespace kaas::cases {

struct PatchesCase {
  int64_t wires, ticks, hits;
  float adc_lo, adc_hi;  // raw ADC drawn uniformly in [adc_lo, adc_hi)
};

struct PatchesInputs {
  std::vector<float> image;  // [wires, ticks]
  std::vector<int32_t> wire;
  std::vector<float> time;
};
// Random hits; the first two sit on opposite corners of the plane (the second in the trailing
// ticks) and the fourth repeats the third.
PatchesInputs patches_inputs(const PatchesCase& c);

// Plain host references with the same float operations as the kernels (documented in
// patches.h): the results must match bit for bit.
std::vector<float> host_downsample(const std::vector<float>& image, int64_t wires, int64_t ticks,
                                   const PatchParams& p);
std::vector<float> host_patches(const std::vector<float>& down, int64_t wires, int64_t bins,
                                const std::vector<int32_t>& wire, const std::vector<float>& time,
                                const PatchParams& p);
std::vector<uint8_t> host_fiducial(int64_t wires, int64_t bins, const std::vector<int32_t>& wire,
                                   const std::vector<float>& time, const PatchParams& p);

std::vector<PatchesCase> patches_shapes();
std::vector<Case> patches_cases();

}  // namespace kaas::cases
