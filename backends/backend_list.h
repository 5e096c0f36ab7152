#pragma once
// The one list of kaas's backends. Everything that enumerates them (the BackendId enum, the
// launcher declarations and dispatch arms, the registry, the traits, help texts) expands this
// list, and the build reads its names from it too (cmake/KaasBackends.cmake): the generated
// kaas/build_config.h says which are compiled in (KAAS_HAVE_<MACRO> 0 or 1) and the generated
// kaas/backend_config.h holds each backend's compile-time block (namespace, launch header).
//
// Adding a backend `foo` (docs/extending.md): its folder (runtime side, launch(), and
// foo.cmake declaring its option, compiler, launch header and sources) and one line here.
//
// X(namespace and name, BackendId enumerator, macro suffix, "auto" preference (0: never),
//   traits (host SIMD, host threads, test only: backend_traits.h), ...)
// where "..." forwards the list's extra arguments to X.
#define KAAS_BACKEND_LIST(X, ...)                                                   \
  X(serial, kSerial, SERIAL, 1, (true, HostThreads::kCaller, false), __VA_ARGS__)   \
  X(openmp, kOpenmp, OPENMP, 3, (true, HostThreads::kOpenmp, false), __VA_ARGS__)   \
  X(tbb, kTbb, TBB, 2, (true, HostThreads::kTbb, false), __VA_ARGS__)               \
  X(gpu_emu, kGpuEmu, GPU_EMU, 0, (false, HostThreads::kCaller, true), __VA_ARGS__) \
  X(cuda, kCuda, CUDA, 5, (false, HostThreads::kCaller, false), __VA_ARGS__)        \
  X(hip, kHip, HIP, 4, (false, HostThreads::kCaller, false), __VA_ARGS__)

// KAAS_IF_COMPILED(MACRO, tokens...): the tokens when backend MACRO is compiled in, else nothing.
#define KAAS_EXPAND_IF_0(...)
#define KAAS_EXPAND_IF_1(...) __VA_ARGS__
#define KAAS_EXPAND_IF_(flag, ...) KAAS_EXPAND_IF_##flag(__VA_ARGS__)
#define KAAS_EXPAND_IF(flag, ...) KAAS_EXPAND_IF_(flag, __VA_ARGS__)
#define KAAS_IF_COMPILED(macro, ...) KAAS_EXPAND_IF(KAAS_HAVE_##macro, __VA_ARGS__)
