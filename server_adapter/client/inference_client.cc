#include "kaas/client/inference_client.h"

#include <algorithm>
#include <cstdio>

#include "kaas/client/conversion.h"

namespace kaas::client {

const HostTensor& InferResult::tensor(std::string_view name, size_t entry) const {
  if (entry >= per_entry_.size())
    throw Error(ErrorCode::kNotFound, "result has " + std::to_string(per_entry_.size()) +
                                          " entries, no entry " + std::to_string(entry));
  for (const HostTensor& t : per_entry_[entry]) {
    if (t.name == name) return t;
  }
  std::string message = "result has no output '";
  message.append(name).append("'");
  throw Error(ErrorCode::kNotFound, message);
}

void check_output_type(const HostTensor& tensor, DataType wanted) {
  if (tensor.dtype != wanted)
    throw Error(ErrorCode::kInvalidArgument, "output '" + tensor.name + "' is " +
                                                 std::string(models::triton_name(tensor.dtype)) +
                                                 ", read as " +
                                                 std::string(models::triton_name(wanted)));
}

void AsyncWorkers::post(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (stopping_) throw Error(ErrorCode::kUnavailable, "client is shutting down");
  tasks_.push_back(std::move(task));
  if (workers_.size() < size_t(threads_) && tasks_.size() > 0) {
    workers_.emplace_back([this] {
      for (;;) {
        std::function<void()> next;
        {
          std::unique_lock wait_lock(mutex_);
          wake_.wait(wait_lock, [this] { return stopping_ || !tasks_.empty(); });
          if (tasks_.empty()) return;
          next = std::move(tasks_.front());
          tasks_.pop_front();
        }
        next();
      }
    });
  }
  wake_.notify_one();
}

void AsyncWorkers::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
}

InferenceClient::InferenceClient(std::string model_name, models::ModelSignature signature,
                                 BatchMode mode, int async_threads)
    : model_name_(std::move(model_name)),
      signature_(std::move(signature)),
      batch_mode_(mode),
      inputs_(signature_.inputs.size()),
      workers_(std::max(async_threads, 1)) {}

void InferenceClient::set_input_bytes(std::string_view name, DataType dtype,
                                      std::span<const std::byte> bytes, std::vector<int64_t> shape,
                                      size_t entry) {
  const auto& specs = signature_.inputs;
  const auto it =
      std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == name; });
  std::string where = "model '" + model_name_ + "' input '";
  where.append(name).append("'");
  if (it == specs.end()) throw Error(ErrorCode::kNotFound, where + ": the model has no such input");
  require(dtype == it->dtype, where, "datatype", std::string(models::triton_name(it->dtype)),
          std::string(models::triton_name(dtype)));
  for (int64_t d : shape)
    require(d >= 0, where, "shape", "non-negative dimensions", shape_string(shape));
  const size_t expected = size_t(models::element_count(shape)) * models::element_size(dtype);
  require(bytes.size() == expected, where, "byte size",
          std::to_string(expected) + " for shape " + shape_string(shape),
          std::to_string(bytes.size()));
  auto& slots = inputs_[size_t(it - specs.begin())];
  if (slots.size() <= entry) slots.resize(entry + 1);
  slots[entry] = InputRef{&*it, std::move(shape), bytes};
}

void InferenceClient::clear_inputs() {
  for (auto& slots : inputs_) slots.clear();
}

CallRequest InferenceClient::take_request(const CallOptions& options) const {
  CallRequest request;
  request.options = options;
  size_t entries = 0;
  for (const auto& slots : inputs_) entries = std::max(entries, slots.size());
  request.entries.resize(entries);
  for (size_t e = 0; e < entries; ++e) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const bool set = e < inputs_[i].size() && inputs_[i][e].spec != nullptr;
      if (!set)
        throw Error(ErrorCode::kInvalidArgument,
                    "model '" + model_name_ + "' input '" + signature_.inputs[i].name +
                        "' is not set" + (entries > 1 ? " for entry " + std::to_string(e) : ""));
      request.entries[e].push_back(inputs_[i][e]);
    }
  }
  request.entry_batches = check_entries(signature_, request, batch_mode_, model_name_);
  return request;
}

InferResult InferenceClient::run(const CallOptions& options) {
  return execute(take_request(options));
}

std::future<InferResult> InferenceClient::run_async(const CallOptions& options) {
  auto promise = std::make_shared<std::promise<InferResult>>();
  auto future = promise->get_future();
  run_async(
      [promise](InferResult result, std::exception_ptr error) {
        if (error) {
          promise->set_exception(error);
        } else {
          promise->set_value(std::move(result));
        }
      },
      options);
  return future;
}

void InferenceClient::run_async(Callback callback, const CallOptions& options) {
  start_async(std::make_shared<const CallRequest>(take_request(options)), std::move(callback));
}

void InferenceClient::start_async(std::shared_ptr<const CallRequest> request, Callback callback) {
  workers_.post([this, request, callback = std::move(callback)] {
    InferResult result;
    std::exception_ptr error;
    try {
      result = execute(*request);
    } catch (...) {
      error = std::current_exception();
    }
    deliver(callback, std::move(result), error);
  });
}

void InferenceClient::deliver(const Callback& callback, InferResult result,
                              std::exception_ptr error) {
  try {
    callback(std::move(result), error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas client: an asynchronous call's callback threw: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "kaas client: an asynchronous call's callback threw\n");
  }
}

}  // namespace kaas::client
