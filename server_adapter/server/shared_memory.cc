#include "kaas/server_adapter/server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "kaas/backends/backend.h"
#include "kaas/common/error.h"

namespace kaas::server {

namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& message) {
  throw Error(code, message);
}

std::string in_quotes(const std::string& name) {
  std::string text(1, '\'');  // appended, not "'" + s: g++ 12 warns falsely (-Wrestrict)
  text.append(escape_for_message(name)).push_back('\'');
  return text;
}

const char* kind_name(RegionKind kind) {
  return kind == RegionKind::kSystem ? "system" : "CUDA";
}

// offset + size <= limit without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

}  // namespace

class SharedMemoryRegion {
 public:
  SharedMemoryRegion(RegionStatus status) : status_(std::move(status)) {}
  ~SharedMemoryRegion() {
    if (fd_ >= 0) close(fd_);
    if (device_ != nullptr) cuda_->close_ipc_memory(device_);
  }
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const RegionStatus& status() const { return status_; }

  void open_system() {
    const std::string& key = status_.key;
    if (key.size() < 2 || key.size() > NAME_MAX || key[0] != '/' ||
        key.find('/', 1) != std::string::npos)
      fail(ErrorCode::kInvalidArgument, "system shared memory region " + in_quotes(status_.name) +
                                            ": key " + in_quotes(key) +
                                            " is not a POSIX shared memory name ('/name')");
    fd_ = shm_open(key.c_str(), O_RDWR, 0);
    if (fd_ < 0)
      fail(ErrorCode::kNotFound, "system shared memory region " + in_quotes(status_.name) +
                                     ": cannot open key " + in_quotes(key) + ": " +
                                     std::strerror(errno));
    const uint64_t object_bytes = object_size();
    if (!fits(status_.offset, status_.byte_size, object_bytes))
      fail(ErrorCode::kInvalidArgument, "system shared memory region " + in_quotes(status_.name) +
                                            ": offset " + std::to_string(status_.offset) +
                                            " + byte_size " + std::to_string(status_.byte_size) +
                                            " exceeds the " + std::to_string(object_bytes) +
                                            " bytes of key " + in_quotes(key));
  }

  void open_cuda(const Backend& cuda, std::span<const std::byte> handle) {
    device_ = static_cast<std::byte*>(cuda.open_ipc_memory(handle, int(status_.device_id)));
    cuda_ = &cuda;
  }

  // Bytes [offset, offset + n) of the region, checked by the caller. System shared memory is
  // read and written with pread / pwrite, not through a mapping: a client that shrinks its
  // object after registering gets a short read (an error) where a mapping would fault (SIGBUS).
  void read(uint64_t offset, std::byte* out, size_t n) const {
    if (device_ != nullptr) {
      cuda_->copy(out, device_ + offset, n, CopyKind::kDeviceToHost, nullptr);
      cuda_->synchronize(nullptr);
      return;
    }
    for (size_t done = 0; done < n;) {
      const ssize_t got = pread(fd_, out + done, n - done, off_t(status_.offset + offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) io_failure(got == 0);
      done += size_t(got);
    }
  }
  void write(uint64_t offset, const std::byte* bytes, size_t n) const {
    if (device_ != nullptr) {
      cuda_->copy(device_ + offset, bytes, n, CopyKind::kHostToDevice, nullptr);
      cuda_->synchronize(nullptr);
      return;
    }
    // pwrite past the end would grow the client's object: refuse a shrunk one first.
    if (object_size() < status_.offset + offset + n) io_failure(true);
    for (size_t done = 0; done < n;) {
      const ssize_t put =
          pwrite(fd_, bytes + done, n - done, off_t(status_.offset + offset + done));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) io_failure(false);
      done += size_t(put);
    }
  }

 private:
  uint64_t object_size() const {
    struct stat st {};
    if (fstat(fd_, &st) != 0)
      fail(ErrorCode::kInternal, "system shared memory region " + in_quotes(status_.name) +
                                     ": fstat failed: " + std::strerror(errno));
    return uint64_t(st.st_size);
  }
  [[noreturn]] void io_failure(bool truncated) const {
    if (truncated)
      fail(ErrorCode::kInvalidArgument, "system shared memory region " + in_quotes(status_.name) +
                                            ": key " + in_quotes(status_.key) +
                                            " was truncated below the registered size");
    fail(ErrorCode::kInternal, "system shared memory region " + in_quotes(status_.name) +
                                   ": I/O on key " + in_quotes(status_.key) +
                                   " failed: " + std::strerror(errno));
  }

  RegionStatus status_;
  int fd_ = -1;
  std::byte* device_ = nullptr;
  const Backend* cuda_ = nullptr;
};

RegionSlice::RegionSlice(std::shared_ptr<SharedMemoryRegion> region, uint64_t offset,
                         uint64_t byte_size)
    : region_(std::move(region)), offset_(offset), byte_size_(byte_size) {}

const std::string& RegionSlice::region_name() const {
  return region_->status().name;
}

void RegionSlice::read(std::byte* out) const {
  region_->read(offset_, out, size_t(byte_size_));
}

void RegionSlice::write(std::span<const std::byte> bytes) const {
  if (bytes.size() > byte_size_)
    fail(ErrorCode::kInternal, "shared memory write of " + std::to_string(bytes.size()) +
                                   " bytes into a slice of " + std::to_string(byte_size_));
  region_->write(offset_, bytes.data(), bytes.size());
}

SharedMemoryRegistry::SharedMemoryRegistry(const Backend* cuda, ClientShmPolicy policy)
    : cuda_(cuda), policy_(std::move(policy)) {}

void SharedMemoryRegistry::check_allowed(ErrorCode code) const {
  if (!policy_.allowed)
    fail(code,
         "client shared memory is off on this server (start kaas-server with "
         "--allow-client-shm=true to allow it, for trusted clients on the same node)");
}
SharedMemoryRegistry::~SharedMemoryRegistry() = default;

void SharedMemoryRegistry::add(std::shared_ptr<SharedMemoryRegion> region) {
  const std::lock_guard lock(mutex_);
  const std::string& name = region->status().name;
  if (regions_.count(name))
    fail(ErrorCode::kAlreadyExists,
         "shared memory region " + in_quotes(name) + " is already registered (as " +
             kind_name(regions_.at(name)->status().kind) + " shared memory)");
  regions_.emplace(name, std::move(region));
}

void SharedMemoryRegistry::register_system(const std::string& name, const std::string& key,
                                           uint64_t offset, uint64_t byte_size) {
  check_allowed();
  if (name.empty()) fail(ErrorCode::kInvalidArgument, "shared memory region name is empty");
  if (!policy_.key_prefixes.empty()) {
    const std::string_view bare = std::string_view(key).substr(key.rfind('/', 0) == 0 ? 1 : 0);
    bool listed = false;
    std::string allowed;
    for (const std::string& prefix : policy_.key_prefixes) {
      const std::string_view p = std::string_view(prefix).substr(prefix.rfind('/', 0) == 0 ? 1 : 0);
      listed = listed || bare.substr(0, p.size()) == p;
      allowed += (allowed.empty() ? "" : ", ") + in_quotes(prefix);
    }
    if (!listed)
      fail(ErrorCode::kInvalidArgument, "system shared memory region " + in_quotes(name) +
                                            ": key " + in_quotes(key) +
                                            " does not start with an allowed prefix (" + allowed +
                                            ", --client-shm-key-prefixes)");
  }
  if (byte_size == 0)
    fail(ErrorCode::kInvalidArgument,
         "system shared memory region " + in_quotes(name) + ": byte_size must be > 0");
  {
    const std::lock_guard lock(mutex_);  // fail before opening anything
    if (regions_.count(name))
      fail(ErrorCode::kAlreadyExists,
           "shared memory region " + in_quotes(name) + " is already registered (as " +
               kind_name(regions_.at(name)->status().kind) + " shared memory)");
  }
  auto region = std::make_shared<SharedMemoryRegion>(
      RegionStatus{name, RegionKind::kSystem, key, offset, -1, byte_size});
  region->open_system();
  add(std::move(region));
}

void SharedMemoryRegistry::register_cuda(const std::string& name,
                                         std::span<const std::byte> raw_handle, int64_t device_id,
                                         uint64_t byte_size) {
  check_allowed();
  const std::string where = "CUDA shared memory region " + in_quotes(name);
  if (name.empty()) fail(ErrorCode::kInvalidArgument, "shared memory region name is empty");
  if (cuda_ == nullptr)
    fail(ErrorCode::kUnimplemented,
         where + ": this kaas-server was built without CUDA; use system shared memory");
  if (!cuda_->available())
    fail(ErrorCode::kUnavailable, where + ": " + cuda_->unavailable_reason());
  const auto devices = int64_t(cuda_->devices().size());
  if (device_id < 0 || device_id >= devices)
    fail(ErrorCode::kInvalidArgument, where + ": device_id " + std::to_string(device_id) +
                                          " is not one of the " + std::to_string(devices) +
                                          " CUDA device(s)");
  if (byte_size == 0) fail(ErrorCode::kInvalidArgument, where + ": byte_size must be > 0");
  auto region = std::make_shared<SharedMemoryRegion>(
      RegionStatus{name, RegionKind::kCuda, "", 0, device_id, byte_size});
  region->open_cuda(*cuda_, raw_handle);
  add(std::move(region));
}

void SharedMemoryRegistry::unregister(RegionKind kind, const std::string& name) {
  check_allowed();
  std::vector<std::shared_ptr<SharedMemoryRegion>> released;  // unmapped outside the lock
  std::string busy;
  {
    const std::lock_guard lock(mutex_);
    for (auto it = regions_.begin(); it != regions_.end();) {
      const RegionStatus& s = it->second->status();
      if (s.kind != kind || (!name.empty() && s.name != name)) {
        ++it;
        continue;
      }
      // Only slices taken under this lock hold a region besides the registry, so a count of 1
      // stays 1 while the lock is held.
      if (it->second.use_count() > 1) {
        if (!busy.empty()) busy.append(", ");
        busy.append(in_quotes(s.name));
        ++it;
        continue;
      }
      released.push_back(std::move(it->second));
      it = regions_.erase(it);
    }
  }
  if (!busy.empty())
    fail(ErrorCode::kUnavailable, std::string("cannot unregister ") + kind_name(kind) +
                                      " shared memory region(s) " + busy +
                                      ": in use by a request in flight; retry once it is answered");
}

std::vector<RegionStatus> SharedMemoryRegistry::status(RegionKind kind,
                                                       const std::string& name) const {
  check_allowed();
  const std::lock_guard lock(mutex_);
  std::vector<RegionStatus> out;
  for (const auto& [region_name, region] : regions_) {
    if (region->status().kind == kind && (name.empty() || region_name == name))
      out.push_back(region->status());
  }
  if (!name.empty() && out.empty())
    fail(ErrorCode::kNotFound,
         std::string("no ") + kind_name(kind) + " shared memory region " + in_quotes(name));
  return out;
}

RegionSlice SharedMemoryRegistry::slice(const SharedMemoryRef& ref,
                                        const std::string& tensor) const {
  check_allowed(ErrorCode::kInvalidArgument);  // the request's fault: not worth a retry
  std::shared_ptr<SharedMemoryRegion> region;
  {
    const std::lock_guard lock(mutex_);
    const auto it = regions_.find(ref.region);
    if (it == regions_.end())
      fail(ErrorCode::kNotFound, "tensor " + in_quotes(tensor) + ": shared memory region " +
                                     in_quotes(ref.region) + " is not registered");
    region = it->second;
  }
  const uint64_t region_bytes = region->status().byte_size;
  if (!fits(ref.offset, ref.byte_size, region_bytes))
    fail(ErrorCode::kInvalidArgument,
         "tensor " + in_quotes(tensor) + ": shared_memory_offset " + std::to_string(ref.offset) +
             " + shared_memory_byte_size " + std::to_string(ref.byte_size) + " exceeds the " +
             std::to_string(region_bytes) + " bytes of region " + in_quotes(ref.region));
  return RegionSlice(std::move(region), ref.offset, ref.byte_size);
}

}  // namespace kaas::server
