#pragma once
// The per-query pieces of the kNN search kernels (kernels/knn.kern.cc): block
// distances, the candidate row each query keeps in its own output row, and the scan of a run of
// points in sorted (dimension-major) order. Included by *.kern.cc after backends/kernel.h.

#include "kaas/backends/half.h"  // math::float_bits
#include "kaas/backends/kernel.h"
#include "kaas/build_config.h"  // KAAS_KNN_ALL_FIXED_DIMS
#include "kaas/kernels/knn.h"

namespace kaas::KAAS_BACKEND_NS::knn_rows {

// Heap slot that no real point can beat: +inf distance and the largest index.
constexpr int32_t kNoIndex = 2147483647;

// Candidates are compared kKnnBlock at a time: coordinate d of candidate j sits at
// base[d * stride + j] (dimension-major), so the loop over j is one SIMD operation per
// coordinate on a CPU (squared L2 summed over d in order, the contract of knn.h, hence the same
// bits) and unrolls into registers on a GPU.
using kaas::detail::kKnnBlock;

template <int kDims>
KAAS_DEVICE inline void block_distances(const float* q, const float* base, int64_t stride, int dims,
                                        float* out) {
  if constexpr (kDims > 0) {
    // j outermost: the d loop unrolls first and the j loop vectorises with one contiguous load
    // per coordinate (GCC turns the other nesting into lane shuffles when d is unrolled).
    for (int j = 0; j < kKnnBlock; ++j) {
      float sum = 0.0f;
      for (int d = 0; d < kDims; ++d) {
        const float t = base[d * stride + j] - q[d];
        sum += t * t;
      }
      out[j] = sum;
    }
  } else {
    // D at run time: d outermost, the block of kKnnBlock sums one vector operation per d.
    for (int j = 0; j < kKnnBlock; ++j) out[j] = 0.0f;
    for (int d = 0; d < dims; ++d) {
      const float qd = q[d];
      const float* row = base + d * stride;
      for (int j = 0; j < kKnnBlock; ++j) {
        const float t = row[j] - qd;
        out[j] += t * t;
      }
    }
  }
}

// Bit j set where distance j of a block is <= bound (one vector compare on a CPU).
KAAS_DEVICE inline uint32_t within_mask(const float* block, float bound) {
  static_assert(kKnnBlock <= 32, "a block's candidates are one bit each of a 32-bit mask");
  uint32_t mask = 0;
  for (int j = 0; j < kKnnBlock; ++j) mask |= (block[j] <= bound ? 1u : 0u) << j;
  return mask;
}

// (distance, index) order: the total order that makes results independent of visiting order.
// Distances are >= +0, so their bit patterns order like the values and one 64-bit key
// (distance bits, index) orders a pair with a single integer compare.
KAAS_DEVICE inline uint64_t order_key(float distance, int32_t index) {
  return (uint64_t(math::float_bits(distance)) << 32) | uint32_t(index);
}

KAAS_DEVICE inline float key_distance(uint64_t key) {
  return math::bits_float(uint32_t(key >> 32));
}
KAAS_DEVICE inline int32_t key_index(uint64_t key) {
  return int32_t(uint32_t(key));
}

KAAS_DEVICE inline bool before(float da, int32_t ia, float db, int32_t ib) {
  return order_key(da, ia) < order_key(db, ib);
}

// The K-1 best candidates of one query so far, kept in slots 1..K-1 of the query's own output
// rows (no extra memory): for K - 1 <= kSortedRowMax a list sorted by (distance, index), which
// takes a candidate by one insertion from the end (a predictable loop: cheaper than a heap's
// sift for short rows; measured with K = 16 and 64, 1.2x-2x on uniform and clustered points),
// else a bounded max-heap. worst_d() / worst_i(): the candidate a new one must beat.
inline constexpr int kSortedRowMax = 63;
// Rows of at least kMergeRowMin slots take a block's kMergeFrom or more passing candidates in one
// merge (measured at K = 64: clustered points 15-20 % faster; at K = 16 the per-candidate
// insertions are faster, 10-20 %).
inline constexpr int kMergeRowMin = 32;
inline constexpr int kMergeFrom = 3;
// Sorted rows filled with at most kRankSortShort candidates are ordered by rank
// (SortedQuery::rank_sort), others by insertions. Not by rank padded to 64 for K = 64 (1.05-1.15x
// on the CPU): nvcc then keeps the three 64-slot arrays in registers, every search kernel at 255
// registers with spills (107-163 and none with 16 slots), and the CUDA kNN object compiles in
// 48 s instead of 34 (sm_80).
inline constexpr int kRankSortShort = 16;

struct HeapRow {
  float* dist;
  int32_t* index;
  int64_t dist_stride, index_stride;
  int size;

  KAAS_DEVICE bool sorted() const { return size <= kSortedRowMax; }
  KAAS_DEVICE float& d(int i) const { return dist[i * dist_stride]; }
  KAAS_DEVICE int32_t& i(int i) const { return index[i * index_stride]; }
  KAAS_DEVICE uint64_t key(int i) const { return order_key(d(i), this->i(i)); }
  KAAS_DEVICE int worst_slot() const { return sorted() ? size - 1 : 0; }
  KAAS_DEVICE float worst_d() const { return d(worst_slot()); }
  KAAS_DEVICE int32_t worst_i() const { return i(worst_slot()); }

  KAAS_DEVICE void sift_down(int pos, int n) const {
    const float pd = d(pos);
    const int32_t pi = i(pos);
    const uint64_t pk = order_key(pd, pi);
    for (;;) {
      int child = 2 * pos + 1;
      if (child >= n) break;
      uint64_t ck = key(child);
      if (child + 1 < n) {
        const uint64_t right = key(child + 1);
        if (ck < right) {
          ck = right;
          ++child;
        }
      }
      if (pk >= ck) break;
      d(pos) = d(child);
      i(pos) = i(child);
      pos = child;
    }
    d(pos) = pd;
    i(pos) = pi;
  }
  // Moves slot `pos` down the sorted list to its place among slots [0, pos].
  KAAS_DEVICE void insert_down(int pos) const {
    if (dist_stride == 1 && index_stride == 1) return insert_down_dense(dist, index, pos);
    const float pd = d(pos);
    const int32_t pi = i(pos);
    const uint64_t pk = order_key(pd, pi);
    for (; pos > 0 && key(pos - 1) > pk; --pos) {
      d(pos) = d(pos - 1);
      i(pos) = i(pos - 1);
    }
    d(pos) = pd;
    i(pos) = pi;
  }
  // insert_down on unit strides (every output row kaas allocates): plain pointers, and the
  // key compared as (distance, then index), which orders as order_key does for the distances
  // here (non-negative, no NaN).
  KAAS_DEVICE static void insert_down_dense(float* dist, int32_t* index, int pos) {
    const float pd = dist[pos];
    const int32_t pi = index[pos];
    for (; pos > 0; --pos) {
      const float prev = dist[pos - 1];
      if (!(prev > pd || (prev == pd && index[pos - 1] > pi))) break;
      dist[pos] = prev;
      index[pos] = index[pos - 1];
    }
    dist[pos] = pd;
    index[pos] = pi;
  }
  KAAS_DEVICE void clear() const {
    for (int s = 0; s < size; ++s) {
      d(s) = math::infinity();
      i(s) = kNoIndex;
    }
  }
  // Orders the slots after they were written in any order.
  KAAS_DEVICE void build() const {
    if (sorted()) {
      for (int pos = 1; pos < size; ++pos) insert_down(pos);
    } else {
      for (int pos = size / 2 - 1; pos >= 0; --pos) sift_down(pos, size);
    }
  }
  // Replaces the worst candidate (the caller checked that (dd, j) comes before it).
  KAAS_DEVICE void replace_worst(float dd, int32_t j) const {
    const int w = worst_slot();
    d(w) = dd;
    i(w) = j;
    if (sorted()) {
      insert_down(w);
    } else {
      sift_down(0, size);
    }
  }
  // Sorted rows: takes the m candidates of keys nk (sorted, each before the worst),
  // in one merge from the back, in place: the m largest of both lists drop out, then only the
  // slots from the smallest new candidate's place on move (new candidates mostly land near the
  // end of the row, just inside its worst).
  KAAS_DEVICE void merge_sorted(const uint64_t* nk, int m) const {
    int a = size - 1, b = m - 1;
    for (int drop = m; drop > 0; --drop) {
      if (b < 0 || (a >= 0 && key(a) > nk[b])) {
        --a;
      } else {
        --b;
      }
    }
    // out - a == b + 1 > 0: a slot is read before the merge writes over it.
    for (int out = size - 1; b >= 0; --out) {
      if (a >= 0 && key(a) > nk[b]) {
        d(out) = d(a);
        i(out) = i(a);
        --a;
      } else {
        d(out) = key_distance(nk[b]);
        i(out) = key_index(nk[b]);
        --b;
      }
    }
  }
  // Increasing (distance, index); unfilled slots become -1 / +inf.
  KAAS_DEVICE void finish() const {
    if (!sorted()) {
      for (int end = size - 1; end > 0; --end) {
        const float td = d(0);
        const int32_t ti = i(0);
        d(0) = d(end);
        i(0) = i(end);
        d(end) = td;
        i(end) = ti;
        sift_down(0, end);
      }
    }
    for (int s = 0; s < size; ++s) {
      if (i(s) == kNoIndex) i(s) = -1;
    }
  }
};

// Slot 0 holds the query itself; the heap lives in slots 1..K-1.
KAAS_DEVICE inline HeapRow heap_of(View2<int32_t> indices, View2<float> distances, int64_t q,
                                   int k) {
  return HeapRow{&distances(q, 0) + distances.stride[1], &indices(q, 0) + indices.stride[1],
                 distances.stride[1], indices.stride[1], k - 1};
}

// Writes slot 0 (the query itself) and returns the heap.
KAAS_DEVICE inline HeapRow heap_row(View2<int32_t> indices, View2<float> distances, int64_t q,
                                    int k) {
  indices(q, 0) = static_cast<int32_t>(q);
  distances(q, 0) = 0.0f;
  return heap_of(indices, distances, q, k);
}

// Event of point (or leaf) p: the e with splits[e] <= p < splits[e + 1] (empty events skipped).
KAAS_DEVICE inline int64_t event_of(View1<const int64_t> splits, int64_t p) {
  int64_t lo = 0, hi = splits.extent[0] - 1;  // invariant: splits[lo] <= p < [hi]
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (splits[mid] <= p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// event_of for a thread's points in increasing order: the previous answer (`hint`, any event
// at first) is checked before the search, as a thread's points mostly share an event on a CPU
// (the search's chain of dependent loads was over half of the count kernel: 20 toy events).
KAAS_DEVICE inline int64_t event_of_near(View1<const int64_t> splits, int64_t p, int64_t& hint) {
  if (splits[hint] <= p && p < splits[hint + 1]) return hint;
  hint = event_of(splits, p);
  return hint;
}

// A query in sorted order: its coordinates, its position (the query itself is skipped by
// position) and the dimension-major sorted coordinates and original indices it searches.
template <int kDims>
struct SortedQuery {
  float coords[kDims > 0 ? kDims : kKnnMaxDims];
  int dims;
  int32_t position;  // in cell order (the query itself is skipped by position)
  const float* points;
  int64_t stride;  // of the dimension-major sorted coordinates
  const int32_t* index;

  // Candidates [first, last) of the sorted arrays, kKnnBlock at a time: the distances of a
  // block first, then the few that beat the current K-th go through the heap.
  KAAS_DEVICE static void scan(const SortedQuery& q, int32_t first, int32_t last,
                               const HeapRow& heap, float& worst, int32_t& worst_index) {
    float block[kKnnBlock];
    for (int32_t c = first; c < last; c += kKnnBlock) {
      block_distances<kDims>(q.coords, q.points + c, q.stride, q.dims, block);
      // The block's candidates within the K-th distance, the query itself and the slots past
      // `last` left out: the loops below visit these alone (most blocks have none or one).
      uint32_t mask = within_mask(block, worst);
      if (mask == 0) continue;  // the common case once the heap is full
      if (last - c < kKnnBlock) mask &= (1u << (last - c)) - 1u;
      const uint32_t self = uint32_t(q.position - c);
      if (self < uint32_t(kKnnBlock)) mask &= ~(1u << self);
      if (heap.sorted() && heap.size >= kMergeRowMin) {
        // Long sorted rows: the block's candidates that beat the worst, sorted by their keys
        // (which hold distance and index), then one merge (several at once) or insertions
        // (one or two).
        uint64_t nk[kKnnBlock];
        const uint64_t worst_key = order_key(worst, worst_index);
        int n = 0;
        for (; mask != 0; mask &= mask - 1) {
          const int t = math::lowest_bit(mask);
          const uint64_t key = order_key(block[t], q.index[c + t]);
          if (key > worst_key) continue;
          int pos = n++;
          for (; pos > 0 && nk[pos - 1] > key; --pos) nk[pos] = nk[pos - 1];
          nk[pos] = key;
        }
        if (n >= kMergeFrom) {
          heap.merge_sorted(nk, n);
        } else {
          for (int t = 0; t < n; ++t) {
            if (nk[t] > order_key(heap.worst_d(), heap.worst_i())) break;
            heap.replace_worst(key_distance(nk[t]), key_index(nk[t]));
          }
        }
        worst = heap.worst_d();
        worst_index = heap.worst_i();
        continue;
      }
      for (; mask != 0; mask &= mask - 1) {
        const int t = math::lowest_bit(mask);
        const float dd = block[t];
        if (dd > worst) continue;
        const int32_t j = q.index[c + t];
        if (order_key(dd, j) > order_key(worst, worst_index)) continue;
        heap.replace_worst(dd, j);
        worst = heap.worst_d();
        worst_index = heap.worst_i();
      }
    }
  }

  // Writes the first heap.size candidates of [first, last) other than the query into the
  // (cleared) slots in order, then orders them; returns where the rest begins.
  KAAS_DEVICE static int32_t fill(const SortedQuery& q, int32_t first, int32_t last,
                                  const HeapRow& heap) {
    heap.clear();
    int filled = 0;
    int32_t next = first;
    float block[kKnnBlock];
    while (next < last && filled < heap.size) {
      block_distances<kDims>(q.coords, q.points + next, q.stride, q.dims, block);
      const int m = math::min<int32_t>(kKnnBlock, last - next);
      int t = 0;
      for (; t < m && filled < heap.size; ++t) {
        if (next + t == q.position) continue;
        heap.d(filled) = block[t];
        heap.i(filled) = q.index[next + t];
        ++filled;
      }
      next += t;
    }
    if (heap.sorted() && filled <= kRankSortShort) {
      rank_sort(heap, filled);
    } else {
      heap.build();
    }
    return next;
  }

  // Orders the first n <= kRankSortShort slots of a sorted row by rank: each candidate's place
  // is the number of candidates before it by (distance, index), distinct as the indices are;
  // slots n to 16 are padded with (+inf, kNoIndex), after every candidate, and not written.
  // Branch-free and the same order as the insertions (which mispredict their exit about once a
  // candidate); the compares run as vector operations on a CPU (clustered points, K = 16,
  // median of interleaved rounds: 1.06-1.12x). Distance and index apart rather than one 64-bit
  // key: hipcc 5.2's register allocator fails on sixteen keys inlined into the search kernel
  // ("cycle in copy bundle", gfx90a).
  KAAS_DEVICE static void rank_sort(const HeapRow& heap, int n) {
    float dist[kRankSortShort];
    int32_t index[kRankSortShort];
    for (int s = 0; s < kRankSortShort; ++s) {
      dist[s] = s < n ? heap.d(s) : math::infinity();
      index[s] = s < n ? heap.i(s) : kNoIndex;
    }
    // The ranks of all candidates at once, one candidate t at a time (vector compares over s).
    int32_t rank[kRankSortShort];
    for (int s = 0; s < kRankSortShort; ++s) rank[s] = 0;
    for (int t = 0; t < kRankSortShort; ++t) {
      for (int s = 0; s < kRankSortShort; ++s) {
        rank[s] += (dist[t] < dist[s]) | ((dist[t] == dist[s]) & (index[t] < index[s])) ? 1 : 0;
      }
    }
    for (int s = 0; s < n; ++s) {
      heap.d(rank[s]) = dist[s];
      heap.i(rank[s]) = index[s];
    }
  }

  KAAS_DEVICE static SortedQuery load(int dims, View1<const float> sorted_points,
                                      View1<const int32_t> sorted_index, int64_t position) {
    SortedQuery q;
    q.dims = kDims > 0 ? kDims : dims;
    q.position = static_cast<int32_t>(position);
    q.points = sorted_points.data;
    q.stride = sorted_points.extent[0] / q.dims;
    q.index = sorted_index.data;
    for (int d = 0; d < q.dims; ++d) q.coords[d] = sorted_points[d * q.stride + position];
    return q;
  }
};

// The search kernels' instantiations for common D (query in registers) and one for any D:
// every method uses the same set, so the distances of one D come from the same code (and
// the same rounding) in every method. Sanitizer builds keep D = 3 alone
// (KAAS_KNN_ALL_FIXED_DIMS=OFF): the other fixed D differ only in their constant.
template <template <int> class Kernel, class F>
void with_dims(int64_t dims, F&& f) {
  switch (dims) {
#if KAAS_KNN_ALL_FIXED_DIMS
    case 2:
      return f(Kernel<2>{});
#endif
    case 3:
      return f(Kernel<3>{});
#if KAAS_KNN_ALL_FIXED_DIMS
    case 4:
      return f(Kernel<4>{});
    case 6:
      return f(Kernel<6>{});
    case 8:
      return f(Kernel<8>{});
    case 16:
      return f(Kernel<16>{});
#endif
    default:
      return f(Kernel<0>{});
  }
}

}  // namespace kaas::KAAS_BACKEND_NS::knn_rows
