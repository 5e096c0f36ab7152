// conv2d CPU fast path: direct NHWC convolution, vectorised over output channels with AVX2 +
// FMA (this file alone is compiled with -mavx2 -mfma; callers check the CPU first).
//
// Weights are repacked once per call to [(kh, kw, ci)][C_out rounded up to 8], zero padded, so
// one output pixel's channels are whole 8-lane vectors. Each output row (n, oh) is walked in
// blocks of up to 3 channel vectors (24 channels) x 4 output pixels: 12 accumulators, 3 weight
// vectors and one broadcast input value fill the 16 ymm registers, 7 loads feed 12 FMAs.
// Pixels whose window is clipped by the padding take a checked one-pixel path.
//
// The interior blocks walk the window as one list of taps (kh, kw, ci), each an input offset
// from a table: one loop of kernel_h * kernel_w * C_in steps, not three nested short ones. The
// activation is chosen once per block, outside the stores: a per-vector switch whose sigmoid
// case calls out of line made GCC spill the 12 accumulators around it (on EmTrkMichelId's
// 5x5 1->48 conv that epilogue cost as much as the FMAs).

#include "kaas/kernels/cpu/conv2d_simd.h"

#include <algorithm>
#include <vector>

#include "kaas/backends/cpu/host_team.h"
#include "kaas/common/error.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace kaas::simd {

bool conv2d_nhwc_avx2_compiled() {
  return true;
}

namespace {

constexpr int kLanes = 8;
constexpr int kMaxVectors = 3;  // channel vectors per block
constexpr int kPixels = 4;      // output pixels per interior block

struct Plan {
  const Conv2dNhwcArgs* a;
  const float* packed;         // [(kh * KW + kw) * C_in + ci][cpad]
  const float* bias;           // [cpad]
  const int64_t* tap_offset;   // [(kh * KW + kw) * C_in + ci]: the tap's input offset
  int64_t cpad, taps_per_row;  // taps_per_row = KW * C_in
};

inline __m256 activate(__m256 v, const Epilogue& e) {
  switch (e.activation) {
    case Activation::kRelu:
      return _mm256_max_ps(v, _mm256_setzero_ps());  // NaN and -0 give +0, as apply()
    case Activation::kLeakyRelu: {
      const __m256 keep = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
      return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(e.alpha)), v, keep);
    }
    case Activation::kSigmoid: {
      alignas(32) float lanes[kLanes];
      _mm256_store_ps(lanes, v);
      for (float& x : lanes) x = apply(e, x);
      return _mm256_load_ps(lanes);
    }
    case Activation::kNone:
      break;
  }
  return v;
}

inline void store(float* dst, __m256 v, int64_t lanes) {
  if (lanes >= kLanes) {
    _mm256_storeu_ps(dst, v);
  } else {
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(lanes)), index);
    _mm256_maskstore_ps(dst, mask, v);
  }
}

template <class Op>
inline void write_with(const Op& op, const __m256* acc, int v_count, int p_count, float* dst,
                       int64_t pixel_stride, int64_t lanes_left) {
  if (lanes_left >= v_count * kLanes) {
    for (int p = 0; p < p_count; ++p) {
      for (int v = 0; v < v_count; ++v) {
        _mm256_storeu_ps(dst + p * pixel_stride + v * kLanes, op(acc[p * v_count + v]));
      }
    }
    return;
  }
  for (int p = 0; p < p_count; ++p) {
    for (int v = 0; v < v_count; ++v) {
      store(dst + p * pixel_stride + v * kLanes, op(acc[p * v_count + v]), lanes_left - v * kLanes);
    }
  }
}

// A block's P x V accumulators, activated and stored at `dst` (its first pixel's channel c0),
// `lanes_left` channels from c0 to the end. ReLU and none stay in registers; the others go
// through activate().
template <int V, int P>
inline void write_block(const Conv2dNhwcArgs& a, const __m256 (&acc)[P][V], float* dst,
                        int64_t lanes_left) {
  const __m256* flat = &acc[0][0];
  switch (a.epilogue.activation) {
    case Activation::kNone:
      return write_with([](__m256 v) { return v; }, flat, V, P, dst, a.out_stride_w, lanes_left);
    case Activation::kRelu:
      return write_with([](__m256 v) { return _mm256_max_ps(v, _mm256_setzero_ps()); }, flat, V, P,
                        dst, a.out_stride_w, lanes_left);
    default:
      return write_with([&a](__m256 v) { return activate(v, a.epilogue); }, flat, V, P, dst,
                        a.out_stride_w, lanes_left);
  }
}

// P output pixels starting at `ow` whose windows lie inside the input along w; kh in
// [kh0, kh1) is valid along h. `c0` is the first channel of the block.
template <int V, int P>
void interior(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0, int64_t kh1,
              int64_t ow, int64_t c0, float* out_row) {
  const Conv2dNhwcArgs& a = *plan.a;
  __m256 acc[P][V];
  for (int v = 0; v < V; ++v) {
    const __m256 b = _mm256_loadu_ps(plan.bias + c0 + v * kLanes);
    for (int p = 0; p < P; ++p) acc[p][v] = b;
  }
  const int64_t cpad = plan.cpad;
  const int64_t pixel_step = a.stride_w * a.in_stride_w;
  const float* ip = in_n + ih0 * a.in_stride_h + (ow * a.stride_w - a.pad_left) * a.in_stride_w;
  const float* wk = plan.packed + kh0 * plan.taps_per_row * cpad + c0;
  for (int64_t t = kh0 * plan.taps_per_row; t < kh1 * plan.taps_per_row; ++t, wk += cpad) {
    const int64_t offset = plan.tap_offset[t];
    __m256 wv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) wv[v] = _mm256_loadu_ps(wk + v * kLanes);
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __m256 x = _mm256_broadcast_ss(ip + p * pixel_step + offset);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[p][v] = _mm256_fmadd_ps(wv[v], x, acc[p][v]);
    }
  }
  write_block<V, P>(a, acc, out_row + ow * a.out_stride_w + c0, a.out_channels - c0);
}

// interior<3, 4> over a run of blocks, with the 12 accumulators as named variables: GCC keeps
// them in registers (the array form above makes it store every accumulator back to the stack on
// each step). The run is one call: a 5x5 window over one input channel is 25 taps, ~150 cycles
// of FMAs per block, and a call per block (prologue, accumulators through the stack for the
// store) had cost about half as much again. Full blocks without an activation or with ReLU store
// straight from the registers; the rest take write_block(). Returns the first pixel not written.
template <bool kWithRelu>
int64_t interior_run_3x4(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0, int64_t kh1,
                         int64_t ow, int64_t ow_end, int64_t c0, float* out_row) {
  const Conv2dNhwcArgs& a = *plan.a;
  const float* bias = plan.bias + c0;
  const int64_t cpad = plan.cpad;
  const int64_t step = a.stride_w * a.in_stride_w;
  const int64_t t_begin = kh0 * plan.taps_per_row, t_end = kh1 * plan.taps_per_row;
  const int64_t* const tap_offset = plan.tap_offset;
  const float* const w_begin = plan.packed + t_begin * cpad + c0;
  const bool direct = a.out_channels - c0 >= 3 * kLanes &&
                      (a.epilogue.activation == Activation::kNone || kWithRelu);
  const int64_t out_step = a.out_stride_w;
  for (; ow + 4 <= ow_end; ow += 4) {
    __m256 a00 = _mm256_loadu_ps(bias), a01 = _mm256_loadu_ps(bias + 8),
           a02 = _mm256_loadu_ps(bias + 16);
    __m256 a10 = a00, a11 = a01, a12 = a02, a20 = a00, a21 = a01, a22 = a02, a30 = a00, a31 = a01,
           a32 = a02;
    const float* p0 = in_n + ih0 * a.in_stride_h + (ow * a.stride_w - a.pad_left) * a.in_stride_w;
    const float* p1 = p0 + step;
    const float* p2 = p1 + step;
    const float* p3 = p2 + step;
    const float* wk = w_begin;
    for (int64_t t = t_begin; t < t_end; ++t, wk += cpad) {
      const int64_t offset = tap_offset[t];
      const __m256 w0 = _mm256_loadu_ps(wk), w1 = _mm256_loadu_ps(wk + 8),
                   w2 = _mm256_loadu_ps(wk + 16);
      __m256 x = _mm256_broadcast_ss(p0 + offset);
      a00 = _mm256_fmadd_ps(w0, x, a00);
      a01 = _mm256_fmadd_ps(w1, x, a01);
      a02 = _mm256_fmadd_ps(w2, x, a02);
      x = _mm256_broadcast_ss(p1 + offset);
      a10 = _mm256_fmadd_ps(w0, x, a10);
      a11 = _mm256_fmadd_ps(w1, x, a11);
      a12 = _mm256_fmadd_ps(w2, x, a12);
      x = _mm256_broadcast_ss(p2 + offset);
      a20 = _mm256_fmadd_ps(w0, x, a20);
      a21 = _mm256_fmadd_ps(w1, x, a21);
      a22 = _mm256_fmadd_ps(w2, x, a22);
      x = _mm256_broadcast_ss(p3 + offset);
      a30 = _mm256_fmadd_ps(w0, x, a30);
      a31 = _mm256_fmadd_ps(w1, x, a31);
      a32 = _mm256_fmadd_ps(w2, x, a32);
    }
    float* dst = out_row + ow * out_step + c0;
    if (direct) {
      const auto out = [](__m256 v) {
        return kWithRelu ? _mm256_max_ps(v, _mm256_setzero_ps()) : v;  // as activate()
      };
      _mm256_storeu_ps(dst, out(a00));
      _mm256_storeu_ps(dst + 8, out(a01));
      _mm256_storeu_ps(dst + 16, out(a02));
      _mm256_storeu_ps(dst + out_step, out(a10));
      _mm256_storeu_ps(dst + out_step + 8, out(a11));
      _mm256_storeu_ps(dst + out_step + 16, out(a12));
      _mm256_storeu_ps(dst + 2 * out_step, out(a20));
      _mm256_storeu_ps(dst + 2 * out_step + 8, out(a21));
      _mm256_storeu_ps(dst + 2 * out_step + 16, out(a22));
      _mm256_storeu_ps(dst + 3 * out_step, out(a30));
      _mm256_storeu_ps(dst + 3 * out_step + 8, out(a31));
      _mm256_storeu_ps(dst + 3 * out_step + 16, out(a32));
    } else {
      const __m256 acc[4][3] = {{a00, a01, a02}, {a10, a11, a12}, {a20, a21, a22}, {a30, a31, a32}};
      write_block<3, 4>(a, acc, dst, a.out_channels - c0);
    }
  }
  return ow;
}

// One output pixel whose window may be clipped along w.
template <int V>
void border(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0, int64_t kh1, int64_t ow,
            int64_t c0, float* out_row) {
  const Conv2dNhwcArgs& a = *plan.a;
  __m256 acc[1][V];
  for (int v = 0; v < V; ++v) acc[0][v] = _mm256_loadu_ps(plan.bias + c0 + v * kLanes);
  const int64_t cin = a.in_channels, cpad = plan.cpad;
  const int64_t iw0 = ow * a.stride_w - a.pad_left;
  for (int64_t kh = kh0; kh < kh1; ++kh) {
    const float* row = in_n + (ih0 + kh * a.dilation_h) * a.in_stride_h;
    for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
      const int64_t iw = iw0 + kw * a.dilation_w;
      if (iw < 0 || iw >= a.in_w) continue;
      const float* ip = row + iw * a.in_stride_w;
      const float* wk = plan.packed + ((kh * a.kernel_w + kw) * cin) * cpad + c0;
      for (int64_t ci = 0; ci < cin; ++ci) {
        const __m256 x = _mm256_broadcast_ss(ip + ci);
        for (int v = 0; v < V; ++v) {
          acc[0][v] = _mm256_fmadd_ps(_mm256_loadu_ps(wk + ci * cpad + v * kLanes), x, acc[0][v]);
        }
      }
    }
  }
  write_block<V, 1>(a, acc, out_row + ow * a.out_stride_w + c0, a.out_channels - c0);
}

template <int V>
void channel_block(const Plan& plan, const float* in_n, int64_t ih0, int64_t kh0, int64_t kh1,
                   int64_t ow_lo, int64_t ow_hi, int64_t c0, float* out_row) {
  const int64_t ow_n = plan.a->out_w;
  int64_t ow = 0;
  for (; ow < ow_lo; ++ow) border<V>(plan, in_n, ih0, kh0, kh1, ow, c0, out_row);
  if constexpr (V == 3 && kPixels == 4) {
    ow = plan.a->epilogue.activation == Activation::kRelu
             ? interior_run_3x4<true>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row)
             : interior_run_3x4<false>(plan, in_n, ih0, kh0, kh1, ow, ow_hi, c0, out_row);
  }
  for (; ow + kPixels <= ow_hi; ow += kPixels)
    interior<V, kPixels>(plan, in_n, ih0, kh0, kh1, ow, c0, out_row);
  for (; ow < ow_hi; ++ow) interior<V, 1>(plan, in_n, ih0, kh0, kh1, ow, c0, out_row);
  for (; ow < ow_n; ++ow) border<V>(plan, in_n, ih0, kh0, kh1, ow, c0, out_row);
}

void run_row(const Plan& plan, int64_t row, int64_t ow_lo, int64_t ow_hi) {
  const Conv2dNhwcArgs& a = *plan.a;
  const int64_t n = row / a.out_h, oh = row - n * a.out_h;
  const int64_t ih0 = oh * a.stride_h - a.pad_top;
  // kh with 0 <= ih0 + kh * dilation_h < in_h
  const int64_t kh0 = ih0 >= 0 ? 0 : (-ih0 + a.dilation_h - 1) / a.dilation_h;
  int64_t kh1 = ih0 < a.in_h ? (a.in_h - 1 - ih0) / a.dilation_h + 1 : 0;
  kh1 = std::min(kh1, a.kernel_h);
  const float* in_n = a.in_channels > 0 ? a.input + n * a.in_stride_n : nullptr;
  float* out_row = a.output + n * a.out_stride_n + oh * a.out_stride_h;
  const int64_t vectors = plan.cpad / kLanes;
  for (int64_t v0 = 0; v0 < vectors; v0 += kMaxVectors) {
    const int64_t c0 = v0 * kLanes;
    switch (std::min<int64_t>(kMaxVectors, vectors - v0)) {
      case 3:
        channel_block<3>(plan, in_n, ih0, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
      case 2:
        channel_block<2>(plan, in_n, ih0, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
      default:
        channel_block<1>(plan, in_n, ih0, kh0, kh1, ow_lo, ow_hi, c0, out_row);
        break;
    }
  }
}

}  // namespace

void conv2d_nhwc_avx2(const Conv2dNhwcArgs& a) {
  const int64_t cpad = (a.out_channels + kLanes - 1) / kLanes * kLanes;
  const int64_t cin = a.in_channels;
  std::vector<float> packed(static_cast<size_t>(a.kernel_h * a.kernel_w * cin * cpad), 0.0f);
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
  std::vector<float> bias(static_cast<size_t>(cpad), 0.0f);
  if (a.bias != nullptr) {
    for (int64_t co = 0; co < a.out_channels; ++co) bias[co] = a.bias[co * a.bias_stride];
  }
  const int64_t taps_per_row = a.kernel_w * cin;
  std::vector<int64_t> tap_offset(static_cast<size_t>(a.kernel_h * taps_per_row));
  for (int64_t kh = 0; kh < a.kernel_h; ++kh) {
    for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
      for (int64_t ci = 0; ci < cin; ++ci) {
        tap_offset[(kh * a.kernel_w + kw) * cin + ci] =
            kh * a.dilation_h * a.in_stride_h + kw * a.dilation_w * a.in_stride_w + ci;
      }
    }
  }
  const Plan plan{&a, packed.data(), bias.data(), tap_offset.data(), cpad, taps_per_row};

  // Output columns whose whole window lies inside the input along w: [ow_lo, ow_hi).
  const int64_t span = (a.kernel_w - 1) * a.dilation_w;
  int64_t ow_lo = (a.pad_left + a.stride_w - 1) / a.stride_w;
  const int64_t last = a.in_w - 1 - span + a.pad_left;  // ow * stride_w <= last
  int64_t ow_hi = last >= 0 ? last / a.stride_w + 1 : 0;
  ow_lo = std::min(ow_lo, a.out_w);
  ow_hi = std::clamp(ow_hi, ow_lo, a.out_w);

  const int64_t rows = a.batch * a.out_h;
  // Inside a team member the call stays on the calling thread (as launch()). Rows are handed
  // out in small chunks from a common counter (as the AVX-512 path): a thread slowed by other
  // work on a shared machine does not hold up the others at the join.
  host::run_team(a.threads, rows > 1, [&](host::TeamMember& member) {
    const int64_t chunk = std::clamp<int64_t>(rows / (member.size() * 8), 1, 16);
    for (host::Range run; member.take(rows, chunk, run);)
      for (int64_t row = run.begin; row < run.end; ++row) run_row(plan, row, ow_lo, ow_hi);
  });
}

}  // namespace kaas::simd

#else  // built without AVX2/FMA (not x86-64, or KAAS_CPU_SIMD_PATHS=OFF): never selected

namespace kaas::simd {

bool conv2d_nhwc_avx2_compiled() {
  return false;
}

void conv2d_nhwc_avx2(const Conv2dNhwcArgs&) {
  throw Error(ErrorCode::kInternal, "conv2d: the CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
