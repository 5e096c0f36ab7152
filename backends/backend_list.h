#pragma once
// The one list of kaas's backends. Everything that enumerates them (the BackendId enum, the
// launcher declarations and dispatch arms, the registry, help texts) expands this list; its
// build-side twin is KAAS_ALL_BACKENDS in cmake/KaasBackends.cmake (test_core checks that the
// two agree), and the generated kaas/build_config.h says which are compiled in
// (KAAS_HAVE_<MACRO> 0 or 1). Code that must differ per backend lives in the backend's folder
// and in its block of backends/config.h.
//
// Adding a backend: a folder under backends/, one line here, its traits (backend_traits.h), its
// block in config.h, its name in KAAS_ALL_BACKENDS and its branch in kaas_add_backend_objects.
//
// X(namespace and name, BackendId enumerator, macro suffix, "auto" preference (0: never), ...)
// where "..." forwards the list's extra arguments to X.
#define KAAS_BACKEND_LIST(X, ...)              \
  X(serial, kSerial, SERIAL, 1, __VA_ARGS__)   \
  X(openmp, kOpenmp, OPENMP, 3, __VA_ARGS__)   \
  X(tbb, kTbb, TBB, 2, __VA_ARGS__)            \
  X(gpu_emu, kGpuEmu, GPU_EMU, 0, __VA_ARGS__) \
  X(cuda, kCuda, CUDA, 5, __VA_ARGS__)         \
  X(hip, kHip, HIP, 4, __VA_ARGS__)

// KAAS_IF_COMPILED(MACRO, tokens...): the tokens when backend MACRO is compiled in, else nothing.
#define KAAS_EXPAND_IF_0(...)
#define KAAS_EXPAND_IF_1(...) __VA_ARGS__
#define KAAS_EXPAND_IF_(flag, ...) KAAS_EXPAND_IF_##flag(__VA_ARGS__)
#define KAAS_EXPAND_IF(flag, ...) KAAS_EXPAND_IF_(flag, __VA_ARGS__)
#define KAAS_IF_COMPILED(macro, ...) KAAS_EXPAND_IF(KAAS_HAVE_##macro, __VA_ARGS__)
