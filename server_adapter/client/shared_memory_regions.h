#pragma once
// RemoteClient's side of the system shared-memory extension (same-node servers): POSIX shared
// memory objects the client creates, maps and registers with the server, reused across calls and
// grown (a new, bigger region under a new name) when a call needs more, as SonicTriton does.

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kaas::client::detail {

// Registration and unregistration as callables, so this file needs no gRPC headers.
struct RegionRpcs {
  // Throws kaas::Error when the server refuses (e.g. it cannot open the key: not same-node).
  std::function<void(const std::string& name, const std::string& key, size_t bytes)> add;
  std::function<void(const std::string& name)> remove;  // never throws
};

class ClientRegion {
 public:
  ClientRegion(const RegionRpcs& rpcs, std::string name, size_t bytes);
  ~ClientRegion();
  ClientRegion(const ClientRegion&) = delete;
  ClientRegion& operator=(const ClientRegion&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  const RegionRpcs& rpcs_;
  std::string name_, key_;
  size_t bytes_ = 0;
  std::byte* data_ = nullptr;
  bool registered_ = false;
};

// Regions free for the next call. acquire() hands out one of at least `bytes` (a free one, else
// a new one of twice the size asked, so a growing call size re-registers rarely).
class RegionPool {
 public:
  explicit RegionPool(RegionRpcs rpcs);
  ~RegionPool();
  std::unique_ptr<ClientRegion> acquire(size_t bytes);
  void release(std::unique_ptr<ClientRegion> region);

 private:
  RegionRpcs rpcs_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<ClientRegion>> free_;
  int next_ = 0;
};

}  // namespace kaas::client::detail
