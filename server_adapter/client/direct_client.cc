#include "kaas/server_adapter/client/direct_client.h"

#include <cstring>
#include <utility>

#include "kaas/server_adapter/client/conversion.h"
#include "kaas/server_adapter/repository_entry.h"

namespace kaas::client {

namespace {

using Clock = std::chrono::steady_clock;

// Rectangular entries joined along the batch dimension (the one copy direct mode makes).
std::vector<HostTensor> join_entries(const CallRequest& request) {
  std::vector<HostTensor> joined;
  for (size_t i = 0; i < request.entries.front().size(); ++i) {
    const InputRef& first = request.entries.front()[i];
    HostTensor t{first.spec->name, first.spec->dtype, joined_shape(request, i), {}};
    for (const auto& entry : request.entries)
      t.bytes.insert(t.bytes.end(), entry[i].bytes.begin(), entry[i].bytes.end());
    joined.push_back(std::move(t));
  }
  return joined;
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
  std::vector<std::vector<HostTensor>> per_entry;
  const bool joined = batch_mode() == BatchMode::kRectangular && request.entries.size() > 1;
  if (joined) {
    per_entry = split_entries(model_->run(join_entries(request)), request.entry_batches);
  } else {
    for (const auto& entry : request.entries) {
      std::vector<TensorView> views;
      for (const InputRef& in : entry) views.push_back(in.view());
      per_entry.push_back(model_->run(views));
    }
  }
  turn.end();
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
