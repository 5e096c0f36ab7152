#pragma once
// GEMM with ONNX Gemm semantics, MatMul with batch broadcasting, and dense = act(X.W + b).
// Implementations form an ordered list (oneDNN style): the vendor BLAS of the queue's backend
// where this build has one (OpenBLAS on openmp, cuBLAS on cuda) and the operands allow it, else
// the portable tiled kernel, which is always present and is the oracle of the tests.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/half.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/kernels/activation.h"

namespace kaas {

// The rows of the fp32 and 16-bit tables (kernels/gemm.cc, kernels/impl_table.h).
enum class GemmImpl {
  kAuto,        // the first row that applies: fp32 kAvx512, kVendor (not with rows_independent),
                // kAvx2, kPortable; 16-bit kAvx512 (widened), kAvx512Bf16, kPortable
  kPortable,    // the single-source tiled kernel
  kVendor,      // vendor BLAS or an kUnimplemented error
  kAvx512,      // serial/openmp on an AVX-512 CPU, row-major A, B and Y, N % 16 == 0
  kAvx2,        // serial/openmp on an AVX2 + FMA CPU, row-major A, B and Y, N % 8 == 0
  kAvx512Bf16,  // bf16 operands: serial/openmp on an AVX512-BF16 CPU, row-major A, fp32 row-major
                // Y, N % 16 == 0, op(B) packed in K-pairs (GemmParams::packed_b)
};

// op(B) of a bf16 product packed once (at model load) for kAvx512Bf16, whose vdpbf16ps
// multiplies pairs of consecutive k: [ceil(K/2)][N][2] bf16, an odd K's last pair padded with
// zero. Host memory; the caller keeps it alive and equal to op(B).
struct GemmPackedBf16 {
  const bf16* pairs = nullptr;
  int64_t k = 0, n = 0;
};
int64_t gemm_packed_bf16_elements(int64_t k, int64_t n);
// Packs op(b) (host-readable memory) into `pairs` (gemm_packed_bf16_elements(K, N) values).
GemmPackedBf16 gemm_pack_bf16(View2<const bf16> op_b, bf16* pairs);
// The packed rows [k0, k0 + kc) of op(B); k0 even.
GemmPackedBf16 gemm_packed_rows(const GemmPackedBf16& packed, int64_t k0, int64_t kc);

// op(B) of an fp32 product packed once (at model load) in panels of W columns for kAvx512 and
// kAvx2: element (k, j) at data[(j / W) * panel_stride + k * W + j % W] (the last panel zero
// padded). A thread owns whole panels (threads split columns, never K), so with few rows --
// batch 1, where B is megabytes and each element is used once -- it streams its panels alone
// instead of every thread touching every row of B. W = 64 (kGemmPanelColumns) is a multiple of
// both fast paths' tile widths; W = 16 is AVX2's tile width, whose tiles then read their rows of
// B contiguously instead of copying each K block's slice into a strip first (13 % of the fused
// model's time on the AVX2 tier of a Zen 4). A tile wider than W reads B as stored. Host memory;
// the caller keeps it alive and equal to op(B).
constexpr int64_t kGemmPanelColumns = 64;
constexpr int64_t kGemmAvx2PanelColumns = 16;
struct GemmPackedPanels {
  const float* data = nullptr;
  int64_t k = 0, n = 0, panel_stride = 0;
  int64_t panel_columns = kGemmPanelColumns;  // W, a multiple of 16
};
int64_t gemm_packed_panels_elements(int64_t k, int64_t n,
                                    int64_t panel_columns = kGemmPanelColumns);
// Packs op(b) (host-readable memory) into `data` (gemm_packed_panels_elements(K, N, W) values).
GemmPackedPanels gemm_pack_panels(View2<const float> op_b, float* data,
                                  int64_t panel_columns = kGemmPanelColumns);
// The packed rows [k0, k0 + kc) of op(B).
GemmPackedPanels gemm_packed_rows(const GemmPackedPanels& packed, int64_t k0, int64_t kc);

struct GemmParams {
  bool trans_a = false;  // op(A) = A^T: a is [K, M]
  bool trans_b = false;  // op(B) = B^T: b is [N, K]
  float alpha = 1.0f;
  float beta = 1.0f;
  Epilogue epilogue;  // applied last
  GemmImpl impl = GemmImpl::kAuto;
  // kAuto only picks implementations whose row results do not depend on M or on the other rows
  // (not vendor BLAS, which rounds differently for different M): for model plans whose outputs
  // must not depend on batch composition.
  bool rows_independent = false;
  // bf16 operands only: op(b) packed for kAvx512Bf16, which kAuto picks when the widened
  // kAvx512 path does not apply (a transposed B); b itself is still what the portable kernel
  // reads.
  const GemmPackedBf16* packed_b = nullptr;
  // fp32 operands: op(b) packed in column panels, read by kAvx512 and kAvx2 instead of b (the
  // same values, so the same bits); other implementations read b.
  const GemmPackedPanels* packed_panels = nullptr;
  // fp32 on kAvx512 / kAvx2 with alpha 1: K in chunks of this many (0: one chain over all of K),
  // each chained from zero and added to y in K order -- the same bits for any thread count and
  // for K cut into calls at chunk boundaries (the fused plan's slab passes: a conv output row's
  // K each), and a batch-1 product splits K over the threads by whole chunks. Other
  // implementations chain all of K.
  int64_t k_chunk = 0;
};

// y[M,N] = act(alpha * op(a) . op(b) + beta * c). c broadcasts ONNX-style: extents [M,N], [1,N],
// [M,1] or [1,1]; an empty view (extent 0) means no c. Views may be strided.
void gemm(const Queue& queue, View2<const float> a, View2<const float> b, View2<const float> c,
          View2<float> y, const GemmParams& params = {}, LaunchConfig config = {});

// Reduced precision: op(a) and op(b) stored as bf16 or fp16 (both the same type), widened to
// fp32 for the products, which are accumulated in fp32; c, alpha, beta and the epilogue in fp32;
// y fp32 or rounded once (to nearest even) to the operands' type. Runs kPortable, or with an fp32
// y on serial/openmp: kAvx512 for row-major op(A), op(B) (each cache block widened exactly to
// fp32, then the fp32 tiles; measured faster than vdpbf16ps on AVX512-BF16 CPUs whose bf16 peak
// equals their fp32 peak), else kAvx512Bf16 for bf16 with params.packed_b. vdpbf16ps treats
// subnormal inputs as zero and flushes subnormal results, which the portable oracle does not.
void gemm(const Queue& queue, View2<const bf16> a, View2<const bf16> b, View2<const float> c,
          View2<float> y, const GemmParams& params = {}, LaunchConfig config = {});
void gemm(const Queue& queue, View2<const bf16> a, View2<const bf16> b, View2<const float> c,
          View2<bf16> y, const GemmParams& params = {}, LaunchConfig config = {});
void gemm(const Queue& queue, View2<const fp16> a, View2<const fp16> b, View2<const float> c,
          View2<float> y, const GemmParams& params = {}, LaunchConfig config = {});
void gemm(const Queue& queue, View2<const fp16> a, View2<const fp16> b, View2<const float> c,
          View2<fp16> y, const GemmParams& params = {}, LaunchConfig config = {});

// y[M,N] = act(x[M,K] . w[K,N] + bias[N]); bias may be empty.
void dense(const Queue& queue, View2<const float> x, View2<const float> w, View1<const float> bias,
           View2<float> y, const Epilogue& epilogue = {}, GemmImpl impl = GemmImpl::kAuto);

// ONNX MatMul for contiguous tensors of rank >= 2: a [..., M, K] . b [..., K, N] with the
// batch dimensions broadcast numpy-style; y has the broadcast shape [..., M, N]. Rows
// independent (GemmParams::rows_independent): a row's bits never depend on M.
void matmul(const Queue& queue, const float* a, std::span<const int64_t> a_shape, const float* b,
            std::span<const int64_t> b_shape, float* y, GemmImpl impl = GemmImpl::kAuto);

// The implementation gemm() runs for these operands on this queue (params.impl when it can run,
// else kInvalidArgument naming why not).
GemmImpl gemm_chosen_impl(const Queue& queue, View2<const float> a, View2<const float> b,
                          View2<float> y, const GemmParams& params);
// The implementations (kernels/impl_table.h rows, by name, preference order) that can run these
// operands here: the tier (CPU and KAAS_MAX_CPU_ISA), the backend and the call's layout allowing.
// Only shapes, strides and params are read: views with null data ask the same.
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const float> a,
                                        View2<const float> b, View2<float> y,
                                        const GemmParams& params);
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const bf16> a,
                                        View2<const bf16> b, View2<float> y,
                                        const GemmParams& params);
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const bf16> a,
                                        View2<const bf16> b, View2<bf16> y,
                                        const GemmParams& params);
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const fp16> a,
                                        View2<const fp16> b, View2<float> y,
                                        const GemmParams& params);
std::vector<std::string> gemm_impls_for(const Queue& queue, View2<const fp16> a,
                                        View2<const fp16> b, View2<fp16> y,
                                        const GemmParams& params);
// The implementations' names, from the tables ("auto", "portable", "vendor", "avx512", "avx2",
// "avx512_bf16").
std::string_view gemm_impl_name(GemmImpl impl);
GemmImpl gemm_impl_from_name(std::string_view name);  // throws kInvalidArgument
// Empty when fp32 `impl` can run these operands here; else why not (the planner's question).
std::string gemm_unavailable(const Queue& queue, GemmImpl impl, View2<const float> a,
                             View2<const float> b, View2<float> y, const GemmParams& params);
const char* gemm_vendor_name(const Queue& queue);
// Whether this CPU has what kAvx512 needs (AVX-512 F/BW/VL/DQ and FMA, zmm state saved by the
// OS).
bool gemm_avx512_available();
bool gemm_avx2_available();
// Whether this CPU has what kAvx512Bf16 needs (AVX-512 F/BW/VL/DQ, AVX512-BF16, FMA, zmm state
// saved).
bool gemm_avx512_bf16_available();

// Launchers: the tiled kernel, and the element-wise passes around a vendor call.
KAAS_DECLARE_LAUNCHER(void, gemm_portable_launch,
                      (const Queue&, View2<const float>, View2<const float>, View2<const float>,
                       View2<float>, float, float, Epilogue, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, gemm_portable_launch,
                      (const Queue&, View2<const bf16>, View2<const bf16>, View2<const float>,
                       View2<float>, float, float, Epilogue, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, gemm_portable_launch,
                      (const Queue&, View2<const bf16>, View2<const bf16>, View2<const float>,
                       View2<bf16>, float, float, Epilogue, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, gemm_portable_launch,
                      (const Queue&, View2<const fp16>, View2<const fp16>, View2<const float>,
                       View2<float>, float, float, Epilogue, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, gemm_portable_launch,
                      (const Queue&, View2<const fp16>, View2<const fp16>, View2<const float>,
                       View2<fp16>, float, float, Epilogue, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, gemm_fill_launch,
                      (const Queue&, View2<const float>, float, View2<float>))
KAAS_DECLARE_LAUNCHER(void, gemm_epilogue_launch, (const Queue&, Epilogue, View2<float>))

}  // namespace kaas
