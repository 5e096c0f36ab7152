// The portable tiled GEMM for one backend, and the element-wise passes around vendor BLAS.

#include "kaas/kernels/gemm.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// Each group computes a tile x tile block of y; each of its elements a kMicroRows x kMicroCols
// micro-tile, so a group has tile^2 / 32 elements. Per step of kDepth along K the group
// stages op(a) (stored k-major) and op(b) in shared memory; the accumulators cross sync() and
// therefore live in shared memory too, while each element updates them in registers within one
// element loop.
constexpr int kMicroRows = 4;  // register block: 4 rows x 8 columns, one 8-wide AVX2 vector per
constexpr int kMicroCols = 8;  // row: 4 accumulators, no spills (4 x 16 spilled with g++ 12)
constexpr int kDepth = 32;
// op(a) is staged row-major with one padding column: rows of a contiguous on the CPU (the
// compiler then vectorises the micro-tile along b's row), and no shared-memory bank conflicts
// on GPUs, where elements of a warp read different rows.
constexpr int kRowPitch = kDepth + 1;

// T: the storage type of op(a) and op(b) (float, bf16 or fp16), widened to float as it is
// staged; TY: y's, rounded to once at the store. Accumulation, c and the epilogue are fp32.
template <class T, class TY>
struct GemmTiledKernel {
  static constexpr const char* kName = "gemm";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const T> a, View2<const T> b,
                              View2<const float> c, View2<TY> y, float alpha, float beta,
                              Epilogue epilogue, int tile) const {
    const int64_t m = y.extent[0], n = y.extent[1], k = a.extent[1];
    const int lanes = tile / kMicroCols;        // micro-tiles across a tile row
    float* a_tile = ctx.shared<float>();        // [tile][kRowPitch]
    float* b_tile = a_tile + kRowPitch * tile;  // [kDepth][tile]
    float* acc = b_tile + kDepth * tile;        // [tile][tile]
    const int64_t tiles_n = math::ceil_div(n, tile);
    const int64_t tiles = math::ceil_div(m, tile) * tiles_n;
    const bool has_c = c.extent[0] > 0, chained = alpha == 1.0f;
    for (int64_t t : uniform_groups(ctx, tiles)) {
      const int64_t row0 = (t / tiles_n) * tile, col0 = (t % tiles_n) * tile;
      const int64_t rows = math::min<int64_t>(tile, m - row0),
                    cols = math::min<int64_t>(tile, n - col0);
      // With alpha 1 each element is one chain of fused multiply-adds over K from beta * c, as
      // the CPU fast paths and mlp_two_heads compute it: the same bits on every path
      // (docs/reproducibility.md). The zero padding of a short K block adds exact zeros.
      for (int64_t e : group_elements(ctx, int64_t(tile) * tile)) {
        const int64_t r = e / tile, col = e % tile;
        acc[e] = chained && has_c && r < rows && col < cols ? beta * c(row0 + r, col0 + col) : 0.0f;
      }
      for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
        const int64_t depth = math::min<int64_t>(kDepth, k - k0);
        // Stage: one row of op(a) / one k-row of op(b) per element; zeros outside the matrix.
        // Pointer walks (not View indexing) keep the copies cheap next to the FMAs.
        for (int64_t r : group_elements(ctx, tile)) {
          float* dst = a_tile + r * kRowPitch;
          if (r < rows) {
            const T* src = &a(row0 + r, k0);
            const int64_t step = a.stride[1];
            if (step == 1) {
              for (int64_t kk = 0; kk < depth; ++kk) dst[kk] = math::to_float(src[kk]);
            } else {
              for (int64_t kk = 0; kk < depth; ++kk) dst[kk] = math::to_float(src[kk * step]);
            }
            for (int64_t kk = depth; kk < kDepth; ++kk) dst[kk] = 0.0f;
          } else {
            for (int64_t kk = 0; kk < kDepth; ++kk) dst[kk] = 0.0f;
          }
        }
        for (int64_t kk : group_elements(ctx, kDepth)) {
          float* dst = b_tile + kk * tile;
          if (kk < depth) {
            const T* src = &b(k0 + kk, col0);
            const int64_t step = b.stride[1];
            if (step == 1) {
              for (int64_t col = 0; col < cols; ++col) dst[col] = math::to_float(src[col]);
            } else {
              for (int64_t col = 0; col < cols; ++col) dst[col] = math::to_float(src[col * step]);
            }
            for (int64_t col = cols; col < tile; ++col) dst[col] = 0.0f;
          } else {
            for (int64_t col = 0; col < tile; ++col) dst[col] = 0.0f;
          }
        }
        ctx.sync();
        for (int64_t e : group_elements(ctx, int64_t(tile / kMicroRows) * lanes)) {
          const int64_t r0 = (e / lanes) * kMicroRows, c0 = (e % lanes) * kMicroCols;
          float sum[kMicroRows][kMicroCols];
          for (int i = 0; i < kMicroRows; ++i)
            for (int j = 0; j < kMicroCols; ++j) sum[i][j] = acc[(r0 + i) * tile + c0 + j];
          for (int kk = 0; kk < kDepth; ++kk) {
            const float* a_col = a_tile + r0 * kRowPitch + kk;  // a(r0 + i, kk) at i * kRowPitch
            const float* b_row = b_tile + kk * tile + c0;
            float b_vec[kMicroCols];
            for (int j = 0; j < kMicroCols; ++j) b_vec[j] = b_row[j];
            for (int i = 0; i < kMicroRows; ++i) {
              const float a_i = a_col[i * kRowPitch];  // one broadcast per row of the block
              for (int j = 0; j < kMicroCols; ++j) sum[i][j] = math::fma(a_i, b_vec[j], sum[i][j]);
            }
          }
          for (int i = 0; i < kMicroRows; ++i)
            for (int j = 0; j < kMicroCols; ++j) acc[(r0 + i) * tile + c0 + j] = sum[i][j];
        }
        ctx.sync();
      }
      for (int64_t e : group_elements(ctx, int64_t(tile) * tile)) {
        const int64_t r = e / tile, col = e % tile;
        if (r < rows && col < cols) {
          float value = chained ? acc[e] : alpha * acc[e];
          if (has_c && !chained) value += beta * c(row0 + r, col0 + col);
          y(row0 + r, col0 + col) = math::round_to<TY>(apply(epilogue, value));
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

}  // namespace

namespace {

template <class T, class TY>
void launch_tiled(const Queue& queue, View2<const T> a, View2<const T> b, View2<const float> c,
                  View2<TY> y, float alpha, float beta, Epilogue epilogue, LaunchConfig config) {
  // group size tile^2 / (kMicroRows * kMicroCols): 8, 32 or 128 elements for 16, 32 or 64 wide
  // tiles
  const int size = config.group_size_or(128);
  const int tile = size == 8 ? 16 : size == 32 ? 32 : 64;
  const int64_t tiles = math::ceil_div(y.extent[0], tile) * math::ceil_div(y.extent[1], tile);
  const int64_t groups = config.groups_or(grid_groups(queue, tiles));
  const size_t shared = ((kRowPitch + kDepth) * tile + tile * tile) * sizeof(float);
  launch(queue, groups, size, shared, GemmTiledKernel<T, TY>{}, a, b, c, y, alpha, beta, epilogue,
         tile);
}

}  // namespace

#define KAAS_GEMM_PORTABLE_LAUNCH(T, TY)                                                \
  void gemm_portable_launch(const Queue& queue, View2<const T> a, View2<const T> b,     \
                            View2<const float> c, View2<TY> y, float alpha, float beta, \
                            Epilogue epilogue, LaunchConfig config) {                   \
    launch_tiled(queue, a, b, c, y, alpha, beta, epilogue, config);                     \
  }
KAAS_GEMM_PORTABLE_LAUNCH(float, float)
KAAS_GEMM_PORTABLE_LAUNCH(bf16, float)
KAAS_GEMM_PORTABLE_LAUNCH(bf16, bf16)
KAAS_GEMM_PORTABLE_LAUNCH(fp16, float)
KAAS_GEMM_PORTABLE_LAUNCH(fp16, fp16)
#undef KAAS_GEMM_PORTABLE_LAUNCH

void gemm_fill_launch(const Queue& queue, View2<const float> c, float beta, View2<float> y) {
  launch(queue, element_grid(queue, y.size(), 256), 256, 0, GemmFillKernel{}, c, beta, y);
}

void gemm_epilogue_launch(const Queue& queue, Epilogue epilogue, View2<float> y) {
  launch(queue, element_grid(queue, y.size(), 256), 256, 0, GemmEpilogueKernel{}, epilogue, y);
}

}  // namespace kaas::KAAS_BACKEND_NS
