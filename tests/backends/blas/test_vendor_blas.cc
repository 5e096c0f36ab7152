// The vendor BLAS layer: cuBLAS is opened on first use, not when a program starts.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kaas/backends/blas/vendor_blas.h"
#include "kaas/build_config.h"

namespace kaas {
namespace {

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(library) != std::string::npos) return true;
  }
  return false;
}

TEST(VendorBlas, CublasOpensOnFirstUseOnly) {
  if (KAAS_HAVE_CUBLAS == 0) GTEST_SKIP() << "this build has no cuBLAS";
  // A program that links kaas but never multiplies on a GPU does not pay for libcublasLt's
  // relocations (~26k page faults at start).
  EXPECT_FALSE(mapped("libcublas")) << "cuBLAS was loaded before its first use";
#if KAAS_HAVE_CUBLAS
  // The soname and entry points this build names are found in the toolkit it was built with.
  EXPECT_EQ(blas::cublas_unavailable(), "");
  EXPECT_TRUE(mapped("libcublas"));
#endif
}

}  // namespace
}  // namespace kaas
