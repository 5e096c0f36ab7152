#include "kaas/kernels/gemm.h"

#include <string>
#include <type_traits>
#include <vector>

#include "kaas/backends/blas/vendor_blas.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/kernels/cpu/gemm_simd.h"
#include "kaas/kernels/detail/checks.h"
#include "kaas/kernels/detail/impl_tables.h"
#include "kaas/kernels/impl_table.h"

namespace kaas {

namespace {

template <class T>
View2<T> transposed(View2<T> v) {
  std::swap(v.extent[0], v.extent[1]);
  std::swap(v.stride[0], v.stride[1]);
  return v;
}

std::string shape(int64_t rows, int64_t cols) {
  std::string text = "[";  // built piecewise: g++ 12 misreports "literal" + std::string&&
  text += std::to_string(rows);
  text += ", ";
  text += std::to_string(cols);
  text += ']';
  return text;
}

// A row-major (or transposed row-major) description of a logical [rows, cols] operand, when its
// memory allows one: unit stride along one dimension.
struct BlasOperand {
  bool ok = false, transpose = false;
  int64_t ld = 0;
};
BlasOperand blas_operand(View2<const float> v) {
  if (v.stride[1] == 1 && v.stride[0] >= std::max<int64_t>(1, v.extent[1])) {
    return {true, false, v.stride[0]};
  }
  if (v.stride[0] == 1 && v.stride[1] >= std::max<int64_t>(1, v.extent[0])) {
    return {true, true, v.stride[1]};
  }
  return {};
}

bool vendor_fits(View2<const float> a, View2<const float> b, View2<float> y) {
  const int64_t limit = INT32_MAX;  // BLAS integer arguments
  const bool y_ok = y.stride[1] == 1 && y.stride[0] >= std::max<int64_t>(1, y.extent[1]) &&
                    y.extent[0] <= limit && y.extent[1] <= limit && a.extent[1] <= limit;
  if (a.extent[1] == 0) return y_ok;  // K = 0: no BLAS call, only y = beta * c
  return y_ok && blas_operand(a).ok && blas_operand(b).ok;
}

}  // namespace

bool gemm_avx512_available() {
  // The file is compiled with AVX-512 F/BW/VL/DQ (the 16-bit widening uses BW + VL masks).
  return simd::gemm_avx512_compiled() && isa_tier_unavailable(IsaTier::kAvx512).empty();
}

bool gemm_avx512_bf16_available() {
  return simd::gemm_avx512_bf16_compiled() && isa_tier_unavailable(IsaTier::kAvx512Bf16).empty();
}

int64_t gemm_packed_bf16_elements(int64_t k, int64_t n) {
  return (k + 1) / 2 * n * 2;
}

GemmPackedBf16 gemm_pack_bf16(View2<const bf16> op_b, bf16* pairs) {
  detail::check_view(op_b, "gemm_pack_bf16", "B");
  const int64_t k = op_b.extent[0], n = op_b.extent[1];
  for (int64_t p = 0; p < (k + 1) / 2; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      pairs[(p * n + j) * 2] = op_b(2 * p, j);
      pairs[(p * n + j) * 2 + 1] = 2 * p + 1 < k ? op_b(2 * p + 1, j) : bf16{0};
    }
  }
  return {pairs, k, n};
}

GemmPackedBf16 gemm_packed_rows(const GemmPackedBf16& packed, int64_t k0, int64_t kc) {
  // An odd kc is a slice whose last pair is not zero padded: only the end of B may have one.
  require(k0 % 2 == 0 && k0 >= 0 && kc >= 0 && k0 + kc <= packed.k &&
              (kc % 2 == 0 || k0 + kc == packed.k),
          "gemm_packed_rows", "rows [k0, k0 + kc)",
          "k0 even, kc even unless the slice ends at K, inside K = " + std::to_string(packed.k),
          "k0, k0 + kc = " + shape(k0, k0 + kc));
  return {packed.pairs + k0 / 2 * packed.n * 2, kc, packed.n};
}

namespace {

void check_panel_columns(int64_t panel_columns, const char* where) {
  require(panel_columns > 0 && panel_columns % 16 == 0, where, "panel_columns",
          "a positive multiple of 16", std::to_string(panel_columns));
}

}  // namespace

int64_t gemm_packed_panels_elements(int64_t k, int64_t n, int64_t panel_columns) {
  check_panel_columns(panel_columns, "gemm_packed_panels_elements");
  return (n + panel_columns - 1) / panel_columns * k * panel_columns;
}

GemmPackedPanels gemm_pack_panels(View2<const float> op_b, float* data, int64_t panel_columns) {
  detail::check_view(op_b, "gemm_pack_panels", "B");
  check_panel_columns(panel_columns, "gemm_pack_panels");
  const int64_t k = op_b.extent[0], n = op_b.extent[1], panel_stride = k * panel_columns;
  for (int64_t p = 0; p * panel_columns < n; ++p) {
    for (int64_t r = 0; r < k; ++r) {
      float* row = data + p * panel_stride + r * panel_columns;
      for (int64_t c = 0; c < panel_columns; ++c) {
        const int64_t j = p * panel_columns + c;
        row[c] = j < n ? op_b(r, j) : 0.0f;
      }
    }
  }
  return {data, k, n, panel_stride, panel_columns};
}

GemmPackedPanels gemm_packed_rows(const GemmPackedPanels& packed, int64_t k0, int64_t kc) {
  require(k0 >= 0 && kc >= 0 && k0 + kc <= packed.k, "gemm_packed_rows", "rows [k0, k0 + kc)",
          "inside K = " + std::to_string(packed.k), "k0, k0 + kc = " + shape(k0, k0 + kc));
  return {packed.data + k0 * packed.panel_columns, kc, packed.n, packed.panel_stride,
          packed.panel_columns};
}

bool gemm_avx2_available() {
  return simd::gemm_avx2_compiled() && isa_tier_unavailable(IsaTier::kAvx2).empty();
}

const char* gemm_vendor_name(const Queue& queue) {
  return blas::sgemm_name(queue);
}

namespace {

// The operands as the product sees them: op(A), op(B), C broadcast to [M, N] by zero strides
// (empty when there is no C).
template <class T>
struct GemmOperandsOf {
  View2<const T> op_a, op_b;
  View2<const float> c_broadcast;
  int64_t m = 0, n = 0, k = 0;
};
using GemmOperands = GemmOperandsOf<float>;

View2<const float> broadcast_c(View2<const float> c, int64_t m, int64_t n) {
  if (c.size() == 0) return View2<const float>{};
  const bool rows_ok = c.extent[0] == m || c.extent[0] == 1;
  const bool cols_ok = c.extent[1] == n || c.extent[1] == 1;
  require(rows_ok && cols_ok, "gemm", "C shape",
          "broadcastable to " + shape(m, n) + " ([M,N], [1,N], [M,1] or [1,1])",
          shape(c.extent[0], c.extent[1]));
  for (int d = 0; d < 2; ++d) {
    if (c.extent[d] == 1) c.stride[d] = 0;
  }
  c.extent[0] = m;
  c.extent[1] = n;
  return c;
}

template <class T, class TY>
GemmOperandsOf<T> check_gemm(View2<const T> a, View2<const T> b, View2<const float> c, View2<TY> y,
                             const GemmParams& params, const LaunchConfig& config) {
  const char* where = "gemm";
  detail::check_view(a, where, "A");
  detail::check_view(b, where, "B");
  detail::check_view(c, where, "C");
  detail::check_view(y, where, "Y");
  detail::check_config(config, where);
  require(config.group_size == 0 || config.group_size == 8 || config.group_size == 32 ||
              config.group_size == 128,
          where, "LaunchConfig.group_size", "0 (default), 8, 32 or 128",
          std::to_string(config.group_size));
  GemmOperandsOf<T> ops;
  ops.op_a = params.trans_a ? transposed(a) : a;
  ops.op_b = params.trans_b ? transposed(b) : b;
  ops.m = ops.op_a.extent[0], ops.k = ops.op_a.extent[1], ops.n = ops.op_b.extent[1];
  require(ops.op_b.extent[0] == ops.k, where, params.trans_b ? "B rows of B^T (K)" : "B rows (K)",
          std::to_string(ops.k) + " (columns of op(A) " + shape(ops.m, ops.k) + ")",
          std::to_string(ops.op_b.extent[0]));
  require(y.extent[0] == ops.m && y.extent[1] == ops.n, where, "Y shape", shape(ops.m, ops.n),
          shape(y.extent[0], y.extent[1]));
  ops.c_broadcast = broadcast_c(c, ops.m, ops.n);
  require(params.impl == GemmImpl::kAuto || params.impl == GemmImpl::kPortable ||
              params.impl == GemmImpl::kVendor || params.impl == GemmImpl::kAvx512 ||
              params.impl == GemmImpl::kAvx2 || params.impl == GemmImpl::kAvx512Bf16,
          where, "impl", "kAuto, kPortable, kVendor, kAvx512, kAvx2 or kAvx512Bf16",
          std::to_string(static_cast<int>(params.impl)));
  return ops;
}

// y = beta * c (or 0) before a CPU fast path, which accumulates alpha * op(a) . op(b) into y and
// activates. Accumulating into y itself (c is y, beta 1: the fused model plans) needs no fill.
void fill_with_c(const Queue& queue, const View2<const float>& c, float beta, View2<float> y) {
  const bool c_is_y =
      c.data == y.data && c.stride[0] == y.stride[0] && c.stride[1] == y.stride[1] && beta == 1.0f;
  if (!c_is_y) KAAS_LAUNCH(queue, gemm_fill_launch, queue, c, beta, y);
}

// The AVX-512 / AVX2 row-major tiles on the CPU backends.
void gemm_cpu_simd(const Queue& queue, GemmImpl impl, const GemmOperands& ops, View2<float> y,
                   const GemmParams& params) {
  fill_with_c(queue, ops.c_broadcast, params.beta, y);
  simd::GemmRowMajorArgs args{
      ops.op_a.data, ops.op_a.stride[0], ops.op_b.data,   ops.op_b.stride[0],
      y.data,        y.stride[0],        ops.m,           ops.n,
      ops.k,         params.alpha,       params.epilogue, traits_of(queue.backend_id()).threads};
  if (const GemmPackedPanels* packed = params.packed_panels) {
    require(packed->k == ops.k && packed->n == ops.n, "gemm", "params.packed_panels",
            "op(B)'s K x N = " + shape(ops.k, ops.n), shape(packed->k, packed->n));
    args.b_packed = packed->data;
    args.b_panel_stride = packed->panel_stride;
    args.b_panel_columns = packed->panel_columns;
  }
  args.k_chunk = params.k_chunk;
  if (impl == GemmImpl::kAvx512) {
    simd::gemm_avx512(args);
  } else {
    simd::gemm_avx2(args);
  }
}

// OpenBLAS (openmp) or cuBLAS (cuda); the epilogue runs as its own launch.
void gemm_vendor(const Queue& queue, const GemmOperands& ops, View2<float> y,
                 const GemmParams& params) {
  const float beta = ops.c_broadcast.extent[0] > 0 ? 1.0f : 0.0f;
  if (beta != 0.0f) KAAS_LAUNCH(queue, gemm_fill_launch, queue, ops.c_broadcast, params.beta, y);
  const BlasOperand la = blas_operand(ops.op_a), lb = blas_operand(ops.op_b);
  blas::SgemmCall call;
  call.transpose_a = la.transpose;
  call.transpose_b = lb.transpose;
  call.m = ops.m, call.n = ops.n, call.k = ops.k;
  call.alpha = params.alpha;
  call.a = ops.op_a.data, call.lda = la.ld;
  call.b = ops.op_b.data, call.ldb = lb.ld;
  call.beta = beta;
  call.c = y.data, call.ldc = y.stride[0];
  if (ops.k > 0) {
    blas::sgemm(queue, call);
  } else if (beta == 0.0f) {
    KAAS_LAUNCH(queue, gemm_fill_launch, queue, View2<const float>{}, 0.0f, y);
  }
  if (params.epilogue.activation != Activation::kNone) {
    KAAS_LAUNCH(queue, gemm_epilogue_launch, queue, params.epilogue, y);
  }
}

// The checked fp32 call as the table's rows see it.
struct GemmCall {
  const Queue* queue;
  GemmOperands ops;
  View2<float> y;
  const GemmParams* params;
  LaunchConfig config;
};

// Why the row-major tiles of `lanes` columns cannot run op(A) . op(B) -> Y; empty when they can.
std::string tiles_unfit(const View2<const float>& op_a, const View2<const float>& op_b,
                        const View2<float>& y, int64_t lanes) {
  if (op_a.stride[1] != 1 || op_b.stride[1] != 1 || y.stride[1] != 1) {
    return "op(A), op(B) and Y need unit column strides (row-major, not transposed)";
  }
  if (y.extent[1] % lanes != 0) {
    return "N = " + std::to_string(y.extent[1]) + " is not a multiple of " + std::to_string(lanes);
  }
  return {};
}

std::string no_skip(const GemmCall&) {
  return {};
}

constexpr std::string_view kFp32Chain = "fp32 chain";  // one FMA chain per element, K in order

// Preference order (measured, bench/results): the AVX-512 tiles beat Debian's OpenBLAS, which
// beats the AVX2 tiles and the portable kernel on the EmTrkMichelId shapes; vendor BLAS's bits
// follow M and the thread count, so rows_independent calls pass it over.
const ImplRow<GemmImpl, GemmCall> kFp32Rows[] = {
    {GemmImpl::kAvx512, "avx512", IsaTier::kAvx512, kFp32Chain,
     [](const Queue& q) { return compiled_host_simd(q, simd::gemm_avx512_compiled()); },
     [](const GemmCall& c) { return tiles_unfit(c.ops.op_a, c.ops.op_b, c.y, 16); }, no_skip,
     [](const GemmCall& c) { gemm_cpu_simd(*c.queue, GemmImpl::kAvx512, c.ops, c.y, *c.params); }},
    {GemmImpl::kVendor, "vendor", IsaTier::kPortable, "vendor BLAS (follows M and threads)",
     [](const Queue& q) { return blas::sgemm_unavailable(q); },
     [](const GemmCall& c) {
       return vendor_fits(c.ops.op_a, c.ops.op_b, c.y)
                  ? std::string()
                  : std::string(
                        "vendor BLAS needs unit stride along one dimension of A and B, "
                        "rows of Y contiguous, sizes < 2^31");
     },
     [](const GemmCall& c) {
       return c.params->rows_independent
                  ? std::string("rows_independent: vendor BLAS's bits follow M")
                  : std::string();
     },
     [](const GemmCall& c) { gemm_vendor(*c.queue, c.ops, c.y, *c.params); }},
    {GemmImpl::kAvx2, "avx2", IsaTier::kAvx2, kFp32Chain,
     [](const Queue& q) { return compiled_host_simd(q, simd::gemm_avx2_compiled()); },
     [](const GemmCall& c) { return tiles_unfit(c.ops.op_a, c.ops.op_b, c.y, 8); }, no_skip,
     [](const GemmCall& c) { gemm_cpu_simd(*c.queue, GemmImpl::kAvx2, c.ops, c.y, *c.params); }},
    {GemmImpl::kPortable, "portable", IsaTier::kPortable, "portable", any_backend,
     always_fits<GemmCall>, no_skip,
     [](const GemmCall& c) {
       KAAS_LAUNCH(*c.queue, gemm_portable_launch, *c.queue, c.ops.op_a, c.ops.op_b,
                   c.ops.c_broadcast, c.y, c.params->alpha, c.params->beta, c.params->epilogue,
                   c.config);
     }},
};

ImplTable<GemmImpl, GemmCall> fp32_table() {
  return {"gemm fp32", "gemm", kFp32Rows};
}

// A call for the table's questions only (no checks, no data needed).
GemmCall fp32_call(const Queue& queue, View2<const float> a, View2<const float> b, View2<float> y,
                   const GemmParams& params) {
  GemmCall call{&queue, {}, y, &params, {}};
  call.ops.op_a = params.trans_a ? transposed(a) : a;
  call.ops.op_b = params.trans_b ? transposed(b) : b;
  call.ops.m = y.extent[0], call.ops.n = y.extent[1], call.ops.k = call.ops.op_a.extent[1];
  return call;
}

}  // namespace

void gemm(const Queue& queue, View2<const float> a, View2<const float> b, View2<const float> c,
          View2<float> y, const GemmParams& params, LaunchConfig config) {
  const GemmOperands ops = check_gemm(a, b, c, y, params, config);
  if (y.size() == 0) return;
  require(params.impl != GemmImpl::kAvx512Bf16, "gemm", "impl kAvx512Bf16",
          "bf16 operands (this call has fp32 ones)", "fp32 A and B");
  const GemmCall call{&queue, ops, y, &params, config};
  const ImplTable<GemmImpl, GemmCall> table = fp32_table();
  table.run(table.choose(params.impl, GemmImpl::kAuto, call), call);
}

GemmImpl gemm_chosen_impl(const Queue& queue, View2<const float> a, View2<const float> b,
                          View2<float> y, const GemmParams& params) {
  require(params.impl != GemmImpl::kAvx512Bf16, "gemm", "impl kAvx512Bf16",
          "bf16 operands (this call has fp32 ones)", "fp32 A and B");
  return fp32_table().choose(params.impl, GemmImpl::kAuto, fp32_call(queue, a, b, y, params));
}

std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const float> a,
                                        View2<const float> b, View2<float> y,
                                        const GemmParams& params) {
  return fp32_table().runnable(fp32_call(queue, a, b, y, params));
}

std::string gemm_unavailable(const Queue& queue, GemmImpl impl, View2<const float> a,
                             View2<const float> b, View2<float> y, const GemmParams& params) {
  const ImplTable<GemmImpl, GemmCall> table = fp32_table();
  const auto* row = table.find(impl);
  return row == nullptr ? "not an fp32 implementation"
                        : table.why_not(*row, fp32_call(queue, a, b, y, params));
}

namespace {

template <class T, class TY>
struct ReducedCall {
  const Queue* queue;
  GemmOperandsOf<T> ops;
  View2<TY> y;
  const GemmParams* params;
  LaunchConfig config;
};

template <class T, class TY>
std::string reduced_no_skip(const ReducedCall<T, TY>&) {
  return {};
}

// The widened AVX-512 tiles: each cache block of op(A), op(B) widened exactly to fp32.
template <class T, class TY>
std::string widened_unfit(const ReducedCall<T, TY>& c) {
  if (!std::is_same_v<TY, float>) return "needs an fp32 Y";
  if (c.ops.op_a.stride[1] != 1 || c.ops.op_b.stride[1] != 1 || c.y.stride[1] != 1) {
    return "op(A), op(B) and Y need unit column strides (row-major, not transposed)";
  }
  if (c.ops.n % 16 != 0) return "N = " + std::to_string(c.ops.n) + " is not a multiple of 16";
  return {};
}

// vdpbf16ps over op(B) packed in K pairs.
template <class T, class TY>
std::string pairs_unfit(const ReducedCall<T, TY>& c) {
  if (!std::is_same_v<TY, float>) return "needs an fp32 Y";
  const GemmPackedBf16* packed = c.params->packed_b;
  if (packed == nullptr || packed->pairs == nullptr) return "needs params.packed_b";
  if (packed->k != c.ops.k || packed->n != c.ops.n) {
    return "params.packed_b of K x N = " + shape(packed->k, packed->n) + ", op(B) is " +
           shape(c.ops.k, c.ops.n);
  }
  if (c.ops.op_a.stride[1] != 1 || c.y.stride[1] != 1) {
    return "op(A) and Y need unit column strides";
  }
  if (c.ops.n % 16 != 0) return "N = " + std::to_string(c.ops.n) + " is not a multiple of 16";
  return {};
}

template <class T, class TY>
void run_widened(const ReducedCall<T, TY>& c) {
  if constexpr (std::is_same_v<TY, float>) {
    const GemmParams& params = *c.params;
    fill_with_c(*c.queue, c.ops.c_broadcast, params.beta, c.y);
    const simd::GemmHalfArgs args{reinterpret_cast<const uint16_t*>(c.ops.op_a.data),
                                  c.ops.op_a.stride[0],
                                  reinterpret_cast<const uint16_t*>(c.ops.op_b.data),
                                  c.ops.op_b.stride[0],
                                  c.y.data,
                                  c.y.stride[0],
                                  c.ops.m,
                                  c.ops.n,
                                  c.ops.k,
                                  params.alpha,
                                  params.epilogue,
                                  traits_of(c.queue->backend_id()).threads};
    if constexpr (std::is_same_v<T, fp16>) return simd::gemm_avx512_fp16(args);
    return simd::gemm_avx512_bf16_widened(args);
  }
}

template <class T, class TY>
void run_pairs(const ReducedCall<T, TY>& c) {
  if constexpr (std::is_same_v<T, bf16> && std::is_same_v<TY, float>) {
    const GemmParams& params = *c.params;
    fill_with_c(*c.queue, c.ops.c_broadcast, params.beta, c.y);
    const simd::GemmBf16PairsArgs args{reinterpret_cast<const uint16_t*>(c.ops.op_a.data),
                                       c.ops.op_a.stride[0],
                                       reinterpret_cast<const uint16_t*>(params.packed_b->pairs),
                                       c.y.data,
                                       c.y.stride[0],
                                       c.ops.m,
                                       c.ops.n,
                                       c.ops.k,
                                       params.alpha,
                                       params.epilogue,
                                       traits_of(c.queue->backend_id()).threads};
    simd::gemm_avx512_bf16(args);
  }
}

template <class T, class TY>
void run_reduced_portable(const ReducedCall<T, TY>& c) {
  KAAS_LAUNCH(*c.queue, gemm_portable_launch, *c.queue, c.ops.op_a, c.ops.op_b, c.ops.c_broadcast,
              c.y, c.params->alpha, c.params->beta, c.params->epilogue, c.config);
}

// Measured (bench/results/emtrk-precision-cpu.md): widening row-major 16-bit blocks to fp32 for
// the fp32 tiles beats vdpbf16ps on this class of CPU, whose bf16 dot-product peak equals its fp32
// FMA peak; the packed AVX512-BF16 kernel serves a transposed B. The portable kernel is the
// oracle of both.
template <class T, class TY>
ImplTable<GemmImpl, ReducedCall<T, TY>> reduced_table() {
  using Call = ReducedCall<T, TY>;
  using Row = ImplRow<GemmImpl, Call>;
  static const std::vector<Row> rows = [] {
    std::vector<Row> list;
    list.push_back(
        {GemmImpl::kAvx512, "avx512", IsaTier::kAvx512, "fp32 chain of widened values",
         [](const Queue& q) { return compiled_host_simd(q, simd::gemm_avx512_compiled()); },
         widened_unfit<T, TY>, reduced_no_skip<T, TY>, run_widened<T, TY>});
    if constexpr (std::is_same_v<T, bf16>) {  // vdpbf16ps: bf16 only
      list.push_back(
          {GemmImpl::kAvx512Bf16, "avx512_bf16", IsaTier::kAvx512Bf16, "vdpbf16ps pairs",
           [](const Queue& q) { return compiled_host_simd(q, simd::gemm_avx512_bf16_compiled()); },
           pairs_unfit<T, TY>, reduced_no_skip<T, TY>, run_pairs<T, TY>});
    }
    list.push_back({GemmImpl::kPortable, "portable", IsaTier::kPortable, "portable", any_backend,
                    always_fits<Call>, reduced_no_skip<T, TY>, run_reduced_portable<T, TY>});
    return list;
  }();
  return {std::is_same_v<T, bf16> ? "gemm bf16" : "gemm fp16", "gemm", rows};
}

template <class T, class TY>
ReducedCall<T, TY> reduced_call(const Queue& queue, View2<const T> a, View2<const T> b, View2<TY> y,
                                const GemmParams& params) {
  ReducedCall<T, TY> call{&queue, {}, y, &params, {}};
  call.ops.op_a = params.trans_a ? transposed(a) : a;
  call.ops.op_b = params.trans_b ? transposed(b) : b;
  call.ops.m = y.extent[0], call.ops.n = y.extent[1], call.ops.k = call.ops.op_a.extent[1];
  return call;
}

// The reduced-precision products: the portable kernel (the oracle of any faster path), the
// widened AVX-512 tiles, or the AVX512-BF16 pairs for bf16 with a packed B.
template <class T, class TY>
void gemm_reduced(const Queue& queue, View2<const T> a, View2<const T> b, View2<const float> c,
                  View2<TY> y, const GemmParams& params, const LaunchConfig& config) {
  const GemmOperandsOf<T> ops = check_gemm(a, b, c, y, params, config);
  const ReducedCall<T, TY> call{&queue, ops, y, &params, config};
  const ImplTable<GemmImpl, ReducedCall<T, TY>> table = reduced_table<T, TY>();
  const GemmImpl impl = table.choose(params.impl, GemmImpl::kAuto, call);
  if (y.size() == 0) return;
  table.run(impl, call);
}

}  // namespace

void gemm(const Queue& queue, View2<const bf16> a, View2<const bf16> b, View2<const float> c,
          View2<float> y, const GemmParams& params, LaunchConfig config) {
  gemm_reduced(queue, a, b, c, y, params, config);
}
void gemm(const Queue& queue, View2<const bf16> a, View2<const bf16> b, View2<const float> c,
          View2<bf16> y, const GemmParams& params, LaunchConfig config) {
  gemm_reduced(queue, a, b, c, y, params, config);
}
void gemm(const Queue& queue, View2<const fp16> a, View2<const fp16> b, View2<const float> c,
          View2<float> y, const GemmParams& params, LaunchConfig config) {
  gemm_reduced(queue, a, b, c, y, params, config);
}
void gemm(const Queue& queue, View2<const fp16> a, View2<const fp16> b, View2<const float> c,
          View2<fp16> y, const GemmParams& params, LaunchConfig config) {
  gemm_reduced(queue, a, b, c, y, params, config);
}

std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const bf16> a,
                                        View2<const bf16> b, View2<float> y,
                                        const GemmParams& params) {
  return reduced_table<bf16, float>().runnable(reduced_call(queue, a, b, y, params));
}
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const bf16> a,
                                        View2<const bf16> b, View2<bf16> y,
                                        const GemmParams& params) {
  return reduced_table<bf16, bf16>().runnable(reduced_call(queue, a, b, y, params));
}
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const fp16> a,
                                        View2<const fp16> b, View2<float> y,
                                        const GemmParams& params) {
  return reduced_table<fp16, float>().runnable(reduced_call(queue, a, b, y, params));
}
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const fp16> a,
                                        View2<const fp16> b, View2<fp16> y,
                                        const GemmParams& params) {
  return reduced_table<fp16, fp16>().runnable(reduced_call(queue, a, b, y, params));
}

std::string_view gemm_impl_name(GemmImpl impl) {
  if (impl == GemmImpl::kAuto) return "auto";
  if (const auto* row = fp32_table().find(impl)) return row->name;
  if (const auto* row = reduced_table<bf16, float>().find(impl)) return row->name;
  return "unknown";
}

GemmImpl gemm_impl_from_name(std::string_view name) {
  if (name == "auto") return GemmImpl::kAuto;
  if (const auto* row = fp32_table().find(name)) return row->impl;
  if (const auto* row = reduced_table<bf16, float>().find(name)) return row->impl;
  throw Error(ErrorCode::kInvalidArgument, "gemm: impl '" + escape_for_message(name, 64) +
                                               "': expected auto, " + fp32_table().names() +
                                               " or avx512_bf16");
}

std::vector<ImplTableInfo> gemm_impl_tables() {
  return {fp32_table().info(), reduced_table<bf16, float>().info(),
          reduced_table<fp16, float>().info()};
}

void dense(const Queue& queue, View2<const float> x, View2<const float> w, View1<const float> bias,
           View2<float> y, const Epilogue& epilogue, GemmImpl impl) {
  View2<const float> c;
  if (bias.extent[0] > 0) {
    require(bias.extent[0] == w.extent[1], "dense", "bias extent",
            std::to_string(w.extent[1]) + " (columns of W)", std::to_string(bias.extent[0]));
    c.data = bias.data;
    c.extent[0] = 1, c.extent[1] = bias.extent[0];
    c.stride[0] = 0, c.stride[1] = bias.stride[0];
  }
  GemmParams params;
  params.epilogue = epilogue;
  params.impl = impl;
  gemm(queue, x, w, c, y, params);
}

void matmul(const Queue& queue, const float* a, std::span<const int64_t> a_shape, const float* b,
            std::span<const int64_t> b_shape, float* y, GemmImpl impl) {
  const char* where = "matmul";
  require(a_shape.size() >= 2, where, "A rank", ">= 2", std::to_string(a_shape.size()));
  require(b_shape.size() >= 2, where, "B rank", ">= 2", std::to_string(b_shape.size()));
  const size_t rank = std::max(a_shape.size(), b_shape.size());
  const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back();
  const int64_t n = b_shape.back();
  require(b_shape[b_shape.size() - 2] == k, where, "B rows (K)", std::to_string(k),
          std::to_string(b_shape[b_shape.size() - 2]));
  // Batch dimensions, right-aligned, broadcast numpy-style.
  const size_t batch_rank = rank - 2;
  std::vector<int64_t> a_batch(batch_rank, 1), b_batch(batch_rank, 1), y_batch(batch_rank, 1);
  for (size_t i = 0; i + 2 < a_shape.size(); ++i)
    a_batch[batch_rank - (a_shape.size() - 2) + i] = a_shape[i];
  for (size_t i = 0; i + 2 < b_shape.size(); ++i)
    b_batch[batch_rank - (b_shape.size() - 2) + i] = b_shape[i];
  for (size_t d = 0; d < batch_rank; ++d) {
    require(a_batch[d] == b_batch[d] || a_batch[d] == 1 || b_batch[d] == 1, where,
            "batch dimension " + std::to_string(d),
            "equal or 1 (A has " + std::to_string(a_batch[d]) + ")", std::to_string(b_batch[d]));
    y_batch[d] = std::max(a_batch[d], b_batch[d]);
  }
  int64_t batches = 1;
  for (int64_t v : y_batch) batches *= v;
  GemmParams params;
  params.impl = impl;
  params.rows_independent = true;  // the models' MatMul: a row's bits never follow its batch
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t flat = 0; flat < batches; ++flat) {
    int64_t rest = flat, a_offset = 0, b_offset = 0, a_stride = 1, b_stride = 1;
    for (size_t d = batch_rank; d-- > 0;) {
      index[d] = rest % y_batch[d];
      rest /= y_batch[d];
      a_offset += (a_batch[d] == 1 ? 0 : index[d]) * a_stride;
      b_offset += (b_batch[d] == 1 ? 0 : index[d]) * b_stride;
      a_stride *= a_batch[d];
      b_stride *= b_batch[d];
    }
    gemm(queue, make_view<2>(a + a_offset * m * k, {m, k}),
         make_view<2>(b + b_offset * k * n, {k, n}), View2<const float>{},
         make_view<2>(y + flat * m * n, {m, n}), params);
  }
}

}  // namespace kaas
