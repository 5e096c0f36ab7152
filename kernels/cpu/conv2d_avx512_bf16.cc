// conv2d CPU fast path for bf16 activations on AVX512-BF16: the direct NHWC kernel of
// conv2d_avx512.cc with the taps multiplied in pairs by vdpbf16ps (this file alone is compiled
// with -mavx512bf16; callers check the CPU first).
//
// With dense pixels, the kernel_w * C_in taps of one kernel row are contiguous in the input, so
// an output pixel reads them as pairs (t, t + 1): one 32-bit broadcast per pair. Weights are
// packed once per call as [kh][pair][C_out rounded up to 16] 32-bit lanes (tap 2p in the low
// half, 2p + 1 in the high half, 0 past the row's last tap), so an odd row ends in a pair whose
// second tap is 0 and whose input half is zeroed too (no 0 * inf). A 5x5 single-channel kernel
// takes 15 dot-product steps where the fp32 kernel takes 25 FMAs. Products of bf16 values are
// exact in fp32 and accumulate in fp32; only the order of the additions differs from the fp32
// kernel. Blocks are 3 channel vectors x 8 pixels (24 accumulators); pixels whose window is
// clipped along w gather their taps into a zero-filled row first.
//
// No standard-library templates are instantiated here (an AVX-512 copy of a shared COMDAT
// function must never be the one other translation units call).

#include "kaas/backends/cpu/host_team.h"
#include "kaas/common/error.h"
#include "kaas/kernels/cpu/conv2d_simd.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512BF16__) && defined(__FMA__)
#include <immintrin.h>

#include <cstdint>
#include <new>

#include "kaas/kernels/cpu/avx512_activation.h"
#include "kaas/kernels/cpu/avx512_bf16_store.h"

namespace kaas::simd {

bool conv2d_nhwc_avx512_bf16_compiled() {
  return true;
}

namespace {

constexpr int kLanes = 16;
constexpr int kMaxVectors = 3;  // channel vectors per block
constexpr int kPixels = 8;      // output pixels per interior block
constexpr int64_t kMaxRowTaps = kBf16ConvMaxRowTaps;

int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// 64-byte aligned storage of 32-bit values, zero filled (a local template: internal linkage).
template <class T>
class Aligned {
 public:
  explicit Aligned(int64_t n)
      : data_(static_cast<T*>(
            ::operator new[](static_cast<size_t>(max64(n, 1)) * sizeof(T), std::align_val_t{64}))) {
    for (int64_t i = 0; i < n; ++i) data_[i] = T{};
  }
  ~Aligned() { ::operator delete[](data_, std::align_val_t{64}); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* data() const { return data_; }

 private:
  T* data_;
};

struct Plan {
  const Conv2dNhwcArgs* a;
  const uint32_t* packed;  // [(kh * pairs + p)][cpad] weight pairs
  const float* bias;       // [cpad]
  int64_t cpad, row_taps, pairs;
};

// The pair of taps at p as one 32-bit lane in every lane; `last_odd`: only the low tap is real.
template <bool kLastOdd>
[[gnu::always_inline]] inline __m512bh pair_at(const uint16_t* p) {
  if constexpr (kLastOdd) {
    return (__m512bh)_mm512_set1_epi32(static_cast<int>(uint32_t(p[0])));
  } else {
    uint32_t bits;
    __builtin_memcpy(&bits, p, sizeof bits);
    return (__m512bh)_mm512_set1_epi32(static_cast<int>(bits));
  }
}

template <int V>
[[gnu::always_inline]] inline void load_weights(const uint32_t* w, __m512bh& w0, __m512bh& w1,
                                                __m512bh& w2) {
  w0 = (__m512bh)_mm512_loadu_si512(w);
  if constexpr (V > 1) w1 = (__m512bh)_mm512_loadu_si512(w + kLanes);
  if constexpr (V > 2) w2 = (__m512bh)_mm512_loadu_si512(w + 2 * kLanes);
}

template <int V>
[[gnu::always_inline]] inline void dot_pixel(__m512bh x, __m512bh w0, __m512bh w1, __m512bh w2,
                                             __m512& a0, __m512& a1, __m512& a2) {
  a0 = _mm512_dpbf16_ps(a0, x, w0);
  if constexpr (V > 1) a1 = _mm512_dpbf16_ps(a1, x, w1);
  if constexpr (V > 2) a2 = _mm512_dpbf16_ps(a2, x, w2);
}

[[gnu::always_inline]] inline void store_lanes(const Plan& plan, uint16_t* dst, __m512 v,
                                               int64_t lanes) {
  store_u16_lanes(dst, round_to_bf16_converting(activate_avx512(v, plan.a->epilogue)), lanes);
}

template <int V>
[[gnu::always_inline]] inline void store_pixel(const Plan& plan, uint16_t* dst, int64_t left,
                                               __m512 v0, __m512 v1, __m512 v2) {
  store_lanes(plan, dst, v0, left);
  if constexpr (V > 1) store_lanes(plan, dst + kLanes, v1, left - kLanes);
  if constexpr (V > 2) store_lanes(plan, dst + 2 * kLanes, v2, left - 2 * kLanes);
}

// The accumulators of P pixels x V vectors, as named variables (GCC keeps them in registers).
struct Block {
  __m512 a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32, a40, a41, a42, a50, a51, a52,
      a60, a61, a62, a70, a71, a72;
};

// Every accumulator of a block starting from the bias of its channel vectors.
template <int V>
[[gnu::always_inline]] inline Block biased_block(const Plan& plan, int64_t c0) {
  __m512 b0 = _mm512_loadu_ps(plan.bias + c0), b1 = _mm512_setzero_ps(), b2 = b1;
  if constexpr (V > 1) b1 = _mm512_loadu_ps(plan.bias + c0 + kLanes);
  if constexpr (V > 2) b2 = _mm512_loadu_ps(plan.bias + c0 + 2 * kLanes);
  return Block{b0, b1, b2, b0, b1, b2, b0, b1, b2, b0, b1, b2,
               b0, b1, b2, b0, b1, b2, b0, b1, b2, b0, b1, b2};
}

// One pair step of P pixels whose taps start `step` elements apart at x.
template <int V, int P, bool kLastOdd>
[[gnu::always_inline]] inline void pair_step(const uint32_t* wk, const uint16_t* x, int64_t step,
                                             Block& b) {
  __m512bh w0{}, w1{}, w2{};
  load_weights<V>(wk, w0, w1, w2);
  dot_pixel<V>(pair_at<kLastOdd>(x), w0, w1, w2, b.a00, b.a01, b.a02);
  if constexpr (P > 1) dot_pixel<V>(pair_at<kLastOdd>(x + step), w0, w1, w2, b.a10, b.a11, b.a12);
  if constexpr (P > 2)
    dot_pixel<V>(pair_at<kLastOdd>(x + 2 * step), w0, w1, w2, b.a20, b.a21, b.a22);
  if constexpr (P > 3)
    dot_pixel<V>(pair_at<kLastOdd>(x + 3 * step), w0, w1, w2, b.a30, b.a31, b.a32);
  if constexpr (P > 4)
    dot_pixel<V>(pair_at<kLastOdd>(x + 4 * step), w0, w1, w2, b.a40, b.a41, b.a42);
  if constexpr (P > 5)
    dot_pixel<V>(pair_at<kLastOdd>(x + 5 * step), w0, w1, w2, b.a50, b.a51, b.a52);
  if constexpr (P > 6)
    dot_pixel<V>(pair_at<kLastOdd>(x + 6 * step), w0, w1, w2, b.a60, b.a61, b.a62);
  if constexpr (P > 7)
    dot_pixel<V>(pair_at<kLastOdd>(x + 7 * step), w0, w1, w2, b.a70, b.a71, b.a72);
}

// P (1..8) output pixels from `ow` on, windows inside the input along w; `rows[kh]` is kernel
// row kh's input row (valid for kh in [kh0, kh1)). `c0`: the block's first channel.
template <int V, int P>
[[gnu::noinline]] void interior(const Plan& plan, const uint16_t* const* rows, int64_t kh0,
                                int64_t kh1, int64_t ow, int64_t c0, uint16_t* out_row) {
  static_assert(V >= 1 && V <= kMaxVectors && P >= 1 && P <= kPixels);
  const Conv2dNhwcArgs& a = *plan.a;
  Block b = biased_block<V>(plan, c0);
  const int64_t cin = a.in_channels, step = a.stride_w * cin;
  const int64_t full_pairs = plan.row_taps / 2;
  const bool odd = plan.row_taps % 2 != 0;
  const int64_t iw0 = ow * a.stride_w - a.pad_left;
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const uint16_t* x = rows[kh] + iw0 * cin;
    const uint32_t* wk = plan.packed + kh * plan.pairs * plan.cpad + c0;
    for (int64_t p = 0; p < full_pairs; ++p)
      pair_step<V, P, false>(wk + p * plan.cpad, x + 2 * p, step, b);
    if (odd) pair_step<V, P, true>(wk + full_pairs * plan.cpad, x + 2 * full_pairs, step, b);
  }
  const int64_t left = a.out_channels - c0, ostep = a.out_stride_w;
  uint16_t* dst = out_row + ow * ostep + c0;
  store_pixel<V>(plan, dst, left, b.a00, b.a01, b.a02);
  if constexpr (P > 1) store_pixel<V>(plan, dst + ostep, left, b.a10, b.a11, b.a12);
  if constexpr (P > 2) store_pixel<V>(plan, dst + 2 * ostep, left, b.a20, b.a21, b.a22);
  if constexpr (P > 3) store_pixel<V>(plan, dst + 3 * ostep, left, b.a30, b.a31, b.a32);
  if constexpr (P > 4) store_pixel<V>(plan, dst + 4 * ostep, left, b.a40, b.a41, b.a42);
  if constexpr (P > 5) store_pixel<V>(plan, dst + 5 * ostep, left, b.a50, b.a51, b.a52);
  if constexpr (P > 6) store_pixel<V>(plan, dst + 6 * ostep, left, b.a60, b.a61, b.a62);
  if constexpr (P > 7) store_pixel<V>(plan, dst + 7 * ostep, left, b.a70, b.a71, b.a72);
}

// One output pixel whose window is clipped along w: its taps are gathered per kernel row into a
// zero-filled row (the padding's zeros), then the interior's pair steps run on it.
template <int V>
[[gnu::noinline]] void border(const Plan& plan, const uint16_t* const* rows, int64_t kh0,
                              int64_t kh1, int64_t ow, int64_t c0, uint16_t* out_row) {
  const Conv2dNhwcArgs& a = *plan.a;
  Block b = biased_block<V>(plan, c0);
  const int64_t cin = a.in_channels;
  const int64_t iw0 = ow * a.stride_w - a.pad_left;
  alignas(64) uint16_t taps[kMaxRowTaps + 2];
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
      const int64_t iw = iw0 + kw;
      for (int64_t ci = 0; ci < cin; ++ci)
        taps[kw * cin + ci] = iw >= 0 && iw < a.in_w ? rows[kh][iw * cin + ci] : uint16_t{0};
    }
    taps[plan.row_taps] = 0;
    const uint32_t* wk = plan.packed + kh * plan.pairs * plan.cpad + c0;
    for (int64_t p = 0; p < plan.pairs; ++p)
      pair_step<V, 1, false>(wk + p * plan.cpad, taps + 2 * p, 0, b);
  }
  store_pixel<V>(plan, out_row + ow * a.out_stride_w + c0, a.out_channels - c0, b.a00, b.a01,
                 b.a02);
}

template <int V>
void channel_block(const Plan& plan, const uint16_t* const* rows, int64_t kh0, int64_t kh1,
                   int64_t ow_lo, int64_t ow_hi, int64_t c0, uint16_t* out_row) {
  const int64_t ow_n = plan.a->out_w;
  int64_t ow = 0;
  for (; ow < ow_lo; ++ow) border<V>(plan, rows, kh0, kh1, ow, c0, out_row);
  for (; ow + kPixels <= ow_hi; ow += kPixels)
    interior<V, kPixels>(plan, rows, kh0, kh1, ow, c0, out_row);
  if (ow + 4 <= ow_hi) {
    interior<V, 4>(plan, rows, kh0, kh1, ow, c0, out_row);
    ow += 4;
  }
  switch (ow_hi - ow) {
    case 3:
      interior<V, 3>(plan, rows, kh0, kh1, ow, c0, out_row);
      break;
    case 2:
      interior<V, 2>(plan, rows, kh0, kh1, ow, c0, out_row);
      break;
    case 1:
      interior<V, 1>(plan, rows, kh0, kh1, ow, c0, out_row);
      break;
    default:
      break;
  }
  for (ow = max64(ow, ow_hi); ow < ow_n; ++ow) border<V>(plan, rows, kh0, kh1, ow, c0, out_row);
}

constexpr int64_t kMaxKernelRows = kBf16ConvMaxKernelRows;

void run_row(const Plan& plan, int64_t row, int64_t ow_lo, int64_t ow_hi) {
  const Conv2dNhwcArgs& a = *plan.a;
  const int64_t n = row / a.out_h, oh = row - n * a.out_h;
  const int64_t ih0 = oh * a.stride_h - a.pad_top;
  // kh with 0 <= ih0 + kh * dilation_h < in_h
  const int64_t kh0 = ih0 >= 0 ? 0 : (-ih0 + a.dilation_h - 1) / a.dilation_h;
  const int64_t kh1 = min64(ih0 < a.in_h ? (a.in_h - 1 - ih0) / a.dilation_h + 1 : 0, a.kernel_h);
  const uint16_t* rows[kMaxKernelRows];
  for (int64_t kh = kh0; kh < kh1; ++kh)
    rows[kh] = a.input16 + n * a.in_stride_n + (ih0 + kh * a.dilation_h) * a.in_stride_h;
  uint16_t* out_row = a.output16 + n * a.out_stride_n + oh * a.out_stride_h;
  const int64_t vectors = plan.cpad / kLanes;
  for (int64_t v0 = 0; v0 < vectors; v0 += kMaxVectors) {
    const int64_t c0 = v0 * kLanes;
    switch (min64(kMaxVectors, vectors - v0)) {
      case 3:
        channel_block<3>(plan, rows, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
      case 2:
        channel_block<2>(plan, rows, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
      default:
        channel_block<1>(plan, rows, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
    }
  }
}

uint32_t bf16_bits(float v) {  // v holds a bf16 value exactly: its high half
  uint32_t bits;
  __builtin_memcpy(&bits, &v, sizeof bits);
  return bits >> 16;
}

}  // namespace

bool conv2d_nhwc_avx512_bf16_applies(const Conv2dNhwcArgs& a) {
  return a.storage == Conv2dStorage::kBf16 && a.dilation_w == 1 &&
         (a.in_channels == 0 || a.in_stride_w == a.in_channels) &&
         a.kernel_w * a.in_channels <= kMaxRowTaps && a.kernel_h <= kMaxKernelRows;
}

void conv2d_nhwc_avx512_bf16(const Conv2dNhwcArgs& a) {
  if (!conv2d_nhwc_avx512_bf16_applies(a))
    throw Error(ErrorCode::kInternal,
                "conv2d: the AVX512-BF16 path needs bf16 activations, dense pixels, dilation_w 1, "
                "kernel_w * C_in <= 4096 and kernel_h <= 64");
  Conv2dNhwcArgs args = a;
  args.in_stride_w = a.in_channels;  // equal, or no channels at all
  const int64_t cpad = (a.out_channels + kLanes - 1) / kLanes * kLanes;
  const int64_t cin = a.in_channels, row_taps = a.kernel_w * cin, pairs = (row_taps + 1) / 2;
  Aligned<uint32_t> packed(a.kernel_h * pairs * cpad);
  for (int64_t kh = 0; kh < a.kernel_h; ++kh) {
    for (int64_t t = 0; t < row_taps; ++t) {
      const int64_t kw = t / cin, ci = t - kw * cin;
      uint32_t* dst = packed.data() + (kh * pairs + t / 2) * cpad;
      for (int64_t co = 0; co < a.out_channels; ++co) {
        const float w = a.weight[co * a.weight_stride[0] + ci * a.weight_stride[1] +
                                 kh * a.weight_stride[2] + kw * a.weight_stride[3]];
        dst[co] |= bf16_bits(w) << (t % 2 == 0 ? 0 : 16);
      }
    }
  }
  Aligned<float> bias(cpad);
  if (a.bias != nullptr) {
    for (int64_t co = 0; co < a.out_channels; ++co) bias.data()[co] = a.bias[co * a.bias_stride];
  }
  const Plan plan{&args, packed.data(), bias.data(), cpad, row_taps, pairs};

  // Output columns whose whole window lies inside the input along w: [ow_lo, ow_hi).
  const int64_t span = a.kernel_w - 1;
  const int64_t ow_lo = min64((a.pad_left + a.stride_w - 1) / a.stride_w, a.out_w);
  const int64_t last = a.in_w - 1 - span + a.pad_left;  // ow * stride_w <= last
  const int64_t ow_hi = min64(max64(last >= 0 ? last / a.stride_w + 1 : 0, ow_lo), a.out_w);

  const int64_t rows = a.batch * a.out_h;
  // As conv2d_avx512.cc: the caller's thread alone inside a team member, else small chunks of
  // rows from a common counter.
  host::run_team(a.threads, rows > 1, [&](host::TeamMember& member) {
    const int64_t chunk = max64(1, min64(16, rows / (member.size() * 8)));
    for (host::Range run; member.take(rows, chunk, run);)
      for (int64_t row = run.begin; row < run.end; ++row) run_row(plan, row, ow_lo, ow_hi);
  });
}

}  // namespace kaas::simd

#else  // built without AVX512-BF16 (not x86-64, or KAAS_CPU_SIMD_PATHS=OFF): never selected

namespace kaas::simd {

bool conv2d_nhwc_avx512_bf16_compiled() {
  return false;
}

bool conv2d_nhwc_avx512_bf16_applies(const Conv2dNhwcArgs&) {
  return false;
}

void conv2d_nhwc_avx512_bf16(const Conv2dNhwcArgs&) {
  throw Error(ErrorCode::kInternal, "conv2d: the AVX512-BF16 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
