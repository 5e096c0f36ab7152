// Exact kNN for one backend: input check, brute force, and the binned grid (count, scatter,
// search). See kernels/knn.h for the output contract.

#include "kaas/kernels/knn.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

using detail::KnnGrid;

// Heap slot that no real point can beat: +inf distance and the largest index.
constexpr int32_t kNoIndex = 2147483647;

// Squared L2 distance, summed over d in order (the contract of knn.h). kDims > 0 fixes D at
// compile time so the query stays in registers; 0 reads it at run time.
template <int kDims>
KAAS_DEVICE inline float squared_distance(const float* q, const float* p, int dims) {
  const int n = kDims > 0 ? kDims : dims;
  float sum = 0.0f;
  for (int d = 0; d < n; ++d) {
    const float t = p[d] - q[d];
    sum += t * t;
  }
  return sum;
}

// (distance, index) order: the total order that makes results independent of visiting order.
KAAS_DEVICE inline bool before(float da, int32_t ia, float db, int32_t ib) {
  return da < db || (da == db && ia < ib);
}

// A bounded max-heap of the K-1 best candidates of one query, kept in slots 1..K-1 of the
// query's own output rows (no extra memory; the worst candidate sits at heap position 0).
struct HeapRow {
  float* dist;
  int32_t* index;
  int64_t dist_stride, index_stride;
  int size;

  KAAS_DEVICE float& d(int i) const { return dist[i * dist_stride]; }
  KAAS_DEVICE int32_t& i(int i) const { return index[i * index_stride]; }

  KAAS_DEVICE void sift_down(int pos, int n) const {
    const float pd = d(pos);
    const int32_t pi = i(pos);
    for (;;) {
      int child = 2 * pos + 1;
      if (child >= n) break;
      if (child + 1 < n && before(d(child), i(child), d(child + 1), i(child + 1))) ++child;
      if (!before(pd, pi, d(child), i(child))) break;
      d(pos) = d(child);
      i(pos) = i(child);
      pos = child;
    }
    d(pos) = pd;
    i(pos) = pi;
  }
  KAAS_DEVICE void clear() const {
    for (int s = 0; s < size; ++s) {
      d(s) = math::infinity();
      i(s) = kNoIndex;
    }
  }
  // Replaces the worst candidate (the caller checked that (dd, j) comes before it).
  KAAS_DEVICE void replace_worst(float dd, int32_t j) const {
    d(0) = dd;
    i(0) = j;
    sift_down(0, size);
  }
  // Heap sort into increasing (distance, index); unfilled slots become -1 / +inf.
  KAAS_DEVICE void finish() const {
    for (int end = size - 1; end > 0; --end) {
      const float td = d(0);
      const int32_t ti = i(0);
      d(0) = d(end);
      i(0) = i(end);
      d(end) = td;
      i(end) = ti;
      sift_down(0, end);
    }
    for (int s = 0; s < size; ++s) {
      if (i(s) == kNoIndex) i(s) = -1;
    }
  }
};

// Slot 0 holds the query itself; the heap lives in slots 1..K-1.
KAAS_DEVICE inline HeapRow heap_row(View2<int32_t> indices, View2<float> distances, int64_t q,
                                    int k) {
  indices(q, 0) = static_cast<int32_t>(q);
  distances(q, 0) = 0.0f;
  return HeapRow{&distances(q, 0) + distances.stride[1], &indices(q, 0) + indices.stride[1],
                 distances.stride[1], indices.stride[1], k - 1};
}

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
// through shared memory in tiles of `tile` points (row-major [tile][D]).

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
        for (int64_t t : group_elements(ctx, count * dims)) {
          tile_points[t] = points(base + t / dims, t % dims);
        }
        ctx.sync();
        for (int64_t e : group_elements(ctx, queries)) {
          const int64_t q = first_query + e;
          float query[kDims > 0 ? kDims : kKnnMaxDims];
          for (int d = 0; d < dims; ++d) query[d] = points(q, d);
          const HeapRow heap = heap_row(indices, distances, q, k);
          // The heap survives the sync() in global memory; its worst entry is re-read here.
          float worst = heap.d(0);
          int32_t worst_index = heap.i(0);
          for (int64_t t = 0; t < count; ++t) {
            const float dd = squared_distance<kDims>(query, tile_points + t * dims, dims);
            const int32_t j = static_cast<int32_t>(base + t);
            if (j == q || !before(dd, j, worst, worst_index)) continue;
            heap.replace_worst(dd, j);
            worst = heap.d(0);
            worst_index = heap.i(0);
          }
        }
        ctx.sync();  // the tile is overwritten next
      }
      for (int64_t e : group_elements(ctx, queries)) {
        heap_row(indices, distances, first_query + e, k).finish();
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

// Event of point p: the e with row_splits[e] <= p < row_splits[e + 1] (empty events skipped).
KAAS_DEVICE inline int64_t event_of(View1<const int64_t> row_splits, int64_t p) {
  int64_t lo = 0, hi = row_splits.extent[0] - 1;  // invariant: row_splits[lo] <= p < [hi]
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (row_splits[mid] <= p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

struct CountKernel {
  static constexpr const char* kName = "knn.bin_count";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int64_t> row_splits, KnnGrid grid, View1<int32_t> cell_of,
                              View1<int32_t> slot, View1<int32_t> counts) const {
    for (int64_t p : uniform_elements(ctx, points.extent[0])) {
      int64_t local = 0;
      for (int b = 0; b < grid.binned_dims; ++b) {
        // Clamp in float before converting: the cell of the maximum is the last one.
        const float f = (points(p, grid.dim[b]) - grid.origin[b]) * grid.inv_width;
        const float c = math::min(math::max(f, 0.0f), static_cast<float>(grid.bins[b] - 1));
        local += static_cast<int64_t>(c) * grid.stride[b];
      }
      const int64_t cell = event_of(row_splits, p) * grid.event_cells + local;
      cell_of[p] = static_cast<int32_t>(cell);
      slot[p] = ctx.atomic_add(&counts[cell], 1);
    }
  }
};

struct ScatterKernel {
  static constexpr const char* kName = "knn.bin_scatter";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int32_t> cell_of, View1<const int32_t> slot,
                              View1<const int32_t> starts, View1<float> sorted_points,
                              View1<int32_t> sorted_index) const {
    const int64_t dims = points.extent[1];
    for (int64_t p : uniform_elements(ctx, points.extent[0])) {
      const int64_t pos = starts[cell_of[p]] + slot[p];
      for (int64_t d = 0; d < dims; ++d) sorted_points[pos * dims + d] = points(p, d);
      sorted_index[pos] = static_cast<int32_t>(p);
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

// One element per query, in cell order (neighbouring queries search the same cells). The
// search visits the cells at Chebyshev distance r = 0, 1, 2, ... from the query's cell; after
// shell r every unsearched point lies outside the box of cells [c - r, c + r], so at least
// `gap` (the distance from the query to that box's nearest inner face) away. It stops when the
// heap is full and gap^2 exceeds the current K-th distance, or when the box covers the event.
template <int kDims>
struct BinnedSearchKernel {
  static constexpr const char* kName = "knn.binned_search";

  struct Query {
    float coords[kDims > 0 ? kDims : kKnnMaxDims];
    int dims;
    int32_t position;  // in cell order (the query itself is skipped by position)
    const float* points;
    const int32_t* index;
  };

  // Candidates [first, last) of the sorted arrays.
  KAAS_DEVICE static void scan(const Query& q, int32_t first, int32_t last, const HeapRow& heap,
                               float& worst, int32_t& worst_index) {
    for (int32_t p = first; p < last; ++p) {
      const float dd = squared_distance<kDims>(q.coords, q.points + int64_t(p) * q.dims, q.dims);
      if (dd > worst || p == q.position) continue;
      const int32_t j = q.index[p];
      if (dd == worst && j > worst_index) continue;
      heap.replace_worst(dd, j);
      worst = heap.d(0);
      worst_index = heap.i(0);
    }
  }

  KAAS_KERNEL void operator()(const Ctx& ctx, KnnGrid grid, View1<const float> sorted_points,
                              View1<const int32_t> sorted_index, View1<const int32_t> cell_of,
                              View1<const int32_t> starts, int k, View2<int32_t> indices,
                              View2<float> distances) const {
    const int64_t n = sorted_index.extent[0];
    const int dims = kDims > 0 ? kDims : grid.dims;
    for (int64_t s : uniform_elements(ctx, n)) {
      Query q;
      q.dims = dims;
      q.position = static_cast<int32_t>(s);
      q.points = sorted_points.data;
      q.index = sorted_index.data;
      for (int d = 0; d < dims; ++d) q.coords[d] = sorted_points[s * dims + d];
      const int32_t self = sorted_index[s];
      const HeapRow heap = heap_row(indices, distances, self, k);
      if (k == 1) continue;
      heap.clear();
      float worst = math::infinity();
      int32_t worst_index = kNoIndex;

      const int64_t cell = cell_of[self];
      const int64_t event_base = cell - cell % grid.event_cells;
      const int nb = grid.binned_dims;
      int32_t c[kKnnMaxBinnedDims];  // the query's cell per binned dimension
      float x[kKnnMaxBinnedDims];    // the query's binned coordinates
      for (int b = 0; b < nb; ++b) {
        c[b] = static_cast<int32_t>((cell - event_base) / grid.stride[b] % grid.bins[b]);
        x[b] = q.coords[grid.dim[b]];
      }
      // Shell r: the cells of the box [c - r, c + r] with some coordinate at distance r. Binned
      // dimensions nb-1 .. 1 are walked as an odometer (v), pruned by the partial distance of
      // the cell rows to the query (bound); dimension 0 is a contiguous run of cells: the whole
      // trimmed run when an outer coordinate lies on the shell (face), else its two end cells.
      int32_t v[kKnnMaxBinnedDims], lo[kKnnMaxBinnedDims], hi[kKnnMaxBinnedDims];
      float bound[kKnnMaxBinnedDims + 1];
      bool face[kKnnMaxBinnedDims + 1];
      for (int32_t r = 0;; ++r) {
        for (int b = 0; b < nb; ++b) {
          lo[b] = math::max(c[b] - r, 0);
          hi[b] = math::min(c[b] + r, grid.bins[b] - 1);
        }
        bound[nb] = 0.0f;
        face[nb] = r == 0;
        int level = nb - 1;
        if (level >= 1) v[level] = lo[level] - 1;
        for (;;) {
          int64_t row = event_base;
          if (level >= 1) {
            if (++v[level] > hi[level]) {
              if (level == nb - 1) break;
              ++level;
              continue;
            }
            const float g = cell_gap(grid, x[level], level, v[level]);
            bound[level] = bound[level + 1] + g * g;
            face[level] = face[level + 1] || v[level] == c[level] - r || v[level] == c[level] + r;
            if (bound[level] * 0.9999f > worst) continue;
            if (level > 1) {
              --level;
              v[level] = lo[level] - 1;
              continue;
            }
            for (int b = 1; b < nb; ++b) row += int64_t(v[b]) * grid.stride[b];
          }
          const float row_bound = bound[1];
          if (face[1]) {
            // One contiguous run of cells along dimension 0, trimmed to the cells that can
            // still hold a point within `worst`.
            int32_t a = lo[0], e = hi[0];
            if (worst < math::infinity()) {
              const float reach =
                  math::sqrt(math::max(worst - row_bound, 0.0f)) * 1.0001f + grid.margin;
              const float from = (x[0] - reach - grid.origin[0]) * grid.inv_width;
              const float to = (x[0] + reach - grid.origin[0]) * grid.inv_width;
              a = math::max(a, static_cast<int32_t>(math::max(from, -1.0f)));
              e = math::min(e, static_cast<int32_t>(math::min(to, float(grid.bins[0]))));
            }
            if (a <= e) scan(q, starts[row + a], starts[row + e + 1], heap, worst, worst_index);
          } else {
            for (int side = 0; side < 2; ++side) {  // r > 0 here: two distinct cells
              const int32_t cx = side == 0 ? c[0] - r : c[0] + r;
              if (cx < 0 || cx >= grid.bins[0]) continue;
              const float dx = cell_gap(grid, x[0], 0, cx);
              if ((row_bound + dx * dx) * 0.9999f > worst) continue;
              scan(q, starts[row + cx], starts[row + cx + 1], heap, worst, worst_index);
            }
          }
          if (level < 1) break;  // one binned dimension: a single run per shell
        }
        float gap = math::infinity();
        for (int b = 0; b < nb; ++b) {
          if (c[b] - r > 0) {
            gap = math::min(gap, x[b] - (grid.origin[b] + float(c[b] - r) * grid.width));
          }
          if (c[b] + r < grid.bins[b] - 1) {
            gap = math::min(gap, grid.origin[b] + float(c[b] + r + 1) * grid.width - x[b]);
          }
        }
        if (!(gap < math::infinity())) break;  // the box covers the whole event
        gap -= grid.margin;
        // 1e-4 covers the rounding of the float distances of the points outside the box.
        if (worst < math::infinity() && gap > 0.0f && gap * gap * 0.9999f > worst) break;
      }
      heap.finish();
    }
  }
};

// Group size of the search kernels: a block of threads on a GPU; on the CPU only the
// bookkeeping granularity.
int search_group_size(int requested) {
  return requested > 0 ? requested : 128;
}

// Instantiations for common D (query in registers) and one for any D.
template <template <int> class Kernel, class F>
void with_dims(int64_t dims, F&& f) {
  switch (dims) {
    case 2:
      return f(Kernel<2>{});
    case 3:
      return f(Kernel<3>{});
    case 4:
      return f(Kernel<4>{});
    case 6:
      return f(Kernel<6>{});
    default:
      return f(Kernel<0>{});
  }
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
  // Up to 1024 points per tile, as many as fit in shared memory.
  const int tile = static_cast<int>(
      math::max<int64_t>(1, math::min<int64_t>(1024, int64_t(max_shared / (dims * 4)))));
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
                              View1<const int32_t> sorted_index, View1<const int32_t> cell_of,
                              View1<const int32_t> starts, int k, View2<int32_t> indices,
                              View2<float> distances, int group_size) {
  const int size = search_group_size(group_size);
  const int64_t dims = grid.dims;
  const int64_t groups = element_grid(queue, sorted_index.extent[0], size);
  with_dims<BinnedSearchKernel>(dims, [&](auto kernel) {
    launch(queue, groups, size, 0, kernel, grid, sorted_points, sorted_index, cell_of, starts, k,
           indices, distances);
  });
}

}  // namespace kaas::KAAS_BACKEND_NS
