#include "kaas/server_adapter/server/memory_trimmer.h"

#include <malloc.h>

namespace kaas::server {

MemoryTrimmer::MemoryTrimmer(int64_t threshold_bytes, std::chrono::milliseconds tick)
    : threshold_(threshold_bytes), tick_(tick), thread_([this] { run(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void MemoryTrimmer::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, tick_, [this] { return stop_; })) {
    int pending = pending_ticks_.load(std::memory_order_relaxed);
    if (pending == 0) {
      // Memory freed without a request to report it: a message gRPC refused before any handler
      // saw it (larger than --max-request-bytes) leaves its slices in the arenas.
      if (int64_t(mallinfo2().fordblks) < threshold_) continue;
    } else {
      pending_ticks_.compare_exchange_strong(pending, pending - 1);
    }
    lock.unlock();
    malloc_trim(0);  // returns free pages of every arena, not only the top of the main heap
    trims_.fetch_add(1);
    lock.lock();
  }
}

}  // namespace kaas::server
