// Exclusive prefix scan for one backend.

#include "kaas/kernels/scan.h"
#include "kaas/backends/kernel.h"
#include "kaas/kernels/detail/group_reduce.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// Chunk c covers [c * chunk, min(n, (c + 1) * chunk)).
struct ChunkBounds {
  int64_t first, last;
};
KAAS_DEVICE inline ChunkBounds chunk_bounds(int64_t c, int64_t chunk, int64_t n) {
  const int64_t first = math::min(c * chunk, n);
  return {first, math::min(first + chunk, n)};
}

// Pass 1: sums[c] = sum of chunk c.
template <class T>
struct ChunkSumsKernel {
  static constexpr const char* kName = "exclusive_scan.chunk_sums";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const T> x, int64_t chunk,
                              View1<T> sums) const {
    const int size = ctx.group_size();
    T* partial = ctx.shared<T>();
    for (int64_t c : uniform_groups(ctx, sums.extent[0])) {
      const ChunkBounds b = chunk_bounds(c, chunk, x.extent[0]);
      for (int64_t e : group_elements(ctx, size)) partial[e] = T(0);
      for (int64_t base = b.first; base < b.last; base += size) {
        const int64_t width = math::min<int64_t>(size, b.last - base);
        for (int64_t e : group_elements(ctx, width)) partial[e] += x[base + e];
      }
      detail::group_reduce(ctx, partial, size, detail::SumOp{});
      for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) sums[c] = partial[0];
      ctx.sync();  // partial[] is rewritten for the next chunk
    }
  }
};

// Passes 2 and 3: each group scans whole chunks, starting from offsets[c] (or 0 when offsets
// is empty). Within a tile of size*items elements, element e owns the slice
// [e*items, (e+1)*items) of the tile. Group-shared layout: tile[size*items], two ping-pong
// buffers of slice totals [size] each, and the running carry [1]; all state that crosses a
// sync() lives there.
template <class T>
struct ScanChunksKernel {
  static constexpr const char* kName = "exclusive_scan.chunks";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const T> x, View1<T> y, int64_t chunk,
                              View1<const T> offsets, int items, int64_t chunks) const {
    const int size = ctx.group_size();
    const int64_t tile_len = int64_t(size) * items;
    T* tile = ctx.shared<T>();
    T* totals_a = tile + tile_len;
    T* totals_b = totals_a + size;
    T* carry = totals_b + size;
    for (int64_t c : uniform_groups(ctx, chunks)) {
      const ChunkBounds b = chunk_bounds(c, chunk, x.extent[0]);
      for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) {
        carry[0] = offsets.extent[0] > 0 ? offsets[c] : T(0);
      }
      for (int64_t base = b.first; base < b.last; base += tile_len) {
        const int64_t len = math::min(tile_len, b.last - base);
        // Each element scans its own slice serially (exclusive) and records the slice total.
        for (int64_t e : group_elements(ctx, size)) {
          T acc = T(0);
          for (int64_t j = e * items; j < (e + 1) * items; ++j) {
            const T v = j < len ? x[base + j] : T(0);
            tile[j] = acc;
            acc += v;
          }
          totals_a[e] = acc;
        }
        ctx.sync();
        // Inclusive scan of the slice totals (Hillis-Steele, ping-pong buffers).
        T* src = totals_a;
        T* dst = totals_b;
        for (int offset = 1; offset < size; offset *= 2) {
          for (int64_t e : group_elements(ctx, size)) {
            dst[e] = e >= offset ? src[e] + src[e - offset] : src[e];
          }
          ctx.sync();
          T* swap = src;
          src = dst;
          dst = swap;
        }
        for (int64_t e : group_elements(ctx, size)) {
          const T slice_offset = carry[0] + (e > 0 ? src[e - 1] : T(0));
          for (int64_t j = e * items; j < (e + 1) * items && j < len; ++j) {
            y[base + j] = slice_offset + tile[j];
          }
        }
        ctx.sync();  // everyone has read carry[0] and tile[]
        for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) carry[0] += src[size - 1];
        ctx.sync();
      }
      ctx.sync();  // carry[] is reset for the next chunk
    }
  }
};

template <class T>
void scan_launch(const Queue& queue, View1<const T> x, View1<T> y, View1<T> sums,
                 LaunchConfig config) {
  const int64_t n = x.extent[0];
  if (n == 0) return;
  const int size = config.group_size_or(256);
  const int64_t chunks = sums.extent[0];
  const int64_t chunk = math::ceil_div(n, chunks);
  const size_t max_shared = queue.backend().launch_limits(queue.device()).max_shared_bytes;
  // As many items per element as fit beside the two totals buffers and the carry, up to 32:
  // longer tiles mean fewer barriers per element.
  const int64_t fit = (int64_t(max_shared / sizeof(T)) - 2 * size - 1) / size;
  const int items = static_cast<int>(math::max<int64_t>(1, math::min<int64_t>(32, fit)));
  const size_t scan_shared = (size_t(size) * items + 2 * size + 1) * sizeof(T);

  launch(queue, chunks, size, size * sizeof(T), ChunkSumsKernel<T>{}, x, chunk, sums);
  launch(queue, 1, size, scan_shared, ScanChunksKernel<T>{}, View1<const T>(sums), sums, chunks,
         View1<const T>{}, items, int64_t(1));
  launch(queue, chunks, size, scan_shared, ScanChunksKernel<T>{}, x, y, chunk, View1<const T>(sums),
         items, chunks);
}

}  // namespace

void exclusive_scan_launch(const Queue& q, View1<const int32_t> x, View1<int32_t> y,
                           View1<int32_t> sums, LaunchConfig config) {
  scan_launch(q, x, y, sums, config);
}
void exclusive_scan_launch(const Queue& q, View1<const int64_t> x, View1<int64_t> y,
                           View1<int64_t> sums, LaunchConfig config) {
  scan_launch(q, x, y, sums, config);
}
void exclusive_scan_launch(const Queue& q, View1<const float> x, View1<float> y, View1<float> sums,
                           LaunchConfig config) {
  scan_launch(q, x, y, sums, config);
}

}  // namespace kaas::KAAS_BACKEND_NS
