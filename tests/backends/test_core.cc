// Backend-independent pieces: errors, views, the registry.

#include <gtest/gtest.h>

#include "kaas/backends/backend.h"
#include "kaas/backends/backend_traits.h"
#include "kaas/backends/view.h"
#include "kaas/build_config.h"
#include "kaas/common/error.h"

namespace kaas {
namespace {

TEST(Error, CodesMapOntoGrpcAndHttp) {
  EXPECT_EQ(grpc_status_code(ErrorCode::kInvalidArgument), 3);
  EXPECT_EQ(grpc_status_code(ErrorCode::kNotFound), 5);
  EXPECT_EQ(grpc_status_code(ErrorCode::kResourceExhausted), 8);
  EXPECT_EQ(grpc_status_code(ErrorCode::kUnimplemented), 12);
  EXPECT_EQ(grpc_status_code(ErrorCode::kInternal), 13);
  EXPECT_EQ(grpc_status_code(ErrorCode::kUnavailable), 14);
  EXPECT_EQ(http_status_code(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(http_status_code(ErrorCode::kNotFound), 404);
  EXPECT_EQ(http_status_code(ErrorCode::kInternal), 500);
  EXPECT_EQ(http_status_code(ErrorCode::kUnimplemented), 501);
  EXPECT_EQ(http_status_code(ErrorCode::kUnavailable), 503);
  EXPECT_EQ(to_string(ErrorCode::kNotFound), "NOT_FOUND");
}

TEST(Error, RequireNamesWhatExpectedAndReceived) {
  EXPECT_NO_THROW(require(true, "k", "x", "1", "2"));
  try {
    require(false, "conv2d", "input channels", "3", "4");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "conv2d: input channels: expected 3, received 4");
  }
}

TEST(View, RowMajorStridesAndIndexing) {
  float data[24];
  for (int i = 0; i < 24; ++i) data[i] = float(i);
  auto v = make_view<3>(data, {2, 3, 4});
  EXPECT_EQ(v.stride[0], 12);
  EXPECT_EQ(v.stride[1], 4);
  EXPECT_EQ(v.stride[2], 1);
  EXPECT_EQ(v.size(), 24);
  EXPECT_TRUE(v.contiguous());
  EXPECT_EQ(v(1, 2, 3), 23.0f);
  View<const float, 3> c = v;  // non-const converts to const
  EXPECT_EQ(c(1, 0, 1), 13.0f);
  v.stride[2] = 2;
  EXPECT_FALSE(v.contiguous());
  static_assert(!std::is_convertible_v<View<const float, 1>, View<float, 1>>);
}

TEST(Registry, ListsCompiledBackendsInOrder) {
  const auto backends = compiled_backends();
  ASSERT_GE(backends.size(), 2u);
  EXPECT_EQ(backends[0]->name(), "serial");
  std::vector<std::string> names;
  for (const Backend* b : backends) names.emplace_back(b->name());
  EXPECT_NE(std::find(names.begin(), names.end(), "gpu_emu"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "openmp") != names.end(), KAAS_HAVE_OPENMP == 1);
  EXPECT_EQ(std::find(names.begin(), names.end(), "cuda") != names.end(), KAAS_HAVE_CUDA == 1);
  EXPECT_EQ(std::find(names.begin(), names.end(), "hip") != names.end(), KAAS_HAVE_HIP == 1);
  for (const Backend* b : backends) {
    EXPECT_EQ(&find_backend(b->name()), b);
    EXPECT_EQ(to_string(b->id()), b->name());
    if (b->available()) {
      EXPECT_FALSE(b->devices().empty()) << b->name();
    } else {
      EXPECT_FALSE(b->unavailable_reason().empty()) << b->name();
    }
  }
}

// The header's list and CMake's KAAS_ALL_BACKENDS must name the same backends in the same order,
// and the compiled ones are the list's entries whose KAAS_HAVE_<MACRO> is 1.
TEST(Registry, BackendListMatchesCMakeAndBuildConfig) {
  std::string header_names;
  std::vector<std::string> expected_compiled;
#define KAAS_TEST_BACKEND_NAME(ns, id, macro, ...)                    \
  header_names += std::string(header_names.empty() ? "" : ";") + #ns; \
  if (KAAS_HAVE_##macro) expected_compiled.emplace_back(#ns);
  KAAS_BACKEND_LIST(KAAS_TEST_BACKEND_NAME)
#undef KAAS_TEST_BACKEND_NAME
  EXPECT_EQ(header_names, KAAS_ALL_BACKEND_NAMES);
  std::vector<std::string> compiled;
  for (const Backend* b : compiled_backends()) compiled.emplace_back(b->name());
  EXPECT_EQ(compiled, expected_compiled);
  std::string choices = "auto";
  for (const std::string& name : compiled) choices += ", " + name;
  EXPECT_EQ(backend_choices(), choices);
}

// The traits column of KAAS_BACKEND_LIST, as the library reads it: the host CPU backends get
// the SIMD paths and their own thread model, the emulator is test-only, the GPUs neither.
TEST(Registry, BackendTraitsComeFromTheList) {
  struct Expected {
    BackendId id;
    bool host_simd;
    HostThreads threads;
    bool test_only;
  };
  const Expected expected[] = {{BackendId::kSerial, true, HostThreads::kCaller, false},
                               {BackendId::kOpenmp, true, HostThreads::kOpenmp, false},
                               {BackendId::kTbb, true, HostThreads::kTbb, false},
                               {BackendId::kGpuEmu, false, HostThreads::kCaller, true},
                               {BackendId::kCuda, false, HostThreads::kCaller, false},
                               {BackendId::kHip, false, HostThreads::kCaller, false}};
  for (const Expected& e : expected) {
    const BackendTraits t = traits_of(e.id);
    EXPECT_EQ(t.host_simd, e.host_simd) << to_string(e.id);
    EXPECT_EQ(t.threads, e.threads) << to_string(e.id);
    EXPECT_EQ(t.test_only, e.test_only) << to_string(e.id);
    EXPECT_EQ(host_simd(e.id), e.host_simd) << to_string(e.id);
  }
}

TEST(Registry, UnknownBackendIsNotFoundAndListsTheKnownOnes) {
  try {
    (void)find_backend("fpga");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("expected one of auto, serial"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("received 'fpga'"), std::string::npos) << e.what();
  }
}

TEST(Registry, DefaultIsAvailableAndNeverTheEmulator) {
  const Backend& b = default_backend();
  EXPECT_TRUE(b.available());
  EXPECT_NE(b.id(), BackendId::kGpuEmu);
  EXPECT_EQ(&find_backend("auto"), &b);
}

TEST(Registry, GpuArchitecturesAreReported) {
  EXPECT_EQ(!cuda_architectures().empty(), KAAS_HAVE_CUDA == 1);
  EXPECT_EQ(!hip_architectures().empty(), KAAS_HAVE_HIP == 1);
}

}  // namespace
}  // namespace kaas
