#include "kaas/server_adapter/scheduler.h"

#include <algorithm>

#include "kaas/common/error.h"
#include "kaas/server_adapter/log.h"

namespace kaas::server {

using Clock = std::chrono::steady_clock;
using models::HostTensor;

namespace {

// Queue timeouts at or above this (about 290 years) are treated as no timeout.
constexpr auto kLongestTimeout =
    std::chrono::duration_cast<std::chrono::microseconds>(Clock::duration::max()) / 1000;

uint64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// Rows [begin, begin + rows) of a batched tensor.
HostTensor slice_rows(const HostTensor& t, int64_t begin, int64_t rows) {
  HostTensor part{t.name, t.dtype, t.shape, {}};
  part.shape[0] = rows;
  const size_t row_bytes = t.shape[0] > 0 ? t.bytes.size() / size_t(t.shape[0]) : 0;
  const auto first = t.bytes.begin() + ptrdiff_t(size_t(begin) * row_bytes);
  part.bytes.assign(first, first + ptrdiff_t(size_t(rows) * row_bytes));
  return part;
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
  auto future = pending->promise.get_future();
  {
    std::lock_guard lock(mutex_);
    const auto reject = [&](const std::string& why) {
      stats_->update([&](StatsSnapshot& s) { s.fail.add(ns_between(arrival, Clock::now())); });
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
  return future;
}

void ModelScheduler::drain() {
  std::unique_lock lock(mutex_);
  accepting_ = false;
  drained_.wait(lock, [this] { return queue_.empty() && executing_ == 0; });
}

bool ModelScheduler::compatible(const Pending& a, const Pending& b) const {
  for (size_t i = 0; i < a.request.inputs.size(); ++i) {
    const auto& sa = a.request.inputs[i].shape;
    const auto& sb = b.request.inputs[i].shape;
    if (!std::equal(sa.begin() + 1, sa.end(), sb.begin() + 1, sb.end())) return false;
  }
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
      reason.emplace(ErrorCode::kUnavailable,
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
    (*it)->promise.set_exception(std::make_exception_ptr(*reason));
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
  int64_t total = 0;
  for (const auto& p : batch) total += p->batch;
  std::vector<HostTensor> inputs;
  if (batch.size() == 1) {
    inputs = std::move(batch.front()->request.inputs);
  } else {
    inputs = std::move(batch.front()->request.inputs);
    for (auto& in : inputs) in.shape[0] = total;
    for (size_t r = 1; r < batch.size(); ++r) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        const auto& more = batch[r]->request.inputs[i].bytes;
        inputs[i].bytes.insert(inputs[i].bytes.end(), more.begin(), more.end());
      }
    }
  }
  const auto gathered = Clock::now();
  std::vector<HostTensor> outputs;
  try {
    outputs = model.run(inputs);
  } catch (...) {
    const auto error = std::current_exception();
    const auto end = Clock::now();
    for (auto& p : batch) p->promise.set_exception(error);
    stats_->update([&](StatsSnapshot& s) {
      for (const auto& p : batch) {
        s.fail.add(ns_between(p->arrival, end));
        --s.pending;
      }
    });
    return;
  }
  const auto computed = Clock::now();
  std::vector<std::vector<HostTensor>> per_request(batch.size());
  int64_t offset = 0;
  for (size_t r = 0; r < batch.size(); ++r) {
    if (batch.size() == 1) {
      per_request[r] = std::move(outputs);
    } else {
      for (const auto& out : outputs)
        per_request[r].push_back(slice_rows(out, offset, batch[r]->batch));
    }
    offset += batch[r]->batch;
  }
  const auto end = Clock::now();
  const uint64_t input_ns = ns_between(start, gathered), infer_ns = ns_between(gathered, computed),
                 output_ns = ns_between(computed, end);
  stats_->update([&](StatsSnapshot& s) {
    for (const auto& p : batch) {
      s.queue.add(ns_between(p->arrival, start));
      s.compute_input.add(input_ns);
      s.compute_infer.add(infer_ns);
      s.compute_output.add(output_ns);
      s.success.add(ns_between(p->arrival, end));
      s.request_ns_total += ns_between(p->arrival, end);
      --s.pending;
    }
    ++s.execution_count;
    s.inference_count += uint64_t(total);
    auto& b = s.batches[uint64_t(total)];
    b.compute_input.add(input_ns);
    b.compute_infer.add(infer_ns);
    b.compute_output.add(output_ns);
    s.last_inference_ms = uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
  });
  for (size_t r = 0; r < batch.size(); ++r) batch[r]->promise.set_value(std::move(per_request[r]));
}

}  // namespace kaas::server
