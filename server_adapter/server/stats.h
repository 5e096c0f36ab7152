#pragma once
// Per-model inference statistics (Triton's ModelStatistics semantics): request outcomes and
// the time requests spent queued and in compute, executions and batch elements, per batch size.
// One mutex; snapshots are copies.

#include <cstdint>
#include <map>
#include <mutex>

namespace kaas::server {

struct Duration {
  uint64_t count = 0;
  uint64_t ns = 0;
  void add(uint64_t nanoseconds) {
    ++count;
    ns += nanoseconds;
  }
};

struct BatchStats {
  Duration compute_input, compute_infer, compute_output;
};

struct StatsSnapshot {
  Duration success, fail, queue, compute_input, compute_infer, compute_output;
  uint64_t inference_count = 0;  // batch elements
  uint64_t execution_count = 0;  // executions
  uint64_t last_inference_ms = 0;
  uint64_t pending = 0;           // requests queued or executing now
  uint64_t request_ns_total = 0;  // end-to-end time of finished requests
  std::map<uint64_t, BatchStats> batches;
};

class ModelStats {
 public:
  StatsSnapshot snapshot() const {
    std::lock_guard lock(mutex_);
    return data_;
  }
  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mutex_);
    f(data_);
  }

 private:
  mutable std::mutex mutex_;
  StatsSnapshot data_;
};

}  // namespace kaas::server
