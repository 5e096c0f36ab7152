// kaas-self-check [BACKEND...]: every case of every kernel within the kernel tests' host-reference
// budget (cases/case.h), with every implementation, on each named backend (default: every compiled
// one; one that is not available here is reported and skipped) against the host references. Exit
// status 1 when a check fails, 2 on a bad backend name. It takes no options, so it builds where
// nothing but a compiler is (no CLI11): the check of a bare GPU node and of a kernels-only install.

#include <cstdio>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/common/error.h"
#include "tools/self_check.h"

int main(int argc, char** argv) {
  std::vector<const kaas::Backend*> backends;
  try {
    for (int i = 1; i < argc; ++i) backends.push_back(&kaas::find_backend(argv[i]));
  } catch (const kaas::Error& e) {
    std::fprintf(stderr, "kaas-self-check: %s\nusage: kaas-self-check [BACKEND...]\n", e.what());
    return 2;
  }
  if (backends.empty()) {
    const auto compiled = kaas::compiled_backends();
    backends.assign(compiled.begin(), compiled.end());
  }
  int failures = 0, checks = 0;
  std::printf("%-8s | %-12s | %-9s | %-6s | %9s | %s\n", "backend", "kernel", "impl", "result",
              "time ms", "case: detail");
  for (const kaas::Backend* backend : backends) {
    const std::string name(backend->name());
    if (!backend->available()) {
      std::printf("%-8s | %-12s | %-9s | %-6s | %9s | %s\n", name.c_str(), "(all)", "-", "skip",
                  "-", backend->unavailable_reason().c_str());
      continue;
    }
    for (const auto& r : kaas::tools::self_check(
             *backend, kaas::tools::CaseSelection::kEveryCaseAndImplementation)) {
      ++checks;
      failures += r.passed ? 0 : 1;
      std::printf("%-8s | %-12s | %-9s | %-6s | %9.2f | %s\n", name.c_str(), r.kernel.c_str(),
                  r.impl.c_str(), r.passed ? "ok" : "FAIL", r.milliseconds, r.detail.c_str());
    }
  }
  std::printf("\nkaas-self-check: %d of %d checks failed\n", failures, checks);
  return failures == 0 ? 0 : 1;
}
