// write_event_display: the panels of display.cc laid out as a figure with cairo (text, axes,
// legend, insets) and written as PNG by cairo.
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "examples/lartpc/display.h"
#include "kaas/common/error.h"

namespace kaas::examples {

namespace {

constexpr int kZoomWires = 64, kZoomTicks = 384;  // ~31 x 31 cm: a Michel electron's reach
constexpr int kZoomPixelsPerWire = 6;
constexpr double kFont = 15, kSmallFont = 12;

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;

Surface surface_of(const RgbImage& image) {
  Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, image.width, image.height),
                  &cairo_surface_destroy);
  cairo_surface_flush(surface.get());
  unsigned char* data = cairo_image_surface_get_data(surface.get());
  const int stride = cairo_image_surface_get_stride(surface.get());
  for (int y = 0; y < image.height; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + ptrdiff_t(y) * stride);
    for (int x = 0; x < image.width; ++x) {
      const uint8_t* p = &image.rgb[(size_t(y) * size_t(image.width) + size_t(x)) * 3];
      row[x] = (uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | uint32_t(p[2]);
    }
  }
  cairo_surface_mark_dirty(surface.get());
  return surface;
}

void set_colour(cairo_t* cr, Rgb c) {
  cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

enum class Align { kLeft, kCentre, kRight };

void text(cairo_t* cr, double x, double y, const std::string& s, double size,
          Align align = Align::kLeft, bool bold = false) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, s.c_str(), &extents);
  const double shift = align == Align::kLeft     ? 0
                       : align == Align::kCentre ? extents.x_advance / 2
                                                 : extents.x_advance;
  cairo_move_to(cr, x - shift, y);
  cairo_show_text(cr, s.c_str());
}

// A round step giving about `wanted` ticks over `span`.
int axis_step(int span, int wanted) {
  for (const int step : {1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000})
    if (span / step <= wanted) return step;
  return std::max(1, span / wanted);
}

// A raster with a frame, wire ticks below and drift-time ticks to the left. One pixel column
// per `x_per_wire`, one row per `y_per_tick` ticks.
void framed_raster(cairo_t* cr, const RgbImage& raster, double x, double y,
                   const PlaneRegion& region, double x_per_wire, double ticks_per_row,
                   const std::string& title, bool axis_titles) {
  Surface surface = surface_of(raster);
  cairo_set_source_surface(cr, surface.get(), x, y);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_paint(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x - 0.5, y - 0.5, raster.width + 1, raster.height + 1);
  cairo_stroke(cr);
  text(cr, x + raster.width / 2.0, y - 8, title, kFont, Align::kCentre, true);
  const int wire_step = axis_step(region.wire_end - region.wire_begin, 8);
  for (int w = (region.wire_begin + wire_step - 1) / wire_step * wire_step; w <= region.wire_end;
       w += wire_step) {
    const double px = x + (w - region.wire_begin) * x_per_wire;
    cairo_move_to(cr, px, y + raster.height);
    cairo_line_to(cr, px, y + raster.height + 5);
    cairo_stroke(cr);
    text(cr, px, y + raster.height + 18, std::to_string(w), kSmallFont, Align::kCentre);
  }
  const int tick_step = axis_step(region.tick_end - region.tick_begin, 10);
  for (int t = (region.tick_begin + tick_step - 1) / tick_step * tick_step; t <= region.tick_end;
       t += tick_step) {
    const double py = y + (t - region.tick_begin) / ticks_per_row;
    cairo_move_to(cr, x - 5, py);
    cairo_line_to(cr, x, py);
    cairo_stroke(cr);
    text(cr, x - 7, py + 4, std::to_string(t), kSmallFont, Align::kRight);
  }
  if (!axis_titles) return;
  text(cr, x + raster.width / 2.0, y + raster.height + 36, "wire", kFont, Align::kCentre);
  cairo_save(cr);
  cairo_translate(cr, x - 52, y + raster.height / 2.0);
  cairo_rotate(cr, -M_PI / 2);
  text(cr, 0, 0, "drift time (tick = 0.5 \u00b5s)", kFont, Align::kCentre);
  cairo_restore(cr);
}

void outline(cairo_t* cr, double x, double y, double w, double h) {
  cairo_set_source_rgb(cr, 1.0, 0.9, 0.1);
  cairo_set_line_width(cr, 2);
  cairo_rectangle(cr, x, y, w, h);
  cairo_stroke(cr);
}

void legend(cairo_t* cr, double x, double y) {
  text(cr, x, y, "hit colours", kFont, Align::kLeft, true);
  const std::pair<Rgb, const char*> entries[] = {
      {kTrackColour, "track (muon)"},
      {kEmColour, "EM (shower, delta ray)"},
      {kMichelColour, "Michel electron"},
      {kNoneColour, "none (noise)"},
      {kNonFiducialColour, "patch not inside the plane: no prediction"},
      {kDeadWireColour, "dead wire"},
      {Rgb{60, 60, 60}, "background: ADC, black = 0 (outside ROIs)"},
  };
  double row = y + 10;
  for (const auto& [colour, label] : entries) {
    set_colour(cr, colour);
    cairo_rectangle(cr, x, row, 14, 14);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    text(cr, x + 22, row + 12, label, kSmallFont);
    row += 20;
  }
  cairo_set_source_rgb(cr, 1.0, 0.9, 0.1);
  cairo_set_line_width(cr, 2);
  cairo_rectangle(cr, x + 1, row + 1, 12, 12);
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, x + 22, row + 12, "zoomed region (right)", kSmallFont);
}

// A Michel candidate's surroundings: the region and its truth and prediction panels.
struct Zoom {
  PlaneRegion region;
  RgbImage truth, prediction;
};

// The zoom: kZoomWires x kZoomTicks around the strongest Michel candidate, `h`.
Zoom render_zoom(const ToyEvent& event, int plane, std::span<const float> scores,
                 std::span<const uint8_t> fiducial, const Hit& h, float michel_threshold) {
  const PlaneImage& raw = event.planes[size_t(plane)];
  Zoom zoom;
  const int zw = std::min(kZoomWires, raw.wires), zt = std::min(kZoomTicks, raw.ticks);
  zoom.region.wire_begin = std::clamp(h.wire - zw / 2, 0, raw.wires - zw);
  zoom.region.wire_end = zoom.region.wire_begin + zw;
  zoom.region.tick_begin = std::clamp(int(h.peak_tick) - zt / 2, 0, raw.ticks - zt);
  zoom.region.tick_end = zoom.region.tick_begin + zt;
  PanelStyle zoomed;
  zoomed.ticks_per_row = 1;
  zoomed.pixels_per_wire = kZoomPixelsPerWire;
  zoomed.hit_rows = 5;
  zoomed.michel_threshold = michel_threshold;
  zoom.truth = render_panel(event, plane, scores, fiducial, zoom.region, zoomed);
  zoomed.prediction = true;
  zoom.prediction = render_panel(event, plane, scores, fiducial, zoom.region, zoomed);
  return zoom;
}

// Where the parts of the figure go: the whole-plane truth and prediction panels side by side
// from `left` and `right`, the legend and the zoom in the column to their right.
struct Layout {
  double left = 80, top = 90, gap = 80;
  double right = 0, column = 0, zoom_size = 0, zoom_top = 0;
  int width = 0, height = 0;
};

Layout figure_layout(const RgbImage& panel) {
  Layout layout;
  layout.column = layout.left + 2 * panel.width + layout.gap + 70;
  layout.zoom_size = kZoomWires * kZoomPixelsPerWire;
  layout.width = int(layout.column + layout.zoom_size + 30);
  layout.height =
      int(std::max(layout.top + panel.height + 60, layout.top + 200 + 2 * (layout.zoom_size + 60)));
  layout.right = layout.left + panel.width + layout.gap;
  layout.zoom_top = layout.top + 200;
  return layout;
}

// The title lines: the event, plane and hit count; how the classes and the Michel flag are
// read from the scores.
void draw_header(cairo_t* cr, double left, const ToyEvent& event, int plane,
                 const DisplayLabels& labels) {
  char header[256];
  std::snprintf(header, sizeof header, "kaas-reco toy event %d, plane %d: %zu hits",
                labels.event_number, plane,
                size_t(std::count_if(event.hits.begin(), event.hits.end(),
                                     [&](const Hit& h) { return h.plane == plane; })));
  text(cr, left, 28, header, 18, Align::kLeft, true);
  std::snprintf(header, sizeof header,
                "EmTrkMichelId: class = largest of the track / EM / none scores; Michel = Michel "
                "score > %.3f (working point %s)",
                double(labels.michel_threshold),
                labels.threshold_origin.empty() ? "fixed" : labels.threshold_origin.c_str());
  text(cr, left, 52, header, kFont);
}

// The zoom's panels in the right column, outlined there and on the whole-plane panels; or a
// note that the plane has no candidate to zoom on.
void draw_zoom(cairo_t* cr, const Layout& layout, const ToyEvent& event,
               std::optional<size_t> candidate, std::span<const float> scores, const Zoom& zoom,
               int ticks_per_row) {
  if (candidate) {
    const PlaneRegion& region = zoom.region;
    for (const double x0 : {layout.left, layout.right})
      outline(cr, x0 + region.wire_begin, layout.top + double(region.tick_begin) / ticks_per_row,
              region.wire_end - region.wire_begin,
              double(region.tick_end - region.tick_begin) / ticks_per_row);
    char title[128];
    std::snprintf(title, sizeof title, "zoom, truth: wire %d, tick %.0f",
                  event.hits[*candidate].wire, double(event.hits[*candidate].peak_tick));
    framed_raster(cr, zoom.truth, layout.column, layout.zoom_top + 30, region, kZoomPixelsPerWire,
                  1.0, title, false);
    std::snprintf(title, sizeof title, "zoom, prediction (candidate's Michel score %.3f)",
                  double(scores[*candidate * 4 + 3]));
    framed_raster(cr, zoom.prediction, layout.column, layout.zoom_top + layout.zoom_size + 90,
                  region, kZoomPixelsPerWire, 1.0, title, false);
    outline(cr, layout.column, layout.zoom_top + 30, layout.zoom_size, layout.zoom_size);
    outline(cr, layout.column, layout.zoom_top + layout.zoom_size + 90, layout.zoom_size,
            layout.zoom_size);
  } else {
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, layout.column, layout.zoom_top + 40, "no Michel candidate above the working point",
         kFont);
    text(cr, layout.column, layout.zoom_top + 60, "on this plane: no zoom", kFont);
  }
}

}  // namespace

void write_event_display(const std::filesystem::path& path, const ToyEvent& event, int plane,
                         std::span<const float> scores, std::span<const uint8_t> fiducial,
                         const DisplayLabels& labels, int ticks_per_row) {
  const auto [truth, prediction] =
      render_plane_panels(event, plane, scores, fiducial, ticks_per_row, labels.michel_threshold);
  const PlaneImage& raw = event.planes[size_t(plane)];
  const PlaneRegion whole{0, raw.wires, 0, raw.ticks};

  const auto candidate = michel_candidate(event, plane, scores, fiducial, labels.michel_threshold);
  const Zoom zoom = candidate ? render_zoom(event, plane, scores, fiducial, event.hits[*candidate],
                                            labels.michel_threshold)
                              : Zoom{};

  const Layout layout = figure_layout(truth);
  Surface figure(cairo_image_surface_create(CAIRO_FORMAT_RGB24, layout.width, layout.height),
                 &cairo_surface_destroy);
  cairo_t* cr = cairo_create(figure.get());
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  draw_header(cr, layout.left, event, plane, labels);

  framed_raster(cr, truth, layout.left, layout.top, whole, 1.0, ticks_per_row, "truth", true);
  framed_raster(cr, prediction, layout.right, layout.top, whole, 1.0, ticks_per_row, "prediction",
                false);
  legend(cr, layout.column, layout.top + 10);
  draw_zoom(cr, layout, event, candidate, scores, zoom, ticks_per_row);
  cairo_destroy(cr);
  const cairo_status_t status = cairo_surface_write_to_png(figure.get(), path.c_str());
  if (status != CAIRO_STATUS_SUCCESS)
    throw Error(ErrorCode::kInternal,
                "cannot write " + path.string() + ": " + cairo_status_to_string(status));
}

}  // namespace kaas::examples
