#pragma once
// Gives the heap back after large requests. glibc keeps freed pages in its arenas, so one
// 1.9 GB gRPC message left kaas-server's RSS 1.3 GB higher for good. Front ends report the size
// of every request as it ends; after one of at least `threshold_bytes`, a thread calls
// malloc_trim on its next two ticks (by then the transport has freed the request's buffers); and
// on any tick where the arenas hold at least `threshold_bytes` free (memory no request reported:
// a message the transport refused before a handler saw it).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace kaas::server {

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(int64_t threshold_bytes = int64_t(64) << 20,
                         std::chrono::milliseconds tick = std::chrono::milliseconds(1000));
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Cheap for small requests (a comparison); thread-safe.
  void request_finished(int64_t bytes) {
    if (bytes >= threshold_) pending_ticks_.store(2, std::memory_order_relaxed);
  }
  int64_t trims() const { return trims_.load(); }

  // Reports a request's size when the handling scope ends, however it ends.
  class Scope {
   public:
    Scope(MemoryTrimmer* trimmer, int64_t bytes) : trimmer_(trimmer), bytes_(bytes) {}
    ~Scope() {
      if (trimmer_) trimmer_->request_finished(bytes_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    void at_least(int64_t bytes) { bytes_ = bytes > bytes_ ? bytes : bytes_; }  // e.g. inflated

   private:
    MemoryTrimmer* trimmer_;
    int64_t bytes_;
  };

 private:
  void run();

  const int64_t threshold_;
  const std::chrono::milliseconds tick_;
  std::atomic<int> pending_ticks_{0};
  std::atomic<int64_t> trims_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kaas::server
