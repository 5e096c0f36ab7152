#pragma once
// Exact k nearest neighbours by squared L2 distance for ragged batches of events.
//
// points [N, D] (D <= 16) hold the events one after another; row_splits [E+1] (row_splits[0] =
// 0, non-decreasing, row_splits[E] = N) delimit them, and a query only sees the points of its
// own event. Every point is a query. Output rows, for query q:
//   slot 0:     q itself, distance 0 (even when other points of the event coincide with q);
//   slots 1...: the other points of the event by increasing (squared distance, index), so equal
//               distances are broken by the lower index;
//   padding:    index -1 and distance +inf when the event has fewer than K points.
// Squared distances are summed in float over d = 0..D-1 in order; both methods compute them
// with the same expression, so on one backend they return identical rows.
//
// Methods:
//   kBruteForce  one group per block of queries of one event; the event's points stream
//                through group-shared memory tile by tile (any D).
//   kBinned      a uniform grid of cubic cells on the B coordinates of largest spread (B up to
//                6, as many as keep a few cells per dimension; HGCalML's binned_select_knn idea),
//                with the event as the outer cell coordinate and about 2K points per cell
//                (16..32; 64 above D = 8), cells shrunk for clustered points; points on
//                curves that the cell limit keeps the grid from resolving are binned on one
//                coordinate fewer (down to two). The cell lists (CSR) are built on the device by
//                counting, exclusive_scan and a scatter into dimension-major coordinates. One group
//                per cell takes the cell's points as its queries and walks the shells of cells
//                around it together: the own cell fills each query's heap (first the K-1 points
//                next to the query in the cell, which keeps the input's order: hits in wire and
//                tick order are near in space, so the K-th distance starts tight), then rows of
//                cells are skipped for the whole group or per query by their distance, and the
//                group stops once no query can gain from the next shell.
//   kAuto        kBinned when the largest event has more than 48 points, else kBruteForce, for
//                every D (measured thresholds in knn.cc).
// Candidates are compared 16 at a time (one SIMD compare skips a block that cannot enter); each
// query keeps its K-1 best candidates in its own output row: sorted, a new one inserted from the
// end, for K <= 64 (a predictable loop, measured 1.6-2x faster than a heap's sift, whose
// compares mispredict; above K = 32 a block's passing candidates enter in one in-place merge from
// the end of the row), a bounded max-heap above.
// (A Morton-ordered bucket tree walked per leaf of queries was built and measured too: 1.5-3x
// slower than the grid on every shape of bench/results/knn-peers-cpu.md, so it is not offered.)
//
// Workspace of kBinned: 16 N + 4 N D + 4 E bytes, plus 64 D + 4 of padding (cell, slot-in-cell,
// cell starts with at most N + E cells, dimension-major coordinates, original indices) and the
// scan's few bytes per cell group: within twice the input (4 N D + 8 (E + 1)) plus the output
// (8 N K) whenever D + 2K >= 4, apart from the padding. kBruteForce: the block table (16 bytes
// per block of queries).
//
// Validation synchronises the queue: row_splits (a small array) is copied to the host, and a
// device kernel looks for a non-finite coordinate whose result is read back before anything
// else runs. Workspaces are allocated per call and the call waits for the queue before it
// returns, so results are ready on return on every backend.

#include <cstdint>
#include <string_view>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

enum class KnnMethod { kAuto, kBruteForce, kBinned };

inline constexpr int kKnnMaxK = 256;
inline constexpr int kKnnMaxDims = 16;
inline constexpr int kKnnMaxBinnedDims = 6;  // coordinates the binned grid bins at most

// indices [N, K] (int32) and distances [N, K] (squared L2, float) are overwritten entirely.
// config.group_size applies to the search kernels (and the scan of the binned method).
void knn(const Queue& queue, View2<const float> points, View1<const int64_t> row_splits, int k,
         View2<int32_t> indices, View2<float> distances, KnnMethod method = KnnMethod::kAuto,
         LaunchConfig config = {});

// The method kAuto resolves to for these sizes.
KnnMethod knn_auto_method(int64_t dims, int64_t largest_event);
// The methods' names, from their table (kernels/knn.cc): "auto", "binned", "brute_force".
std::string_view to_string(KnnMethod method);
KnnMethod knn_method_from_name(std::string_view name);  // throws kInvalidArgument
// How many coordinates kBinned's grid bins for these points and K, after its refinement (the
// checks of knn() apply; synchronises the queue). For diagnostics and tests.
int knn_binned_grid_dims(const Queue& queue, View2<const float> points,
                         View1<const int64_t> row_splits, int k);

namespace detail {

// Candidates per distance block of the search kernels (one SIMD operation per coordinate on a
// CPU); the binned method's sorted coordinates are padded by one block.
inline constexpr int kKnnBlock = 16;

// The uniform grid of the binned method; the same value for every element of a launch.
struct KnnGrid {
  int32_t dim[kKnnMaxBinnedDims];     // coordinate of each binned dimension (largest spread first)
  float origin[kKnnMaxBinnedDims];    // lower corner of the binned coordinates (over all events)
  int32_t bins[kKnnMaxBinnedDims];    // cells per binned dimension
  int64_t stride[kKnnMaxBinnedDims];  // cell-index stride of each binned dimension (bins[0]...)
  float width;                        // edge of a cubic cell
  float inv_width;                    // 1 / width
  float margin;                       // slack for rounding in cell assignment, in coordinate units
  int binned_dims;                    // B <= min(D, kKnnMaxBinnedDims)
  int dims;                           // D
  int64_t event_cells;                // product of bins
};

}  // namespace detail

// Non-finite check and per-dimension bounds: first_bad[0] = min index of a point with a NaN or
// inf coordinate (left untouched if none); bounds[d] = min, bounds[D + d] = max of column d.
KAAS_DECLARE_LAUNCHER(void, knn_check_launch,
                      (const Queue&, View2<const float>, View1<int32_t>, View1<float>))
// Brute force; blocks [B, 2] = (event, first query) of each block of group_size queries.
KAAS_DECLARE_LAUNCHER(void, knn_brute_force_launch,
                      (const Queue&, View2<const float>, View1<const int64_t>, View2<const int64_t>,
                       int, View2<int32_t>, View2<float>, int))
// Binned: cell of every point and the per-cell counts (counts zeroed first), then
// slot-in-cell via the counting atomics.
KAAS_DECLARE_LAUNCHER(void, knn_bin_count_launch,
                      (const Queue&, View2<const float>, View1<const int64_t>, detail::KnnGrid,
                       View1<int32_t>, View1<int32_t>, View1<int32_t>))
// Binned: scatter points into cell order (dimension-major coordinates with row stride
// N + kKnnBlock, zero padded, and the original indices).
KAAS_DECLARE_LAUNCHER(void, knn_bin_scatter_launch,
                      (const Queue&, View2<const float>, View1<const int32_t>, View1<const int32_t>,
                       View1<const int32_t>, View1<float>, View1<int32_t>))
// Binned: the shell-by-shell search of every query.
KAAS_DECLARE_LAUNCHER(void, knn_binned_search_launch,
                      (const Queue&, detail::KnnGrid, View1<const float>, View1<const int32_t>,
                       View1<const int32_t>, int, View2<int32_t>, View2<float>, int))

}  // namespace kaas
