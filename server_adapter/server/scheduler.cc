#include "kaas/server_adapter/server/scheduler.h"

#include <algorithm>

#include "kaas/common/error.h"
#include "kaas/server_adapter/core/batch_pipeline.h"
#include "kaas/server_adapter/server/log.h"

namespace kaas::server {

using Clock = std::chrono::steady_clock;
using models::HostTensor;

namespace {

// Queue timeouts at or above this (about 106 days) are treated as no timeout.
constexpr auto kLongestTimeout =
    std::chrono::duration_cast<std::chrono::microseconds>(Clock::duration::max()) / 1000;

uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

}  // namespace

ModelScheduler::ModelScheduler(std::string name,
                               std::vector<std::unique_ptr<models::Model>> instances,
                               BatchingPolicy policy, std::shared_ptr<ModelStats> stats)
    : name_(std::move(name)),
      instances_(std::move(instances)),
      policy_(std::move(policy)),
      stats_(std::move(stats)) {
  if (instances_.empty())
    throw Error(ErrorCode::kInternal, "model '" + name_ + "': no instance to schedule on");
  signature_ = instances_.front()->signature();
  if (signature_.max_batch == 0) policy_.dynamic = false;
  for (size_t i = 0; i < instances_.size(); ++i) workers_.emplace_back([this, i] { worker(i); });
}

ModelScheduler::~ModelScheduler() {
  drain();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

std::future<std::vector<HostTensor>> ModelScheduler::submit(InferRequest request) {
  auto promise = std::make_shared<std::promise<std::vector<HostTensor>>>();
  auto future = promise->get_future();
  submit(std::move(request), [promise](std::vector<HostTensor> outputs, std::exception_ptr error) {
    if (error) {
      promise->set_exception(std::move(error));
    } else {
      promise->set_value(std::move(outputs));
    }
  });
  return future;
}

void ModelScheduler::submit(InferRequest request, Completion done) {
  const auto arrival = Clock::now();
  models::CheckedInputs checked;
  try {
    checked = models::check_inputs(signature_, request.inputs, name_);
  } catch (const Error&) {
    stats_->update([&](StatsSnapshot& s) { s.fail.add(ns_between(arrival, Clock::now())); });
    throw;
  }
  auto pending = std::make_unique<Pending>();
  pending->batch = signature_.max_batch > 0 ? checked.batch : 1;
  pending->arrival = arrival;
  // Inputs in signature order, so batching can concatenate by position.
  std::vector<HostTensor> ordered;
  for (size_t at : checked.position) ordered.push_back(std::move(request.inputs[at]));
  for (const auto& t : ordered) pending->bytes += t.bytes.size();
  pending->request.inputs = std::move(ordered);
  pending->request.timeout = request.timeout;
  pending->request.deadline = request.deadline;
  pending->request.abandoned = std::move(request.abandoned);
  pending->done = std::move(done);
  {
    std::lock_guard lock(mutex_);
    const auto reject = [&](const std::string& why) {
      stats_->update([&](StatsSnapshot& s) {
        s.fail.add(ns_between(arrival, Clock::now()));
        if (accepting_) ++s.queue_full;
      });
      throw Error(ErrorCode::kUnavailable, "model '" + name_ + "': " + why);
    };
    if (!accepting_) reject("the server is shutting down");
    if (queue_.size() >= policy_.max_queue_size)
      reject("queue full (" + std::to_string(queue_.size()) + " requests waiting)");
    if (!queue_.empty() && queued_bytes_ + pending->bytes > policy_.max_queue_bytes)
      reject("queue full (" + std::to_string(queued_bytes_ >> 20) + " MiB of inputs waiting)");
    queued_bytes_ += pending->bytes;
    queue_.push_back(std::move(pending));
    stats_->update([](StatsSnapshot& s) { ++s.pending; });
  }
  wake_.notify_one();
}

void ModelScheduler::drain() {
  std::unique_lock lock(mutex_);
  accepting_ = false;
  wake_.notify_all();  // a worker gathering a batch runs what it has now
  drained_.wait(lock, [this] { return queue_.empty() && executing_ == 0; });
}

bool ModelScheduler::compatible(const Pending& a, const Pending& b) const {
  for (size_t i = 0; i < a.request.inputs.size(); ++i)
    if (!serving::same_item_shapes(a.request.inputs[i].shape, b.request.inputs[i].shape))
      return false;
  return true;
}

// Requests nobody waits for any more are answered now, before they take an execution.
void ModelScheduler::drop_unwanted(Clock::time_point now) {
  for (auto it = queue_.begin(); it != queue_.end();) {
    const InferRequest& request = (*it)->request;
    auto timeout = policy_.default_timeout;
    if (request.timeout && (policy_.allow_timeout_override || timeout.count() == 0))
      timeout = *request.timeout;
    // A timeout beyond what the clock can add (INT64_MAX us) means none, not an overflow.
    const bool bounded = timeout.count() > 0 && timeout < kLongestTimeout;
    std::optional<Error> reason;
    if (request.deadline && now >= *request.deadline) {
      reason.emplace(ErrorCode::kDeadlineExceeded,
                     "model '" + name_ + "': deadline exceeded before execution");
    } else if (request.abandoned && request.abandoned->load()) {
      reason.emplace(ErrorCode::kCancelled,
                     "model '" + name_ + "': the client went away before execution");
    } else if (bounded && now - (*it)->arrival >= timeout) {
      reason.emplace(ErrorCode::kUnavailable, "model '" + name_ + "': Request timeout expired");
    }
    if (!reason) {
      ++it;
      continue;
    }
    log_debug(std::string(reason->what()) + " (queued " +
              std::to_string(ns_between((*it)->arrival, now) / 1000) + " us, not executed)");
    // The error's message is a reference-counted string shared by every copy; the local copy
    // must be gone before the request thread can see the exception, so that the last release
    // (and the free) happens after the reader on whichever thread drops the exception last.
    auto error = std::make_exception_ptr(*reason);
    reason.reset();
    (*it)->done({}, std::move(error));
    stats_->update([&](StatsSnapshot& s) {
      s.fail.add(ns_between((*it)->arrival, now));
      --s.pending;
    });
    queued_bytes_ -= (*it)->bytes;
    it = queue_.erase(it);
    drained_.notify_all();
  }
}

std::vector<std::unique_ptr<ModelScheduler::Pending>> ModelScheduler::take_batch(
    std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<Pending>> batch;
  while (!queue_.empty()) {
    const auto now = Clock::now();
    drop_unwanted(now);
    if (queue_.empty()) break;
    size_t take = 1;
    if (policy_.dynamic) {
      int64_t total = 0;
      size_t count = 0, preferred_count = 0;
      for (const auto& p : queue_) {
        if (count > 0 &&
            (!compatible(*queue_.front(), *p) || total + p->batch > signature_.max_batch))
          break;
        total += p->batch;
        ++count;
        if (std::find(policy_.preferred_sizes.begin(), policy_.preferred_sizes.end(), total) !=
            policy_.preferred_sizes.end())
          preferred_count = count;
      }
      const bool full = total >= signature_.max_batch || count < queue_.size();
      const auto age = now - queue_.front()->arrival;
      if (preferred_count > 0) {
        take = preferred_count;
      } else if (full || stopping_ || !accepting_ || age >= policy_.max_queue_delay) {
        take = count;
      } else {
        wake_.wait_until(lock, queue_.front()->arrival + policy_.max_queue_delay);
        continue;  // more requests may have arrived, or another instance took these
      }
    }
    for (size_t i = 0; i < take; ++i) {
      queued_bytes_ -= queue_.front()->bytes;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    break;
  }
  return batch;
}

void ModelScheduler::worker(size_t instance) {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    auto batch = take_batch(lock);
    if (batch.empty()) continue;
    ++executing_;
    lock.unlock();
    execute(*instances_[instance], batch);
    lock.lock();
    --executing_;
    drained_.notify_all();
  }
}

void ModelScheduler::execute(models::Model& model, std::vector<std::unique_ptr<Pending>>& batch) {
  const auto start = Clock::now();
  std::vector<serving::BatchPart> parts(batch.size());
  for (size_t r = 0; r < batch.size(); ++r) {
    parts[r].rows = batch[r]->batch;
    for (const HostTensor& t : batch[r]->request.inputs) parts[r].inputs.push_back(t.view());
  }
  serving::BatchRun run = serving::run_parts(model, parts);
  const auto computed = Clock::now();
  std::vector<std::vector<HostTensor>> per_request(batch.size());
  for (size_t r = 0; r < batch.size(); ++r) {
    if (run.parts[r].error) continue;
    try {  // a model whose outputs lack the batch rows fails its requests, not the worker
      per_request[r] = run.parts[r].take();
    } catch (...) {
      run.parts[r].error = std::current_exception();
    }
  }
  const auto end = Clock::now();
  const auto ns = [](auto d) {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  };
  const uint64_t input_ns = ns(run.join), infer_ns = ns(run.run),
                 output_ns = ns_between(computed, end);
  int64_t answered = 0;
  stats_->update([&](StatsSnapshot& s) {
    for (size_t r = 0; r < batch.size(); ++r) {
      const Pending& p = *batch[r];
      --s.pending;
      if (run.parts[r].error) {
        s.fail.add(ns_between(p.arrival, end));
        continue;
      }
      answered += p.batch;
      s.queue.add(ns_between(p.arrival, start));
      s.queue_histogram.add(ns_between(p.arrival, start));
      s.compute_input.add(input_ns);
      s.compute_infer.add(infer_ns);
      s.compute_output.add(output_ns);
      s.success.add(ns_between(p.arrival, end));
      s.request_ns_total += ns_between(p.arrival, end);
    }
    s.execution_count += uint64_t(run.executions);
    s.inference_count += uint64_t(answered);
    if (answered > 0) {
      auto& b = s.batches[uint64_t(answered)];
      b.compute_input.add(input_ns);
      b.compute_infer.add(infer_ns);
      b.compute_output.add(output_ns);
    }
    s.last_inference_ms = uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
  });
  for (size_t r = 0; r < batch.size(); ++r) {
    if (run.parts[r].error) {
      batch[r]->done({}, run.parts[r].error);
    } else {
      batch[r]->done(std::move(per_request[r]), nullptr);
    }
  }
}

}  // namespace kaas::server
