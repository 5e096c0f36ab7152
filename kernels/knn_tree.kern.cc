// Exact kNN, tree method, for one backend: Morton codes and the counting sort into coarse
// cells, the per-cell sort, the leaf and subtree boxes, and the search. See kernels/knn.h.

#include "kaas/backends/kernel.h"
#include "kaas/kernels/detail/knn_rows.h"
#include "kaas/kernels/knn.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

using detail::KnnTree;
using knn_rows::event_of;
using knn_rows::heap_of;
using knn_rows::heap_row;
using knn_rows::HeapRow;
using knn_rows::with_dims;

// Rounding of the float distances: a box is skipped only when its bound, shrunk by this factor,
// still exceeds the K-th distance (as the binned method's bounds).
constexpr float kBoundSlack = 0.9999f;

struct FillKernel {
  static constexpr const char* kName = "knn.tree_fill";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<int32_t> x) const {
    for (int64_t i : uniform_elements(ctx, x.extent[0])) x[i] = 0;
  }
};

// Morton code of a point: the bits of its quantised code coordinates interleaved, highest bit
// first, coordinate code_dim[0] leading each group of B bits.
KAAS_DEVICE inline uint64_t morton_code(const KnnTree& tree, View2<const float> points, int64_t p) {
  const uint32_t top = (uint32_t(1) << tree.bits) - 1u;
  uint32_t q[detail::kKnnMaxCodeDims] = {0, 0, 0};
  for (int b = 0; b < tree.code_dims; ++b) {
    const float f = (points(p, tree.code_dim[b]) - tree.origin[b]) * tree.scale;
    const float clamped = math::min(math::max(f, 0.0f), float(top));
    q[b] = math::min(static_cast<uint32_t>(clamped), top);
  }
  uint64_t code = 0;
  for (int bit = tree.bits - 1; bit >= 0; --bit) {
    for (int b = 0; b < tree.code_dims; ++b) code = (code << 1) | ((q[b] >> bit) & 1u);
  }
  return code;
}

struct CodeKernel {
  static constexpr const char* kName = "knn.tree_code";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int64_t> row_splits, KnnTree tree, View1<uint64_t> codes,
                              View1<int32_t> cell_of, View1<int32_t> slot,
                              View1<int32_t> counts) const {
    for (int64_t p : uniform_elements(ctx, points.extent[0])) {
      const uint64_t code = morton_code(tree, points, p);
      const int64_t cell =
          event_of(row_splits, p) * tree.event_cells + int64_t(code >> tree.cell_shift);
      codes[p] = code;
      cell_of[p] = static_cast<int32_t>(cell);
      slot[p] = ctx.atomic_add(&counts[cell], 1);
    }
  }
};

struct ScatterKernel {
  static constexpr const char* kName = "knn.tree_scatter";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const uint64_t> codes,
                              View1<const int32_t> cell_of, View1<const int32_t> slot,
                              View1<const int32_t> starts, View1<uint64_t> sorted_code,
                              View1<int32_t> sorted_index) const {
    for (int64_t p : uniform_elements(ctx, codes.extent[0])) {
      const int64_t pos = starts[cell_of[p]] + slot[p];
      sorted_code[pos] = codes[p];
      sorted_index[pos] = static_cast<int32_t>(p);
    }
  }
};

// Each coarse cell's points sorted by (code, index), in place (heap sort: no extra memory, and
// the order no longer depends on which thread counted first).
struct CellSortKernel {
  static constexpr const char* kName = "knn.tree_cell_sort";

  KAAS_DEVICE static bool less(const uint64_t* code, const int32_t* index, int64_t a, int64_t b) {
    return code[a] < code[b] || (code[a] == code[b] && index[a] < index[b]);
  }
  KAAS_DEVICE static void swap(uint64_t* code, int32_t* index, int64_t a, int64_t b) {
    const uint64_t c = code[a];
    code[a] = code[b];
    code[b] = c;
    const int32_t i = index[a];
    index[a] = index[b];
    index[b] = i;
  }
  KAAS_DEVICE static void sift_down(uint64_t* code, int32_t* index, int64_t pos, int64_t n) {
    for (;;) {
      int64_t child = 2 * pos + 1;
      if (child >= n) return;
      if (child + 1 < n && less(code, index, child, child + 1)) ++child;
      if (!less(code, index, pos, child)) return;
      swap(code, index, pos, child);
      pos = child;
    }
  }

  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const int32_t> starts,
                              View1<uint64_t> sorted_code, View1<int32_t> sorted_index) const {
    for (int64_t cell : uniform_elements(ctx, starts.extent[0] - 1)) {
      const int64_t first = starts[cell], n = starts[cell + 1] - first;
      if (n < 2) continue;
      uint64_t* code = sorted_code.data + first;
      int32_t* index = sorted_index.data + first;
      if (n <= 16) {  // insertion sort for the common small cell
        for (int64_t i = 1; i < n; ++i)
          for (int64_t j = i; j > 0 && less(code, index, j, j - 1); --j)
            swap(code, index, j, j - 1);
        continue;
      }
      for (int64_t pos = n / 2 - 1; pos >= 0; --pos) sift_down(code, index, pos, n);
      for (int64_t end = n - 1; end > 0; --end) {
        swap(code, index, 0, end);
        sift_down(code, index, 0, end);
      }
    }
  }
};

// Coordinates in sorted order, dimension-major with row stride N + kKnnBlock (zero padded).
struct GatherKernel {
  static constexpr const char* kName = "knn.tree_gather";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> points,
                              View1<const int32_t> sorted_index, View1<float> sorted_points) const {
    const int64_t n = points.extent[0], dims = points.extent[1];
    const int64_t stride = sorted_points.extent[0] / dims;
    for (int64_t pos : uniform_elements(ctx, n)) {
      const int64_t p = sorted_index[pos];
      for (int64_t d = 0; d < dims; ++d) sorted_points[d * stride + pos] = points(p, d);
    }
    for (int64_t t : uniform_elements(ctx, (stride - n) * dims)) {
      sorted_points[(t % dims) * stride + n + t / dims] = 0.0f;
    }
  }
};

// The sorted positions [begin, end) of leaf `leaf` of event `event`.
struct LeafRange {
  int64_t begin, end;
};
KAAS_DEVICE inline LeafRange leaf_range(const KnnTree& tree, View1<const int64_t> row_splits,
                                        View1<const int64_t> leaf_splits, int64_t event,
                                        int64_t leaf) {
  const int64_t begin = row_splits[event] + (leaf - leaf_splits[event]) * tree.leaf_size;
  return {begin, math::min(begin + tree.leaf_size, row_splits[event + 1])};
}

// Boxes: node i at boxes[i * 2D + d] (low corner) and [i * 2D + D + d] (high corner); the leaf
// slots are nodes P..2P-1, unused slots hold the empty box (+inf, -inf).
struct LeafBoxKernel {
  static constexpr const char* kName = "knn.tree_leaf_boxes";
  KAAS_KERNEL void operator()(const Ctx& ctx, KnnTree tree, View1<const int64_t> row_splits,
                              View1<const int64_t> leaf_splits, View1<const float> sorted_points,
                              View1<float> boxes) const {
    const int dims = tree.dims;
    const int64_t stride = sorted_points.extent[0] / dims;
    const int64_t leaves = leaf_splits[leaf_splits.extent[0] - 1];
    for (int64_t leaf : uniform_elements(ctx, tree.leaf_slots)) {
      float* box = boxes.data + (tree.leaf_slots + leaf) * 2 * dims;
      for (int d = 0; d < dims; ++d) {
        box[d] = math::infinity();
        box[dims + d] = -math::infinity();
      }
      if (leaf >= leaves) continue;
      const int64_t event = event_of(leaf_splits, leaf);
      const LeafRange r = leaf_range(tree, row_splits, leaf_splits, event, leaf);
      for (int d = 0; d < dims; ++d) {
        for (int64_t pos = r.begin; pos < r.end; ++pos) {
          const float x = sorted_points[d * stride + pos];
          box[d] = math::min(box[d], x);
          box[dims + d] = math::max(box[dims + d], x);
        }
      }
    }
  }
};

// Nodes [first, 2 first) from their children (one level).
struct NodeBoxKernel {
  static constexpr const char* kName = "knn.tree_node_boxes";
  KAAS_KERNEL void operator()(const Ctx& ctx, int dims, int64_t first, View1<float> boxes) const {
    for (int64_t i : uniform_elements(ctx, first)) {
      const int64_t node = first + i;
      float* box = boxes.data + node * 2 * dims;
      const float* left = boxes.data + 2 * node * 2 * dims;
      const float* right = left + 2 * dims;
      for (int d = 0; d < dims; ++d) {
        box[d] = math::min(left[d], right[d]);
        box[dims + d] = math::max(left[dims + d], right[dims + d]);
      }
    }
  }
};

// Squared distance between two boxes (0 where they overlap), in the order of the distances.
KAAS_DEVICE inline float box_gap2(const float* a, const float* b, int dims) {
  float sum = 0.0f;
  for (int d = 0; d < dims; ++d) {
    const float t = math::max(math::max(b[d] - a[dims + d], a[d] - b[dims + d]), 0.0f);
    sum += t * t;
  }
  return sum;
}

// Squared distance from a point to a box.
KAAS_DEVICE inline float point_gap2(const float* x, const float* box, int dims) {
  float sum = 0.0f;
  for (int d = 0; d < dims; ++d) {
    const float t = math::max(math::max(box[d] - x[d], x[d] - box[dims + d]), 0.0f);
    sum += t * t;
  }
  return sum;
}

// One group per leaf; its points are the queries. Each query's heap is filled from the leaf
// itself, then the group walks the tree together, depth first, the nearer child (by box
// distance to the leaf's box) first: a subtree is skipped when it holds no leaf of the event or
// its box is farther from the leaf's box than the group's largest K-th distance; at a leaf,
// each query scans it unless the leaf's box is farther than its own K-th. The walk's decisions
// depend only on values every element sees alike (the boxes, the group's largest K-th distance
// from shared memory), so its stack may live in locals.
// Shared memory: [0] the group's largest K-th distance.
template <int kDims>
struct TreeSearchKernel {
  static constexpr const char* kName = "knn.tree_search";
  using Query = knn_rows::SortedQuery<kDims>;
  static constexpr int kMaxStack = 96;  // depth first, two entries per level: 2 * 47 levels

  // The largest K-th distance over the group's queries (every element returns the same).
  KAAS_DEVICE static float group_worst(const Ctx& ctx, float* shared, View1<const int32_t> index,
                                       int64_t begin, int64_t queries, int k,
                                       View2<int32_t> indices, View2<float> distances) {
    ctx.sync();  // every element has read the previous value
    for (int64_t e : group_elements(ctx, 1)) shared[e] = 0.0f;
    ctx.sync();
    for (int64_t e : group_elements(ctx, queries)) {
      ctx.atomic_max(&shared[0], heap_of(indices, distances, index[begin + e], k).worst_d());
    }
    ctx.sync();
    return shared[0];
  }

  KAAS_KERNEL void operator()(const Ctx& ctx, KnnTree tree, View1<const int64_t> row_splits,
                              View1<const int64_t> leaf_splits, View1<const float> sorted_points,
                              View1<const int32_t> sorted_index, View1<const float> boxes, int k,
                              View2<int32_t> indices, View2<float> distances) const {
    float* shared = ctx.shared<float>();
    const int dims = kDims > 0 ? kDims : tree.dims;
    const int64_t leaves = leaf_splits[leaf_splits.extent[0] - 1];
    const int64_t slots = tree.leaf_slots;
    for (int64_t leaf : uniform_groups(ctx, leaves)) {
      const int64_t event = event_of(leaf_splits, leaf);
      const int64_t first_leaf = leaf_splits[event], end_leaf = leaf_splits[event + 1];
      const LeafRange own = leaf_range(tree, row_splits, leaf_splits, event, leaf);
      const int64_t queries = own.end - own.begin;
      for (int64_t e : group_elements(ctx, queries)) {
        const int64_t pos = own.begin + e;
        const HeapRow heap = heap_row(indices, distances, sorted_index[pos], k);
        if (k == 1) continue;
        const Query q = Query::load(dims, sorted_points, sorted_index, pos);
        const int32_t rest = Query::fill(q, int32_t(own.begin), int32_t(own.end), heap);
        float worst = heap.worst_d();
        int32_t worst_index = heap.worst_i();
        Query::scan(q, rest, int32_t(own.end), heap, worst, worst_index);
      }
      if (k > 1 && end_leaf - first_leaf > 1) {
        float worst_of_group =
            group_worst(ctx, shared, sorted_index, own.begin, queries, k, indices, distances);
        const float* own_box = boxes.data + (slots + leaf) * 2 * dims;
        int64_t stack_node[kMaxStack];
        int stack_depth[kMaxStack];
        float stack_gap[kMaxStack];
        int top = 0;
        stack_node[0] = 1, stack_depth[0] = 0, stack_gap[0] = 0.0f, top = 1;
        while (top > 0) {
          --top;
          const int64_t node = stack_node[top];
          const int depth = stack_depth[top];
          if (stack_gap[top] * kBoundSlack > worst_of_group) continue;
          const int64_t span = slots >> depth;
          const int64_t first = (node - (int64_t(1) << depth)) * span;
          if (node >= slots) {  // a leaf of the event other than the group's own
            const float* box = boxes.data + node * 2 * dims;
            const LeafRange r = leaf_range(tree, row_splits, leaf_splits, event, first);
            for (int64_t e : group_elements(ctx, queries)) {
              const int64_t pos = own.begin + e;
              const HeapRow heap = heap_of(indices, distances, sorted_index[pos], k);
              float worst = heap.worst_d();
              const Query q = Query::load(dims, sorted_points, sorted_index, pos);
              if (point_gap2(q.coords, box, dims) * kBoundSlack > worst) continue;
              int32_t worst_index = heap.worst_i();
              Query::scan(q, int32_t(r.begin), int32_t(r.end), heap, worst, worst_index);
            }
            worst_of_group =
                group_worst(ctx, shared, sorted_index, own.begin, queries, k, indices, distances);
            continue;
          }
          // Children holding a leaf of the event other than the own one, nearer pushed last.
          int64_t child[2];
          float gap[2];
          int count = 0;
          const int64_t half = span / 2;
          for (int side = 0; side < 2; ++side) {
            const int64_t c = 2 * node + side, c_first = first + side * half;
            if (c_first >= end_leaf || c_first + half <= first_leaf) continue;
            if (half == 1 && c_first == leaf) continue;
            const float g = box_gap2(own_box, boxes.data + c * 2 * dims, dims);
            if (g * kBoundSlack > worst_of_group) continue;
            child[count] = c;
            gap[count] = g;
            ++count;
          }
          if (count == 2 && gap[0] < gap[1]) {
            const int64_t tc = child[0];
            child[0] = child[1];
            child[1] = tc;
            const float tg = gap[0];
            gap[0] = gap[1];
            gap[1] = tg;
          }
          for (int i = 0; i < count && top < kMaxStack; ++i) {
            stack_node[top] = child[i];
            stack_depth[top] = depth + 1;
            stack_gap[top] = gap[i];
            ++top;
          }
        }
      }
      for (int64_t e : group_elements(ctx, queries)) {
        heap_of(indices, distances, sorted_index[own.begin + e], k).finish();
      }
    }
  }
};

}  // namespace

void knn_tree_code_launch(const Queue& queue, View2<const float> points,
                          View1<const int64_t> row_splits, KnnTree tree, View1<uint64_t> codes,
                          View1<int32_t> cell_of, View1<int32_t> slot, View1<int32_t> counts) {
  const int size = 256;
  launch(queue, element_grid(queue, counts.extent[0], size), size, 0, FillKernel{}, counts);
  launch(queue, element_grid(queue, points.extent[0], size), size, 0, CodeKernel{}, points,
         row_splits, tree, codes, cell_of, slot, counts);
}

void knn_tree_sort_launch(const Queue& queue, View2<const float> points,
                          View1<const uint64_t> codes, View1<const int32_t> cell_of,
                          View1<const int32_t> slot, View1<const int32_t> starts,
                          View1<uint64_t> sorted_code, View1<int32_t> sorted_index,
                          View1<float> sorted_points) {
  const int size = 256;
  const int64_t n = points.extent[0];
  launch(queue, element_grid(queue, n, size), size, 0, ScatterKernel{}, codes, cell_of, slot,
         starts, sorted_code, sorted_index);
  launch(queue, element_grid(queue, starts.extent[0] - 1, 64), 64, 0, CellSortKernel{}, starts,
         sorted_code, sorted_index);
  const View1<const int32_t> order = sorted_index;
  launch(queue, element_grid(queue, n, size), size, 0, GatherKernel{}, points, order,
         sorted_points);
}

void knn_tree_boxes_launch(const Queue& queue, KnnTree tree, View1<const int64_t> row_splits,
                           View1<const int64_t> leaf_splits, View1<const float> sorted_points,
                           View1<float> boxes) {
  const int size = 128;
  launch(queue, element_grid(queue, tree.leaf_slots, size), size, 0, LeafBoxKernel{}, tree,
         row_splits, leaf_splits, sorted_points, boxes);
  for (int64_t first = tree.leaf_slots / 2; first >= 1; first /= 2) {
    launch(queue, element_grid(queue, first, size), size, 0, NodeBoxKernel{}, tree.dims, first,
           boxes);
  }
}

void knn_tree_search_launch(const Queue& queue, KnnTree tree, View1<const int64_t> row_splits,
                            View1<const int64_t> leaf_splits, View1<const float> sorted_points,
                            View1<const int32_t> sorted_index, View1<const float> boxes, int k,
                            View2<int32_t> indices, View2<float> distances, int group_size) {
  const int64_t groups = grid_groups(queue, tree.leaves);
  with_dims<TreeSearchKernel>(tree.dims, [&](auto kernel) {
    launch(queue, groups, group_size, sizeof(float), kernel, tree, row_splits, leaf_splits,
           sorted_points, sorted_index, boxes, k, indices, distances);
  });
}

}  // namespace kaas::KAAS_BACKEND_NS
