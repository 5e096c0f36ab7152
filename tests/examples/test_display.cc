// kaas-reco's event displays (examples/lartpc/display.h): the panels' geometry and colours, and a
// PNG that libpng reads back with the right size and pixels, and the figure around them.

#include "examples/lartpc/display.h"

#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <filesystem>

#include "kaas/common/error.h"

namespace kaas::examples {
namespace {

// One plane of 60 wires x 120 ticks, empty but for three hits.
ToyEvent small_event() {
  ToyEvent event;
  PlaneImage plane;
  plane.wires = 60;
  plane.ticks = 120;
  plane.adc.assign(size_t(60 * 120), 0.0f);
  event.planes.push_back(plane);
  event.hits = {{0, 5, 12.0f, 80.0f, 300.0f, Truth::kTrack},
                {0, 30, 60.0f, 80.0f, 300.0f, Truth::kMichel},
                {0, 59, 119.0f, 80.0f, 300.0f, Truth::kEm}};
  return event;
}

Rgb pixel(const RgbImage& image, int x, int y) {
  const uint8_t* p = &image.rgb[(size_t(y) * size_t(image.width) + size_t(x)) * 3];
  return {p[0], p[1], p[2]};
}

TEST(Display, PanelsShowTruthLeftAndPredictionRight) {
  const ToyEvent event = small_event();
  // Predictions: track hit -> em, Michel hit -> Michel (score 0.9), em hit outside the fiducial
  // region.
  const std::vector<float> scores = {0.2f, 0.7f, 0.1f, 0.0f, 0.1f, 0.8f,
                                     0.1f, 0.9f, 0.1f, 0.8f, 0.1f, 0.0f};
  const std::vector<uint8_t> fiducial = {1, 1, 0};
  const RgbImage image = render_plane(event, 0, scores, fiducial, 6);
  EXPECT_EQ(image.width, 2 * 60 + kPanelGap);
  EXPECT_EQ(image.height, 20);  // 120 ticks / 6 per row
  const int right = 60 + kPanelGap;
  EXPECT_EQ(pixel(image, 5, 2), kTrackColour);
  EXPECT_EQ(pixel(image, right + 5, 2), kEmColour);
  EXPECT_EQ(pixel(image, 30, 10), kMichelColour);
  EXPECT_EQ(pixel(image, right + 30, 10), kMichelColour);
  EXPECT_EQ(pixel(image, 59, 19), kEmColour);
  EXPECT_EQ(pixel(image, right + 59, 19), kNonFiducialColour);
  EXPECT_EQ(pixel(image, 0, 0), (Rgb{20, 20, 20})) << "empty plane: the darkest background";
  EXPECT_EQ(pixel(image, 60, 0), (Rgb{255, 255, 255})) << "the gap between the panels";
}

TEST(Display, WritesAPngOfTheRightSize) {
  const ToyEvent event = small_event();
  const std::vector<float> scores(12, 0.25f);
  const std::vector<uint8_t> fiducial(3, 1);
  const RgbImage image = render_plane(event, 0, scores, fiducial, 4);
  const auto path = std::filesystem::temp_directory_path() /
                    ("kaas_display_test_" + std::to_string(::getpid()) + ".png");
  write_png(path, image);
  png_image read{};
  read.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&read, path.c_str())) << read.message;
  EXPECT_EQ(read.width, png_uint_32(2 * 60 + kPanelGap));
  EXPECT_EQ(read.height, png_uint_32(30));
  read.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(read));
  ASSERT_TRUE(png_image_finish_read(&read, nullptr, pixels.data(), 0, nullptr)) << read.message;
  EXPECT_EQ(pixels, image.rgb) << "lossless round trip";
  std::filesystem::remove(path);
}

TEST(Display, MichelCandidateIsTheStrongestFiducialHitAboveTheThreshold) {
  const ToyEvent event = small_event();
  std::vector<float> scores = {0.2f, 0.7f, 0.1f, 0.6f, 0.1f, 0.8f,
                               0.1f, 0.9f, 0.1f, 0.8f, 0.1f, 0.99f};
  const std::vector<uint8_t> fiducial = {1, 1, 0};
  EXPECT_EQ(michel_candidate(event, 0, scores, fiducial, 0.5f), std::optional<size_t>(1))
      << "hit 2 scores higher but has no prediction (outside the fiducial region)";
  EXPECT_EQ(michel_candidate(event, 0, scores, fiducial, 0.95f), std::nullopt);
  EXPECT_EQ(michel_candidate(event, 1, scores, fiducial, 0.5f), std::nullopt);
}

TEST(Display, FigureHasPanelsLegendAndZoom) {
  // A plane large enough for the 64-wire zoom, one Michel candidate in it.
  ToyEvent event;
  PlaneImage plane;
  plane.wires = 200;
  plane.ticks = 900;
  plane.adc.assign(size_t(200 * 900), 0.0f);
  event.planes.push_back(plane);
  event.hits = {{0, 100, 450.0f, 80.0f, 300.0f, Truth::kMichel},
                {0, 20, 30.0f, 80.0f, 300.0f, Truth::kTrack}};
  const std::vector<float> scores = {0.1f, 0.8f, 0.1f, 0.9f, 0.8f, 0.1f, 0.1f, 0.0f};
  const std::vector<uint8_t> fiducial = {1, 1};
  const auto path = std::filesystem::temp_directory_path() /
                    ("kaas_event_display_test_" + std::to_string(::getpid()) + ".png");
  DisplayLabels labels;
  labels.event_number = 4;
  labels.michel_threshold = 0.62f;
  labels.threshold_origin = "chosen on validation events";
  write_event_display(path, event, 0, scores, fiducial, labels, 6);
  png_image read{};
  read.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&read, path.c_str())) << read.message;
  read.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(read));
  ASSERT_TRUE(png_image_finish_read(&read, nullptr, pixels.data(), 0, nullptr)) << read.message;
  std::filesystem::remove(path);
  // Wider than both panels (axes, legend and zoom beside them), taller than a panel (titles).
  EXPECT_GT(read.width, png_uint_32(2 * 200 + 64 * 6));
  EXPECT_GT(read.height, png_uint_32(900 / 6 + 60));
  int64_t text_pixels = 0, michel_pixels = 0, yellow_pixels = 0;
  for (size_t i = 0; i + 2 < pixels.size(); i += 3) {
    const Rgb c{pixels[i], pixels[i + 1], pixels[i + 2]};
    text_pixels += c.r < 60 && c.g < 60 && c.b < 60;
    michel_pixels += c == kMichelColour;
    yellow_pixels += c.r > 240 && c.g > 220 && c.b < 60;
  }
  EXPECT_GT(text_pixels, 1000) << "titles, labels and the panels' dark background";
  // The Michel hit: 1 pixel in each panel, 6 x 5 in each zoom, a legend square (14 x 14).
  EXPECT_GE(michel_pixels, 2 + 2 * 30 + 100);
  EXPECT_GT(yellow_pixels, 100) << "the zoomed region's outlines";
}

TEST(Display, BadArgumentsAreRefused) {
  const ToyEvent event = small_event();
  const std::vector<float> scores(12, 0.25f);
  const std::vector<uint8_t> fiducial(3, 1);
  EXPECT_THROW(render_plane(event, 1, scores, fiducial), Error);
  EXPECT_THROW(render_plane(event, 0, std::vector<float>(8), fiducial), Error);
  EXPECT_THROW(write_png("/nonexistent-dir/x.png", render_plane(event, 0, scores, fiducial)),
               Error);
  EXPECT_THROW(write_event_display("/nonexistent-dir/x.png", event, 0, scores, fiducial, {}),
               Error);
  EXPECT_THROW(render_panel(event, 0, scores, fiducial, {0, 61, 0, 120}, {}), Error)
      << "a region beyond the plane";
}

}  // namespace
}  // namespace kaas::examples
