#pragma once
// Puts the including translation unit into exactly one backend. CMake compiles every
// `*.kern.cc` once per enabled backend with exactly one of these macros defined; the
// backend's namespace is `kaas::KAAS_BACKEND_NS`.

#if (defined(KAAS_BACKEND_SERIAL) + defined(KAAS_BACKEND_OPENMP) + defined(KAAS_BACKEND_GPU_EMU) + \
     defined(KAAS_BACKEND_CUDA) + defined(KAAS_BACKEND_HIP)) == 0
#error "kaas: no backend selected; define exactly one KAAS_BACKEND_{SERIAL,OPENMP,GPU_EMU,CUDA,HIP}"
#elif (defined(KAAS_BACKEND_SERIAL) + defined(KAAS_BACKEND_OPENMP) + \
       defined(KAAS_BACKEND_GPU_EMU) + defined(KAAS_BACKEND_CUDA) + defined(KAAS_BACKEND_HIP)) > 1
#error \
    "kaas: more than one backend selected; define exactly one KAAS_BACKEND_{SERIAL,OPENMP,GPU_EMU,CUDA,HIP}"
#endif

#include "kaas/backends/portability.h"

#if defined(KAAS_BACKEND_SERIAL)
#define KAAS_BACKEND_NS serial
#define KAAS_BACKEND_IS_GPU 0
#elif defined(KAAS_BACKEND_OPENMP)
#define KAAS_BACKEND_NS openmp
#define KAAS_BACKEND_IS_GPU 0
#elif defined(KAAS_BACKEND_GPU_EMU)
#define KAAS_BACKEND_NS gpu_emu
#define KAAS_BACKEND_IS_GPU 0
#elif defined(KAAS_BACKEND_CUDA)
#define KAAS_BACKEND_NS cuda
#define KAAS_BACKEND_IS_GPU 1
#elif defined(KAAS_BACKEND_HIP)
#define KAAS_BACKEND_NS hip
#define KAAS_BACKEND_IS_GPU 1
#endif

#if KAAS_BACKEND_IS_GPU && !KAAS_GPU_COMPILER
#error "kaas: a GPU backend must be compiled by nvcc or hipcc"
#endif

// Marks a kernel functor's call operator: device code on GPU backends, plain code on CPU ones.
#if KAAS_BACKEND_IS_GPU
#define KAAS_KERNEL __device__
#define KAAS_DEVICE __device__
#else
#define KAAS_KERNEL
#define KAAS_DEVICE
#endif
