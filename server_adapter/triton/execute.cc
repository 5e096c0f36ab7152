#include "kaas/server_adapter/triton/execute.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "kaas/backends/cpu/openmp_threads.h"
#include "kaas/common/error.h"
#include "kaas/server_adapter/core/batch_pipeline.h"
#include "kaas/server_adapter/triton/triton_util.h"

namespace kaas::triton {

namespace {

using models::HostTensor;
using models::TensorView;

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

struct RequestError {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

RequestError error_of(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::exception& e) {
    return {ErrorCode::kInternal, e.what()};
  } catch (...) {
    return {ErrorCode::kInternal, "unknown exception"};
  }
}

// One request between reading and answering.
struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_Response* response = nullptr;
  std::vector<TensorView> inputs;                // in signature order, over Triton's buffers
  std::vector<std::vector<std::byte>> gathered;  // inputs Triton delivered in several buffers
  std::vector<std::string> requested;            // output names to return
  int64_t batch = 1;
  std::optional<RequestError> error;
  std::shared_ptr<const std::vector<HostTensor>> outputs;  // of the execution it was part of
  int64_t first_row = 0;                                   // its rows within `outputs`
  uint64_t compute_start = 0, compute_end = 0;
};

[[noreturn]] void fail(ErrorCode code, const std::string& model, const std::string& what) {
  throw Error(code, "model '" + model + "': " + what);
}

std::span<const std::byte> input_bytes(Pending& p, TRITONBACKEND_Input* input,
                                       const std::string& model, const std::string& name,
                                       uint64_t byte_size, uint32_t buffer_count) {
  const auto read_buffer = [&](uint32_t index) {
    const void* buffer = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    int64_t memory_id = 0;
    check(TRITONBACKEND_InputBuffer(input, index, &buffer, &size, &memory, &memory_id),
          "input buffer");
    if (memory == TRITONSERVER_MEMORY_GPU)
      fail(ErrorCode::kUnimplemented, model,
           "input '" + name + "' is in GPU memory; kaas takes inputs in CPU memory");
    return std::span<const std::byte>(static_cast<const std::byte*>(buffer), size);
  };
  if (buffer_count == 0) return {};
  if (buffer_count == 1) return read_buffer(0);
  auto& owned = p.gathered.emplace_back(byte_size);
  uint64_t offset = 0;
  for (uint32_t b = 0; b < buffer_count; ++b) {
    const auto part = read_buffer(b);
    if (offset + part.size() > byte_size)
      fail(ErrorCode::kInvalidArgument, model, "input '" + name + "': buffers exceed its size");
    std::memcpy(owned.data() + offset, part.data(), part.size());
    offset += part.size();
  }
  return owned;
}

void read_request(Pending& p, const models::ModelSignature& signature, const std::string& model) {
  p.gathered.reserve(signature.inputs.size());  // spans into it must stay valid
  for (const auto& spec : signature.inputs) {
    TRITONBACKEND_Input* input = nullptr;
    if (TRITONSERVER_Error* error =
            TRITONBACKEND_RequestInput(p.request, spec.name.c_str(), &input)) {
      const std::string why = TRITONSERVER_ErrorMessage(error);
      TRITONSERVER_ErrorDelete(error);
      fail(ErrorCode::kInvalidArgument, model, "input '" + spec.name + "' is missing: " + why);
    }
    const char* name = nullptr;
    TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
    const int64_t* shape = nullptr;
    uint32_t dims = 0, buffer_count = 0;
    uint64_t byte_size = 0;
    check(TRITONBACKEND_InputProperties(input, &name, &type, &shape, &dims, &byte_size,
                                        &buffer_count),
          "input properties");
    const auto dtype = from_triton_type(type);
    if (!dtype)
      fail(ErrorCode::kInvalidArgument, model,
           "input '" + spec.name + "': datatype " + triton_type_name(type) +
               " is not served by kaas (FP32, INT32, INT64, UINT8, FP16, BF16)");
    const auto bytes = input_bytes(p, input, model, spec.name, byte_size, buffer_count);
    p.inputs.push_back({spec.name, *dtype, std::span<const int64_t>(shape, dims), bytes});
  }
  // Sizes, shapes, types and the batch range, with the same messages as kaas-server.
  const auto checked = models::check_inputs(signature, p.inputs, model);
  p.batch = signature.max_batch > 0 ? checked.batch : 1;

  uint32_t outputs = 0;
  check(TRITONBACKEND_RequestOutputCount(p.request, &outputs), "requested output count");
  for (uint32_t i = 0; i < outputs; ++i) {
    const char* name = nullptr;
    check(TRITONBACKEND_RequestOutputName(p.request, i, &name), "requested output name");
    const bool known = std::any_of(signature.outputs.begin(), signature.outputs.end(),
                                   [&](const auto& s) { return s.name == name; });
    if (!known)
      fail(ErrorCode::kInvalidArgument, model, "unknown output '" + std::string(name) + "'");
    p.requested.push_back(name);
  }
}

// One group through the batch pipeline (joined, split; re-run alone on failure): each request
// keeps the rows of the execution it ended in, or its error. Returns the executions it took.
int run_group(models::Model& model, const std::vector<Pending*>& group) {
  std::vector<serving::BatchPart> parts;
  for (const Pending* p : group) parts.push_back({p->inputs, p->batch});
  const uint64_t start = now_ns();
  serving::BatchRun run = serving::run_parts(model, parts);
  const uint64_t end = now_ns();
  for (size_t i = 0; i < group.size(); ++i) {
    Pending& p = *group[i];
    const serving::PartOutcome& outcome = run.parts[i];
    if (outcome.error) {
      p.error = error_of(outcome.error);
      continue;
    }
    p.outputs = outcome.outputs;
    p.first_row = outcome.first_row;
    p.compute_start = start;
    p.compute_end = end;
  }
  return run.executions;
}

// The request's rows of each requested output, into Triton's output buffers.
void write_outputs(Pending& p, bool batched, const std::string& model) {
  for (const std::string& name : p.requested) {
    const auto it = std::find_if(p.outputs->begin(), p.outputs->end(),
                                 [&](const HostTensor& t) { return t.name == name; });
    if (it == p.outputs->end()) fail(ErrorCode::kInternal, model, "no output '" + name + "'");
    const HostTensor& t = *it;
    std::vector<int64_t> shape = t.shape;
    std::span<const std::byte> bytes = t.bytes;
    if (batched && !shape.empty()) {
      shape[0] = p.batch;
      bytes = serving::row_bytes(t, p.first_row, p.batch);
    }
    TRITONBACKEND_Output* output = nullptr;
    check(TRITONBACKEND_ResponseOutput(p.response, &output, name.c_str(), to_triton_type(t.dtype),
                                       shape.data(), uint32_t(shape.size())),
          "response output");
    void* buffer = nullptr;
    TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
    int64_t memory_id = 0;
    check(TRITONBACKEND_OutputBuffer(output, &buffer, bytes.size(), &memory, &memory_id),
          "output buffer");
    if (memory == TRITONSERVER_MEMORY_GPU)
      fail(ErrorCode::kUnimplemented, model, "output '" + name + "' was given GPU memory");
    if (!bytes.empty()) std::memcpy(buffer, bytes.data(), bytes.size());
  }
}

void answer(InstanceState& instance, Pending& p, bool batched, uint64_t exec_start) {
  const std::string& model = instance.model->name();
  if (!p.error && p.response) {
    try {
      write_outputs(p, batched, model);
    } catch (...) {
      p.error = error_of(std::current_exception());
    }
  }
  if (p.response) {
    TRITONSERVER_Error* error =
        p.error ? to_triton_error(p.error->code, p.error->message) : nullptr;
    if (TRITONSERVER_Error* send =
            TRITONBACKEND_ResponseSend(p.response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error)) {
      KAAS_TRITON_LOG(ERROR, "model '" + model + "': sending a response failed: " +
                                 TRITONSERVER_ErrorMessage(send));
      TRITONSERVER_ErrorDelete(send);
    }
    if (error) TRITONSERVER_ErrorDelete(error);
  }
  const uint64_t end = now_ns();
  const bool success = !p.error && p.response;
  if (TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(
          instance.triton, p.request, success, exec_start, success ? p.compute_start : exec_start,
          success ? p.compute_end : end, end))
    TRITONSERVER_ErrorDelete(e);
  if (TRITONSERVER_Error* e =
          TRITONBACKEND_RequestRelease(p.request, TRITONSERVER_REQUEST_RELEASE_ALL)) {
    KAAS_TRITON_LOG(ERROR, "model '" + model +
                               "': releasing a request failed: " + TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
}

// A response for request `p`, or its error; whether Triton cancelled it (counted in `dropped`,
// not run); else its inputs read and checked against the signature.
void take_request(Pending& p, const models::ModelSignature& signature, const std::string& name,
                  int& dropped) {
  if (TRITONSERVER_Error* error = TRITONBACKEND_ResponseNew(&p.response, p.request)) {
    p.error = RequestError{ErrorCode::kInternal, TRITONSERVER_ErrorMessage(error)};
    TRITONSERVER_ErrorDelete(error);
    p.response = nullptr;
    return;
  }
  // A request Triton cancelled (its gRPC client went or its deadline passed) is not run.
  bool cancelled = false;
  if (TRITONBACKEND_RequestIsCancelled != nullptr) {
    if (TRITONSERVER_Error* error = TRITONBACKEND_RequestIsCancelled(p.request, &cancelled))
      TRITONSERVER_ErrorDelete(error);
  }
  if (cancelled) {
    p.error = RequestError{ErrorCode::kCancelled,
                           "model '" + name + "': the request was cancelled before execution"};
    ++dropped;
    return;
  }
  try {
    read_request(p, signature, name);
  } catch (...) {
    p.error = error_of(std::current_exception());
  }
}

// Consecutive good requests with the same item shapes, up to max_batch rows, run together.
std::vector<std::vector<Pending*>> group_requests(std::vector<Pending>& pending, bool batched,
                                                  int64_t max_batch) {
  std::vector<std::vector<Pending*>> groups;
  int64_t group_rows = 0;
  for (Pending& p : pending) {
    if (p.error) continue;
    const bool joins = batched && !groups.empty() &&
                       serving::same_item_shapes(groups.back().front()->inputs, p.inputs) &&
                       group_rows + p.batch <= max_batch;
    if (!joins) {
      groups.emplace_back();
      group_rows = 0;
    }
    groups.back().push_back(&p);
    group_rows += p.batch;
  }
  return groups;
}

// What the groups' executions add up to, for the batch statistics and the log.
struct ExecutedGroups {
  uint64_t compute_start = 0, compute_end = 0;
  int64_t rows = 0;
  int executions = 0;
};

ExecutedGroups run_groups(models::Model& model, const std::vector<std::vector<Pending*>>& groups) {
  ExecutedGroups done;
  for (const auto& group : groups) {
    try {
      done.executions += run_group(model, group);
    } catch (...) {  // every request is still answered and released below
      for (Pending* p : group) p->error = error_of(std::current_exception());
    }
    for (const Pending* p : group) {
      if (p->error) continue;
      if (done.compute_start == 0) done.compute_start = p->compute_start;
      done.compute_end = std::max(done.compute_end, p->compute_end);
      done.rows += p->batch;
    }
  }
  return done;
}

}  // namespace

void execute_requests(InstanceState& instance, TRITONBACKEND_Request** requests, uint32_t count) {
  const uint64_t exec_start = now_ns();
  models::Model& model = *instance.instance;
  const auto& signature = model.signature();
  const std::string& name = instance.model->name();
  const bool batched = signature.max_batch > 0;

  std::vector<Pending> pending(count);
  int dropped = 0;
  for (uint32_t i = 0; i < count; ++i) {
    pending[i].request = requests[i];
    take_request(pending[i], signature, name, dropped);
  }
  const auto groups = group_requests(pending, batched, signature.max_batch);
  // Every time: Triton may hand an instance to another of its threads.
  instance.backend->set_caller_threads(instance.model->options().threads);
  openmp::take_widest_team();
  const ExecutedGroups done = run_groups(model, groups);
  for (Pending& p : pending) answer(instance, p, batched, exec_start);
  KAAS_TRITON_LOG(VERBOSE, "instance " + instance.name + ": " + std::to_string(count) +
                               " requests, " + std::to_string(done.executions) + " executions, " +
                               std::to_string(done.rows) + " rows, widest OpenMP team " +
                               std::to_string(openmp::take_widest_team()) + " (requested " +
                               std::to_string(openmp::requested_team()) + "), " +
                               std::to_string(dropped) + " cancelled before execution");
  if (done.rows > 0) {
    if (TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(
            instance.triton, uint64_t(done.rows), exec_start, done.compute_start, done.compute_end,
            now_ns()))
      TRITONSERVER_ErrorDelete(e);
  }
}

}  // namespace kaas::triton
