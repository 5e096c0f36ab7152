// Every public kernel (a kernels/*.h that declares a launcher) has cases, and every case is
// well formed: a kernel without a case fails here instead of going unnoticed.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "cases/registry.h"
#include "cases/uniform.h"
#include "tests/support/kernel_cases.h"

#ifndef KAAS_SOURCE_DIR
#error "KAAS_SOURCE_DIR must name the source tree"
#endif

namespace kaas::testing {
namespace {

std::set<std::string> kernel_headers() {
  std::set<std::string> kernels;
  for (const auto& entry : std::filesystem::directory_iterator(KAAS_SOURCE_DIR "/kernels")) {
    if (entry.path().extension() != ".h") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    if (text.str().find("KAAS_DECLARE_LAUNCHER(") != std::string::npos) {
      kernels.insert(entry.path().stem().string());
    }
  }
  return kernels;
}

TEST(KernelCases, EveryKernelHeaderHasCases) {
  const auto headers = kernel_headers();
  ASSERT_GE(headers.size(), 10u);
  std::set<std::string> registered;
  for (const auto& entry : cases::kernel_registry()) registered.emplace(entry.kernel);
  for (const auto& kernel : headers) {
    EXPECT_TRUE(registered.count(kernel))
        << "kernels/" << kernel << ".h has no entry in cases/registry.cc";
  }
  for (const auto& kernel : registered) {
    EXPECT_TRUE(headers.count(kernel)) << "cases/registry.cc names kernel " << kernel
                                       << " without a kernels/" << kernel << ".h launcher";
  }
}

TEST(KernelCases, CasesAreWellFormed) {
  std::set<std::string> names;
  for (const auto& entry : cases::kernel_registry()) {
    const auto list = entry.cases();
    EXPECT_FALSE(list.empty()) << entry.kernel << " has no case";
    for (const auto& c : list) {
      EXPECT_EQ(c.kernel, entry.kernel);
      EXPECT_NE(c.name.find("{backend}"), std::string::npos) << c.name;
      EXPECT_FALSE(c.title.empty()) << c.name;
      EXPECT_GT(c.bytes, 0) << c.name;
      EXPECT_GT(c.reference_ops, 0) << c.name;
      EXPECT_TRUE(c.impls && c.prepare) << c.name;
      EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name " << c.name;
    }
  }
}

// The first case of each kernel is kaas-info's self-check, checked on every backend: it must stay
// cheap (the emulated GPU included).
TEST(KernelCases, FirstCasesAreSmall) {
  for (const auto& entry : cases::kernel_registry()) {
    const auto list = entry.cases();
    ASSERT_FALSE(list.empty());
    EXPECT_LE(list.front().reference_ops, kEmulatorCaseReferenceBudget) << list.front().name;
    EXPECT_LE(list.front().bytes, 4 * kEmulatorCaseBytesBudget) << list.front().name;
  }
}

// The cases' inputs (and the digests made from them) are std::uniform_real_distribution<float>'s
// values with libstdc++: uniform_float spells them out without its per-draw logl. A draw just
// below 2^32 rounds to 1 and is pulled below it, as the library does.
TEST(KernelCases, UniformFloatsAreTheStandardDistributionsValues) {
  const float ranges[][2] = {{-1.0f, 1.0f}, {0.1f, 15.0f}, {1.0f, 2.0f}, {-1e-3f, 2e-3f}};
  for (const auto& range : ranges) {
    for (uint32_t seed : {0u, 7u, 12345u}) {
      std::mt19937 standard_rng(seed), spelled_rng(seed);
      std::uniform_real_distribution<float> standard(range[0], range[1]);
      for (int i = 0; i < 20000; ++i) {
        const float expected = standard(standard_rng);
        const float got = cases::uniform_float(spelled_rng, range[0], range[1]);
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected))
            << "seed " << seed << " draw " << i << " range [" << range[0] << ", " << range[1]
            << ")";
      }
    }
  }
  // Draw 35 of seed 508205 is at least 2^32 - 128: it rounds to 1, and both give 1 - 2^-24.
  std::mt19937 probe(508205u);
  probe.discard(35);
  std::mt19937 standard_rng = probe, spelled_rng = probe;
  ASSERT_GE(probe(), 0xffffff80u);
  const float expected = std::uniform_real_distribution<float>(0.0f, 1.0f)(standard_rng);
  EXPECT_EQ(expected, std::nextafter(1.0f, 0.0f));
  EXPECT_EQ(cases::uniform_float(spelled_rng, 0.0f, 1.0f), expected);
}

}  // namespace
}  // namespace kaas::testing
