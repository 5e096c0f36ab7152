#include "kaas/client/shared_memory_regions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "kaas/common/error.h"

namespace kaas::client::detail {

ClientRegion::ClientRegion(const RegionRpcs& rpcs, std::string name, size_t bytes)
    : rpcs_(rpcs), name_(std::move(name)), key_("/" + name_), bytes_(bytes) {
  const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    throw Error(ErrorCode::kUnavailable,
                "shared memory: cannot create '" + key_ + "': " + std::strerror(errno));
  const bool sized = ftruncate(fd, off_t(bytes_)) == 0;
  void* p = sized ? mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int error = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(key_.c_str());
    throw Error(ErrorCode::kUnavailable, "shared memory: cannot size or map '" + key_ + "' (" +
                                             std::to_string(bytes_) +
                                             " bytes): " + std::strerror(error));
  }
  data_ = static_cast<std::byte*>(p);
  try {
    rpcs_.add(name_, key_, bytes_);
    registered_ = true;
  } catch (...) {
    munmap(data_, bytes_);
    shm_unlink(key_.c_str());
    throw;
  }
}

ClientRegion::~ClientRegion() {
  if (registered_) rpcs_.remove(name_);
  munmap(data_, bytes_);
  shm_unlink(key_.c_str());
}

RegionPool::RegionPool(RegionRpcs rpcs) : rpcs_(std::move(rpcs)) {}

RegionPool::~RegionPool() = default;

std::unique_ptr<ClientRegion> RegionPool::acquire(size_t bytes) {
  std::string name;
  std::vector<std::unique_ptr<ClientRegion>> outgrown;  // unregistered outside the lock
  {
    std::lock_guard lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if ((*it)->size() >= bytes) {
        auto region = std::move(*it);
        free_.erase(it);
        return region;
      }
    }
    outgrown = std::move(free_);
    free_.clear();
    name = "kaas_client_" + std::to_string(getpid()) + "_" +
           std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" + std::to_string(next_++);
  }
  return std::make_unique<ClientRegion>(rpcs_, name, std::max<size_t>(2 * bytes, 4096));
}

void RegionPool::release(std::unique_ptr<ClientRegion> region) {
  std::lock_guard lock(mutex_);
  free_.push_back(std::move(region));
}

}  // namespace kaas::client::detail
