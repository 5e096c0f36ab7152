#pragma once
// x86 instruction-set features read with CPUID (and XGETBV for the OS-enabled register state).
// Not __builtin_cpu_supports: with the HIP runtime loaded, its exported copy of the compiler
// runtime's __cpu_model can shadow libgcc's, whose feature bits are laid out differently.

namespace kaas {

struct CpuFeatures {
  bool sse42 = false, avx = false, avx2 = false, fma = false, bmi1 = false, bmi2 = false,
       f16c = false, avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false,
       avx512vnni = false, avx512bf16 = false, avx512fp16 = false;
};

const CpuFeatures& cpu_features();

}  // namespace kaas
