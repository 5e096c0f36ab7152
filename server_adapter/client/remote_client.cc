#include "kaas/client/remote_client.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <future>
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
// What the connection's completion queue hands back: a finished request or a retry that is due.
class CompletionEvent {
 public:
  virtual ~CompletionEvent() = default;
  virtual void completed(bool ok) = 0;  // deletes the event
};

struct RemoteConnection::Impl {
  using Stub = inference::GRPCInferenceService::Stub;
  std::function<std::shared_ptr<grpc::Channel>()> make_balanced, make_probe;
  // Every call of every client on this connection ends on these threads, however many are in
  // flight (a framework with 64 events waiting on the server holds no thread for them).
  grpc::CompletionQueue completions;
  std::vector<std::thread> completion_threads;
  // What a thread writes before it starts a call or sets an alarm is ordered before the
  // completion thread's work by libgrpc's own synchronization, which ThreadSanitizer cannot see
  // (Debian's libgrpc is not instrumented). A release before each hand-over and an acquire after
  // each completion state that order in the open; one atomic add per request.
  std::atomic<uint64_t> handed_over{0};
  void hand_over() { handed_over.fetch_add(1, std::memory_order_release); }

  void start_completion_threads(int count) {
    for (int t = 0; t < std::max(count, 1); ++t) {
      completion_threads.emplace_back([this] {
        void* tag = nullptr;
        bool ok = false;
        while (completions.Next(&tag, &ok)) {
          (void)handed_over.load(std::memory_order_acquire);
          static_cast<CompletionEvent*>(tag)->completed(ok);
        }
      });
    }
  }
  // Clients keep their connection until their calls have ended: nothing is pending here.
  ~Impl() {
    completions.Shutdown();
    for (auto& thread : completion_threads) thread.join();
  }

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
  impl.start_completion_threads(options.completion_threads);
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
  {
    std::unique_lock lock(calls_mutex_);
    calls_done_.wait(lock, [this] { return calls_in_flight_ == 0; });
  }
  finish_async_calls();  // the fallback's calls, posted to the workers
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
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ModelInferResponse>> reader;
};

}  // namespace

// What the remote attempts of one call came to: the result, the error, or why it must go to the
// fallback (after every attempt failed).
struct RemoteClient::Outcome {
  InferResult result;
  std::exception_ptr error;
  std::string fallback_why;
  CallInfo info;
};

// One call on the connection's completion queue: its requests (at most max_in_flight at once),
// its attempts (the retry waits on an alarm of the same queue) and its answer or error. No
// thread waits for it: each step runs on a completion thread when the step before it ends.
class RemoteClient::AsyncCall : public std::enable_shared_from_this<AsyncCall> {
 public:
  AsyncCall(RemoteClient& client, std::shared_ptr<const CallRequest> request,
            std::function<void(Outcome)> done)
      : client_(client),
        request_(std::move(request)),
        done_(std::move(done)),
        where_("model '" + client.options_.model + "' at " + client.connection_->url()),
        joined_(client.batch_mode() == BatchMode::kRectangular),
        start_(Clock::now()) {}

  void begin() {
    try {
      groups_ = request_groups(request_->entries.size(), joined_);
      answers_.resize(groups_.size());
      unanswered_.resize(groups_.size());
      for (size_t g = 0; g < groups_.size(); ++g) unanswered_[g] = g;
      placements_.resize(groups_.size());
      slots_.resize(groups_.size());
      // Shared memory: one region for the call, each request at its own offset; back to the
      // pool at the end unless the server may still write it.
      if (client_.regions_) {
        std::vector<size_t> offsets;
        size_t total = 0;
        for (const auto& group : groups_) {
          offsets.push_back(total);
          total += placed_bytes(*request_, group, client_.signature());
        }
        region_ = client_.regions_->acquire(total);
        for (size_t g = 0; g < groups_.size(); ++g) placements_[g] = {region_.get(), offsets[g]};
      }
    } catch (...) {
      return finish_error(std::current_exception());
    }
    start_attempt();
  }

  void start_attempt() {
    std::lock_guard lock(mutex_);
    ++attempt_;
    info_.attempts = attempt_;
    stub_ = client_.connection_->impl().stub();
    flights_.clear();
    flights_.resize(unanswered_.size());
    completed_ = 0;
    next_ = 0;
    const size_t window = size_t(std::max(client_.options_.max_in_flight, 1));
    while (next_ < std::min(window, unanswered_.size())) launch(next_++);
  }

  void flight_done(size_t k, bool ok) {
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      Flight& f = *flights_[k];
      inference::ModelInferRequest().Swap(&f.request);  // free it
      if (!ok) f.status = grpc::Status(grpc::StatusCode::UNKNOWN, "call not completed");
      ++completed_;
      if (next_ < unanswered_.size()) launch(next_++);  // bounds the request memory alive at once
      last = completed_ == unanswered_.size();
    }
    if (last) attempt_done();
  }

  void retry_due(bool ok) {
    if (!ok)
      return finish_error(std::make_exception_ptr(
          Error(ErrorCode::kCancelled, where_ + ": the connection closed before the retry")));
    start_attempt();
  }

 private:
  // Starts request k of this attempt (the lock held).
  void launch(size_t k);

  // Every request of the attempt has its answer or status (no lock needed: none is in flight).
  void attempt_done() {
    try {
      std::vector<size_t> again;
      for (size_t k = 0; k < unanswered_.size(); ++k) {
        const Flight& f = *flights_[k];
        // A request that ended without its answer may still be written by the server later:
        // its region must not serve another call.
        if (!f.status.ok()) region_lost_ = true;
        if (f.status.ok()) {
          info_.bytes_received += int64_t(f.response.ByteSizeLong());
          answers_[unanswered_[k]] =
              outputs_of(f.response, where_, region_.get(), slots_[unanswered_[k]]);
        } else if (region_ && f.status.error_code() == grpc::StatusCode::NOT_FOUND &&
                   f.status.error_message().find("shared memory region") != std::string::npos) {
          // A restarted server: the next call registers a new region.
          throw Error(ErrorCode::kUnavailable,
                      where_ +
                          ": the server no longer knows this client's shared memory region "
                          "(restarted?): " +
                          status_text(f.status));
        } else if (retryable(f.status)) {
          again.push_back(unanswered_[k]);
          last_failure_ = f.status;
        } else {
          throw Error(code_of(f.status.error_code()), where_ + ": " + status_text(f.status));
        }
      }
      unanswered_ = std::move(again);
      if (unanswered_.empty()) return finish_answered();
      const RemoteOptions& options = client_.options_;
      if (attempt_ > options.retries) {
        const std::string why = where_ + ": " + status_text(last_failure_) + " (" +
                                std::to_string(attempt_) +
                                (attempt_ == 1 ? " attempt)" : " attempts)");
        if (options.fallback) {
          Outcome outcome;
          outcome.fallback_why = why;
          return finish(std::move(outcome));
        }
        throw Error(code_of(last_failure_.error_code()), why);
      }
      const auto backoff = std::min(options.backoff * (int64_t(1) << std::min(attempt_ - 1, 20)),
                                    options.max_backoff);
      schedule_retry(backoff);
    } catch (...) {
      finish_error(std::current_exception());
    }
  }

  void schedule_retry(std::chrono::milliseconds backoff);

  void finish_answered() {
    std::vector<std::vector<HostTensor>> per_entry;
    if (joined_) {
      per_entry = serving::split_outputs(std::move(answers_.front()), request_->entry_batches);
    } else {
      per_entry = std::move(answers_);
    }
    for (auto& outputs : per_entry)
      outputs = keep_outputs(std::move(outputs), request_->options.outputs, client_.options_.model);
    Outcome outcome;
    outcome.result = InferResult(std::move(per_entry), info_);
    finish(std::move(outcome));
  }

  void finish_error(std::exception_ptr error) {
    Outcome outcome;
    outcome.error = std::move(error);
    finish(std::move(outcome));
  }

  // The region goes back first and the client is told last: once told, it may be destroyed.
  void finish(Outcome outcome) {
    if (region_ && !region_lost_) client_.regions_->release(std::move(region_));
    region_.reset();
    flights_.clear();
    info_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    if (outcome.error == nullptr && outcome.fallback_why.empty()) outcome.result.info() = info_;
    outcome.info = info_;
    RemoteClient& client = client_;
    auto done = std::move(done_);
    done(std::move(outcome));
    client.call_finished();
  }

  RemoteClient& client_;
  const std::shared_ptr<const CallRequest> request_;
  std::function<void(Outcome)> done_;
  const std::string where_;
  const bool joined_;
  const Clock::time_point start_;

  std::mutex mutex_;  // flights_, completed_, next_, info_.bytes_sent while requests fly
  std::shared_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::vector<std::vector<size_t>> groups_;
  std::vector<std::vector<HostTensor>> answers_;
  std::vector<size_t> unanswered_;  // groups still without an answer
  std::vector<Placement> placements_;
  std::vector<std::vector<OutputSlot>> slots_;
  std::unique_ptr<detail::ClientRegion> region_;
  bool region_lost_ = false;
  std::vector<std::unique_ptr<Flight>> flights_;
  size_t completed_ = 0, next_ = 0;
  int attempt_ = 0;
  CallInfo info_;
  grpc::Status last_failure_;
};

namespace {

// Request k of an attempt has finished.
class FlightDone final : public CompletionEvent {
 public:
  FlightDone(std::shared_ptr<RemoteClient::AsyncCall> call, size_t index)
      : call_(std::move(call)), index_(index) {}
  void completed(bool ok) override {
    const auto call = std::move(call_);
    const size_t index = index_;
    delete this;
    call->flight_done(index, ok);
  }

 private:
  std::shared_ptr<RemoteClient::AsyncCall> call_;
  size_t index_;
};

// A call's backoff has passed.
class RetryDue final : public CompletionEvent {
 public:
  explicit RetryDue(std::shared_ptr<RemoteClient::AsyncCall> call) : call_(std::move(call)) {}
  grpc::Alarm& alarm() { return alarm_; }
  void completed(bool ok) override {
    const auto call = std::move(call_);
    delete this;
    call->retry_due(ok);
  }

 private:
  std::shared_ptr<RemoteClient::AsyncCall> call_;
  grpc::Alarm alarm_;
};

}  // namespace

void RemoteClient::AsyncCall::launch(size_t k) {
  const size_t g = unanswered_[k];
  auto flight = std::make_unique<Flight>();
  Flight& f = *flight;
  f.request = make_request(*request_, groups_[g], client_.options_.model, client_.options_.version,
                           client_.signature(), placements_[g], slots_[g]);
  info_.bytes_sent += int64_t(f.request.ByteSizeLong());
  if (request_->options.deadline)
    f.context.set_deadline(std::chrono::system_clock::now() + *request_->options.deadline);
  if (client_.connection_->gzip()) f.context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  flights_[k] = std::move(flight);
  RemoteConnection::Impl& impl = client_.connection_->impl();
  f.reader = stub_->PrepareAsyncModelInfer(&f.context, f.request, &impl.completions);
  auto* done = new FlightDone(shared_from_this(), k);
  impl.hand_over();
  f.reader->StartCall();
  f.reader->Finish(&f.response, &f.status, done);
}

void RemoteClient::AsyncCall::schedule_retry(std::chrono::milliseconds backoff) {
  auto* due = new RetryDue(shared_from_this());
  RemoteConnection::Impl& impl = client_.connection_->impl();
  impl.hand_over();
  due->alarm().Set(&impl.completions, std::chrono::system_clock::now() + backoff, due);
}

void RemoteClient::start_remote(std::shared_ptr<const CallRequest> request,
                                std::function<void(Outcome)> done) {
  {
    std::lock_guard lock(calls_mutex_);
    ++calls_in_flight_;
  }
  std::make_shared<AsyncCall>(*this, std::move(request), std::move(done))->begin();
}

void RemoteClient::call_finished() {
  std::lock_guard lock(calls_mutex_);
  if (--calls_in_flight_ == 0) calls_done_.notify_all();
}

InferResult RemoteClient::execute(const CallRequest& request) {
  const auto start = Clock::now();
  if (on_fallback_ && !servers_back()) return run_on_fallback(request, CallInfo{}, "", start);
  // The call runs on the completion threads; this thread waits (the request outlives the call).
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto answered = promise->get_future();
  start_remote(std::shared_ptr<const CallRequest>(&request, [](const CallRequest*) {}),
               [promise](Outcome outcome) { promise->set_value(std::move(outcome)); });
  Outcome outcome = answered.get();
  if (!outcome.fallback_why.empty())
    return run_on_fallback(request, outcome.info, outcome.fallback_why, start);
  if (outcome.error) std::rethrow_exception(outcome.error);
  return std::move(outcome.result);
}

void RemoteClient::start_async(std::shared_ptr<const CallRequest> request, Callback callback) {
  // On the fallback the call runs in process, and the probe back to the servers blocks: both
  // belong on the client's workers.
  if (on_fallback_) return InferenceClient::start_async(std::move(request), std::move(callback));
  const auto start = Clock::now();
  start_remote(request, [this, request, callback, start](Outcome outcome) mutable {
    if (outcome.fallback_why.empty())
      return deliver(callback, std::move(outcome.result), outcome.error);
    post_to_workers([this, request, callback, start, outcome = std::move(outcome)] {
      InferResult result;
      std::exception_ptr error;
      try {
        result = run_on_fallback(*request, outcome.info, outcome.fallback_why, start);
      } catch (...) {
        error = std::current_exception();
      }
      deliver(callback, std::move(result), error);
    });
  });
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
