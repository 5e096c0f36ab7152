#pragma once
// Run-time dispatch from a type-erased Queue to the launcher compiled for its backend. Public
// kernel entry points (kernels/<name>.cc) use these macros, so they never test a backend macro
// themselves; the arms are generated from KAAS_BACKEND_LIST.
//
//   KAAS_DECLARE_LAUNCHER(void, axpy_launch, (const Queue&, float, View1<const float>, ...))
//     declares kaas::<backend>::axpy_launch for every compiled backend (at namespace kaas).
//   KAAS_RETURN_LAUNCH(queue, axpy_launch, queue, a, x, y);
//     returns from the enclosing function what the launcher of queue.backend_id() returns.
//   KAAS_LAUNCH(queue, gemm_fill_launch, queue, ...);
//     calls it as a statement; the enclosing function goes on.

#include <string>

#include "kaas/backends/backend_list.h"
#include "kaas/backends/queue.h"
#include "kaas/build_config.h"
#include "kaas/common/error.h"

#define KAAS_DECLARE_LAUNCHER_IN(ns, id, macro, preference, traits, ret, name, params) \
  KAAS_IF_COMPILED(                                                                    \
      macro, namespace ns { ret name params; })
#define KAAS_DECLARE_LAUNCHER(ret, name, params) \
  KAAS_BACKEND_LIST(KAAS_DECLARE_LAUNCHER_IN, ret, name, params)

#define KAAS_LAUNCH_ARM(ns, id, macro, preference, traits, launcher, ...) \
  KAAS_IF_COMPILED(macro, case ::kaas::BackendId::id : return ::kaas::ns::launcher(__VA_ARGS__);)

#define KAAS_RETURN_LAUNCH(queue, launcher, ...)                                             \
  do {                                                                                       \
    switch ((queue).backend_id()) {                                                          \
      KAAS_BACKEND_LIST(KAAS_LAUNCH_ARM, launcher, __VA_ARGS__)                              \
      default:                                                                               \
        break;                                                                               \
    }                                                                                        \
    throw ::kaas::Error(::kaas::ErrorCode::kUnimplemented,                                   \
                        std::string(#launcher ": backend '") +                               \
                            std::string((queue).backend().name()) + "' is not compiled in"); \
  } while (false)

#define KAAS_LAUNCH(queue, launcher, ...) \
  [&] { KAAS_RETURN_LAUNCH(queue, launcher, __VA_ARGS__); }()
