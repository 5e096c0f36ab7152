// kaas-reco's event displays (examples/lartpc/display.h): the panels' geometry and colours, and a
// PNG that libpng reads back with the right size and pixels.

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

TEST(Display, BadArgumentsAreRefused) {
  const ToyEvent event = small_event();
  const std::vector<float> scores(12, 0.25f);
  const std::vector<uint8_t> fiducial(3, 1);
  EXPECT_THROW(render_plane(event, 1, scores, fiducial), Error);
  EXPECT_THROW(render_plane(event, 0, std::vector<float>(8), fiducial), Error);
  EXPECT_THROW(write_png("/nonexistent-dir/x.png", render_plane(event, 0, scores, fiducial)),
               Error);
}

}  // namespace
}  // namespace kaas::examples
