// conv2d CPU fast path, AVX-512 variant: direct NHWC convolution vectorised over output channels
// with 16-lane zmm vectors (this file alone is compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512dq -mfma; callers check the CPU first).
//
// Weights are repacked once per call to [(kh, kw, ci)][C_out rounded up to 16], zero padded, so
// one output pixel's channels are whole 16-lane vectors. Each output row (n, oh) is walked in
// blocks of up to 3 channel vectors (48 channels) x 8 output pixels: 24 accumulators, 3 weight
// vectors and one broadcast input value use 28 of the 32 zmm registers, 11 loads feed 24 FMAs.
// The accumulators are named variables (GCC keeps them in registers; an array would live on the
// stack). Channel tails use masked stores; pixels whose window is clipped by the padding take a
// checked one-pixel path. Large outputs whose pixels are 64-byte aligned are written with
// non-temporal stores, which skip the read-for-ownership of lines that are overwritten whole.
//
// No standard-library templates are instantiated here: their out-of-line copies are shared
// (COMDAT) with other translation units, and an AVX-512 copy must never be the one they call.

#include "kaas/kernels/cpu/conv2d_simd.h"

#include "kaas/backends/cpu/host_team.h"
#include "kaas/common/error.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX512F__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX512DQ__) && defined(__FMA__)
#include <immintrin.h>

#include <cstdint>
#include <new>
#include <type_traits>

#include "kaas/kernels/cpu/avx512_activation.h"
#include "kaas/kernels/cpu/avx512_bf16_store.h"

namespace kaas::simd {

bool conv2d_nhwc_avx512_compiled() {
  return true;
}

namespace {

constexpr int kLanes = 16;
constexpr int kMaxVectors = 3;  // channel vectors per block
constexpr int kPixels = 8;      // output pixels per interior block
// Outputs of at least this many bytes are streamed (non-temporal) when aligned: well past the
// L2 of a core, where regular stores would first read each line back from memory.
constexpr int64_t kStreamBytes = int64_t{8} << 20;

int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

struct Plan {
  const Conv2dNhwcArgs* a;
  const float* packed;  // [(kh * KW + kw) * C_in + ci][cpad]
  const float* bias;    // [cpad]
  int64_t cpad;
  bool stream;  // full vectors go out with non-temporal stores (their addresses are aligned)
};

// 64-byte aligned float storage, zero filled.
class AlignedFloats {
 public:
  explicit AlignedFloats(int64_t n)
      : data_(static_cast<float*>(::operator new[](static_cast<size_t>(max64(n, 1)) * sizeof(float),
                                                   std::align_val_t{64}))) {
    for (int64_t i = 0; i < n; ++i) data_[i] = 0.0f;
  }
  ~AlignedFloats() { ::operator delete[](data_, std::align_val_t{64}); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data() const { return data_; }

 private:
  float* data_;
};

// The maskz forms below (all lanes) because GCC 12 reports the unmasked intrinsics' internal
// _mm512_undefined_* as uninitialised.
constexpr __mmask16 kAll = 0xffff;

// How activations are stored: fp32, or bf16 / fp16 bit patterns. `broadcast` widens one input
// value into every lane (exactly); `store` rounds 16 (or `lanes`) results to nearest even.
struct F32 {
  using Elem = float;
  static __m512 broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static void store(const Plan& plan, float* dst, __m512 v, int64_t lanes) {
    if (lanes >= kLanes) {
      if (plan.stream) {
        _mm512_stream_ps(dst, v);
      } else {
        _mm512_storeu_ps(dst, v);
      }
    } else if (lanes > 0) {
      _mm512_mask_storeu_ps(dst, static_cast<__mmask16>((1u << lanes) - 1u), v);
    }
  }
};

struct Bf16 {
  using Elem = uint16_t;
  // Exact: the 16 bits are the high half of the fp32 value.
  static void widen(const uint16_t* src, float* dst, int64_t count) {
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      _mm512_storeu_si512(dst + i,
                          _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
    }
    if (i < count) {
      const __mmask16 tail = static_cast<__mmask16>((1u << (count - i)) - 1u);
      const __m256i h = _mm256_maskz_loadu_epi16(tail, src + i);
      _mm512_mask_storeu_ps(dst + i, tail,
                            _mm512_castsi512_ps(_mm512_maskz_slli_epi32(
                                kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16)));
    }
  }
  static void store(const Plan&, uint16_t* dst, __m512 v, int64_t lanes) {
    store_u16_lanes(dst, round_to_bf16(v), lanes);
  }
};

struct Fp16 {
  using Elem = uint16_t;
  static void widen(const uint16_t* src, float* dst, int64_t count) {  // exact (vcvtph2ps)
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
      _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(kAll, h));
    }
    if (i < count) {
      const __mmask16 tail = static_cast<__mmask16>((1u << (count - i)) - 1u);
      const __m256i h = _mm256_maskz_loadu_epi16(tail, src + i);
      _mm512_mask_storeu_ps(dst + i, tail, _mm512_maskz_cvtph_ps(kAll, h));
    }
  }
  static void store(const Plan&, uint16_t* dst, __m512 v, int64_t lanes) {
    store_u16_lanes(
        dst, _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lanes);
  }
};

// Activates and stores the first P pixels' first V channel vectors of `acc` (row stride
// kMaxVectors) at `dst`, channel c0 of the block, `left` channels from c0 to the end.
template <class S, class Op>
[[gnu::always_inline]] inline void write_with(const Plan& plan, const Op& activation,
                                              const __m512* acc, int v_count, int p_count,
                                              typename S::Elem* dst, int64_t left) {
  const int64_t ostep = plan.a->out_stride_w;
  // Unrolled whole (the counts are constants here): the accumulators stay in registers instead
  // of going through the stack.
#pragma GCC unroll 8
  for (int p = 0; p < p_count; ++p) {
#pragma GCC unroll 3
    for (int v = 0; v < v_count; ++v) {
      S::store(plan, dst + p * ostep + v * kLanes, activation(acc[p * kMaxVectors + v]),
               left - v * kLanes);
    }
  }
}

// The activation is chosen once per block: a switch per vector, whose sigmoid case calls out of
// line, made GCC spill the accumulators around every store (on EmTrkMichelId's 5x5 1->48 conv
// that epilogue cost as much as the FMAs). ReLU and none stay in registers.
template <class S, int V, int P>
[[gnu::always_inline]] inline void write_block(const Plan& plan,
                                               const __m512 (&acc)[kPixels][kMaxVectors],
                                               typename S::Elem* dst, int64_t left) {
  const Epilogue& e = plan.a->epilogue;
  switch (e.activation) {
    case Activation::kNone:
      return write_with<S>(
          plan, [](__m512 v) { return v; }, &acc[0][0], V, P, dst, left);
    case Activation::kRelu:
      return write_with<S>(
          plan, [](__m512 v) { return _mm512_maskz_max_ps(kAll, v, _mm512_setzero_ps()); },
          &acc[0][0], V, P, dst, left);
    default:
      return write_with<S>(
          plan, [&e](__m512 v) { return activate_avx512(v, e); }, &acc[0][0], V, P, dst, left);
  }
}

template <int V>
[[gnu::always_inline]] inline void fma_pixel(__m512 x, __m512 w0, __m512 w1, __m512 w2, __m512& a0,
                                             __m512& a1, __m512& a2) {
  a0 = _mm512_fmadd_ps(w0, x, a0);
  if constexpr (V > 1) a1 = _mm512_fmadd_ps(w1, x, a1);
  if constexpr (V > 2) a2 = _mm512_fmadd_ps(w2, x, a2);
}

template <int V>
[[gnu::always_inline]] inline void load_weights(const float* w, __m512& w0, __m512& w1,
                                                __m512& w2) {
  w0 = _mm512_loadu_ps(w);
  if constexpr (V > 1) w1 = _mm512_loadu_ps(w + kLanes);
  if constexpr (V > 2) w2 = _mm512_loadu_ps(w + 2 * kLanes);
}

// Blocks of P (1..8) output pixels from `ow` while a whole block fits before `ow_end`, windows
// inside the input along w; kh in [kh0, kh1) is valid along h. `c0` is the first channel of the
// block of V (1..3) vectors. One call per run of blocks: on a 5x5 window over one channel a block
// is 25 steps, and a call per block (with the accumulators through the stack for the store, now
// unrolled away) cost ~9 % of the kernel. Returns the first pixel not done.
template <class S, int V, int P>
[[gnu::noinline]] int64_t interior(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0,
                                   int64_t kh1, int64_t ow, int64_t ow_end, int64_t c0,
                                   typename S::Elem* out_row) {
  static_assert(V >= 1 && V <= kMaxVectors && P >= 1 && P <= kPixels);
  const Conv2dNhwcArgs& a = *plan.a;
  __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0;
  load_weights<V>(plan.bias + c0, b0, b1, b2);
  for (; ow + P <= ow_end; ow += P) {
    __m512 a00 = b0, a01 = b1, a02 = b2, a10 = b0, a11 = b1, a12 = b2, a20 = b0, a21 = b1, a22 = b2,
           a30 = b0, a31 = b1, a32 = b2, a40 = b0, a41 = b1, a42 = b2, a50 = b0, a51 = b1, a52 = b2,
           a60 = b0, a61 = b1, a62 = b2, a70 = b0, a71 = b1, a72 = b2;
    const int64_t cin = a.in_channels, cpad = plan.cpad;
    const int64_t step = a.stride_w * a.in_stride_w;
    const int64_t iw0 = ow * a.stride_w - a.pad_left;
    // With dilation_w == 1 and dense pixels, one kernel row's (kw, ci) inputs are contiguous, as
    // are its packed weights: a single loop of kernel_w * C_in steps.
    const bool dense = a.dilation_w == 1 && a.in_stride_w == cin;
    const int64_t run = dense ? a.kernel_w * cin : cin;
    const int64_t kw_n = dense ? 1 : a.kernel_w;
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const auto* row = in_n + (ih0 + kh * a.dilation_h) * a.in_stride_h;
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        const auto* ip = row + (iw0 + kw * a.dilation_w) * a.in_stride_w;
        const float* wk = plan.packed + ((kh * a.kernel_w + kw) * cin) * cpad + c0;
        for (int64_t j = 0; j < run; ++j) {
          __m512 w0 = _mm512_setzero_ps(), w1 = w0, w2 = w0;
          load_weights<V>(wk + j * cpad, w0, w1, w2);
          const auto* x = ip + j;
          fma_pixel<V>(F32::broadcast(x), w0, w1, w2, a00, a01, a02);
          if constexpr (P > 1) fma_pixel<V>(F32::broadcast(x + step), w0, w1, w2, a10, a11, a12);
          if constexpr (P > 2)
            fma_pixel<V>(F32::broadcast(x + 2 * step), w0, w1, w2, a20, a21, a22);
          if constexpr (P > 3)
            fma_pixel<V>(F32::broadcast(x + 3 * step), w0, w1, w2, a30, a31, a32);
          if constexpr (P > 4)
            fma_pixel<V>(F32::broadcast(x + 4 * step), w0, w1, w2, a40, a41, a42);
          if constexpr (P > 5)
            fma_pixel<V>(F32::broadcast(x + 5 * step), w0, w1, w2, a50, a51, a52);
          if constexpr (P > 6)
            fma_pixel<V>(F32::broadcast(x + 6 * step), w0, w1, w2, a60, a61, a62);
          if constexpr (P > 7)
            fma_pixel<V>(F32::broadcast(x + 7 * step), w0, w1, w2, a70, a71, a72);
        }
      }
    }
    const __m512 acc[kPixels][kMaxVectors] = {{a00, a01, a02}, {a10, a11, a12}, {a20, a21, a22},
                                              {a30, a31, a32}, {a40, a41, a42}, {a50, a51, a52},
                                              {a60, a61, a62}, {a70, a71, a72}};
    write_block<S, V, P>(plan, acc, out_row + ow * a.out_stride_w + c0, a.out_channels - c0);
  }
  return ow;
}

// One output pixel whose window may be clipped along w.
template <class S, int V>
[[gnu::noinline]] void border(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0,
                              int64_t kh1, int64_t ow, int64_t c0, typename S::Elem* out_row) {
  const Conv2dNhwcArgs& a = *plan.a;
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0;
  load_weights<V>(plan.bias + c0, a0, a1, a2);
  const int64_t cin = a.in_channels, cpad = plan.cpad;
  const int64_t iw0 = ow * a.stride_w - a.pad_left;
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const auto* row = in_n + (ih0 + kh * a.dilation_h) * a.in_stride_h;
    for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
      const int64_t iw = iw0 + kw * a.dilation_w;
      if (iw < 0 || iw >= a.in_w) continue;
      const auto* ip = row + iw * a.in_stride_w;
      const float* wk = plan.packed + ((kh * a.kernel_w + kw) * cin) * cpad + c0;
      for (int64_t ci = 0; ci < cin; ++ci) {
        __m512 w0 = _mm512_setzero_ps(), w1 = w0, w2 = w0;
        load_weights<V>(wk + ci * cpad, w0, w1, w2);
        fma_pixel<V>(F32::broadcast(ip + ci), w0, w1, w2, a0, a1, a2);
      }
    }
  }
  const __m512 acc[kPixels][kMaxVectors] = {{a0, a1, a2}};
  write_block<S, V, 1>(plan, acc, out_row + ow * a.out_stride_w + c0, a.out_channels - c0);
}

template <class S, int V>
void channel_block(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0, int64_t kh1,
                   int64_t ow_lo, int64_t ow_hi, int64_t c0, typename S::Elem* out_row) {
  const int64_t ow_n = plan.a->out_w;
  int64_t ow = 0;
  for (; ow < ow_lo; ++ow) border<S, V>(plan, in_n, ih0, kh0, kh1, ow, c0, out_row);
  ow = interior<S, V, kPixels>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row);
  ow = interior<S, V, 4>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row);
  switch (ow_hi - ow) {
    case 3:
      ow = interior<S, V, 3>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row);
      break;
    case 2:
      ow = interior<S, V, 2>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row);
      break;
    case 1:
      ow = interior<S, V, 1>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row);
      break;
    default:
      break;
  }
  for (ow = max64(ow, ow_hi); ow < ow_n; ++ow) {
    border<S, V>(plan, in_n, ih0, kh0, kh1, ow, c0, out_row);
  }
}

// The input rows output row `row` reads, as fp32: the caller's for F32; for 16-bit storage
// widened into `window` (rows from the first valid one, dense pixels), which `window_plan`'s
// strides describe.
struct InputRows {
  const float* data;
  int64_t ih0;  // the row index of the output row's first kernel row in `data`
};

template <class S>
InputRows input_rows(const Conv2dNhwcArgs& a, const typename S::Elem* input, int64_t n, int64_t ih0,
                     int64_t kh0, int64_t kh1, float* window) {
  if constexpr (std::is_same_v<S, F32>) {
    return {a.in_channels > 0 ? input + n * a.in_stride_n : nullptr, ih0};
  } else {
    if (kh1 <= kh0 || a.in_channels == 0) return {window, 0};  // no valid input row
    const int64_t first = ih0 + kh0 * a.dilation_h;
    const int64_t count = (kh1 - 1 - kh0) * a.dilation_h + 1;
    const int64_t pixel_values = a.in_w * a.in_channels;
    for (int64_t r = 0; r < count; ++r) {
      const uint16_t* src = input + n * a.in_stride_n + (first + r) * a.in_stride_h;
      float* dst = window + r * pixel_values;
      if (a.in_stride_w == a.in_channels) {
        S::widen(src, dst, pixel_values);
      } else {
        for (int64_t iw = 0; iw < a.in_w; ++iw)
          S::widen(src + iw * a.in_stride_w, dst + iw * a.in_channels, a.in_channels);
      }
    }
    return {window, ih0 - first};
  }
}

template <class S>
void run_row(const Plan& plan, const Plan& input_plan, const typename S::Elem* input,
             typename S::Elem* output, int64_t row, int64_t ow_lo, int64_t ow_hi, float* window) {
  const Conv2dNhwcArgs& a = *plan.a;
  const int64_t n = row / a.out_h, oh = row - n * a.out_h;
  const int64_t ih0 = oh * a.stride_h - a.pad_top;
  // kh with 0 <= ih0 + kh * dilation_h < in_h
  const int64_t kh0 = ih0 >= 0 ? 0 : (-ih0 + a.dilation_h - 1) / a.dilation_h;
  const int64_t kh1 = min64(ih0 < a.in_h ? (a.in_h - 1 - ih0) / a.dilation_h + 1 : 0, a.kernel_h);
  const InputRows in = input_rows<S>(a, input, n, ih0, kh0, kh1, window);
  auto* out_row = output + n * a.out_stride_n + oh * a.out_stride_h;
  const int64_t vectors = plan.cpad / kLanes;
  for (int64_t v0 = 0; v0 < vectors; v0 += kMaxVectors) {
    const int64_t c0 = v0 * kLanes;
    switch (min64(kMaxVectors, vectors - v0)) {
      case 3:
        channel_block<S, 3>(input_plan, in.data, in.ih0, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
      case 2:
        channel_block<S, 2>(input_plan, in.data, in.ih0, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
      default:
        channel_block<S, 1>(input_plan, in.data, in.ih0, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
    }
  }
}

// Every output row. 16-bit inputs: each thread widens the rows an output row reads into its own
// window (a few rows; every input row is widened kernel_h / stride_h times, cheap next to the
// kernel_h * kernel_w * C_in FMAs per output value), so the kernel broadcasts fp32 from memory.
template <class S>
void run_rows(const Plan& plan, const typename S::Elem* input, typename S::Elem* output,
              int64_t ow_lo, int64_t ow_hi) {
  const Conv2dNhwcArgs& a = *plan.a;
  const int64_t rows = a.batch * a.out_h;
  const bool widened = !std::is_same_v<S, F32>;
  const int64_t window_values =
      widened ? ((a.kernel_h - 1) * a.dilation_h + 1) * a.in_w * a.in_channels : 0;
  // Inside a team member the call stays on the calling thread (as launch()). Rows are handed
  // out in small chunks from a common counter so that a thread slowed by other work on a shared
  // machine does not hold up the others.
  host::run_team(a.threads, rows > 1, [&](host::TeamMember& member) {
    AlignedFloats window(window_values);
    Conv2dNhwcArgs window_args = a;  // the window's dense strides
    if (widened) {
      window_args.in_stride_h = a.in_w * a.in_channels;
      window_args.in_stride_w = a.in_channels;
    }
    Plan input_plan = plan;
    input_plan.a = widened ? &window_args : plan.a;
    const int64_t chunk = max64(1, min64(16, rows / (member.size() * 8)));
    for (host::Range run; member.take(rows, chunk, run);)
      for (int64_t row = run.begin; row < run.end; ++row)
        run_row<S>(plan, input_plan, input, output, row, ow_lo, ow_hi, window.data());
    if (plan.stream) _mm_sfence();  // order this thread's streamed stores before the join
  });
}

bool aligned64(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 63u) == 0;
}

}  // namespace

void conv2d_nhwc_avx512(const Conv2dNhwcArgs& a) {
  const int64_t cpad = (a.out_channels + kLanes - 1) / kLanes * kLanes;
  const int64_t cin = a.in_channels;
  AlignedFloats packed(a.kernel_h * a.kernel_w * cin * cpad);
  for (int64_t kh = 0; kh < a.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
      for (int64_t ci = 0; ci < cin; ++ci) {
        float* dst = packed.data() + ((kh * a.kernel_w + kw) * cin + ci) * cpad;
        for (int64_t co = 0; co < a.out_channels; ++co) {
          dst[co] = a.weight[co * a.weight_stride[0] + ci * a.weight_stride[1] +
                             kh * a.weight_stride[2] + kw * a.weight_stride[3]];
        }
      }
    }
  }
  AlignedFloats bias(cpad);
  if (a.bias != nullptr) {
    for (int64_t co = 0; co < a.out_channels; ++co) bias.data()[co] = a.bias[co * a.bias_stride];
  }
  // Streaming needs every full vector 64-byte aligned: the base and all pixel strides.
  const int64_t out_bytes =
      a.batch * a.out_h * a.out_w * a.out_channels * static_cast<int64_t>(sizeof(float));
  const bool stream = a.storage == Conv2dStorage::kFloat32 && out_bytes >= kStreamBytes &&
                      aligned64(a.output) && a.out_stride_n % kLanes == 0 &&
                      a.out_stride_h % kLanes == 0 && a.out_stride_w % kLanes == 0;
  const Plan plan{&a, packed.data(), bias.data(), cpad, stream};

  // Output columns whose whole window lies inside the input along w: [ow_lo, ow_hi).
  const int64_t span = (a.kernel_w - 1) * a.dilation_w;
  const int64_t ow_lo = min64((a.pad_left + a.stride_w - 1) / a.stride_w, a.out_w);
  const int64_t last = a.in_w - 1 - span + a.pad_left;  // ow * stride_w <= last
  const int64_t ow_hi = min64(max64(last >= 0 ? last / a.stride_w + 1 : 0, ow_lo), a.out_w);

  switch (a.storage) {
    case Conv2dStorage::kFloat32:
      return run_rows<F32>(plan, a.input, a.output, ow_lo, ow_hi);
    case Conv2dStorage::kBf16:
      return run_rows<Bf16>(plan, a.input16, a.output16, ow_lo, ow_hi);
    case Conv2dStorage::kFp16:
      return run_rows<Fp16>(plan, a.input16, a.output16, ow_lo, ow_hi);
  }
}

}  // namespace kaas::simd

#else  // built without AVX-512 (not x86-64, or KAAS_CPU_SIMD_PATHS=OFF): never selected

namespace kaas::simd {

bool conv2d_nhwc_avx512_compiled() {
  return false;
}

void conv2d_nhwc_avx512(const Conv2dNhwcArgs&) {
  throw Error(ErrorCode::kInternal, "conv2d: the AVX-512 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
