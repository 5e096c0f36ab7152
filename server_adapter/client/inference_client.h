#pragma once
// kaas::client::InferenceClient: one API for running a model in process (DirectClient) or on
// kaas-server / Triton over KServe v2 gRPC (RemoteClient), chosen by configuration, with the
// same results (the SONIC pattern). Reconstruction code sets inputs by name, runs, and reads
// outputs by name:
//
//   client.set_input<float>("image", image_values, {wires, bins});
//   client.set_input<int32_t>("hit_wire", wires, {hits});
//   client.set_input<float>("hit_tick", ticks, {hits});
//   InferResult r = client.run(CallOptions().with_deadline(5s));
//   std::span<const float> scores = r.output<float>("scores");
//
// Entries: a call carries one or more entries (batch elements) per input. In rectangular mode
// the entries are joined along the batch dimension into one execution (one request) and the
// outputs split back; in ragged mode every entry is its own execution (remote: its own request,
// all sent together), so entries may differ in every dimension.
//
// Inputs are views: set_input does not copy, and the memory must stay valid until run() returns
// or the asynchronous call's result is delivered. Setting inputs again after run_async() is
// safe (the call keeps the views it started with).
//
// Threads: one client object is used by one thread at a time (set_input / run). Asynchronous
// calls of a DirectClient run on its own workers; a RemoteClient's hold no thread while in flight
// and complete on its connection's completion threads (remote_client.h). Either way the
// callback runs on a thread of the client's, so it must be short, must not block and must not
// destroy the client. Many threads may each own a client; RemoteClients may share a connection.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kaas/backends/half.h"
#include "kaas/common/error.h"
#include "kaas/models/tensor.h"

namespace kaas::client {

using models::DataType;
using models::HostTensor;
using models::TensorView;

enum class BatchMode { kRectangular, kRagged };

struct CallOptions {
  // Time allowed for the call (remote: for each attempt); none = wait as long as it takes.
  std::optional<std::chrono::milliseconds> deadline;
  std::vector<std::string> outputs;  // the outputs wanted; empty = all, in model order

  CallOptions& with_deadline(std::chrono::milliseconds d) {
    deadline = d;
    return *this;
  }
  CallOptions& with_outputs(std::vector<std::string> names) {
    outputs = std::move(names);
    return *this;
  }
};

// How one call went.
struct CallInfo {
  int attempts = 0;            // remote requests rounds (1 without retries); 1 for direct
  bool fallback = false;       // answered by the fallback client
  int64_t bytes_sent = 0;      // serialised request messages (0 in process)
  int64_t bytes_received = 0;  // serialised response messages
  double seconds = 0;          // wall time of the call
};

class InferResult {
 public:
  InferResult() = default;
  InferResult(std::vector<std::vector<HostTensor>> per_entry, CallInfo info)
      : per_entry_(std::move(per_entry)), info_(info) {}

  size_t entries() const { return per_entry_.size(); }
  // The output `name` of one entry; kNotFound for an output the call did not return.
  const HostTensor& tensor(std::string_view name, size_t entry = 0) const;
  std::span<const int64_t> shape(std::string_view name, size_t entry = 0) const {
    return tensor(name, entry).shape;
  }
  // Values as T; kInvalidArgument when T is not the output's datatype.
  template <class T>
  std::span<const T> output(std::string_view name, size_t entry = 0) const;
  const CallInfo& info() const { return info_; }
  CallInfo& info() { return info_; }
  std::vector<std::vector<HostTensor>>& per_entry() { return per_entry_; }

 private:
  std::vector<std::vector<HostTensor>> per_entry_;
  CallInfo info_;
};

template <class T>
constexpr DataType data_type_of();
template <>
constexpr DataType data_type_of<float>() {
  return DataType::kFloat32;
}
template <>
constexpr DataType data_type_of<int32_t>() {
  return DataType::kInt32;
}
template <>
constexpr DataType data_type_of<int64_t>() {
  return DataType::kInt64;
}
template <>
constexpr DataType data_type_of<uint8_t>() {
  return DataType::kUint8;
}
// FP16 / BF16 (a model whose config declares them): kaas::fp16 / kaas::bf16 values, converted
// with kaas::math::to_fp16 / to_bf16 / to_float (backends/half.h).
template <>
constexpr DataType data_type_of<fp16>() {
  return DataType::kFloat16;
}
template <>
constexpr DataType data_type_of<bf16>() {
  return DataType::kBFloat16;
}

void check_output_type(const HostTensor& tensor, DataType wanted);

template <class T>
std::span<const T> InferResult::output(std::string_view name, size_t entry) const {
  const HostTensor& t = tensor(name, entry);
  check_output_type(t, data_type_of<T>());
  return t.values<T>();
}

// One input of one entry: the caller's bytes and the shape given with them.
struct InputRef {
  const models::TensorSpec* spec = nullptr;  // the model's input (name, datatype)
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
  TensorView view() const { return {spec->name, spec->dtype, shape, bytes}; }
};

// The inputs of one call: entries x inputs in signature order.
struct CallRequest {
  std::vector<std::vector<InputRef>> entries;
  std::vector<int64_t> entry_batches;  // each entry's batch size (1 for unbatched models)
  CallOptions options;
};

// A few worker threads for asynchronous calls (started on first use).
class AsyncWorkers {
 public:
  explicit AsyncWorkers(int threads) : threads_(threads) {}
  ~AsyncWorkers() { stop(); }
  void post(std::function<void()> task);
  void stop();  // runs what was posted, then joins

 private:
  int threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

class InferenceClient {
 public:
  using Callback = std::function<void(InferResult result, std::exception_ptr error)>;

  virtual ~InferenceClient() = default;
  InferenceClient(const InferenceClient&) = delete;
  InferenceClient& operator=(const InferenceClient&) = delete;

  const std::string& model_name() const { return model_name_; }
  // Shapes as models write them: a batched model's inputs start with the batch dimension -1.
  const models::ModelSignature& signature() const { return signature_; }
  BatchMode batch_mode() const { return batch_mode_; }
  virtual std::string describe() const = 0;  // "direct openmp" / "remote host:port"

  // Entry `entry` of input `name`. kNotFound for an unknown input, kInvalidArgument for a
  // datatype other than the model's or a value count that does not match the shape.
  template <class T>
  void set_input(std::string_view name, std::span<const T> values, std::vector<int64_t> shape,
                 size_t entry = 0) {
    set_input_bytes(name, data_type_of<T>(), std::as_bytes(values), std::move(shape), entry);
  }
  void set_input_bytes(std::string_view name, DataType dtype, std::span<const std::byte> bytes,
                       std::vector<int64_t> shape, size_t entry = 0);
  void clear_inputs();

  // Blocking call on the inputs set. Throws kaas::Error (kDeadlineExceeded, kUnavailable,
  // kInvalidArgument, ...) with a message naming the model and what went wrong.
  InferResult run(const CallOptions& options = {});
  // The same call on the client's workers. Input errors throw here; call errors arrive through
  // the future or the callback's `error`. The callback must not throw (see Threads above).
  std::future<InferResult> run_async(const CallOptions& options = {});
  void run_async(Callback callback, const CallOptions& options = {});

 protected:
  InferenceClient(std::string model_name, models::ModelSignature signature, BatchMode mode,
                  int async_threads);
  virtual InferResult execute(const CallRequest& request) = 0;
  // Starts an asynchronous call; `callback` runs once when it ends. This one runs execute() on
  // the client's workers.
  virtual void start_async(std::shared_ptr<const CallRequest> request, Callback callback);
  void post_to_workers(std::function<void()> task) { workers_.post(std::move(task)); }
  // Runs the user's callback; an exception escaping it is reported on stderr, not propagated
  // into the thread that delivers it.
  static void deliver(const Callback& callback, InferResult result, std::exception_ptr error);
  // Derived destructors call this first: asynchronous calls use the derived object.
  void finish_async_calls() { workers_.stop(); }

 private:
  friend class RemoteClient;  // runs its fallback's execute()
  CallRequest take_request(const CallOptions& options) const;

  std::string model_name_;
  models::ModelSignature signature_;
  BatchMode batch_mode_;
  std::vector<std::vector<InputRef>> inputs_;  // [input in signature order][entry]
  AsyncWorkers workers_;
};

}  // namespace kaas::client
