#pragma once
// Cases of kernels/scan.h: exclusive_scan of int32, int64 and float.

#include <vector>

#include "cases/case.h"

namespace kaas::cases {

enum class ScanType { kInt32, kInt64, kFloat };

struct ScanCase {
  ScanType type;
  int64_t n;
};

// Integers in [0, 1000] (exact sums) or floats in [-1, 1].
template <class T>
std::vector<T> scan_inputs(int64_t n);
// Float scan: |y[i] - sum(x[0..i-1])| within reduction_tolerance(i, sum |x[0..i-1]|).

std::vector<ScanCase> scan_shapes();
std::vector<Case> scan_cases();

}  // namespace kaas::cases
