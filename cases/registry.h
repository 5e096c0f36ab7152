#pragma once
// Every kernel of kernels/ with its cases. A kernel header that declares a launcher but has no
// entry here fails tests/kernels/test_cases.cc; kaas-info --self-check runs the first case of
// each entry.

#include <span>
#include <string_view>
#include <vector>

#include "cases/case.h"

namespace kaas::cases {

struct KernelCases {
  std::string_view kernel;       // kernels/<kernel>.h
  std::vector<Case> (*cases)();  // the first is the self-check's
};

std::span<const KernelCases> kernel_registry();

// The cases of `kernel`; throws kNotFound for a kernel without an entry.
std::vector<Case> cases_of(std::string_view kernel);

}  // namespace kaas::cases
