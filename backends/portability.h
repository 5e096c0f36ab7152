#pragma once
// Attribute macros shared by host code and every backend's device code. This header selects no
// backend: it only reflects which compiler is reading it.

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KAAS_GPU_COMPILER 1
// Callable from host code and from kernels (views, ranges, math).
#define KAAS_HD __host__ __device__
#else
#define KAAS_GPU_COMPILER 0
#define KAAS_HD
#endif

#define KAAS_INLINE_HD inline KAAS_HD
