// Exact kNN for one backend: input check, brute force, and the binned grid (count, scatter,
// search). See kernels/knn.h for the output contract.

#include "kaas/kernels/knn.h"
#include "kaas/backends/kernel.h"
#include "kaas/kernels/detail/knn_rows.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

using detail::KnnGrid;

using knn_rows::before;
using knn_rows::block_distances;
using knn_rows::event_of_near;
using knn_rows::heap_of;
using knn_rows::heap_row;
using knn_rows::HeapRow;
using knn_rows::kKnnBlock;
using knn_rows::order_key;
using knn_rows::with_dims;

// How many queries ahead the search fetches a query's output rows (CPU backends).
constexpr int64_t kRowPrefetchAhead = 8;

// ---------------------------------------------------------------------------------------------
// Input check: the first non-finite point and the per-dimension bounds.

struct CheckKernel {
  static constexpr const char* kName = "knn.check";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points, View1<int32_t> first_bad,
                              View1<float> bounds) const {
    const int64_t n = points.extent[0];
    const int64_t dims = points.extent[1];
    // One column at a time keeps the partial bounds in two scalars; they are combined with
    // atomics once per element thread (no sync involved, so the locals are fine).
    for (int64_t d = 0; d < dims; ++d) {
      float lo = math::infinity(), hi = -math::infinity();
      for (int64_t p : uniform_elements(ctx, n)) {
        const float x = points(p, d);
        if (!math::isfinite(x)) {
          ctx.atomic_min(&first_bad[0], static_cast<int32_t>(p));
        } else {
          lo = math::min(lo, x);
          hi = math::max(hi, x);
        }
      }
      ctx.atomic_min(&bounds[d], lo);
      ctx.atomic_max(&bounds[dims + d], hi);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Brute force: group = block of up to group_size queries of one event; the event's points pass
// through shared memory in tiles of `tile` points (dimension-major [D][tile], tile a multiple of
// kKnnBlock, the tail of a partial tile zeroed).

template <int kDims>
struct BruteForceKernel {
  static constexpr const char* kName = "knn.brute_force";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int64_t> row_splits, View2<const int64_t> blocks, int k,
                              View2<int32_t> indices, View2<float> distances, int tile) const {
    const int dims = kDims > 0 ? kDims : static_cast<int>(points.extent[1]);
    float* tile_points = ctx.shared<float>();
    for (int64_t b : uniform_groups(ctx, blocks.extent[0])) {
      const int64_t event = blocks(b, 0), first_query = blocks(b, 1);
      const int64_t begin = row_splits[event], end = row_splits[event + 1];
      const int64_t queries = math::min<int64_t>(ctx.group_size(), end - first_query);
      for (int64_t e : group_elements(ctx, queries)) {
        heap_row(indices, distances, first_query + e, k).clear();
      }
      for (int64_t base = begin; base < end && k > 1; base += tile) {
        const int64_t count = math::min<int64_t>(tile, end - base);
        const int64_t padded = (count + kKnnBlock - 1) / kKnnBlock * kKnnBlock;
        for (int64_t t : group_elements(ctx, padded * dims)) {
          const int64_t point = t / dims, d = t % dims;
          tile_points[d * tile + point] = point < count ? points(base + point, d) : 0.0f;
        }
        ctx.sync();
        for (int64_t e : group_elements(ctx, queries)) {
          const int64_t q = first_query + e;
          float query[kDims > 0 ? kDims : kKnnMaxDims];
          for (int d = 0; d < dims; ++d) query[d] = points(q, d);
          const HeapRow heap = heap_of(indices, distances, q, k);
          // The heap survives the sync() in global memory; its worst entry is re-read here.
          float worst = heap.worst_d();
          int32_t worst_index = heap.worst_i();
          float block[kKnnBlock];
          for (int64_t t0 = 0; t0 < count; t0 += kKnnBlock) {
            block_distances<kDims>(query, tile_points + t0, tile, dims, block);
            const int m = static_cast<int>(math::min<int64_t>(kKnnBlock, count - t0));
            for (int t = 0; t < m; ++t) {
              const float dd = block[t];
              const int32_t j = static_cast<int32_t>(base + t0 + t);
              if (j == q || !before(dd, j, worst, worst_index)) continue;
              heap.replace_worst(dd, j);
              worst = heap.worst_d();
              worst_index = heap.worst_i();
            }
          }
        }
        ctx.sync();  // the tile is overwritten next
      }
      for (int64_t e : group_elements(ctx, queries)) {
        heap_of(indices, distances, first_query + e, k).finish();
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Binned grid. Cell of a point: event * event_cells + sum_b c_b * stride[b], c_b the cell along
// binned dimension b (coordinate dim[b]); dimension 0 varies fastest.

struct FillKernel {
  static constexpr const char* kName = "knn.fill";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<int32_t> x) const {
    for (int64_t i : uniform_elements(ctx, x.extent[0])) x[i] = 0;
  }
};

struct CountKernel {
  static constexpr const char* kName = "knn.bin_count";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int64_t> row_splits, KnnGrid grid, View1<int32_t> cell_of,
                              View1<int32_t> slot, View1<int32_t> counts) const {
    int64_t event = 0;  // the last point's event
    for (int64_t p : uniform_elements(ctx, points.extent[0])) {
      int64_t local = 0;
      for (int b = 0; b < grid.binned_dims; ++b) {
        // The cell of the maximum is the last one. Clamped as an integer: bins - 1 need not be
        // a float (above 2^24), while f, at most about bins, converts safely.
        const float f = (points(p, grid.dim[b]) - grid.origin[b]) * grid.inv_width;
        const int64_t c =
            math::min<int64_t>(static_cast<int64_t>(math::max(f, 0.0f)), grid.bins[b] - 1);
        local += c * grid.stride[b];
      }
      const int64_t cell = event_of_near(row_splits, p, event) * grid.event_cells + local;
      cell_of[p] = static_cast<int32_t>(cell);
      slot[p] = ctx.atomic_add(&counts[cell], 1);
    }
  }
};

// Sorted coordinates are dimension-major with row stride N + kKnnBlock (sorted_points holds
// D * stride values): a block read past the last point stays inside the buffer, in zeros.
struct ScatterKernel {
  static constexpr const char* kName = "knn.bin_scatter";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int32_t> cell_of, View1<const int32_t> slot,
                              View1<const int32_t> starts, View1<float> sorted_points,
                              View1<int32_t> sorted_index) const {
    const int64_t n = points.extent[0], dims = points.extent[1];
    const int64_t stride = sorted_points.extent[0] / dims;
    for (int64_t p : uniform_elements(ctx, n)) {
      const int64_t pos = starts[cell_of[p]] + slot[p];
      for (int64_t d = 0; d < dims; ++d) sorted_points[d * stride + pos] = points(p, d);
      sorted_index[pos] = static_cast<int32_t>(p);
    }
    for (int64_t t : uniform_elements(ctx, (stride - n) * dims)) {
      sorted_points[(t % dims) * stride + n + t / dims] = 0.0f;
    }
  }
};

// Distance from the query to cell `cell` along binned dimension b (query coordinate x), shrunk
// by the rounding margin (0 inside the cell).
KAAS_DEVICE inline float cell_gap(const KnnGrid& grid, float x, int b, int32_t cell) {
  const float lo = grid.origin[b] + float(cell) * grid.width;
  const float below = lo - x, above = x - (lo + grid.width);
  return math::max(math::max(below, above) - grid.margin, 0.0f);
}

// One group per cell: its points are the queries (in chunks of up to group_size elements),
// and the group walks the cells at Chebyshev distance r = 0, 1, 2, ... from its cell together,
// so the walk is paid once per cell instead of once per query. Shell r is a set of rows (the
// outer binned coordinates fixed, dimension 0 a contiguous run of cells): a row is skipped for
// the whole group when the distance between the two cell boxes exceeds the largest K-th
// distance of the group after the previous shell, and per query when the distance from the
// query to the row exceeds its own K-th. Each query scans the remaining run trimmed to the
// cells it can still reach, kKnnBlock candidates at a time. After shell r every unsearched
// point of the event lies outside the box of cells [c - r, c + r], so at least `gap` (the
// distance from the query to that box's nearest inner face) away: the group stops when every
// query's gap^2 exceeds its K-th distance, or when the box covers the event.
// Shared memory: [0] the group's largest K-th distance, [1] whether a query needs the next
// shell (0 or 1).
template <int kDims>
struct BinnedSearchKernel {
  static constexpr const char* kName = "knn.binned_search";

  using Query = knn_rows::SortedQuery<kDims>;

  KAAS_DEVICE static Query load_query(const KnnGrid& grid, View1<const float> sorted_points,
                                      View1<const int32_t> sorted_index, int64_t position) {
    return Query::load(grid.dims, sorted_points, sorted_index, position);
  }

  // The gap along binned dimension b between the group's cell c and cell v, less the margin.
  KAAS_DEVICE static float cell_box_gap(const KnnGrid& grid, int32_t c, int32_t v) {
    const int32_t apart = v > c ? v - c - 1 : c - v - 1;
    return math::max(float(math::max(apart, 0)) * grid.width - grid.margin, 0.0f);
  }

  KAAS_KERNEL void operator()(const Ctx& ctx, KnnGrid grid, View1<const float> sorted_points,
                              View1<const int32_t> sorted_index, View1<const int32_t> starts, int k,
                              View2<int32_t> indices, View2<float> distances) const {
    float* shared = ctx.shared<float>();
    const int nb = grid.binned_dims;
    const int64_t point_stride = sorted_points.extent[0] / grid.dims;
    const int64_t cells = starts.extent[0] - 1;
    for (int64_t cell : uniform_groups(ctx, cells)) {
      const int64_t first = starts[cell], last = starts[cell + 1];
      const int64_t event_base = cell - cell % grid.event_cells;
      int32_t c[kKnnMaxBinnedDims];  // the group's cell per binned dimension
      for (int b = 0; b < nb; ++b) {
        c[b] = static_cast<int32_t>((cell - event_base) / grid.stride[b] % grid.bins[b]);
      }
      for (int64_t chunk = first; chunk < last; chunk += ctx.group_size()) {
        const int64_t queries = math::min<int64_t>(ctx.group_size(), last - chunk);
        // Shell 0, the group's own cell: K-1 other points fill the heap as they come (one
        // heapify instead of K-1 insertions), the rest of the cell goes through it. The fill
        // takes the points around the query in the cell's order, which keeps the input's order
        // within a cell: hits come in wire and tick order, so these are near the query and the
        // heap starts with a tight K-th distance (one toy event, D = 3, K = 16: 26.5 insertions
        // per query with the cell's first K-1, 17 with these; 1.27x).
        for (int64_t e : group_elements(ctx, queries)) {
          // The output rows are in the input's order, the queries in the cells': the row of a
          // query a few ahead is fetched while this one is searched (its first touch missed the
          // cache: 19 % of this loop's samples on one toy event).
          if (e + kRowPrefetchAhead < queries) {
            const int64_t ahead = sorted_index[chunk + e + kRowPrefetchAhead];
            math::prefetch_for_write(&distances(ahead, 0));
            math::prefetch_for_write(&indices(ahead, 0));
          }
          const HeapRow heap = heap_row(indices, distances, sorted_index[chunk + e], k);
          if (k == 1) continue;
          const Query q = load_query(grid, sorted_points, sorted_index, chunk + e);
          // [window, last) holds at least K points when the cell does (the query among them).
          const int64_t window =
              math::max<int64_t>(first, math::min<int64_t>(chunk + e - (k - 1) / 2, last - k));
          const int32_t rest = Query::fill(q, int32_t(window), int32_t(last), heap);
          float worst = heap.worst_d();
          int32_t worst_index = heap.worst_i();
          Query::scan(q, rest, int32_t(last), heap, worst, worst_index);
          Query::scan(q, int32_t(first), int32_t(window), heap, worst, worst_index);
        }
        if (k == 1) continue;
        float group_worst = math::infinity();
        int32_t v[kKnnMaxBinnedDims], lo[kKnnMaxBinnedDims], hi[kKnnMaxBinnedDims];
        int32_t step[kKnnMaxBinnedDims], last_step[kKnnMaxBinnedDims];
        for (int32_t r = 0;; ++r) {
          bool covers = true;
          for (int b = 0; b < nb; ++b) {
            lo[b] = math::max(c[b] - r, 0);
            hi[b] = math::min(c[b] + r, grid.bins[b] - 1);
            covers = covers && lo[b] == 0 && hi[b] == grid.bins[b] - 1;
          }
          // Rows of shell r: an odometer over binned dimensions 1..B-1 (dimension 1 fastest).
          // Offsets from the group's cell in the order 0, -1, +1, -2, +2, ...: near rows first,
          // so the K-th distances shrink early and later rows fail their tests.
          // Per dimension only the offsets inside [lo, hi]: the centre-out sequence stops at
          // the larger of the two clipped reaches (long thin grids would otherwise walk
          // (2r + 1)^(B-1) rows to find a few).
          for (int b = 1; b < nb; ++b) {
            step[b] = 0;
            last_step[b] = 2 * math::max(c[b] - lo[b], hi[b] - c[b]);
          }
          for (bool more = true; more;) {
            bool inside = true;
            for (int b = 1; b < nb; ++b) {
              const int32_t half = (step[b] + 1) / 2;
              v[b] = c[b] + ((step[b] & 1) != 0 ? -half : half);
              inside = inside && v[b] >= lo[b] && v[b] <= hi[b];
            }
            bool face = r == 0;
            float box_bound = 0.0f;
            int64_t row = event_base;
            for (int b = 1; b < nb; ++b) {
              face = face || v[b] == c[b] - r || v[b] == c[b] + r;
              const float g = cell_box_gap(grid, c[b], v[b]);
              box_bound += g * g;
              row += int64_t(v[b]) * grid.stride[b];
            }
            if (!face) {  // only the two end cells of dimension 0, at least r - 1 cells away
              const float g = cell_box_gap(grid, 0, r);
              box_bound += g * g;
            }
            if (inside && r > 0 && box_bound * 0.9999f <= group_worst) {
              for (int64_t e : group_elements(ctx, queries)) {
                // The query's distance to the row from its binned coordinates alone, before
                // anything else is loaded: most rows end here.
                const int64_t position = chunk + e;
                const HeapRow heap = heap_of(indices, distances, sorted_index[position], k);
                float row_bound = 0.0f;
                for (int b = 1; b < nb; ++b) {
                  const float x = sorted_points[grid.dim[b] * point_stride + position];
                  const float g = cell_gap(grid, x, b, v[b]);
                  row_bound += g * g;
                }
                if (row_bound * 0.9999f > heap.worst_d()) continue;
                search_row(grid, load_query(grid, sorted_points, sorted_index, position), heap,
                           starts, row, row_bound, c, lo, hi, r, face);
              }
            }
            more = false;
            for (int b = 1; b < nb; ++b) {
              if (++step[b] <= last_step[b]) {
                more = true;
                break;
              }
              step[b] = 0;
            }
          }
          if (covers) break;
          // Does any query need shell r + 1? And the group's largest K-th distance.
          for (int64_t e : group_elements(ctx, 2)) shared[e] = 0.0f;
          ctx.sync();
          for (int64_t e : group_elements(ctx, queries)) {
            const Query q = load_query(grid, sorted_points, sorted_index, chunk + e);
            const float worst = heap_of(indices, distances, sorted_index[chunk + e], k).worst_d();
            float gap = math::infinity();
            for (int b = 0; b < nb; ++b) {
              const float x = q.coords[grid.dim[b]];
              if (c[b] - r > 0) {
                gap = math::min(gap, x - (grid.origin[b] + float(c[b] - r) * grid.width));
              }
              if (c[b] + r < grid.bins[b] - 1) {
                gap = math::min(gap, grid.origin[b] + float(c[b] + r + 1) * grid.width - x);
              }
            }
            gap -= grid.margin;
            // 1e-4 covers the rounding of the float distances of the points outside the box.
            if (!(worst < math::infinity() && gap > 0.0f && gap * gap * 0.9999f > worst)) {
              shared[1] = 1.0f;  // every writer stores the same value
            }
            ctx.atomic_max(&shared[0], worst);
          }
          ctx.sync();
          const bool next = shared[1] != 0.0f;
          group_worst = shared[0];
          ctx.sync();  // shared is rewritten after the next shell
          if (!next) break;
        }
        for (int64_t e : group_elements(ctx, queries)) {
          heap_of(indices, distances, sorted_index[chunk + e], k).finish();
        }
      }
    }
  }

  // One row of shell r for one query: the whole run of dimension 0 trimmed to the cells within
  // the query's K-th distance (face rows), or its two end cells.
  // Narrows the run [a, e] of dimension-0 cells to those within the K-th distance `worst` of a
  // query at x0 whose distance to the row along the other binned dimensions is row_bound.
  KAAS_DEVICE static void trim(const KnnGrid& grid, float x0, float worst, float row_bound,
                               int32_t& a, int32_t& e) {
    if (!(worst < math::infinity())) return;
    const float reach = math::sqrt(math::max(worst - row_bound, 0.0f)) * 1.0001f + grid.margin;
    const float from = (x0 - reach - grid.origin[0]) * grid.inv_width;
    const float to = (x0 + reach - grid.origin[0]) * grid.inv_width;
    a = math::max(a, static_cast<int32_t>(math::max(from, -1.0f)));
    e = math::min(e, static_cast<int32_t>(math::min(to, float(grid.bins[0]))));
  }

  // row_bound: the query's squared distance to the row along binned dimensions 1..B-1.
  KAAS_DEVICE static void search_row(const KnnGrid& grid, const Query& q, const HeapRow& heap,
                                     View1<const int32_t> starts, int64_t row, float row_bound,
                                     const int32_t* c, const int32_t* lo, const int32_t* hi,
                                     int32_t r, bool face) {
    float worst = heap.worst_d();
    int32_t worst_index = heap.worst_i();
    const float x0 = q.coords[grid.dim[0]];
    // One call site of scan for both kinds of row: inlined on a GPU, each site costs the
    // compilers a copy of the block scan and merge (r > 0 for the two end cells: distinct).
    for (int side = 0; side < (face ? 1 : 2); ++side) {
      int32_t a, e;
      if (face) {
        a = lo[0];
        e = hi[0];
        trim(grid, x0, worst, row_bound, a, e);
      } else {
        a = e = side == 0 ? c[0] - r : c[0] + r;
        if (a < 0 || a >= grid.bins[0]) continue;
        const float dx = cell_gap(grid, x0, 0, a);
        if ((row_bound + dx * dx) * 0.9999f > worst) continue;
      }
      if (a <= e) Query::scan(q, starts[row + a], starts[row + e + 1], heap, worst, worst_index);
    }
  }
};

// Group size of the search kernels: a block of threads on a GPU; on the CPU only the
// bookkeeping granularity.
int search_group_size(int requested) {
  return requested > 0 ? requested : 128;
}

}  // namespace

void knn_check_launch(const Queue& queue, View2<const float> points, View1<int32_t> first_bad,
                      View1<float> bounds) {
  const int size = 256;
  const int64_t groups = element_grid(queue, points.extent[0], size);
  launch(queue, groups, size, 0, CheckKernel{}, points, first_bad, bounds);
}

void knn_brute_force_launch(const Queue& queue, View2<const float> points,
                            View1<const int64_t> row_splits, View2<const int64_t> blocks, int k,
                            View2<int32_t> indices, View2<float> distances, int group_size) {
  const int64_t dims = points.extent[1];
  const size_t max_shared = queue.backend().launch_limits(queue.device()).max_shared_bytes;
  // Up to 1024 points per tile, as many as fit in shared memory, a multiple of the block.
  const int64_t fit = math::min<int64_t>(1024, int64_t(max_shared / (dims * 4)));
  const int tile = static_cast<int>(math::max<int64_t>(kKnnBlock, fit / kKnnBlock * kKnnBlock));
  const int64_t groups = grid_groups(queue, blocks.extent[0]);
  with_dims<BruteForceKernel>(dims, [&](auto kernel) {
    launch(queue, groups, group_size, size_t(tile) * dims * sizeof(float), kernel, points,
           row_splits, blocks, k, indices, distances, tile);
  });
}

void knn_bin_count_launch(const Queue& queue, View2<const float> points,
                          View1<const int64_t> row_splits, KnnGrid grid, View1<int32_t> cell_of,
                          View1<int32_t> slot, View1<int32_t> counts) {
  const int size = 256;
  launch(queue, element_grid(queue, counts.extent[0], size), size, 0, FillKernel{}, counts);
  launch(queue, element_grid(queue, points.extent[0], size), size, 0, CountKernel{}, points,
         row_splits, grid, cell_of, slot, counts);
}

void knn_bin_scatter_launch(const Queue& queue, View2<const float> points,
                            View1<const int32_t> cell_of, View1<const int32_t> slot,
                            View1<const int32_t> starts, View1<float> sorted_points,
                            View1<int32_t> sorted_index) {
  const int size = 256;
  launch(queue, element_grid(queue, points.extent[0], size), size, 0, ScatterKernel{}, points,
         cell_of, slot, starts, sorted_points, sorted_index);
}

void knn_binned_search_launch(const Queue& queue, KnnGrid grid, View1<const float> sorted_points,
                              View1<const int32_t> sorted_index, View1<const int32_t> starts, int k,
                              View2<int32_t> indices, View2<float> distances, int group_size) {
  const int size = search_group_size(group_size);
  const int64_t groups = grid_groups(queue, starts.extent[0] - 1);
  with_dims<BinnedSearchKernel>(grid.dims, [&](auto kernel) {
    launch(queue, groups, size, 2 * sizeof(float), kernel, grid, sorted_points, sorted_index,
           starts, k, indices, distances);
  });
}

}  // namespace kaas::KAAS_BACKEND_NS
