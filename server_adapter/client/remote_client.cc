#include "kaas/client/remote_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "kaas/client/conversion.h"
#include "kaas/client/server_addresses.h"
#include "kaas/client/shared_memory_regions.h"
#include "kaas/server_adapter/core/batch_pipeline.h"
#include "kaas/server_adapter/core/repository_entry.h"
#include "kaas/server_adapter/core/tensor_codec.h"

namespace kaas::client {

// The balanced channel (round robin over health-checked servers) and how to probe (a fresh
// channel to the first reachable server, no health checking). A channel whose servers all died
// was seen here not to reach them again for many seconds after they returned (health-check
// retries back off up to 2 minutes; reconnects were reset), so once a probe finds a server ready
// a balanced channel that is not READY is replaced by a fresh one; replaced stubs stay alive for
// callers still holding them.
struct RemoteConnection::Impl {
  using Stub = inference::GRPCInferenceService::Stub;
  std::function<std::shared_ptr<grpc::Channel>()> make_balanced, make_probe;

  std::shared_ptr<Stub> stub() const {
    std::lock_guard lock(mutex);
    return balanced;
  }
  void renew_unless_ready() {
    std::lock_guard lock(mutex);
    if (channel && channel->GetState(false) == GRPC_CHANNEL_READY) return;
    if (balanced) retired.push_back(balanced);
    channel = make_balanced();
    balanced = inference::GRPCInferenceService::NewStub(channel);
  }

 private:
  mutable std::mutex mutex;
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<Stub> balanced;
  std::vector<std::shared_ptr<Stub>> retired;
};

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

ErrorCode code_of(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return ErrorCode::kInvalidArgument;
    case grpc::StatusCode::NOT_FOUND:
      return ErrorCode::kNotFound;
    case grpc::StatusCode::UNAVAILABLE:
      return ErrorCode::kUnavailable;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return ErrorCode::kDeadlineExceeded;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ErrorCode::kResourceExhausted;
    case grpc::StatusCode::UNIMPLEMENTED:
      return ErrorCode::kUnimplemented;
    case grpc::StatusCode::ALREADY_EXISTS:
      return ErrorCode::kAlreadyExists;
    case grpc::StatusCode::CANCELLED:
      return ErrorCode::kCancelled;
    default:
      return ErrorCode::kInternal;
  }
}

// Answers that say "not now" rather than "not this request".
bool retryable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

std::string status_text(const grpc::Status& status) {
  std::string text = std::string(to_string(code_of(status.error_code())));
  if (status.error_code() == grpc::StatusCode::UNKNOWN) text = "UNKNOWN";
  return text + ": " + status.error_message();
}

// Where one request's tensors go in a call's shared memory region: the inputs from `offset` on,
// then the requested outputs of fixed size (the others come back in the reply).
struct Placement {
  const detail::ClientRegion* region = nullptr;
  size_t offset = 0;
};

struct OutputSlot {
  std::string name;
  size_t offset = 0, capacity = 0;
};

void set_region(google::protobuf::Map<std::string, inference::InferParameter>& params,
                const std::string& region, size_t offset, size_t bytes) {
  params["shared_memory_region"].set_string_param(region);
  params["shared_memory_offset"].set_int64_param(int64_t(offset));
  params["shared_memory_byte_size"].set_int64_param(int64_t(bytes));
}

// Bytes of `rows` rows of a batched output of fixed item shape; 0 when unknown before it runs.
size_t output_bytes(const models::TensorSpec& spec, int64_t rows, bool batched) {
  if (!batched || spec.shape.empty()) return 0;
  size_t items = size_t(rows);
  for (size_t d = 1; d < spec.shape.size(); ++d) {
    if (spec.shape[d] < 0) return 0;
    items *= size_t(spec.shape[d]);
  }
  return items * models::element_size(spec.dtype);
}

// The bytes one request of a call places in shared memory.
size_t placed_bytes(const CallRequest& call, std::span<const size_t> entries,
                    const models::ModelSignature& signature) {
  size_t bytes = 0;
  int64_t rows = 0;
  for (size_t e : entries) {
    rows += e < call.entry_batches.size() ? call.entry_batches[e] : 1;
    for (const InputRef& in : call.entries[e]) bytes += in.bytes.size();
  }
  for (const auto& spec : signature.outputs) {
    const bool asked = call.options.outputs.empty() ||
                       std::find(call.options.outputs.begin(), call.options.outputs.end(),
                                 spec.name) != call.options.outputs.end();
    if (asked) bytes += output_bytes(spec, rows, signature.max_batch > 0);
  }
  return bytes;
}

// One request of a call: rectangular = every entry joined (by the batch pipeline, straight into
// the message or the shared memory region), ragged = one entry.
inference::ModelInferRequest make_request(const CallRequest& call, std::span<const size_t> entries,
                                          const std::string& model, const std::string& version,
                                          const models::ModelSignature& signature,
                                          const Placement& placement,
                                          std::vector<OutputSlot>& slots) {
  inference::ModelInferRequest r;
  r.set_model_name(model);
  r.set_model_version(version);
  std::vector<serving::BatchPart> parts;
  int64_t rows = 0;
  for (size_t e : entries) {
    serving::BatchPart& part = parts.emplace_back();
    for (const InputRef& in : call.entries[e]) part.inputs.push_back(in.view());
    part.rows = e < call.entry_batches.size() ? call.entry_batches[e] : 1;
    rows += part.rows;
  }
  size_t offset = placement.offset;
  for (size_t i = 0; i < call.entries.front().size(); ++i) {
    const InputRef& first = call.entries[entries.front()][i];
    auto* in = r.add_inputs();
    in->set_name(first.spec->name);
    in->set_datatype(std::string(models::triton_name(first.spec->dtype)));
    for (int64_t d : serving::joined_shape(parts, i)) in->add_shape(d);
    const size_t bytes = serving::joined_bytes(parts, i);
    if (placement.region) {
      serving::copy_joined(parts, i, placement.region->data() + offset);
      set_region(*in->mutable_parameters(), placement.region->name(), offset, bytes);
      offset += bytes;
      continue;
    }
    std::string* raw = r.add_raw_input_contents();
    raw->resize(bytes);
    serving::copy_joined(parts, i, reinterpret_cast<std::byte*>(raw->data()));
  }
  slots.clear();
  if (!placement.region) {
    for (const std::string& name : call.options.outputs) r.add_outputs()->set_name(name);
    return r;
  }
  for (const auto& spec : signature.outputs) {
    const auto& asked = call.options.outputs;
    if (!asked.empty() && std::find(asked.begin(), asked.end(), spec.name) == asked.end()) continue;
    auto* out = r.add_outputs();
    out->set_name(spec.name);
    const size_t bytes = output_bytes(spec, rows, signature.max_batch > 0);
    if (bytes == 0) continue;  // size known only after it runs: in the reply
    set_region(*out->mutable_parameters(), placement.region->name(), offset, bytes);
    slots.push_back({spec.name, offset, bytes});
    offset += bytes;
  }
  return r;
}

std::vector<HostTensor> outputs_of(const inference::ModelInferResponse& r, const std::string& where,
                                   const detail::ClientRegion* region,
                                   std::span<const OutputSlot> slots) {
  if (r.raw_output_contents_size() != r.outputs_size())
    throw Error(ErrorCode::kInternal, where + ": the server answered " +
                                          std::to_string(r.outputs_size()) + " outputs with " +
                                          std::to_string(r.raw_output_contents_size()) +
                                          " raw contents (typed contents are not read)");
  std::vector<HostTensor> outputs;
  for (int i = 0; i < r.outputs_size(); ++i) {
    const auto& out = r.outputs(i);
    std::string_view bytes = r.raw_output_contents(i);
    const auto slot = std::find_if(slots.begin(), slots.end(),
                                   [&](const OutputSlot& s) { return s.name == out.name(); });
    if (region && slot != slots.end()) {
      // The size the server wrote (int64 or uint64 parameter); else the shape's.
      const auto size = out.parameters().find("shared_memory_byte_size");
      int64_t written = -1;
      if (size != out.parameters().end()) {
        written = size->second.parameter_choice_case() == inference::InferParameter::kUint64Param
                      ? int64_t(std::min<uint64_t>(size->second.uint64_param(), INT64_MAX))
                      : size->second.int64_param();
      } else if (const auto dtype = models::data_type_from_triton(out.datatype())) {
        const std::vector<int64_t> shape(out.shape().begin(), out.shape().end());
        written = models::element_count(shape) * int64_t(models::element_size(*dtype));
      }
      if (written < 0 || size_t(written) > slot->capacity)
        throw Error(ErrorCode::kInternal, where + ": output '" + out.name() +
                                              "' was to come through shared memory, the reply "
                                              "says " +
                                              std::to_string(written) + " bytes");
      bytes = {reinterpret_cast<const char*>(region->data() + slot->offset), size_t(written)};
    }
    outputs.push_back(server::tensor_from_raw(out.name(), out.datatype(),
                                              {out.shape().begin(), out.shape().end()}, bytes));
  }
  return outputs;
}

models::TensorSpec spec_of(const inference::ModelMetadataResponse::TensorMetadata& t,
                           const std::string& where) {
  const auto dtype = models::data_type_from_triton(t.datatype());
  if (!dtype)
    throw Error(ErrorCode::kUnimplemented, where + ": tensor '" + t.name() + "' datatype " +
                                               t.datatype() +
                                               " is not handled by the kaas client (FP32, "
                                               "INT32, INT64, UINT8)");
  return {t.name(), *dtype, {t.shape().begin(), t.shape().end()}};
}

// One RPC about the model (name + version) within `deadline`; an error status throws with it.
template <class Request, class Response, class Method>
Response model_rpc(inference::GRPCInferenceService::Stub& stub, Method method,
                   const RemoteOptions& options, std::chrono::system_clock::time_point deadline,
                   const std::string& where) {
  Request request;
  request.set_name(options.model);
  request.set_version(options.version);
  Response response;
  grpc::ClientContext context;
  context.set_deadline(deadline);
  const grpc::Status status = (stub.*method)(&context, request, &response);
  if (!status.ok()) throw Error(code_of(status.error_code()), where + ": " + status_text(status));
  return response;
}

}  // namespace

std::shared_ptr<RemoteConnection> RemoteConnection::connect(const std::string& url,
                                                            const ConnectionOptions& options) {
  const detail::ChannelTarget target = detail::channel_target(url);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);  // no config from DNS TXT records
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  // The client's retry policy decides how long to keep trying; reconnect promptly once the
  // server is back instead of gRPC's default backoff of up to 2 minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.root_certificates.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.root_certificates;
    credentials = grpc::SslCredentials(ssl);
    // A resolved list dials addresses: certificates are checked against the first host named.
    if (!target.tls_name.empty()) args.SetSslTargetNameOverride(target.tls_name);
  }
  std::shared_ptr<RemoteConnection> connection(new RemoteConnection());
  connection->url_ = url;
  connection->gzip_ = options.gzip;
  connection->impl_ = std::make_unique<Impl>();
  auto& impl = *connection->impl_;
  impl.make_probe = [target = target.target, credentials, args] {
    return grpc::CreateCustomChannel(target, credentials, args);
  };
  // Balanced per request (over the servers grpc.health.v1 calls SERVING, for a list or dns:///).
  args.SetServiceConfigJSON(detail::balanced_service_config(target.health_checked));
  impl.make_balanced = [target = target.target, credentials, args] {
    return grpc::CreateCustomChannel(target, credentials, args);
  };
  impl.renew_unless_ready();
  return connection;
}

RemoteConnection::~RemoteConnection() = default;

std::unique_ptr<RemoteClient> RemoteClient::create(const std::string& url,
                                                   const RemoteOptions& options,
                                                   const ConnectionOptions& connection) {
  return create(RemoteConnection::connect(url, connection), options);
}

std::unique_ptr<RemoteClient> RemoteClient::create(std::shared_ptr<RemoteConnection> connection,
                                                   const RemoteOptions& options) {
  repository::check_model_name(options.model);
  const std::string where = "model '" + options.model + "' at " + connection->url();
  const auto stub_held = connection->impl().stub();
  auto& stub = *stub_held;
  const auto deadline = std::chrono::system_clock::now() + options.ready_timeout;
  {
    grpc::ClientContext context;
    context.set_deadline(deadline);
    context.set_wait_for_ready(true);  // wait for the connection, up to the deadline
    inference::ServerLiveResponse live;
    const auto status = stub.ServerLive(&context, {}, &live);
    if (!status.ok() || !live.live())
      throw Error(ErrorCode::kUnavailable, "server " + connection->url() + " is not live within " +
                                               std::to_string(options.ready_timeout.count()) +
                                               " ms" +
                                               (status.ok() ? "" : ": " + status_text(status)));
  }
  using Stub = inference::GRPCInferenceService::Stub;
  const auto meta = model_rpc<inference::ModelMetadataRequest, inference::ModelMetadataResponse>(
      stub, &Stub::ModelMetadata, options, deadline, where);  // unknown model: NOT_FOUND here
  const auto ready = model_rpc<inference::ModelReadyRequest, inference::ModelReadyResponse>(
      stub, &Stub::ModelReady, options, deadline, where);
  if (!ready.ready()) throw Error(ErrorCode::kUnavailable, where + " is not ready");
  const auto config = model_rpc<inference::ModelConfigRequest, inference::ModelConfigResponse>(
      stub, &Stub::ModelConfig, options, deadline, where);
  models::ModelSignature signature;
  signature.max_batch = config.config().max_batch_size();
  for (const auto& t : meta.inputs()) signature.inputs.push_back(spec_of(t, where));
  for (const auto& t : meta.outputs()) signature.outputs.push_back(spec_of(t, where));
  if (signature.max_batch > 0) {
    for (auto* specs : {&signature.inputs, &signature.outputs}) {
      for (const auto& spec : *specs) {
        if (spec.shape.empty() || spec.shape[0] != models::kVariableDim)
          throw Error(ErrorCode::kInvalidArgument,
                      where + ": batched model's tensor '" + spec.name + "' has shape " +
                          shape_string(spec.shape) + " without the leading batch dimension -1");
      }
    }
  }
  std::unique_ptr<RemoteClient> client(
      new RemoteClient(std::move(connection), options, std::move(signature)));
  if (options.shared_memory) {
    // Registers through the client's own channel; a server on another node cannot open the key.
    auto* stub = client->connection_->impl().stub().get();  // kept alive by the connection
    detail::RegionRpcs rpcs;
    rpcs.add = [stub, where, timeout = options.ready_timeout](
                   const std::string& name, const std::string& key, size_t bytes) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + timeout);
      inference::SystemSharedMemoryRegisterRequest request;
      request.set_name(name);
      request.set_key(key);
      request.set_byte_size(bytes);
      inference::SystemSharedMemoryRegisterResponse response;
      const auto status = stub->SystemSharedMemoryRegister(&context, request, &response);
      if (!status.ok())
        throw Error(ErrorCode::kUnavailable,
                    where + ": shared memory: the server cannot use this client's region '" + key +
                        "' (is it on this node?): " + status_text(status));
    };
    rpcs.remove = [stub, timeout = options.ready_timeout](const std::string& name) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + timeout);
      inference::SystemSharedMemoryUnregisterRequest request;
      request.set_name(name);
      inference::SystemSharedMemoryUnregisterResponse response;
      (void)stub->SystemSharedMemoryUnregister(&context, request, &response);
    };
    client->regions_ = std::make_unique<detail::RegionPool>(std::move(rpcs));
    client->regions_->release(client->regions_->acquire(1));  // fails here, not in a call
  }
  return client;
}

RemoteClient::RemoteClient(std::shared_ptr<RemoteConnection> connection,
                           const RemoteOptions& options, models::ModelSignature signature)
    : InferenceClient(options.model, std::move(signature), options.batch_mode,
                      options.async_threads),
      connection_(std::move(connection)),
      options_(options) {}

RemoteClient::~RemoteClient() {
  finish_async_calls();
}

std::string RemoteClient::describe() const {
  std::string text = "remote " + connection_->url();
  std::lock_guard lock(fallback_mutex_);
  if (on_fallback_ && fallback_) text += " (on its fallback, " + fallback_->describe() + ")";
  return text;
}

ServerStatistics RemoteClient::statistics() const {
  using Stub = inference::GRPCInferenceService::Stub;
  const auto response =
      model_rpc<inference::ModelStatisticsRequest, inference::ModelStatisticsResponse>(
          *connection_->impl().stub(), &Stub::ModelStatistics, options_,
          std::chrono::system_clock::now() + options_.ready_timeout,
          "statistics of model '" + options_.model + "'");
  ServerStatistics s;
  for (const auto& m : response.model_stats()) {
    s.inference_count += m.inference_count();
    s.execution_count += m.execution_count();
    const auto& i = m.inference_stats();
    s.success_ns += i.success().ns();
    s.queue_ns += i.queue().ns();
    s.compute_input_ns += i.compute_input().ns();
    s.compute_infer_ns += i.compute_infer().ns();
    s.compute_output_ns += i.compute_output().ns();
  }
  return s;
}

namespace {

// The entries each gRPC request of a call carries: all of them joined (rectangular models) or
// one each.
std::vector<std::vector<size_t>> request_groups(size_t entries, bool joined) {
  std::vector<std::vector<size_t>> groups;
  if (joined) {
    groups.emplace_back();
    for (size_t e = 0; e < entries; ++e) groups.back().push_back(e);
  } else {
    for (size_t e = 0; e < entries; ++e) groups.push_back({e});
  }
  return groups;
}

struct Flight {
  grpc::ClientContext context;
  inference::ModelInferRequest request;
  inference::ModelInferResponse response;
  grpc::Status status;
};

struct FlightSettings {
  int window = 1;  // requests in flight at once
  std::optional<std::chrono::microseconds> deadline;
  bool gzip = false;
};

// One attempt: sends `count` requests made by `make(k)`, at most `window` at once, and returns
// when every one has its answer or status. The calling thread drains its own completion queue:
// a call is started and finished on the same thread (no gRPC callback thread touches this
// frame), and the connection's channel is shared by every caller.
std::vector<std::unique_ptr<Flight>> send_flights(
    inference::GRPCInferenceService::Stub& stub, size_t count, const FlightSettings& settings,
    const std::function<inference::ModelInferRequest(size_t)>& make) {
  grpc::CompletionQueue queue;
  int outstanding = 0;
  std::vector<std::unique_ptr<Flight>> flights(count);
  auto wait_for = [&](int at_most) {
    while (outstanding > at_most) {
      void* tag = nullptr;
      bool ok = false;
      if (!queue.Next(&tag, &ok)) break;  // only after Shutdown()
      --outstanding;
      Flight& f = *flights[reinterpret_cast<uintptr_t>(tag)];
      inference::ModelInferRequest().Swap(&f.request);  // free it
      if (!ok) f.status = grpc::Status(grpc::StatusCode::UNKNOWN, "call not completed");
    }
  };
  // However the attempt ends, no call may still refer to this frame or to the queue.
  struct Drain {
    grpc::CompletionQueue& queue;
    decltype(wait_for)& wait;
    ~Drain() {
      wait(0);
      queue.Shutdown();
      void* tag;
      bool ok;
      while (queue.Next(&tag, &ok)) {
      }
    }
  } drain{queue, wait_for};
  for (size_t k = 0; k < count; ++k) {
    wait_for(settings.window - 1);  // bounds the request memory alive at once
    auto flight = std::make_unique<Flight>();
    flight->request = make(k);
    if (settings.deadline)
      flight->context.set_deadline(std::chrono::system_clock::now() + *settings.deadline);
    if (settings.gzip) flight->context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    Flight& f = *flight;
    flights[k] = std::move(flight);
    auto call = stub.PrepareAsyncModelInfer(&f.context, f.request, &queue);
    call->StartCall();
    call->Finish(&f.response, &f.status, reinterpret_cast<void*>(uintptr_t(k)));
    ++outstanding;
  }
  wait_for(0);
  return flights;
}

}  // namespace

InferResult RemoteClient::execute(const CallRequest& request) {
  const auto start = Clock::now();
  CallInfo info;
  if (on_fallback_ && !servers_back()) return run_on_fallback(request, info, "", start);
  const std::string where = "model '" + options_.model + "' at " + connection_->url();
  const bool joined = batch_mode() == BatchMode::kRectangular;
  const std::vector<std::vector<size_t>> groups = request_groups(request.entries.size(), joined);
  std::vector<std::vector<HostTensor>> answers(groups.size());
  std::vector<size_t> todo(groups.size());  // groups still without an answer
  for (size_t g = 0; g < groups.size(); ++g) todo[g] = g;
  FlightSettings settings;
  settings.window = std::max(options_.max_in_flight, 1);
  if (request.options.deadline) settings.deadline = *request.options.deadline;
  settings.gzip = connection_->gzip();
  // Shared memory: one region for the call, each request at its own offset; back to the pool
  // afterwards unless the server lost it.
  std::vector<Placement> placements(groups.size());
  std::vector<std::vector<OutputSlot>> slots(groups.size());
  struct Lease {
    detail::RegionPool* pool = nullptr;
    std::unique_ptr<detail::ClientRegion> region;
    bool lost = false;
    ~Lease() {
      if (region && !lost) pool->release(std::move(region));
    }
  } lease;
  if (regions_) {
    std::vector<size_t> offsets;
    size_t total = 0;
    for (const auto& group : groups) {
      offsets.push_back(total);
      total += placed_bytes(request, group, signature());
    }
    lease.pool = regions_.get();
    lease.region = regions_->acquire(total);
    for (size_t g = 0; g < groups.size(); ++g) placements[g] = {lease.region.get(), offsets[g]};
  }
  grpc::Status last_failure;
  for (int attempt = 0;; ++attempt) {
    info.attempts = attempt + 1;
    const auto flights =
        send_flights(*connection_->impl().stub(), todo.size(), settings, [&](size_t k) {
          const size_t g = todo[k];
          auto made = make_request(request, groups[g], options_.model, options_.version,
                                   signature(), placements[g], slots[g]);
          info.bytes_sent += int64_t(made.ByteSizeLong());
          return made;
        });
    std::vector<size_t> again;
    for (size_t k = 0; k < todo.size(); ++k) {
      const Flight& f = *flights[k];
      // A request that ended without its answer may still be written by the server later:
      // its region must not serve another call.
      if (!f.status.ok()) lease.lost = true;
      if (f.status.ok()) {
        info.bytes_received += int64_t(f.response.ByteSizeLong());
        answers[todo[k]] = outputs_of(f.response, where, lease.region.get(), slots[todo[k]]);
      } else if (lease.region && f.status.error_code() == grpc::StatusCode::NOT_FOUND &&
                 f.status.error_message().find("shared memory region") != std::string::npos) {
        lease.lost = true;  // a restarted server: the next call registers a new region
        throw Error(ErrorCode::kUnavailable,
                    where +
                        ": the server no longer knows this client's shared memory region "
                        "(restarted?): " +
                        status_text(f.status));
      } else if (retryable(f.status)) {
        again.push_back(todo[k]);
        last_failure = f.status;
      } else {
        throw Error(code_of(f.status.error_code()), where + ": " + status_text(f.status));
      }
    }
    todo = std::move(again);
    if (todo.empty()) break;
    if (attempt >= options_.retries) {
      std::string why = where + ": " + status_text(last_failure) + " (" +
                        std::to_string(attempt + 1) + (attempt == 0 ? " attempt)" : " attempts)");
      if (options_.fallback) return run_on_fallback(request, info, why, start);
      throw Error(code_of(last_failure.error_code()), why);
    }
    const auto backoff =
        std::min(options_.backoff * (int64_t(1) << std::min(attempt, 20)), options_.max_backoff);
    std::this_thread::sleep_for(backoff);
  }

  std::vector<std::vector<HostTensor>> per_entry;
  if (joined) {
    per_entry = serving::split_outputs(std::move(answers.front()), request.entry_batches);
  } else {
    per_entry = std::move(answers);
  }
  for (auto& outputs : per_entry)
    outputs = keep_outputs(std::move(outputs), request.options.outputs, options_.model);
  info.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return InferResult(std::move(per_entry), info);
}

bool RemoteClient::servers_back() {
  const int64_t now = Clock::now().time_since_epoch().count();
  int64_t due = next_probe_ns_.load();
  const int64_t interval = std::chrono::nanoseconds(options_.probe_interval).count();
  // One caller probes per interval; the others stay on the fallback meanwhile.
  if (now < due || !next_probe_ns_.compare_exchange_strong(due, now + interval)) return false;
  try {
    using Stub = inference::GRPCInferenceService::Stub;
    const auto wait = std::min<std::chrono::milliseconds>(options_.probe_interval, 500ms);
    const auto ready = model_rpc<inference::ModelReadyRequest, inference::ModelReadyResponse>(
        *inference::GRPCInferenceService::NewStub(connection_->impl().make_probe()),
        &Stub::ModelReady, options_, std::chrono::system_clock::now() + wait, "probe");
    if (!ready.ready()) return false;
  } catch (const Error&) {
    return false;
  }
  connection_->impl().renew_unless_ready();
  on_fallback_ = false;
  std::lock_guard lock(fallback_mutex_);
  fallback_reason_.clear();
  return true;
}

std::string RemoteClient::fallback_reason() const {
  std::lock_guard lock(fallback_mutex_);
  return fallback_reason_;
}

InferResult RemoteClient::run_on_fallback(const CallRequest& request, const CallInfo& info,
                                          const std::string& why, Clock::time_point start) {
  InferenceClient* fallback = nullptr;
  {
    std::lock_guard lock(fallback_mutex_);
    if (!fallback_) {
      auto made = options_.fallback();
      if (!made)
        throw Error(ErrorCode::kUnavailable, why + "; the fallback factory returned nothing");
      const auto names = [](const std::vector<models::TensorSpec>& specs) {
        std::vector<std::pair<std::string, DataType>> n;
        for (const auto& s : specs) n.emplace_back(s.name, s.dtype);
        std::sort(n.begin(), n.end());
        return n;
      };
      if (names(made->signature().inputs) != names(signature().inputs) ||
          names(made->signature().outputs) != names(signature().outputs))
        throw Error(ErrorCode::kInvalidArgument,
                    why + "; the fallback (" + made->describe() +
                        ") does not serve the same inputs and outputs");
      fallback_ = std::move(made);
    }
    if (!why.empty()) fallback_reason_ = why;
    fallback = fallback_.get();
  }
  if (!on_fallback_.exchange(true))  // just switched: the servers get a probe interval to return
    next_probe_ns_ = (Clock::now() + options_.probe_interval).time_since_epoch().count();
  CallRequest local = request;
  local.entry_batches =
      check_entries(fallback->signature(), local, fallback->batch_mode(), model_name());
  InferResult result = fallback->execute(local);
  result.info().attempts = info.attempts;
  result.info().bytes_sent = info.bytes_sent;
  result.info().bytes_received = info.bytes_received;
  result.info().fallback = true;
  result.info().seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace kaas::client
