// SharedMemoryRegistry on its own: slices read and write exactly their bytes, every offset and
// size is checked (overflow included), a region in use cannot be unregistered, nothing works
// while client shared memory is off, and an allow-list of key prefixes is enforced. The protocol
// side (tritonclient against kaas-server and tritonserver) is test_shared_memory.py.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kaas/common/error.h"
#include "kaas/server_adapter/server/shared_memory.h"

namespace kaas::server {
namespace {

// A POSIX shared memory object filled with bytes 0, 1, 2, ... (mod 251), unlinked at the end.
class ShmObject {
 public:
  explicit ShmObject(size_t bytes)
      : key_("/kaas_registry_test_" + std::to_string(getpid()) + "_" + std::to_string(next_++)) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, off_t(bytes)), 0);
    std::vector<uint8_t> pattern(bytes);
    for (size_t i = 0; i < bytes; ++i) pattern[i] = uint8_t(i % 251);
    EXPECT_EQ(write(fd, pattern.data(), bytes), ssize_t(bytes));
    close(fd);
  }
  ~ShmObject() { shm_unlink(key_.c_str()); }
  const std::string& key() const { return key_; }

 private:
  static inline int next_ = 0;
  std::string key_;
};

const ClientShmPolicy kAllowed{true, {}};

ErrorCode code_of(auto&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error";
  return ErrorCode::kInternal;
}

TEST(SharedMemoryRegistry, SliceReadsAndWritesItsBytesAtAnUnalignedOffset) {
  ShmObject object(3 * 4096);
  SharedMemoryRegistry registry(nullptr, kAllowed);
  registry.register_system("r", object.key(), 4100, 1000);  // not page aligned
  const RegionSlice slice = registry.slice({"r", 10, 20}, "t");
  std::vector<std::byte> got(20);
  slice.read(got.data());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(uint8_t(got[i]), (4100 + 10 + i) % 251) << i;
  const std::vector<std::byte> values(8, std::byte{0xab});
  slice.write(values);
  std::vector<std::byte> back(20);
  registry.slice({"r", 10, 20}, "t").read(back.data());
  EXPECT_EQ(std::memcmp(back.data(), values.data(), 8), 0);
  EXPECT_EQ(uint8_t(back[8]), (4100 + 10 + 8) % 251);  // nothing written past the output
}

TEST(SharedMemoryRegistry, OffsetsAndSizesBeyondTheRegionAreRejected) {
  ShmObject object(4096);
  SharedMemoryRegistry registry(nullptr, kAllowed);
  EXPECT_EQ(code_of([&] { registry.register_system("r", object.key(), 4000, 100); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { registry.register_system("r", object.key(), UINT64_MAX, 2); }),
            ErrorCode::kInvalidArgument);
  registry.register_system("r", object.key(), 96, 4000);
  EXPECT_NO_THROW(registry.slice({"r", 0, 4000}, "t"));
  EXPECT_NO_THROW(registry.slice({"r", 3999, 1}, "t"));
  EXPECT_EQ(code_of([&] { registry.slice({"r", 3999, 2}, "t"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              registry.slice({"r", UINT64_MAX, 2}, "t");
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              registry.slice({"r", 1, UINT64_MAX}, "t");
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { registry.slice({"other", 0, 1}, "t"); }), ErrorCode::kNotFound);
  const RegionSlice small = registry.slice({"r", 0, 4}, "t");
  EXPECT_EQ(code_of([&] { small.write(std::vector<std::byte>(5)); }), ErrorCode::kInternal);
}

TEST(SharedMemoryRegistry, ARegionInUseIsNotUnregistered) {
  ShmObject a(4096), b(4096);
  SharedMemoryRegistry registry(nullptr, kAllowed);
  registry.register_system("a", a.key(), 0, 4096);
  registry.register_system("b", b.key(), 0, 4096);
  EXPECT_EQ(code_of([&] { registry.register_system("a", b.key(), 0, 16); }),
            ErrorCode::kAlreadyExists);
  {
    const RegionSlice in_use = registry.slice({"a", 0, 16}, "t");
    EXPECT_EQ(code_of([&] { registry.unregister(RegionKind::kSystem, "a"); }),
              ErrorCode::kUnavailable);
    // Unregister all: the idle region goes, the busy one stays and is named.
    try {
      registry.unregister(RegionKind::kSystem, "");
      ADD_FAILURE() << "unregister all with a region in use succeeded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(registry.status(RegionKind::kSystem, "").size(), 1u);
    std::vector<std::byte> bytes(16);
    in_use.read(bytes.data());  // still mapped
    EXPECT_EQ(uint8_t(bytes[15]), 15);
  }
  registry.unregister(RegionKind::kSystem, "a");
  EXPECT_TRUE(registry.status(RegionKind::kSystem, "").empty());
  EXPECT_NO_THROW(registry.unregister(RegionKind::kSystem, "never-registered"));
  EXPECT_EQ(code_of([&] { registry.status(RegionKind::kSystem, "a"); }), ErrorCode::kNotFound);
}

// Read and written with pread / pwrite: an object shrunk after registration is an error, never
// a fault, and is not grown back by a write.
TEST(SharedMemoryRegistry, AnObjectTruncatedAfterRegistrationIsAnError) {
  ShmObject object(8192);
  SharedMemoryRegistry registry(nullptr, kAllowed);
  registry.register_system("r", object.key(), 4096, 4096);
  const RegionSlice slice = registry.slice({"r", 0, 4096}, "t");
  const int fd = shm_open(object.key().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 5000), 0);
  std::vector<std::byte> bytes(4096);
  EXPECT_EQ(code_of([&] { slice.read(bytes.data()); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { slice.write(bytes); }), ErrorCode::kInvalidArgument);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 5000);
  close(fd);
}

TEST(SharedMemoryRegistry, CudaRegionsNeedACudaBuild) {
  SharedMemoryRegistry registry(nullptr, kAllowed);
  const std::vector<std::byte> handle(64);
  EXPECT_EQ(code_of([&] { registry.register_cuda("c", handle, 0, 64); }),
            ErrorCode::kUnimplemented);
  EXPECT_TRUE(registry.status(RegionKind::kCuda, "").empty());
}

TEST(SharedMemoryRegistry, OffByDefaultEveryCallIsRefusedNamingTheFlag) {
  ShmObject object(4096);
  SharedMemoryRegistry registry(nullptr, ClientShmPolicy{});
  EXPECT_FALSE(registry.allowed());
  try {
    registry.register_system("r", object.key(), 0, 64);
    ADD_FAILURE() << "registered with client shared memory off";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("--allow-client-shm=true"), std::string::npos) << e.what();
  }
  const std::vector<std::byte> handle(64);
  EXPECT_EQ(code_of([&] { registry.register_cuda("c", handle, 0, 64); }), ErrorCode::kUnavailable);
  EXPECT_EQ(code_of([&] { registry.status(RegionKind::kSystem, ""); }), ErrorCode::kUnavailable);
  EXPECT_EQ(code_of([&] { registry.unregister(RegionKind::kSystem, ""); }),
            ErrorCode::kUnavailable);
  // A tensor naming a region is the request's fault: INVALID_ARGUMENT, not worth a retry.
  EXPECT_EQ(code_of([&] { registry.slice({"r", 0, 8}, "t"); }), ErrorCode::kInvalidArgument);
}

TEST(SharedMemoryRegistry, KeysOutsideTheAllowedPrefixesAreRefused) {
  ShmObject object(4096);  // key /kaas_registry_test_<pid>_<n>
  SharedMemoryRegistry registry(nullptr, ClientShmPolicy{true, {"/other_", "kaas_registry_test_"}});
  registry.register_system("allowed", object.key(), 0, 64);  // the leading '/' is not compared
  EXPECT_EQ(registry.status(RegionKind::kSystem, "allowed").size(), 1u);
  SharedMemoryRegistry strict(nullptr, ClientShmPolicy{true, {"/sonic_"}});
  try {
    strict.register_system("refused", object.key(), 0, 64);
    ADD_FAILURE() << "a key outside the prefixes was registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'/sonic_'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(strict.status(RegionKind::kSystem, "").empty());
}

}  // namespace
}  // namespace kaas::server
