#include "kaas/kernels/knn.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/kernels/detail/checks.h"
#include "kaas/kernels/detail/impl_tables.h"
#include "kaas/kernels/impl_table.h"
#include "kaas/kernels/scan.h"

namespace kaas {

namespace {

constexpr const char* kKnn = "knn";

// Target points per cell of the binned grid: small cells keep the searched box tight, large
// ones cut the per-cell overhead, which grows with the binned dimensions. 2K, kept within
// 16..32. Measured with the sorted candidate rows (bench knn_peers, openmp 2 threads, two runs
// each): K = 64 at 32 vs 64 points per cell: one toy event D=2 81.7/78.9 vs 94.0/86.2 ms, tracks
// 100k D=2 170/168 vs 192/183 ms, uniform 100k D=4 443/446 vs 430/458 ms; K = 16 (32) beside 16
// and 24: within the runs' spread. Earlier, with a heap: K = 4 best at 16 (D = 3: 31.8 ms at 16,
// 33.1 at 32). Above D = 8 (6 of D coordinates binned) 64 for every K: D = 16, K = 4: 8.1 s at
// 64, 19.2 s at 16.
double points_per_cell(int k, int64_t dims) {
  if (dims > 8) return 64.0;
  return std::clamp(2.0 * k, 16.0, 32.0);
}

// The checks every entry point makes on the input points, their events and K.
void check_inputs(View2<const float> points, View1<const int64_t> row_splits, int k) {
  detail::check_view(points, kKnn, "points");
  detail::check_view(row_splits, kKnn, "row_splits");
  require(k >= 1 && k <= kKnnMaxK, kKnn, "k", "1.." + std::to_string(kKnnMaxK), std::to_string(k));
  const int64_t n = points.extent[0], dims = points.extent[1];
  require(dims >= 1 && dims <= kKnnMaxDims, kKnn, "points extent[1] (D)",
          "1.." + std::to_string(kKnnMaxDims), std::to_string(dims));
  require(n <= INT32_MAX - 1, kKnn, "points extent[0] (N)", "<= 2147483646 (int32 indices)",
          std::to_string(n));
  require(row_splits.extent[0] >= 1, kKnn, "row_splits extent[0] (E + 1)", ">= 1",
          std::to_string(row_splits.extent[0]));
  require(row_splits.extent[0] == 1 || row_splits.stride[0] == 1, kKnn, "row_splits stride", "1",
          std::to_string(row_splits.stride[0]));
}

void check_arguments(View2<const float> points, View1<const int64_t> row_splits, int k,
                     View2<int32_t> indices, View2<float> distances, KnnMethod method,
                     const LaunchConfig& config) {
  check_inputs(points, row_splits, k);
  detail::check_view(indices, kKnn, "indices");
  detail::check_view(distances, kKnn, "distances");
  require(method == KnnMethod::kAuto || method == KnnMethod::kBruteForce ||
              method == KnnMethod::kBinned,
          kKnn, "method", "kAuto, kBruteForce or kBinned",
          std::to_string(static_cast<int>(method)));
  const int64_t n = points.extent[0];
  detail::check_same_extent(n, indices.extent[0], kKnn, "indices extent[0] (N of points)");
  detail::check_same_extent(k, indices.extent[1], kKnn, "indices extent[1] (k)");
  detail::check_same_extent(n, distances.extent[0], kKnn, "distances extent[0] (N of points)");
  detail::check_same_extent(k, distances.extent[1], kKnn, "distances extent[1] (k)");
  detail::check_config(config, kKnn);
}

// Copies row_splits to the host (synchronising the queue) and checks its values.
std::vector<int64_t> read_row_splits(const Queue& queue, View1<const int64_t> row_splits,
                                     int64_t n) {
  const std::vector<int64_t> splits = to_host(queue, row_splits);
  require(splits[0] == 0, kKnn, "row_splits[0]", "0", std::to_string(splits[0]));
  for (size_t e = 1; e < splits.size(); ++e) {
    if (splits[e] >= splits[e - 1]) continue;
    require(false, kKnn, "row_splits[" + std::to_string(e) + "]",
            ">= row_splits[" + std::to_string(e - 1) + "] = " + std::to_string(splits[e - 1]),
            std::to_string(splits[e]));
  }
  const size_t last = splits.size() - 1;
  require(splits[last] == n, kKnn, "row_splits[" + std::to_string(last) + "] (last)",
          std::to_string(n) + " (N)", std::to_string(splits[last]));
  return splits;
}

// Runs the check kernel and reads its result (synchronising the queue); throws on a non-finite
// coordinate. Returns the per-dimension bounds: [min_0..min_{D-1}, max_0..max_{D-1}].
std::vector<float> check_finite(const Queue& queue, View2<const float> points) {
  const int64_t n = points.extent[0], dims = points.extent[1];
  const std::vector<int32_t> none = {static_cast<int32_t>(n)};
  std::vector<float> bounds(static_cast<size_t>(2 * dims), INFINITY);
  std::fill(bounds.begin() + dims, bounds.end(), -INFINITY);
  auto first_bad = make_device_buffer<int32_t>(queue, 1);
  auto device_bounds = make_device_buffer<float>(queue, bounds.size());
  copy_to_device(queue, std::span<const int32_t>(none), first_bad);
  copy_to_device(queue, std::span<const float>(bounds), device_bounds);
  [&] {
    KAAS_RETURN_LAUNCH(queue, knn_check_launch, queue, points, first_bad.view(),
                       device_bounds.view());
  }();
  int32_t bad = 0;
  copy_to_host(queue, first_bad, std::span<int32_t>(&bad, 1));
  copy_to_host(queue, device_bounds, std::span<float>(bounds));
  queue.wait();
  if (bad < n) {
    // Error path only: fetch the offending row to name the coordinate and its value.
    for (int64_t d = 0; d < dims; ++d) {
      const float value = to_host(queue, make_view(&points(bad, d), 1))[0];
      if (std::isfinite(value)) continue;
      require(false, kKnn, "points(" + std::to_string(bad) + ", " + std::to_string(d) + ")",
              "a finite coordinate",
              std::isnan(value) ? "nan"
              : value > 0       ? "inf"
                                : "-inf");
    }
  }
  return bounds;
}

void launch_brute_force(const Queue& queue, View2<const float> points,
                        View1<const int64_t> row_splits, const std::vector<int64_t>& splits, int k,
                        View2<int32_t> indices, View2<float> distances,
                        const LaunchConfig& config) {
  const int size = config.group_size_or(128);
  // (event, first query) of every block of `size` queries; empty events have none.
  std::vector<int64_t> blocks;
  for (size_t e = 0; e + 1 < splits.size(); ++e) {
    for (int64_t q = splits[e]; q < splits[e + 1]; q += size) {
      blocks.push_back(static_cast<int64_t>(e));
      blocks.push_back(q);
    }
  }
  if (blocks.empty()) return;
  auto device_blocks = make_device_buffer<int64_t>(queue, blocks.size());
  copy_to_device(queue, std::span<const int64_t>(blocks), device_blocks);
  const View2<const int64_t> block_view =
      make_view<2>(static_cast<const int64_t*>(device_blocks.data()),
                   {static_cast<int64_t>(blocks.size() / 2), int64_t(2)});
  [&] {
    KAAS_RETURN_LAUNCH(queue, knn_brute_force_launch, queue, points, row_splits, block_view, k,
                       indices, distances, size);
  }();
  queue.wait();  // the block table is freed on return
}

// How many coordinates the grid bins: as many as keep at least kMinBinsPerDim cells per binned
// dimension for the target cell count (more binned dimensions shrink the searched box in D > 3,
// but a dimension with one or two cells only multiplies the shell's cells), at most
// kKnnMaxBinnedDims.
constexpr double kMinBinsPerDim = 3.0;

int binned_dims_for(int64_t dims, double target_cells) {
  int b = 1;
  while (b < std::min<int64_t>(dims, kKnnMaxBinnedDims) &&
         std::pow(target_cells, 1.0 / double(b + 1)) >= kMinBinsPerDim) {
    ++b;
  }
  return b;
}

// Cubic cells on the B coordinates of largest spread, about points_per_cell(k) points per cell
// for an event of average size spread over the bounding box of all events.
// width_scale < 1 shrinks the cells below that (clustered points, see launch_binned).
// At most max_binned_dims coordinates are binned; *capped is set when the cell limit widened
// the cells beyond what width_scale asked for.
detail::KnnGrid make_grid(const std::vector<float>& bounds, int64_t dims, int64_t n, int64_t events,
                          int64_t nonempty_events, int k, double width_scale, int max_binned_dims,
                          bool* capped) {
  detail::KnnGrid grid{};
  grid.dims = static_cast<int>(dims);
  const double per_event = double(n) / double(std::max<int64_t>(1, nonempty_events));
  const double target_cells = std::max(1.0, per_event / points_per_cell(k, dims));
  grid.binned_dims = std::min(binned_dims_for(dims, target_cells), max_binned_dims);
  // The coordinates by decreasing extent (ties: the lower coordinate first).
  std::vector<int> order(static_cast<size_t>(dims));
  for (int64_t d = 0; d < dims; ++d) order[size_t(d)] = int(d);
  auto extent_of = [&](int d) { return double(bounds[dims + d]) - double(bounds[d]); };
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return extent_of(a) > extent_of(b); });
  double extent[kKnnMaxBinnedDims] = {}, volume = 1, max_extent = 0, max_abs = 0;
  int spread_dims = 0;
  for (int b = 0; b < grid.binned_dims; ++b) {
    const int d = order[size_t(b)];
    grid.dim[b] = d;
    extent[b] = extent_of(d);
    max_extent = std::max(max_extent, extent[b]);
    max_abs = std::max({max_abs, std::abs(double(bounds[d])), std::abs(double(bounds[dims + d]))});
  }
  for (int b = 0; b < grid.binned_dims; ++b) {
    if (extent[b] > 1e-6 * max_extent) {
      volume *= extent[b];
      ++spread_dims;
    }
  }
  // Coordinates without spread (sorted last) would only add one-cell dimensions to every walk.
  grid.binned_dims = std::max(1, spread_dims);
  // Total cells stay within int32 and at most one per point (plus one per event), which keeps
  // the workspace bound of knn.h.
  const double max_cells =
      std::min(double(INT32_MAX / 2), double(n) + double(events)) / double(events);
  double width =
      spread_dims > 0 ? width_scale * std::pow(volume / target_cells, 1.0 / spread_dims) : 1.0;
  if (!(width > 0)) width = 1.0;
  *capped = false;
  for (;;) {
    double cells = 1;
    for (int b = 0; b < grid.binned_dims; ++b) {
      const double bins = std::floor(extent[b] / width) + 1;
      grid.bins[b] = static_cast<int32_t>(std::min(bins, double(INT32_MAX / 2)));
      cells *= grid.bins[b];
    }
    if (cells <= std::max(1.0, max_cells)) {
      grid.event_cells = static_cast<int64_t>(cells);
      break;
    }
    width *= 1.25;
    *capped = true;
  }
  int64_t stride = 1;
  for (int b = 0; b < grid.binned_dims; ++b) {
    grid.stride[b] = stride;
    stride *= grid.bins[b];
  }
  grid.width = static_cast<float>(width);
  grid.inv_width = static_cast<float>(1.0 / width);
  for (int b = 0; b < grid.binned_dims; ++b) grid.origin[b] = bounds[grid.dim[b]];
  // Cell assignment rounds (x - origin) * inv_width; the stopping rule subtracts this slack
  // (a few ulps of the coordinates' magnitude, plus 0.1% of a cell) from its distance bound.
  grid.margin = static_cast<float>(4.0 * FLT_EPSILON * (max_abs + max_extent) + 1e-3 * width);
  return grid;
}

// Points on tracks and showers fill a small part of their bounding box, so cells sized for the
// box hold many more points than the target. After counting, the population a point sees in
// its own cell (sum of count^2 / N) is compared with the target; while it is more than 1.25
// times the target the cells shrink by the B-th root of the ratio (at most kMaxRefinements
// times, never past one cell per point, and not again once the grid stops changing). Uniform
// points stay at the first grid (Poisson: mean + 1).
constexpr int kMaxRefinements = 5;

// A counted grid: cell_of and slot hold each point's cell and place in it, starts the counts.
struct CountedGrid {
  detail::KnnGrid grid{};
  int64_t cells = 0;
  DeviceBuffer<int32_t> starts;
  // The cell limit stopped the cells from shrinking while they still held more than 1.25 times
  // the target (the points lie on curves the grid cannot resolve in B dimensions); the grid was
  // then not counted.
  bool short_of_target = false;
};

CountedGrid refine_grid(const Queue& queue, View2<const float> points,
                        View1<const int64_t> row_splits, const std::vector<float>& bounds,
                        int64_t events, int64_t nonempty, int k, int max_binned_dims,
                        DeviceBuffer<int32_t>& cell_of, DeviceBuffer<int32_t>& slot) {
  const int64_t n = points.extent[0], dims = points.extent[1];
  CountedGrid counted;
  double width_scale = 1.0, ratio = 0.0;
  int64_t previous_cells = -1;
  for (int refinement = 0;; ++refinement) {
    bool capped = false;
    counted.grid =
        make_grid(bounds, dims, n, events, nonempty, k, width_scale, max_binned_dims, &capped);
    // Short of the target and no smaller cells allowed: a grid of fewer binned coordinates
    // takes over, so this one is not counted.
    if (capped && ratio > 1.25 && counted.grid.binned_dims > 2) {
      counted.short_of_target = true;
      return counted;
    }
    counted.cells = events * counted.grid.event_cells;
    counted.starts = make_device_buffer<int32_t>(queue, size_t(counted.cells + 1));
    [&] {
      KAAS_RETURN_LAUNCH(queue, knn_bin_count_launch, queue, points, row_splits, counted.grid,
                         cell_of.view(), slot.view(), counted.starts.view());
    }();
    if (refinement == kMaxRefinements || counted.cells >= n || counted.cells == previous_cells) {
      break;
    }
    previous_cells = counted.cells;
    const std::vector<int32_t> counts =
        to_host(queue, make_view(counted.starts.data(), counted.cells));
    double seen = 0;  // sum over points of their own cell's population
    for (int32_t c : counts) seen += double(c) * double(c);
    ratio = seen / double(n) / points_per_cell(k, dims);
    if (ratio <= 1.25) break;
    width_scale /= std::pow(ratio, 1.0 / counted.grid.binned_dims);
  }
  return counted;
}

// A grid short of its target drops a binned coordinate (down to two) and is refined again: at
// the cell limit, cells on curves (tracks and showers; hits with their charge as D = 3) hold
// more points than the target and the walk visits 3^B cells per shell for few points. Measured
// (bench knn_peers, openmp 2 threads, Zen 4, 3 interleaved rounds, against the grid kept at
// B = 3): toy hits D = 3 one event 0.92x the time at K = 16 and 0.95x at K = 64, 20 events 0.84x.
// Grids that reach the target keep B: tracks 100k D = 3 would take 0.84x at B = 2 but 1M 1.12x,
// uniform 100k 2x, so curves alone, without the cell limit, do not decide it.
CountedGrid count_into_grid(const Queue& queue, View2<const float> points,
                            View1<const int64_t> row_splits, const std::vector<int64_t>& splits,
                            const std::vector<float>& bounds, int k, DeviceBuffer<int32_t>& cell_of,
                            DeviceBuffer<int32_t>& slot) {
  const int64_t events = static_cast<int64_t>(splits.size()) - 1;
  int64_t nonempty = 0;
  for (int64_t e = 0; e < events; ++e) nonempty += splits[e + 1] > splits[e];
  int max_binned_dims = kKnnMaxBinnedDims;
  for (;;) {
    CountedGrid counted = refine_grid(queue, points, row_splits, bounds, events, nonempty, k,
                                      max_binned_dims, cell_of, slot);
    if (!counted.short_of_target || counted.grid.binned_dims <= 2) return counted;
    max_binned_dims = counted.grid.binned_dims - 1;
  }
}

void launch_binned(const Queue& queue, View2<const float> points, View1<const int64_t> row_splits,
                   const std::vector<int64_t>& splits, const std::vector<float>& bounds, int k,
                   View2<int32_t> indices, View2<float> distances, const LaunchConfig& config) {
  const int64_t n = points.extent[0], dims = points.extent[1];
  auto cell_of = make_device_buffer<int32_t>(queue, size_t(n));
  auto slot = make_device_buffer<int32_t>(queue, size_t(n));
  CountedGrid counted =
      count_into_grid(queue, points, row_splits, splits, bounds, k, cell_of, slot);
  const detail::KnnGrid& grid = counted.grid;
  const int64_t cells = counted.cells;
  DeviceBuffer<int32_t>& starts = counted.starts;

  const LaunchConfig scan_config{config.group_size, 0};
  auto scan_workspace = make_device_buffer<int32_t>(
      queue, size_t(exclusive_scan_workspace_size(queue, cells + 1, scan_config)));
  // Dimension-major, row stride N + kKnnBlock (a block read past the end stays inside).
  auto sorted_points = make_device_buffer<float>(queue, size_t((n + detail::kKnnBlock) * dims));
  auto sorted_index = make_device_buffer<int32_t>(queue, size_t(n));

  // counts -> cell starts, in place; starts[cells] = N.
  exclusive_scan<int32_t>(queue, starts.view(), starts.view(), scan_workspace.view(), scan_config);
  [&] {
    KAAS_RETURN_LAUNCH(queue, knn_bin_scatter_launch, queue, points, cell_of.view(), slot.view(),
                       starts.view(), sorted_points.view(), sorted_index.view());
  }();
  [&] {
    KAAS_RETURN_LAUNCH(queue, knn_binned_search_launch, queue, grid, sorted_points.view(),
                       sorted_index.view(), starts.view(), k, indices, distances,
                       config.group_size);
  }();
  queue.wait();  // the workspaces are freed on return
}

}  // namespace

namespace {

// The checked call as the method table's rows see it.
struct KnnCall {
  const Queue* queue;
  View2<const float> points;
  View1<const int64_t> row_splits;
  const std::vector<int64_t>* splits;
  const std::vector<float>* bounds;
  int k;
  View2<int32_t> indices;
  View2<float> distances;
  LaunchConfig config;
  int64_t largest_event;
};

// Measured (bench knn_crossover, openmp 2 threads, K = 16): 100 uniform events of 32 points,
// D = 3: binned 3.32 ms, brute force 1.77; of 64 points: 4.25 vs 5.14. One event of 100k
// points: D = 8 1.07 s vs 8.2 s, D = 16 7.6 s vs 12.2 s; of 2,000 points, D = 16: 8.4 vs 8.8 ms.
constexpr int64_t kBruteForceLargestEvent = 48;

// Both methods are single-source kernels for every backend and return identical rows (one
// distance expression, one tie rule): auto chooses by speed alone, brute force runs anything.
const ImplRow<KnnMethod, KnnCall> kMethodRows[] = {
    {KnnMethod::kBinned, "binned", IsaTier::kPortable, "exact rows", any_backend,
     always_fits<KnnCall>,
     [](const KnnCall& c) {
       return c.largest_event <= kBruteForceLargestEvent
                  ? "events of at most " + std::to_string(kBruteForceLargestEvent) +
                        " points: brute force is faster"
                  : std::string();
     },
     [](const KnnCall& c) {
       launch_binned(*c.queue, c.points, c.row_splits, *c.splits, *c.bounds, c.k, c.indices,
                     c.distances, c.config);
     }},
    {KnnMethod::kBruteForce, "brute_force", IsaTier::kPortable, "exact rows", any_backend,
     always_fits<KnnCall>, [](const KnnCall&) { return std::string(); },
     [](const KnnCall& c) {
       launch_brute_force(*c.queue, c.points, c.row_splits, *c.splits, c.k, c.indices, c.distances,
                          c.config);
     }},
};

ImplTable<KnnMethod, KnnCall> method_table() {
  return {"knn method", "knn", kMethodRows};
}

}  // namespace

KnnMethod knn_auto_method(int64_t /*dims*/, int64_t largest_event) {
  KnnCall call{};
  call.largest_event = largest_event;
  for (const auto& row : method_table().rows()) {
    if (row.auto_skips(call).empty()) return row.impl;
  }
  return KnnMethod::kBruteForce;
}

std::string_view to_string(KnnMethod method) {
  if (method == KnnMethod::kAuto) return "auto";
  const auto* row = method_table().find(method);
  return row == nullptr ? "unknown" : row->name;
}

KnnMethod knn_method_from_name(std::string_view name) {
  if (name == "auto") return KnnMethod::kAuto;
  if (const auto* row = method_table().find(name)) return row->impl;
  throw Error(ErrorCode::kInvalidArgument, "knn: method '" + escape_for_message(name, 64) +
                                               "': expected auto, " + method_table().names());
}

std::vector<ImplTableInfo> knn_impl_tables() {
  return {method_table().info()};
}

int knn_binned_grid_dims(const Queue& queue, View2<const float> points,
                         View1<const int64_t> row_splits, int k) {
  check_inputs(points, row_splits, k);
  const int64_t n = points.extent[0];
  const std::vector<int64_t> splits = read_row_splits(queue, row_splits, n);
  if (n == 0) return 0;
  const std::vector<float> bounds = check_finite(queue, points);
  auto cell_of = make_device_buffer<int32_t>(queue, size_t(n));
  auto slot = make_device_buffer<int32_t>(queue, size_t(n));
  const int binned =
      count_into_grid(queue, points, row_splits, splits, bounds, k, cell_of, slot).grid.binned_dims;
  queue.wait();  // the workspaces are freed on return
  return binned;
}

void knn(const Queue& queue, View2<const float> points, View1<const int64_t> row_splits, int k,
         View2<int32_t> indices, View2<float> distances, KnnMethod method, LaunchConfig config) {
  check_arguments(points, row_splits, k, indices, distances, method, config);
  const int64_t n = points.extent[0];
  const std::vector<int64_t> splits = read_row_splits(queue, row_splits, n);
  if (n == 0) return;
  const std::vector<float> bounds = check_finite(queue, points);
  int64_t largest = 0;
  for (size_t e = 0; e + 1 < splits.size(); ++e) {
    largest = std::max(largest, splits[e + 1] - splits[e]);
  }
  const KnnCall call{&queue, points,  row_splits, &splits, &bounds,
                     k,      indices, distances,  config,  largest};
  const ImplTable<KnnMethod, KnnCall> table = method_table();
  table.run(table.choose(method, KnnMethod::kAuto, call), call);
}

}  // namespace kaas
