// The portable tiled GEMM for one backend, and the element-wise passes around vendor BLAS.

#include "kernels/gemm.h"
#include "backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// Each group computes a tile x tile block of y; each of its elements a kMicro x kMicro
// micro-tile, so a group has (tile / kMicro)^2 elements. Per step of kDepth along K the group
// stages op(a) (stored k-major) and op(b) in shared memory; the accumulators cross sync() and
// therefore live in shared memory too, while each element updates them in registers within one
// element loop (an 8 x 8 register block: eight 8-wide FMA rows on AVX2).
constexpr int kMicro = 8;
constexpr int kDepth = 32;

struct GemmTiledKernel {
  static constexpr const char* kName = "gemm";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> a, View2<const float> b,
                              View2<const float> c, View2<float> y, float alpha, float beta,
                              Epilogue epilogue, int tile) const {
    const int64_t m = y.extent[0], n = y.extent[1], k = a.extent[1];
    const int lanes = tile / kMicro;         // micro-tiles per tile row
    float* a_tile = ctx.shared<float>();     // [kDepth][tile]
    float* b_tile = a_tile + kDepth * tile;  // [kDepth][tile]
    float* acc = b_tile + kDepth * tile;     // [tile][tile]
    const int64_t tiles_n = math::ceil_div(n, tile);
    const int64_t tiles = math::ceil_div(m, tile) * tiles_n;
    const bool has_c = c.extent[0] > 0;
    for (int64_t t : uniform_groups(ctx, tiles)) {
      const int64_t row0 = (t / tiles_n) * tile, col0 = (t % tiles_n) * tile;
      const int64_t rows = math::min<int64_t>(tile, m - row0),
                    cols = math::min<int64_t>(tile, n - col0);
      for (int64_t e : group_elements(ctx, int64_t(tile) * tile)) acc[e] = 0.0f;
      for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
        const int64_t depth = math::min<int64_t>(kDepth, k - k0);
        // Stage: one row of op(a) / one k-row of op(b) per element; zeros outside the matrix.
        for (int64_t r : group_elements(ctx, tile)) {
          for (int64_t kk = 0; kk < kDepth; ++kk) {
            a_tile[kk * tile + r] = r < rows && kk < depth ? a(row0 + r, k0 + kk) : 0.0f;
          }
        }
        for (int64_t kk : group_elements(ctx, kDepth)) {
          for (int64_t col = 0; col < tile; ++col) {
            b_tile[kk * tile + col] = kk < depth && col < cols ? b(k0 + kk, col0 + col) : 0.0f;
          }
        }
        ctx.sync();
        for (int64_t e : group_elements(ctx, int64_t(lanes) * lanes)) {
          const int64_t r0 = (e / lanes) * kMicro, c0 = (e % lanes) * kMicro;
          float sum[kMicro][kMicro];
          for (int i = 0; i < kMicro; ++i)
            for (int j = 0; j < kMicro; ++j) sum[i][j] = acc[(r0 + i) * tile + c0 + j];
          for (int kk = 0; kk < kDepth; ++kk) {
            const float* a_col = a_tile + kk * tile + r0;
            const float* b_row = b_tile + kk * tile + c0;
            for (int i = 0; i < kMicro; ++i)
              for (int j = 0; j < kMicro; ++j) sum[i][j] = math::fma(a_col[i], b_row[j], sum[i][j]);
          }
          for (int i = 0; i < kMicro; ++i)
            for (int j = 0; j < kMicro; ++j) acc[(r0 + i) * tile + c0 + j] = sum[i][j];
        }
        ctx.sync();
      }
      for (int64_t e : group_elements(ctx, int64_t(tile) * tile)) {
        const int64_t r = e / tile, col = e % tile;
        if (r < rows && col < cols) {
          float value = alpha * acc[e];
          if (has_c) value += beta * c(row0 + r, col0 + col);
          y(row0 + r, col0 + col) = apply(epilogue, value);
        }
      }
      ctx.sync();  // acc is reset for the next tile
    }
  }
};

// y = beta * c (broadcast), before a vendor call accumulates into y.
struct GemmFillKernel {
  static constexpr const char* kName = "gemm.fill";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> c, float beta,
                              View2<float> y) const {
    const int64_t n = y.extent[1];
    for (int64_t i : uniform_elements(ctx, y.extent[0] * n)) {
      y(i / n, i % n) = c.extent[0] > 0 ? beta * c(i / n, i % n) : 0.0f;
    }
  }
};

struct GemmEpilogueKernel {
  static constexpr const char* kName = "gemm.epilogue";
  KAAS_KERNEL void operator()(const Ctx& ctx, Epilogue epilogue, View2<float> y) const {
    const int64_t n = y.extent[1];
    for (int64_t i : uniform_elements(ctx, y.extent[0] * n)) {
      y(i / n, i % n) = apply(epilogue, y(i / n, i % n));
    }
  }
};

int64_t elementwise_groups(const Queue& queue, int64_t count) {
  return grid_groups(queue, math::ceil_div(count, 256));
}

}  // namespace

void gemm_portable_launch(const Queue& queue, View2<const float> a, View2<const float> b,
                          View2<const float> c, View2<float> y, float alpha, float beta,
                          Epilogue epilogue, LaunchConfig config) {
  // group size (tile / kMicro)^2: 4, 16 or 64 elements for 16, 32 or 64 wide tiles
  const int size = config.group_size > 0 ? config.group_size : 64;
  const int tile = size == 4 ? 16 : size == 16 ? 32 : 64;
  const int64_t tiles = math::ceil_div(y.extent[0], tile) * math::ceil_div(y.extent[1], tile);
  const int64_t groups = config.groups > 0 ? config.groups : grid_groups(queue, tiles);
  const size_t shared = (2 * kDepth * tile + tile * tile) * sizeof(float);
  launch(queue, groups, size, shared, GemmTiledKernel{}, a, b, c, y, alpha, beta, epilogue, tile);
}

void gemm_fill_launch(const Queue& queue, View2<const float> c, float beta, View2<float> y) {
  launch(queue, elementwise_groups(queue, y.size()), 256, 0, GemmFillKernel{}, c, beta, y);
}

void gemm_epilogue_launch(const Queue& queue, Epilogue epilogue, View2<float> y) {
  launch(queue, elementwise_groups(queue, y.size()), 256, 0, GemmEpilogueKernel{}, epilogue, y);
}

}  // namespace kaas::KAAS_BACKEND_NS
