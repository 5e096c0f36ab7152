#pragma once
// Run-time dispatch from a type-erased Queue to the launcher compiled for its backend. Public
// kernel entry points (kernels/<name>.cc) use these two macros, so they never test a backend
// macro themselves.
//
//   KAAS_DECLARE_LAUNCHER(void, axpy_launch, (const Queue&, float, View1<const float>, ...))
//     declares kaas::<backend>::axpy_launch for every compiled backend (at namespace kaas).
//   KAAS_DISPATCH(queue, axpy_launch, queue, a, x, y)
//     calls the one matching queue.backend_id().

#include <string>

#include "kaas/backends/error.h"
#include "kaas/backends/queue.h"
#include "kaas/build_config.h"

#define KAAS_EXPAND_IF_0(...)
#define KAAS_EXPAND_IF_1(...) __VA_ARGS__
#define KAAS_EXPAND_IF_(flag, ...) KAAS_EXPAND_IF_##flag(__VA_ARGS__)
#define KAAS_EXPAND_IF(flag, ...) KAAS_EXPAND_IF_(flag, __VA_ARGS__)

#define KAAS_DECLARE_LAUNCHER(ret, name, params)                 \
  KAAS_EXPAND_IF(                                                \
      KAAS_HAVE_SERIAL, namespace serial { ret name params; })   \
  KAAS_EXPAND_IF(                                                \
      KAAS_HAVE_OPENMP, namespace openmp { ret name params; })   \
  KAAS_EXPAND_IF(                                                \
      KAAS_HAVE_GPU_EMU, namespace gpu_emu { ret name params; }) \
  KAAS_EXPAND_IF(                                                \
      KAAS_HAVE_CUDA, namespace cuda { ret name params; })       \
  KAAS_EXPAND_IF(                                                \
      KAAS_HAVE_HIP, namespace hip { ret name params; })

// The same as a statement that does not return from the caller.
#define KAAS_DISPATCH_VOID(queue, launcher, ...) \
  [&] { KAAS_DISPATCH(queue, launcher, __VA_ARGS__); }()

#define KAAS_DISPATCH(queue, launcher, ...)                                                  \
  do {                                                                                       \
    switch ((queue).backend_id()) {                                                          \
      KAAS_EXPAND_IF(KAAS_HAVE_SERIAL, case ::kaas::BackendId::kSerial                       \
                     : return ::kaas::serial::launcher(__VA_ARGS__);)                        \
      KAAS_EXPAND_IF(KAAS_HAVE_OPENMP, case ::kaas::BackendId::kOpenmp                       \
                     : return ::kaas::openmp::launcher(__VA_ARGS__);)                        \
      KAAS_EXPAND_IF(KAAS_HAVE_GPU_EMU, case ::kaas::BackendId::kGpuEmu                      \
                     : return ::kaas::gpu_emu::launcher(__VA_ARGS__);)                       \
      KAAS_EXPAND_IF(KAAS_HAVE_CUDA, case ::kaas::BackendId::kCuda                           \
                     : return ::kaas::cuda::launcher(__VA_ARGS__);)                          \
      KAAS_EXPAND_IF(KAAS_HAVE_HIP, case ::kaas::BackendId::kHip                             \
                     : return ::kaas::hip::launcher(__VA_ARGS__);)                           \
      default:                                                                               \
        break;                                                                               \
    }                                                                                        \
    throw ::kaas::Error(::kaas::ErrorCode::kUnimplemented,                                   \
                        std::string(#launcher ": backend '") +                               \
                            std::string((queue).backend().name()) + "' is not compiled in"); \
  } while (false)
