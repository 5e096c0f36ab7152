#pragma once
// The GPU backends' 16-bit conversions (included by backends/half.h under nvcc and hipcc): in
// the device pass the runtime's native types and intrinsics (CUDA's __nv_bfloat16 / __half,
// HIP's hip_bfloat16 / __half); host code of the same translation unit uses half.h's portable
// versions. All round to nearest even and keep infinities and NaNs, so host and device
// agree bit for bit except for the payload bits of a NaN.

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#elif defined(__HIPCC__)
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#endif

namespace kaas::math {

// nvcc: device pass only (it cannot overload on __host__ / __device__); hipcc (clang) checks
// device bodies in its host pass too and overloads on the target, so both passes see these.
#if defined(__CUDA_ARCH__) || defined(__HIPCC__)

__device__ inline float to_float(bf16 v) {
#if defined(__CUDACC__)
  return __bfloat162float(__ushort_as_bfloat16(v.bits));
#else
  hip_bfloat16 h;
  h.data = v.bits;
  return float(h);
#endif
}

__device__ inline float to_float(fp16 v) {
  return __half2float(__ushort_as_half(v.bits));
}

__device__ inline bf16 to_bf16(float f) {
#if defined(__CUDACC__)
  return bf16{__bfloat16_as_ushort(__float2bfloat16_rn(f))};
#else
  return bf16{hip_bfloat16(f).data};  // HIP's constructor rounds to nearest even
#endif
}

__device__ inline fp16 to_fp16(float f) {
  return fp16{__half_as_ushort(__float2half_rn(f))};
}

#endif

}  // namespace kaas::math
