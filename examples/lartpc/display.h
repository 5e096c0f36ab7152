#pragma once
// Event displays for kaas-reco --display. render_plane draws one plane as two raster panels side
// by side, wires across and drift time down (tick 0 at the top, `ticks_per_row` ticks per pixel
// row): truth on the left, the network's prediction on the right. The ADC image is the grey
// background (black where the signal is 0: outside regions of interest); dead wires are dark
// red; each hit's pixel takes its class colour (track blue, em orange, none grey, Michel green; in
// the prediction panel a hit is Michel when its Michel score is above the threshold, and hits
// outside the fiducial region are white). write_event_display puts those panels in a figure that
// reads alone (cairo): titles, wire and tick axes, the event, plane and working point, a colour
// legend, and zoomed insets (truth and prediction) around the plane's strongest Michel candidate.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
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
    kNoneColour{150, 150, 150}, kMichelColour{50, 220, 80}, kNonFiducialColour{255, 255, 255},
    kDeadWireColour{70, 20, 20};
inline constexpr int kPanelGap = 8;  // white columns between the panels

// A part of a plane: wires [wire_begin, wire_end) x ticks [tick_begin, tick_end).
struct PlaneRegion {
  int wire_begin = 0, wire_end = 0, tick_begin = 0, tick_end = 0;
};

// How one panel is drawn: which side, the scale, and how tall a hit is (rows).
struct PanelStyle {
  bool prediction = false;
  int ticks_per_row = 6, pixels_per_wire = 1, hit_rows = 1;
  float michel_threshold = 0.5f;
};

// scores: [hits, 4] (track, em, none, michel) and fiducial flags for every hit of the event.
// Throws kaas::Error kInvalidArgument for a plane the event does not have, mismatched sizes or a
// region outside the plane.
RgbImage render_panel(const ToyEvent& event, int plane, std::span<const float> scores,
                      std::span<const uint8_t> fiducial, const PlaneRegion& region,
                      const PanelStyle& style);
// The whole plane's truth and prediction panels (render_panel's errors).
struct PlanePanels {
  RgbImage truth, prediction;
};
PlanePanels render_plane_panels(const ToyEvent& event, int plane, std::span<const float> scores,
                                std::span<const uint8_t> fiducial, int ticks_per_row,
                                float michel_threshold);
// Both whole-plane panels, truth | prediction, kPanelGap white columns apart.
RgbImage render_plane(const ToyEvent& event, int plane, std::span<const float> scores,
                      std::span<const uint8_t> fiducial, int ticks_per_row = 6,
                      float michel_threshold = 0.5f);

// The plane's strongest Michel candidate: the fiducial hit with the highest Michel score above
// the threshold, if any.
std::optional<size_t> michel_candidate(const ToyEvent& event, int plane,
                                       std::span<const float> scores,
                                       std::span<const uint8_t> fiducial, float michel_threshold);

// What the figure says about itself.
struct DisplayLabels {
  int event_number = 0;
  float michel_threshold = 0.5f;
  std::string threshold_origin;  // e.g. "chosen on validation events"
};

// The whole figure as a PNG. Throws kaas::Error (kInvalidArgument as render_panel, kInternal
// naming the file when it cannot be written).
void write_event_display(const std::filesystem::path& path, const ToyEvent& event, int plane,
                         std::span<const float> scores, std::span<const uint8_t> fiducial,
                         const DisplayLabels& labels, int ticks_per_row = 6);

// Throws kaas::Error kInternal naming the file when it cannot be written.
void write_png(const std::filesystem::path& path, const RgbImage& image);

}  // namespace kaas::examples
