#pragma once
// The shared-memory extensions of the KServe v2 / Triton protocol: regions a same-node client
// registers (system shared memory by POSIX key, CUDA shared memory by IPC handle) and tensors
// that name a region, offset and byte size instead of carrying their bytes. System and CUDA
// regions share one namespace. Every name, offset and size a client sends is checked here, so
// nothing reads or writes outside a registered region; a region in use by a request cannot be
// unregistered until the request is answered.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kaas/common/error.h"

namespace kaas {
class Backend;
}

namespace kaas::server {

enum class RegionKind { kSystem, kCuda };

// Who may use client shared memory. Off by default, as in Triton since 2.69 (26.05): when on,
// any client that reaches the server's ports can read and write any object the server's user
// can open (system shared memory by key) -- for trusted clients on the same node only, as
// SonicTriton's local mode. `key_prefixes`, when not empty, limits the system keys a client may
// register to those starting with one of them (the leading '/' of a POSIX key ignored).
struct ClientShmPolicy {
  bool allowed = false;
  std::vector<std::string> key_prefixes;
};

struct RegionStatus {
  std::string name;
  RegionKind kind = RegionKind::kSystem;
  std::string key;         // system: the shm_open key
  uint64_t offset = 0;     // system: where the region starts in the object
  int64_t device_id = -1;  // CUDA: the device the handle was made on
  uint64_t byte_size = 0;
};

class SharedMemoryRegion;

// Where a tensor lives: `bytes` of a registered region. Holding it keeps the region registered
// (unregister is refused) and open.
class RegionSlice {
 public:
  RegionSlice(std::shared_ptr<SharedMemoryRegion> region, uint64_t offset, uint64_t byte_size);
  const std::string& region_name() const;
  uint64_t byte_size() const { return byte_size_; }
  // Copies the slice out (byte_size bytes) / `bytes` into the start of the slice
  // (bytes.size() <= byte_size).
  void read(std::byte* out) const;
  void write(std::span<const std::byte> bytes) const;

 private:
  std::shared_ptr<SharedMemoryRegion> region_;
  uint64_t offset_ = 0, byte_size_ = 0;
};

// The three tensor parameters; `offset` defaults to 0.
struct SharedMemoryRef {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

class SharedMemoryRegistry {
 public:
  // `cuda`: the backend that opens CUDA IPC handles (nullptr: a build without CUDA). With client
  // shared memory off, every call below fails with kUnavailable naming the flag that turns it on.
  SharedMemoryRegistry(const Backend* cuda, ClientShmPolicy policy);
  bool allowed() const { return policy_.allowed; }
  ~SharedMemoryRegistry();

  // kAlreadyExists for a name in use, kNotFound for a key that cannot be opened,
  // kInvalidArgument for an offset + size beyond the object.
  void register_system(const std::string& name, const std::string& key, uint64_t offset,
                       uint64_t byte_size);
  // kUnimplemented without CUDA, kUnavailable without a device, kInvalidArgument for a bad
  // handle.
  void register_cuda(const std::string& name, std::span<const std::byte> raw_handle,
                     int64_t device_id, uint64_t byte_size);
  // `name` empty: every region of `kind`. A region in use fails with kUnavailable (the others
  // are still unregistered); an unknown name is not an error (as Triton: clients unregister
  // before they register).
  void unregister(RegionKind kind, const std::string& name);
  // `name` empty: every region of `kind`; an unknown name is kNotFound.
  std::vector<RegionStatus> status(RegionKind kind, const std::string& name) const;

  // The slice a tensor names, checked against the region: kNotFound for an unknown region,
  // kInvalidArgument for an offset + size beyond it. `tensor` names the tensor in messages.
  RegionSlice slice(const SharedMemoryRef& ref, const std::string& tensor) const;

 private:
  void add(std::shared_ptr<SharedMemoryRegion> region);
  void check_allowed(ErrorCode code = ErrorCode::kUnavailable) const;

  const Backend* cuda_;
  const ClientShmPolicy policy_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<SharedMemoryRegion>> regions_;
};

}  // namespace kaas::server
