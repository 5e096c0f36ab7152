#pragma once
// x86 instruction-set features read with CPUID (and XGETBV for the OS-enabled register state).
// Not __builtin_cpu_supports: with the HIP runtime loaded, its exported copy of the compiler
// runtime's __cpu_model can shadow libgcc's, whose feature bits are laid out differently.

#include <cstdint>
#include <string>
#include <string_view>

namespace kaas {

struct CpuFeatures {
  bool sse42 = false, avx = false, avx2 = false, fma = false, bmi1 = false, bmi2 = false,
       f16c = false, avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false,
       avx512vnni = false, avx512bf16 = false, avx512fp16 = false;
};

// The features kernels may use to choose an implementation: what the CPU has, capped by the
// environment variable KAAS_MAX_CPU_ISA (as oneDNN's ONEDNN_MAX_CPU_ISA), so that a machine runs
// and tests the paths of a lesser one:
//   portable     no hand-written SIMD kernel (the portable kernels, as the compiler built them)
//   avx2         AVX2 + FMA + F16C (x86-64-v3), no AVX-512
//   avx512       + AVX-512 F/BW/VL/DQ, without VNNI, BF16 and FP16
//   avx512_bf16  everything the CPU has (the default; "all" means the same)
// An unknown value throws kInvalidArgument naming the variable and the accepted values.
const CpuFeatures& cpu_features();

// What the CPU itself has, uncapped (whether it runs the code the backends were built for).
const CpuFeatures& detected_cpu_features();

// KAAS_MAX_CPU_ISA as read (the default "avx512_bf16" when unset).
const char* cpu_isa_cap();

// The instruction-set tiers of the implementation tables (kernels/impl_table.h), lowest first;
// their names are KAAS_MAX_CPU_ISA's values.
enum class IsaTier : uint8_t { kPortable, kAvx2, kAvx512, kAvx512Bf16 };
inline constexpr IsaTier kIsaTiers[] = {IsaTier::kPortable, IsaTier::kAvx2, IsaTier::kAvx512,
                                        IsaTier::kAvx512Bf16};
std::string_view to_string(IsaTier tier);
// The highest tier the CPU itself has, and the highest this process may use (the cap applied).
IsaTier detected_isa_tier();
IsaTier usable_isa_tier();
// Empty when code of `tier` may run in this process; else why not: "capped: KAAS_MAX_CPU_ISA=avx2"
// or "this CPU lacks AVX-512 F/BW/VL/DQ" (the CPU's lack is named before the cap).
std::string isa_tier_unavailable(IsaTier tier);

}  // namespace kaas
