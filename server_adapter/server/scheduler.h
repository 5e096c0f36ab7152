#pragma once
// One model's request queue, instances and dynamic batcher (Triton semantics): requests queue
// FIFO; each instance (instance_group count) takes the oldest request and adds following ones
// while the batch stays <= max_batch_size and their non-batch shapes match; it runs at once when
// a preferred size (or the maximum) is reached, else waits until the oldest request is
// max_queue_delay old. Inputs are concatenated along the batch dimension, outputs split back.
// A full queue (requests or input bytes) rejects at once (kUnavailable). A request is dropped,
// never executed, when before it runs its queue timeout expires (kUnavailable "Request timeout
// expired"), its client's deadline passes (kDeadlineExceeded) or its client has gone: each is
// counted as a failure, with the reason in the debug log.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kaas/models/model.h"
#include "kaas/server_adapter/core/infer_request.h"
#include "kaas/server_adapter/server/stats.h"

namespace kaas::server {

struct BatchingPolicy {
  bool dynamic = false;  // dynamic_batching present; joins only for a model with max_batch > 0
  std::vector<int64_t> preferred_sizes;
  std::chrono::microseconds max_queue_delay{0};
  size_t max_queue_size = 4096;                  // requests
  size_t max_queue_bytes = size_t(2) << 30;      // input bytes waiting: memory stays bounded
  std::chrono::microseconds default_timeout{0};  // 0: none
  bool allow_timeout_override = true;
};

class ModelScheduler {
 public:
  // `instances` all serve the same model (one execution at a time each).
  ModelScheduler(std::string name, std::vector<std::unique_ptr<models::Model>> instances,
                 BatchingPolicy policy, std::shared_ptr<ModelStats> stats);
  ~ModelScheduler();  // drains: every accepted request is answered
  ModelScheduler(const ModelScheduler&) = delete;
  ModelScheduler& operator=(const ModelScheduler&) = delete;

  const models::ModelSignature& signature() const { return signature_; }
  // Model::output_rows of the model for these inputs (any instance: they are the same model).
  std::optional<int64_t> output_rows(std::span<const models::TensorView> inputs) const {
    return instances_.front()->output_rows(inputs);
  }
  // Checks the inputs (kInvalidArgument, counted as a failure) and queues the request.
  std::future<std::vector<models::HostTensor>> submit(InferRequest request);
  // The same, answered through `done` (outputs, or an error) on the thread that ran or dropped
  // the request: a worker, or a submitter's thread when a drop happens there. Keep it short.
  using Completion =
      std::function<void(std::vector<models::HostTensor> outputs, std::exception_ptr error)>;
  void submit(InferRequest request, Completion done);
  // Stops accepting (kUnavailable) and waits until every queued request has been answered.
  void drain();

 private:
  struct Pending {
    InferRequest request;
    int64_t batch = 0;
    size_t bytes = 0;
    std::chrono::steady_clock::time_point arrival;
    Completion done;
  };
  void worker(size_t instance);
  std::vector<std::unique_ptr<Pending>> take_batch(std::unique_lock<std::mutex>& lock);
  void drop_unwanted(std::chrono::steady_clock::time_point now);
  void execute(models::Model& model, std::vector<std::unique_ptr<Pending>>& batch);
  bool compatible(const Pending& a, const Pending& b) const;

  std::string name_;
  std::vector<std::unique_ptr<models::Model>> instances_;
  models::ModelSignature signature_;
  BatchingPolicy policy_;
  std::shared_ptr<ModelStats> stats_;
  std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::deque<std::unique_ptr<Pending>> queue_;
  size_t executing_ = 0;
  size_t queued_bytes_ = 0;
  bool accepting_ = true, stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace kaas::server
