#pragma once
// What a backend is, as data: library code asks these questions instead of comparing backend IDs,
// so a new CPU backend gets the host SIMD paths and the fused plans by its traits alone.

#include <cstdint>

#include "kaas/backends/backend.h"
#include "kaas/backends/backend_list.h"

namespace kaas {

// Who runs a host kernel's parallel work (backends/cpu/host_team.h).
enum class HostThreads : uint8_t {
  kCaller,  // the calling thread alone
  kOpenmp,  // an OpenMP team of the caller's requested size
  kTbb,     // oneTBB tasks in the caller's arena (or one of the requested size)
};

struct BackendTraits {
  // Kernels run as host code on host memory: the CPU's SIMD paths (AVX2, AVX-512) and the plans
  // built on them (fused conv-dense-heads, sparse first layer) apply.
  bool host_simd = false;
  HostThreads threads = HostThreads::kCaller;
  // An emulator for tests (never chosen by "auto", slow by design).
  bool test_only = false;
};

// From the traits column of KAAS_BACKEND_LIST.
#define KAAS_TRAITS_FIELDS(...) __VA_ARGS__
#define KAAS_TRAITS_CASE(ns, id, macro, preference, traits, ...) \
  case BackendId::id:                                            \
    return BackendTraits{KAAS_TRAITS_FIELDS traits};
constexpr BackendTraits traits_of(BackendId id) {
  switch (id) { KAAS_BACKEND_LIST(KAAS_TRAITS_CASE) }
  return {};
}
#undef KAAS_TRAITS_CASE
#undef KAAS_TRAITS_FIELDS

constexpr bool host_simd(BackendId id) {
  return traits_of(id).host_simd;
}

constexpr bool test_only(BackendId id) {
  return traits_of(id).test_only;
}

}  // namespace kaas
