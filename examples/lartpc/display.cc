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

RgbImage render_plane(const ToyEvent& event, int plane, std::span<const float> scores,
                      std::span<const uint8_t> fiducial, int ticks_per_row,
                      float michel_threshold) {
  if (plane < 0 || size_t(plane) >= event.planes.size())
    throw Error(ErrorCode::kInvalidArgument, "render_plane: plane " + std::to_string(plane) +
                                                 " of a " + std::to_string(event.planes.size()) +
                                                 "-plane event");
  if (scores.size() != event.hits.size() * 4 || fiducial.size() != event.hits.size())
    throw Error(ErrorCode::kInvalidArgument, "render_plane: " + std::to_string(event.hits.size()) +
                                                 " hits but " + std::to_string(scores.size()) +
                                                 " scores and " + std::to_string(fiducial.size()) +
                                                 " fiducial flags");
  if (ticks_per_row < 1)
    throw Error(ErrorCode::kInvalidArgument, "render_plane: ticks_per_row must be positive");
  const PlaneImage& raw = event.planes[size_t(plane)];
  const int rows = (raw.ticks + ticks_per_row - 1) / ticks_per_row;
  RgbImage image;
  image.width = 2 * raw.wires + kPanelGap;
  image.height = rows;
  image.rgb.assign(size_t(image.width) * size_t(image.height) * 3, 255);
  // Background: the mean ADC over each pixel's ticks, 0..150 ADC onto grey 20..110.
  for (int w = 0; w < raw.wires; ++w) {
    for (int r = 0; r < rows; ++r) {
      const int first = r * ticks_per_row, last = std::min(raw.ticks, first + ticks_per_row);
      float sum = 0;
      for (int t = first; t < last; ++t) sum += raw.adc[size_t(w) * size_t(raw.ticks) + size_t(t)];
      const float mean = sum / float(last - first);
      const auto grey = uint8_t(20.0f + 90.0f * std::clamp(mean / 150.0f, 0.0f, 1.0f));
      put(image, w, r, {grey, grey, grey});
      put(image, raw.wires + kPanelGap + w, r, {grey, grey, grey});
    }
  }
  // Several hits share a pixel: Michel hits (rare) are drawn last so that they stay visible.
  for (const bool michel_pass : {false, true}) {
    for (size_t i = 0; i < event.hits.size(); ++i) {
      const Hit& h = event.hits[i];
      if (h.plane != plane || h.wire < 0 || h.wire >= raw.wires) continue;
      const int r = std::clamp(int(h.peak_tick) / ticks_per_row, 0, rows - 1);
      if ((h.truth == Truth::kMichel) == michel_pass) put(image, h.wire, r, truth_colour(h.truth));
      const Rgb predicted =
          fiducial[i] ? predicted_colour(&scores[i * 4], michel_threshold) : kNonFiducialColour;
      if ((predicted == kMichelColour) == michel_pass)
        put(image, raw.wires + kPanelGap + h.wire, r, predicted);
    }
  }
  return image;
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
