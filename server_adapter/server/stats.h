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

// Requests by the time they waited in the queue, Prometheus-style cumulative buckets (us).
struct QueueHistogram {
  static constexpr uint64_t kBoundsUs[] = {100,     250,     500,     1000,    2500,   5000,
                                           10000,   25000,   50000,   100000,  250000, 500000,
                                           1000000, 2500000, 5000000, 10000000};
  static constexpr size_t kBuckets = sizeof(kBoundsUs) / sizeof(kBoundsUs[0]);
  uint64_t counts[kBuckets + 1] = {};  // the last one: above every bound
  void add(uint64_t nanoseconds) {
    const uint64_t us = nanoseconds / 1000;
    size_t b = 0;
    while (b < kBuckets && us > kBoundsUs[b]) ++b;
    ++counts[b];
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
  uint64_t pending = 0;            // requests queued or executing now
  uint64_t request_ns_total = 0;   // end-to-end time of finished requests
  uint64_t queue_full = 0;         // requests refused because the queue was full
  QueueHistogram queue_histogram;  // executed requests by queue time
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
