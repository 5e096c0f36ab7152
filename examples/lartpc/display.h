#pragma once
// Event displays for kaas-reco --display: one plane as an image, wires across and drift time
// down (tick 0 at the top, `ticks_per_row` ticks per pixel row), two panels side by side: truth
// on the left, the network's prediction on the right. The ADC image is the dark-grey background;
// each hit's pixel takes its class colour (track blue, em orange, none grey, Michel green; in the
// prediction panel a hit is Michel when its Michel score is above the threshold, and hits outside
// the fiducial region are white). Written as PNG with libpng.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "examples/lartpc/toy_event.h"

namespace kaas::examples {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel
};

struct Rgb {
  uint8_t r, g, b;
  bool operator==(const Rgb&) const = default;
};
inline constexpr Rgb kTrackColour{60, 130, 245}, kEmColour{245, 135, 40},
    kNoneColour{150, 150, 150}, kMichelColour{50, 220, 80}, kNonFiducialColour{255, 255, 255};
inline constexpr int kPanelGap = 8;  // white columns between the panels

// scores: [hits, 4] (track, em, none, michel) and fiducial flags for every hit of the event.
// Throws kaas::Error kInvalidArgument for a plane the event does not have or mismatched sizes.
RgbImage render_plane(const ToyEvent& event, int plane, std::span<const float> scores,
                      std::span<const uint8_t> fiducial, int ticks_per_row = 6,
                      float michel_threshold = 0.5f);

// Throws kaas::Error kInternal naming the file when it cannot be written.
void write_png(const std::filesystem::path& path, const RgbImage& image);

}  // namespace kaas::examples
