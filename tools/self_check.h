#pragma once
// Runs the first case of every kernel (cases/registry.h) on a backend against its host
// reference.

#include <string>
#include <vector>

#include "kaas/backends/backend.h"

namespace kaas::tools {

struct CheckResult {
  std::string kernel;
  bool passed = false;
  std::string detail;  // max error, or the error message
  double milliseconds = 0;
};

std::vector<CheckResult> self_check(const Backend& backend);

}  // namespace kaas::tools
