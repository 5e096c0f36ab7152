#include "examples/lartpc/display.h"

#include <png.h>

#include <algorithm>

#include "kaas/common/error.h"

namespace kaas::examples {

namespace {

Rgb truth_colour(Truth truth) {
  switch (truth) {
    case Truth::kTrack:
      return kTrackColour;
    case Truth::kEm:
      return kEmColour;
    case Truth::kMichel:
      return kMichelColour;
    case Truth::kNone:
      break;
  }
  return kNoneColour;
}

Rgb predicted_colour(const float* s, float michel_threshold) {
  if (s[3] > michel_threshold) return kMichelColour;
  const auto best = std::max_element(s, s + 3) - s;
  return best == 0 ? kTrackColour : best == 1 ? kEmColour : kNoneColour;
}

void put(RgbImage& image, int x, int y, Rgb c) {
  uint8_t* p = &image.rgb[(size_t(y) * size_t(image.width) + size_t(x)) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

}  // namespace

RgbImage render_panel(const ToyEvent& event, int plane, std::span<const float> scores,
                      std::span<const uint8_t> fiducial, const PlaneRegion& region,
                      const PanelStyle& style) {
  if (plane < 0 || size_t(plane) >= event.planes.size())
    throw Error(ErrorCode::kInvalidArgument, "render_plane: plane " + std::to_string(plane) +
                                                 " of a " + std::to_string(event.planes.size()) +
                                                 "-plane event");
  if (scores.size() != event.hits.size() * 4 || fiducial.size() != event.hits.size())
    throw Error(ErrorCode::kInvalidArgument, "render_plane: " + std::to_string(event.hits.size()) +
                                                 " hits but " + std::to_string(scores.size()) +
                                                 " scores and " + std::to_string(fiducial.size()) +
                                                 " fiducial flags");
  if (style.ticks_per_row < 1 || style.pixels_per_wire < 1 || style.hit_rows < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "render_plane: ticks per row, pixels per wire and hit rows must be positive");
  const PlaneImage& raw = event.planes[size_t(plane)];
  if (region.wire_begin < 0 || region.wire_end > raw.wires ||
      region.wire_begin >= region.wire_end || region.tick_begin < 0 ||
      region.tick_end > raw.ticks || region.tick_begin >= region.tick_end)
    throw Error(ErrorCode::kInvalidArgument, "render_plane: the region is not inside the plane");
  const int tpr = style.ticks_per_row, ppw = style.pixels_per_wire;
  const int rows = (region.tick_end - region.tick_begin + tpr - 1) / tpr;
  RgbImage image;
  image.width = (region.wire_end - region.wire_begin) * ppw;
  image.height = rows;
  image.rgb.assign(size_t(image.width) * size_t(image.height) * 3, 255);
  const auto fill = [&](int wire, int row, Rgb c) {
    for (int x = 0; x < ppw; ++x) put(image, (wire - region.wire_begin) * ppw + x, row, c);
  };
  // Background: the mean ADC over each pixel's ticks, 0..150 ADC onto grey 20..110.
  for (int w = region.wire_begin; w < region.wire_end; ++w) {
    const bool dead = !raw.dead.empty() && raw.dead[size_t(w)];
    for (int r = 0; r < rows; ++r) {
      const int first = region.tick_begin + r * tpr, last = std::min(region.tick_end, first + tpr);
      float sum = 0;
      for (int t = first; t < last; ++t) sum += raw.adc[size_t(w) * size_t(raw.ticks) + size_t(t)];
      const float mean = sum / float(last - first);
      const auto grey = uint8_t(20.0f + 90.0f * std::clamp(mean / 150.0f, 0.0f, 1.0f));
      fill(w, r, dead ? kDeadWireColour : Rgb{grey, grey, grey});
    }
  }
  // Several hits share a pixel: Michel hits (rare) are drawn last so that they stay visible.
  for (const bool michel_pass : {false, true}) {
    for (size_t i = 0; i < event.hits.size(); ++i) {
      const Hit& h = event.hits[i];
      if (h.plane != plane || h.wire < region.wire_begin || h.wire >= region.wire_end) continue;
      if (h.peak_tick < float(region.tick_begin) || h.peak_tick >= float(region.tick_end)) continue;
      Rgb colour = truth_colour(h.truth);
      if (style.prediction)
        colour = fiducial[i] ? predicted_colour(&scores[i * 4], style.michel_threshold)
                             : kNonFiducialColour;
      if ((colour == kMichelColour) != michel_pass) continue;
      const int centre = (int(h.peak_tick) - region.tick_begin) / tpr;
      for (int r = centre - style.hit_rows / 2; r <= centre + (style.hit_rows - 1) / 2; ++r)
        fill(h.wire, std::clamp(r, 0, rows - 1), colour);
    }
  }
  return image;
}

PlanePanels render_plane_panels(const ToyEvent& event, int plane, std::span<const float> scores,
                                std::span<const uint8_t> fiducial, int ticks_per_row,
                                float michel_threshold) {
  if (plane < 0 || size_t(plane) >= event.planes.size())
    throw Error(ErrorCode::kInvalidArgument, "render_plane: plane " + std::to_string(plane) +
                                                 " of a " + std::to_string(event.planes.size()) +
                                                 "-plane event");
  const PlaneImage& raw = event.planes[size_t(plane)];
  const PlaneRegion whole{0, raw.wires, 0, raw.ticks};
  PanelStyle style;
  style.ticks_per_row = ticks_per_row;
  style.michel_threshold = michel_threshold;
  PlanePanels panels;
  panels.truth = render_panel(event, plane, scores, fiducial, whole, style);
  style.prediction = true;
  panels.prediction = render_panel(event, plane, scores, fiducial, whole, style);
  return panels;
}

RgbImage render_plane(const ToyEvent& event, int plane, std::span<const float> scores,
                      std::span<const uint8_t> fiducial, int ticks_per_row,
                      float michel_threshold) {
  const auto [truth, prediction] =
      render_plane_panels(event, plane, scores, fiducial, ticks_per_row, michel_threshold);
  RgbImage image;
  image.width = 2 * truth.width + kPanelGap;
  image.height = truth.height;
  image.rgb.assign(size_t(image.width) * size_t(image.height) * 3, 255);
  const size_t row_bytes = size_t(truth.width) * 3;
  for (int r = 0; r < image.height; ++r) {
    uint8_t* out = &image.rgb[size_t(r) * size_t(image.width) * 3];
    std::copy_n(&truth.rgb[size_t(r) * row_bytes], row_bytes, out);
    std::copy_n(&prediction.rgb[size_t(r) * row_bytes], row_bytes,
                out + row_bytes + size_t(kPanelGap) * 3);
  }
  return image;
}

std::optional<size_t> michel_candidate(const ToyEvent& event, int plane,
                                       std::span<const float> scores,
                                       std::span<const uint8_t> fiducial, float michel_threshold) {
  std::optional<size_t> best;
  for (size_t i = 0; i < event.hits.size() && i < fiducial.size(); ++i) {
    if (event.hits[i].plane != plane || !fiducial[i] || i * 4 + 3 >= scores.size()) continue;
    const float score = scores[i * 4 + 3];
    if (score > michel_threshold && (!best || score > scores[*best * 4 + 3])) best = i;
  }
  return best;
}

void write_png(const std::filesystem::path& path, const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != size_t(image.width) * size_t(image.height) * 3)
    throw Error(ErrorCode::kInvalidArgument,
                "write_png: " + path.string() + ": the image's pixels do not match its size");
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = png_uint_32(image.width);
  png.height = png_uint_32(image.height);
  png.format = PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.rgb.data(), image.width * 3, nullptr)) {
    const std::string why = png.message;
    png_image_free(&png);
    throw Error(ErrorCode::kInternal, "cannot write " + path.string() + ": " + why);
  }
}

}  // namespace kaas::examples
