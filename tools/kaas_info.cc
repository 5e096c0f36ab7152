// kaas-info: what this build of kaas contains and what it can run here.

#include <cstdio>
#include <string>

#include "kaas/backends/backend.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/build_config.h"
#include "kaas/common/cli.h"
#include "kaas/common/error.h"
#include "kaas/kernels/impl_table.h"
#include "tools/self_check.h"

namespace {

void print_backends() {
  std::printf("kaas %s\n", KAAS_VERSION);
  std::printf(
      "GPU architectures compiled in: CUDA [%s], HIP [%s]\n",
      kaas::cuda_architectures().empty() ? "off" : std::string(kaas::cuda_architectures()).c_str(),
      kaas::hip_architectures().empty() ? "off" : std::string(kaas::hip_architectures()).c_str());
  std::printf("default backend (auto): %s\n\n",
              std::string(kaas::default_backend().name()).c_str());
  for (const kaas::Backend* backend : kaas::compiled_backends()) {
    const bool available = backend->available();
    std::printf(
        "backend %-8s %s\n", std::string(backend->name()).c_str(),
        available ? "available" : ("unavailable: " + backend->unavailable_reason()).c_str());
    if (!available) continue;
    const auto devices = backend->devices();
    for (size_t d = 0; d < devices.size(); ++d) {
      const auto& dev = devices[d];
      std::printf(
          "  device %zu: %s\n    %s\n    units %d, memory %.1f GiB, group size <= %d, "
          "shared memory <= %zu KiB\n",
          d, dev.name.c_str(), dev.details.c_str(), dev.compute_units,
          double(dev.memory_bytes) / (1024.0 * 1024 * 1024), dev.max_group_size,
          dev.max_shared_bytes / 1024);
    }
  }
}

// Returns the number of failed checks.
int print_self_check(const std::string& only) {
  std::printf("\nself-check (the first case of every kernel against its host reference)\n");
  std::printf("%-8s | %-24s | %-6s | %9s | %s\n", "backend", "kernel", "result", "time ms",
              "detail");
  std::printf("---------+--------------------------+--------+-----------+---------------------\n");
  int failures = 0;
  for (const kaas::Backend* backend : kaas::compiled_backends()) {
    if (!only.empty() && backend->name() != only) continue;
    const std::string name(backend->name());
    if (!backend->available()) {
      std::printf("%-8s | %-24s | %-6s | %9s | %s\n", name.c_str(), "(all)", "skip", "-",
                  backend->unavailable_reason().c_str());
      continue;
    }
    for (const auto& r : kaas::tools::self_check(*backend)) {
      failures += r.passed ? 0 : 1;
      std::printf("%-8s | %-24s | %-6s | %9.2f | %s\n", name.c_str(), r.kernel.c_str(),
                  r.passed ? "ok" : "FAIL", r.milliseconds, r.detail.c_str());
    }
  }
  std::printf("\n%s\n", failures == 0 ? "self-check passed" : "self-check FAILED");
  return failures;
}

// Every implementation table (kernels/impl_table.h): each row on each available backend, "yes" or
// why not (the instruction-set tier, capped or lacking, or the backend). A call's own shape can
// still rule a row out; the kernels' errors say so.
void print_impl_tables() {
  std::printf("\nimplementation tables (tier cap KAAS_MAX_CPU_ISA=%s, usable tier %s)\n",
              kaas::cpu_isa_cap(), std::string(kaas::to_string(kaas::usable_isa_tier())).c_str());
  for (const kaas::ImplTableInfo& table : kaas::impl_tables()) {
    std::printf("%s\n", std::string(table.choice).c_str());
    for (const kaas::ImplRowInfo& row : table.rows) {
      std::printf("  %-12s tier %-11s bits: %s\n", std::string(row.name).c_str(),
                  std::string(kaas::to_string(row.tier)).c_str(), std::string(row.bits).c_str());
      for (const kaas::Backend* backend : kaas::compiled_backends()) {
        if (!backend->available()) continue;
        const std::string why = kaas::row_unavailable(row, kaas::Queue(*backend));
        std::printf("    %-8s %s\n", std::string(backend->name()).c_str(),
                    why.empty() ? "yes" : why.c_str());
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-info: compiled backends, their devices, and a self-check of every kernel"};
  bool self_check = false;
  bool impl_tables = false;
  std::string backend;
  app.add_flag("--self-check", self_check, "run every kernel on every available backend");
  app.add_flag("--impl-tables", impl_tables,
               "list every implementation table's rows and where each can run");
  app.add_option("--backend", backend, "restrict the self-check to one backend");
  if (const auto status = app.parse(argc, argv)) return *status;
  try {
    if (!backend.empty()) (void)kaas::find_backend(backend);
    print_backends();
    if (impl_tables) print_impl_tables();
    if (self_check && print_self_check(backend) != 0) return 1;
  } catch (const kaas::Error& e) {
    std::fprintf(stderr, "kaas-info: %s\n", e.what());
    return 2;
  }
  return 0;
}
