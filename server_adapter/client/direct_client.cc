#include "kaas/client/direct_client.h"

#include <cstring>
#include <utility>

#include "kaas/client/conversion.h"
#include "kaas/server_adapter/core/batch_pipeline.h"
#include "kaas/server_adapter/core/repository_entry.h"

namespace kaas::client {

namespace {

using Clock = std::chrono::steady_clock;

// A call of several entries names the one whose execution failed.
[[noreturn]] void rethrow_for_entry(std::exception_ptr error, size_t entry, size_t entries) {
  if (entries == 1) std::rethrow_exception(error);
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    throw Error(e.code(), "entry " + std::to_string(entry) + ": " + e.what());
  }
}

[[noreturn]] void deadline_exceeded(const std::string& model, const CallOptions& options,
                                    const char* when) {
  throw Error(ErrorCode::kDeadlineExceeded, "model '" + model + "' (direct): deadline of " +
                                                std::to_string(options.deadline->count()) +
                                                " ms exceeded " + when);
}

}  // namespace

std::unique_ptr<DirectClient> DirectClient::from_repository(const std::filesystem::path& repository,
                                                            const std::string& name,
                                                            const Backend& backend,
                                                            const DirectOptions& options) {
  auto loaded = repository::load_repository_model(repository, name, backend, 1, options.parameters);
  return std::make_unique<DirectClient>(std::move(loaded.instances.front()),
                                        std::string(backend.name()), options);
}

DirectClient::DirectClient(std::unique_ptr<models::Model> model, std::string backend_name,
                           const DirectOptions& options)
    : InferenceClient(model->name(), model->signature(), options.batch_mode, options.async_threads),
      model_(std::move(model)),
      backend_name_(std::move(backend_name)) {}

DirectClient::~DirectClient() {
  finish_async_calls();
}

InferResult DirectClient::execute(const CallRequest& request) {
  const auto start = Clock::now();
  const auto& options = request.options;
  {
    std::unique_lock lock(run_mutex_);
    const auto free = [this] { return !running_; };
    if (options.deadline) {
      if (!run_free_.wait_until(lock, start + *options.deadline, free))
        deadline_exceeded(model_name(), options, "waiting for the model");
    } else {
      run_free_.wait(lock, free);
    }
    running_ = true;
  }
  // Frees the model for the next call however this one ends (model errors throw).
  struct Turn {
    DirectClient& client;
    bool held = true;
    void end() {
      if (!std::exchange(held, false)) return;
      {
        std::lock_guard lock(client.run_mutex_);
        client.running_ = false;
      }
      client.run_free_.notify_one();
    }
    ~Turn() { end(); }
  } turn{*this};
  // Rectangular: the entries in one execution (through the batch pipeline: an entry that makes
  // it fail is found by re-running each alone); ragged: one execution per entry.
  std::vector<std::vector<HostTensor>> per_entry;
  const bool joined = batch_mode() == BatchMode::kRectangular && request.entries.size() > 1;
  std::vector<serving::BatchPart> parts(request.entries.size());
  for (size_t e = 0; e < request.entries.size(); ++e) {
    for (const InputRef& in : request.entries[e]) parts[e].inputs.push_back(in.view());
    parts[e].rows = e < request.entry_batches.size() ? request.entry_batches[e] : 1;
  }
  std::vector<serving::PartOutcome> outcomes;
  if (joined) {
    outcomes = serving::run_parts(*model_, parts).parts;
  } else {
    for (const auto& part : parts)
      outcomes.push_back(std::move(serving::run_parts(*model_, {&part, 1}).parts.front()));
  }
  turn.end();
  for (size_t e = 0; e < outcomes.size(); ++e) {
    if (outcomes[e].error) rethrow_for_entry(outcomes[e].error, e, outcomes.size());
    per_entry.push_back(outcomes[e].take());
  }
  for (auto& outputs : per_entry)
    outputs = keep_outputs(std::move(outputs), options.outputs, model_name());
  const auto end = Clock::now();
  if (options.deadline && end - start > *options.deadline)
    deadline_exceeded(model_name(), options, "before the inference finished");
  CallInfo info;
  info.attempts = 1;
  info.seconds = std::chrono::duration<double>(end - start).count();
  return InferResult(std::move(per_entry), info);
}

}  // namespace kaas::client
