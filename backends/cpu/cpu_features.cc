#include "kaas/backends/cpu/cpu_features.h"

#include <cstdlib>
#include <string>

#include "kaas/common/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kaas {

namespace {

#if defined(__x86_64__)
unsigned long long xgetbv0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
  const bool ymm_state = (xcr0 & 0x6) == 0x6;                 // SSE + AVX registers saved by the OS
  const bool zmm_state = ymm_state && (xcr0 & 0xE0) == 0xE0;  // opmask + ZMM state
  f.sse42 = (c >> 20) & 1;
  f.fma = ((c >> 12) & 1) && ymm_state;
  f.avx = ((c >> 28) & 1) && ymm_state;
  f.f16c = ((c >> 29) & 1) && ymm_state;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.bmi1 = (b >> 3) & 1;
    f.avx2 = ((b >> 5) & 1) && ymm_state;
    f.bmi2 = (b >> 8) & 1;
    f.avx512f = ((b >> 16) & 1) && zmm_state;
    f.avx512dq = ((b >> 17) & 1) && zmm_state;
    f.avx512bw = ((b >> 30) & 1) && zmm_state;
    f.avx512vl = ((b >> 31) & 1) && zmm_state;
    f.avx512vnni = ((c >> 11) & 1) && zmm_state;
    f.avx512fp16 = ((d >> 23) & 1) && zmm_state;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = ((a >> 5) & 1) && zmm_state;
#endif
  return f;
}

enum class IsaCap { kPortable, kAvx2, kAvx512, kAll };

IsaCap read_cap() {
  const char* value = std::getenv("KAAS_MAX_CPU_ISA");
  if (value == nullptr || value[0] == '\0') return IsaCap::kAll;
  const std::string cap = value;
  if (cap == "portable") return IsaCap::kPortable;
  if (cap == "avx2") return IsaCap::kAvx2;
  if (cap == "avx512") return IsaCap::kAvx512;
  if (cap == "avx512_bf16" || cap == "all") return IsaCap::kAll;
  throw Error(ErrorCode::kInvalidArgument,
              "KAAS_MAX_CPU_ISA: expected portable, avx2, avx512 or avx512_bf16, received '" +
                  escape_for_message(cap, 64) + "'");
}

CpuFeatures capped(CpuFeatures f, IsaCap cap) {
  if (cap == IsaCap::kAll) return f;
  f.avx512vnni = f.avx512bf16 = f.avx512fp16 = false;
  if (cap == IsaCap::kAvx512) return f;
  f.avx512f = f.avx512dq = f.avx512bw = f.avx512vl = false;
  if (cap == IsaCap::kAvx2) return f;
  f.avx2 = f.fma = f.f16c = false;
  return f;
}

}  // namespace

const CpuFeatures& detected_cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = capped(detected_cpu_features(), read_cap());
  return features;
}

const char* cpu_isa_cap() {
  const char* value = std::getenv("KAAS_MAX_CPU_ISA");
  return value == nullptr || value[0] == '\0' ? "avx512_bf16" : value;
}

std::string_view to_string(IsaTier tier) {
  switch (tier) {
    case IsaTier::kPortable:
      return "portable";
    case IsaTier::kAvx2:
      return "avx2";
    case IsaTier::kAvx512:
      return "avx512";
    case IsaTier::kAvx512Bf16:
      return "avx512_bf16";
  }
  return "unknown";
}

namespace {

// The highest tier whose instructions `f` has all of (the kernels' own checks ask the same).
IsaTier tier_of(const CpuFeatures& f) {
  if (!(f.avx2 && f.fma)) return IsaTier::kPortable;
  if (!(f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)) return IsaTier::kAvx2;
  return f.avx512bf16 ? IsaTier::kAvx512Bf16 : IsaTier::kAvx512;
}

}  // namespace

IsaTier detected_isa_tier() {
  static const IsaTier tier = tier_of(detected_cpu_features());
  return tier;
}

IsaTier usable_isa_tier() {
  static const IsaTier tier = tier_of(cpu_features());
  return tier;
}

std::string isa_tier_unavailable(IsaTier tier) {
  if (tier > detected_isa_tier()) {
    switch (tier) {
      case IsaTier::kAvx2:
        return "this CPU lacks AVX2 + FMA";
      case IsaTier::kAvx512:
        return "this CPU lacks AVX-512 F/BW/VL/DQ";
      default:
        return "this CPU lacks AVX512-BF16";
    }
  }
  if (tier > usable_isa_tier()) return std::string("capped: KAAS_MAX_CPU_ISA=") + cpu_isa_cap();
  return {};
}

}  // namespace kaas
