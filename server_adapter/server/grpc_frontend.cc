#include "kaas/server_adapter/server/grpc_frontend.h"

#include <google/protobuf/io/coded_stream.h>
#include <grpc/compression.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/method_handler.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "kaas/common/error.h"
#include "kaas/server_adapter/server/bounded_inflate.h"
#include "kaas/server_adapter/server/grpc_bounded.h"
#include "kaas/server_adapter/server/health_service.h"
#include "kaas/server_adapter/server/infer_codec.h"

namespace kaas::server {

namespace {

using grpc::ServerContext;
using grpc::Status;

// The client's deadline passed while its request was queued or running.
struct DeadlineExceeded {};
// The client cancelled the call (or its connection went) while the request was queued or running.
struct Cancelled {};

template <class F>
Status guarded(F&& f) {
  try {
    f();
    return Status::OK;
  } catch (const DeadlineExceeded&) {
    return Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                  "deadline exceeded before the inference finished");
  } catch (const Cancelled&) {
    return Status(grpc::StatusCode::CANCELLED, "the client cancelled the call");
  } catch (const std::exception& e) {
    return to_status(e);
  }
}

class Service final : public inference::GRPCInferenceService::Service {
 public:
  // Every method reads its request through parse_bounded: gRPC 1.51 inflates a compressed
  // message whole before it compares it with the receive limit (a 1 MB gzip message inflating
  // to 1 GiB cost +1 GB and 7 s), so decompression is left to the methods, each bounded by what
  // it can use. The indices are the methods' order in grpc_service.proto (the generated
  // WithRawMethod_* classes use the same); server.protocol calls each one.
  explicit Service(ServerState& state) : state_(state) {
    serve(0, &Service::ServerLive);
    serve(1, &Service::ServerReady);
    serve(2, &Service::ModelReady);
    serve(3, &Service::ServerMetadata);
    serve(4, &Service::ModelMetadata);
    // ModelInfer holds no thread while its request waits for a batch: a callback method, answered
    // from the scheduler (InferCall).
    MarkMethodRawCallback(
        5, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
               [this](grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                      grpc::ByteBuffer* response) { return infer(context, request, response); }));
    serve(6, &Service::ModelConfig);
    serve(7, &Service::ModelStatistics);
    serve(8, &Service::RepositoryIndex);
    serve(9, &Service::RepositoryModelLoad);
    serve(10, &Service::RepositoryModelUnload);
    serve(11, &Service::SystemSharedMemoryStatus);
    serve(12, &Service::SystemSharedMemoryRegister);
    serve(13, &Service::SystemSharedMemoryUnregister);
    serve(14, &Service::CudaSharedMemoryStatus);
    serve(15, &Service::CudaSharedMemoryRegister);
    serve(16, &Service::CudaSharedMemoryUnregister);
  }

  Status ServerLive(ServerContext*, const inference::ServerLiveRequest*,
                    inference::ServerLiveResponse* r) override {
    r->set_live(true);
    return Status::OK;
  }
  Status ServerReady(ServerContext*, const inference::ServerReadyRequest*,
                     inference::ServerReadyResponse* r) override {
    r->set_ready(state_.ready.load());
    return Status::OK;
  }
  Status ModelReady(ServerContext*, const inference::ModelReadyRequest* q,
                    inference::ModelReadyResponse* r) override {
    try {
      state_.repository->get(q->name(), q->version());
      r->set_ready(state_.ready.load());
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnavailable) return to_status(e);
      r->set_ready(false);
    }
    return Status::OK;
  }
  Status ServerMetadata(ServerContext*, const inference::ServerMetadataRequest*,
                        inference::ServerMetadataResponse* r) override {
    r->set_name(kServerName);
    r->set_version(kServerVersion);
    for (const auto& e : server_extensions(state_.shared_memory->allowed())) r->add_extensions(e);
    return Status::OK;
  }
  Status ModelMetadata(ServerContext*, const inference::ModelMetadataRequest* q,
                       inference::ModelMetadataResponse* r) override {
    return guarded([&] {
      const auto m = state_.repository->get(q->name(), q->version());
      r->set_name(m->name);
      r->add_versions(std::to_string(m->version));
      r->set_platform(model_platform(*m));
      const auto& sig = m->scheduler->signature();
      for (const auto& spec : sig.inputs) add_tensor(r->add_inputs(), spec);
      for (const auto& spec : sig.outputs) add_tensor(r->add_outputs(), spec);
    });
  }
  Status ModelConfig(ServerContext*, const inference::ModelConfigRequest* q,
                     inference::ModelConfigResponse* r) override {
    return guarded(
        [&] { *r->mutable_config() = state_.repository->get(q->name(), q->version())->config; });
  }
  Status ModelStatistics(ServerContext*, const inference::ModelStatisticsRequest* q,
                         inference::ModelStatisticsResponse* r) override {
    return guarded([&] {
      std::vector<std::shared_ptr<ServedModel>> models;
      if (q->name().empty()) {
        models = state_.repository->ready_models();
      } else {
        models.push_back(state_.repository->get(q->name(), q->version()));
      }
      for (const auto& m : models) fill_statistics(*m, r->add_model_stats());
    });
  }
  Status RepositoryIndex(ServerContext*, const inference::RepositoryIndexRequest* q,
                         inference::RepositoryIndexResponse* r) override {
    return guarded([&] {
      for (const auto& e : state_.repository->index(q->ready())) {
        auto* m = r->add_models();
        m->set_name(e.name);
        m->set_version(e.version);
        m->set_state(e.state);
        m->set_reason(e.reason);
      }
    });
  }
  Status RepositoryModelLoad(ServerContext*, const inference::RepositoryModelLoadRequest* q,
                             inference::RepositoryModelLoadResponse*) override {
    return guarded([&] { state_.repository->load(q->model_name()); });
  }
  Status RepositoryModelUnload(ServerContext*, const inference::RepositoryModelUnloadRequest* q,
                               inference::RepositoryModelUnloadResponse*) override {
    return guarded([&] { state_.repository->unload(q->model_name()); });
  }

  Status SystemSharedMemoryStatus(ServerContext*,
                                  const inference::SystemSharedMemoryStatusRequest* q,
                                  inference::SystemSharedMemoryStatusResponse* r) override {
    return guarded([&] {
      for (const auto& s : state_.shared_memory->status(RegionKind::kSystem, q->name())) {
        auto& region = (*r->mutable_regions())[s.name];
        region.set_name(s.name);
        region.set_key(s.key);
        region.set_offset(s.offset);
        region.set_byte_size(s.byte_size);
      }
    });
  }
  Status SystemSharedMemoryRegister(ServerContext*,
                                    const inference::SystemSharedMemoryRegisterRequest* q,
                                    inference::SystemSharedMemoryRegisterResponse*) override {
    return guarded([&] {
      state_.shared_memory->register_system(q->name(), q->key(), q->offset(), q->byte_size());
    });
  }
  Status SystemSharedMemoryUnregister(ServerContext*,
                                      const inference::SystemSharedMemoryUnregisterRequest* q,
                                      inference::SystemSharedMemoryUnregisterResponse*) override {
    return guarded([&] { state_.shared_memory->unregister(RegionKind::kSystem, q->name()); });
  }
  Status CudaSharedMemoryStatus(ServerContext*, const inference::CudaSharedMemoryStatusRequest* q,
                                inference::CudaSharedMemoryStatusResponse* r) override {
    return guarded([&] {
      for (const auto& s : state_.shared_memory->status(RegionKind::kCuda, q->name())) {
        auto& region = (*r->mutable_regions())[s.name];
        region.set_name(s.name);
        region.set_device_id(uint64_t(s.device_id));
        region.set_byte_size(s.byte_size);
      }
    });
  }
  Status CudaSharedMemoryRegister(ServerContext*,
                                  const inference::CudaSharedMemoryRegisterRequest* q,
                                  inference::CudaSharedMemoryRegisterResponse*) override {
    return guarded([&] {
      const auto* handle = reinterpret_cast<const std::byte*>(q->raw_handle().data());
      state_.shared_memory->register_cuda(q->name(), {handle, q->raw_handle().size()},
                                          q->device_id(), q->byte_size());
    });
  }
  Status CudaSharedMemoryUnregister(ServerContext*,
                                    const inference::CudaSharedMemoryUnregisterRequest* q,
                                    inference::CudaSharedMemoryUnregisterResponse*) override {
    return guarded([&] { state_.shared_memory->unregister(RegionKind::kCuda, q->name()); });
  }

 private:
  // One ModelInfer call: the reactor gRPC drives (OnCancel: the client went or its deadline
  // passed, so the scheduler drops the request unexecuted) and what the answer needs.
  //
  // The call moves between threads through libgrpc (handler thread -> gRPC thread for OnCancel;
  // scheduler worker -> Finish -> gRPC thread for OnDone), which ThreadSanitizer cannot see into:
  // each hand-over is also stated with a release/acquire pair of kaas's own.
  class InferCall final : public grpc::ServerUnaryReactor {
   public:
    InferCall(std::atomic<int64_t>& answering, std::atomic<int64_t>& live)
        : abandoned(std::make_shared<std::atomic<bool>>(false)),
          answering_(answering),
          live_(live) {
      live_.fetch_add(1, std::memory_order_relaxed);
    }
    void OnCancel() override {
      (void)published_.load(std::memory_order_acquire);
      abandoned->store(true);
      cancelled_.store(true, std::memory_order_release);
    }
    // gRPC calls OnDone after OnCancel, possibly on another of its threads: the acquire of
    // cancelled_ states that order, so the flag's last owner (this call's reference or the
    // scheduler's) frees it after OnCancel's store.
    // The server waits for the live count after grpc::Server::Wait: its release, after the call
    // (and its hold on the memory trimmer) is gone, orders this thread's last accesses before the
    // server's teardown, as ThreadSanitizer can see.
    void OnDone() override {
      (void)cancelled_.load(std::memory_order_acquire);
      (void)answered_.load(std::memory_order_acquire);
      std::atomic<int64_t>& live = live_;
      delete this;
      live.fetch_sub(1, std::memory_order_release);
    }
    // The handler is done with the call: gRPC may call OnCancel from now on.
    void publish() { published_.store(true, std::memory_order_release); }
    // The one answer; the call may be gone once Finish is called. The server counts the answers
    // still inside Finish, which uses the grpc::Server, so that it is not deleted under them.
    void answer(Status status) {
      std::atomic<int64_t>& answering = answering_;
      answering.fetch_add(1, std::memory_order_relaxed);
      answered_.store(true, std::memory_order_release);
      Finish(std::move(status));
      answering.fetch_sub(1, std::memory_order_release);
    }

    std::shared_ptr<std::atomic<bool>> abandoned;
    std::unique_ptr<MemoryTrimmer::Scope> trim_after;  // released with the call
    DecodedInfer decoded;
    std::string model_name, id;
    int64_t model_version = 0;

   private:
    std::atomic<bool> published_{false}, answered_{false}, cancelled_{false};
    std::atomic<int64_t>& answering_;
    std::atomic<int64_t>& live_;
  };

  grpc::ServerUnaryReactor* infer(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
    auto* call = new InferCall(answering_, live_calls_);
    grpc::ByteBuffer received = *request;  // shares the slices
    inference::ModelInferRequest q;
    const Status parsed = parse_bounded(
        received, [this] { return limit_for(5); }, q);
    if (!parsed.ok()) {
      call->publish();
      call->answer(parsed);
      return call;
    }
    call->trim_after =
        std::make_unique<MemoryTrimmer::Scope>(state_.memory_trimmer, int64_t(q.ByteSizeLong()));
    const Status queued = guarded([&] {
      if (!state_.accepting.load())
        throw Error(ErrorCode::kUnavailable, "the server is shutting down");
      const auto model = state_.repository->get(q.model_name(), q.model_version());
      call->decoded = decode_grpc_infer(q, state_.shared_memory);
      DecodedInfer& decoded = call->decoded;
      // Unknown requested outputs fail before the request is queued.
      check_requested_outputs(model->scheduler->signature(), decoded.requested, model->name);
      check_reply_bytes(decoded, model->scheduler->signature(),
                        model->scheduler->output_rows(models::views_of(decoded.request.inputs)),
                        state_.max_response_bytes, model->name, false);
      call->model_name = model->name;
      call->model_version = model->version;
      call->id = q.id();
      // The deadline and the client's presence travel with the request: the scheduler drops
      // it, unexecuted, once nobody waits for the answer.
      const auto deadline = context->deadline();
      const auto now = std::chrono::system_clock::now();
      if (deadline < now + std::chrono::hours(24 * 365))
        decoded.request.deadline = std::chrono::steady_clock::now() + (deadline - now);
      decoded.request.abandoned = call->abandoned;
      model->scheduler->submit(
          std::move(decoded.request),
          [call, response](std::vector<models::HostTensor> outputs, std::exception_ptr error) {
            call->answer(reply(*call, std::move(outputs), std::move(error), *response));
          });
    });
    call->publish();
    if (!queued.ok()) call->answer(queued);
    return call;
  }

  // The reply of a call the scheduler answered (on its thread: short).
  static Status reply(InferCall& call, std::vector<models::HostTensor> outputs,
                      std::exception_ptr error, grpc::ByteBuffer& response) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kDeadlineExceeded)
          return Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "deadline exceeded before the inference finished");
        if (call.abandoned->load())
          return Status(grpc::StatusCode::CANCELLED, "the client cancelled the call");
        return to_status(e);
      } catch (const std::exception& e) {
        return to_status(e);
      }
    }
    return guarded([&] {
      inference::ModelInferResponse r;
      encode_grpc_infer(call.decoded, outputs, call.model_name, call.model_version, call.id, r);
      bool own = false;
      const Status status =
          grpc::SerializationTraits<inference::ModelInferResponse>::Serialize(r, &response, &own);
      if (!status.ok()) throw Error(ErrorCode::kInternal, status.error_message());
    });
  }

  // A control message (metadata, repository, shared-memory registration) is at most this big.
  static constexpr size_t kControlMessageBytes = size_t(1) << 20;
  // An inference message's bytes around its tensors (names, shapes, parameters).
  static constexpr size_t kMessageHeadroom = size_t(1) << 20;

  // What a compressed request to `method` may inflate to: an inference request, the largest
  // request any loaded model accepts (request_byte_limit) plus 1 MiB for the message around the
  // tensors; anything else, a control message.
  InflateLimit limit_for(int method) const {
    if (method != 5)
      return {.bytes = kControlMessageBytes,
              .code = ErrorCode::kResourceExhausted,
              .why = "a control message"};
    size_t tensors = 0;
    for (const auto& model : state_.repository->ready_models())
      tensors = std::max(
          tensors, request_byte_limit(model->scheduler->signature(), state_.max_request_bytes));
    InflateLimit limit{
        .bytes = tensors + kMessageHeadroom,
        .code = ErrorCode::kResourceExhausted,
        .why = "the largest request a model here accepts, plus 1 MiB; --max-request-bytes"};
    // Protobuf writers put fields in number order, model_name (1) first: once it has inflated,
    // the limit becomes that model's.
    limit.narrow = [this](std::string_view first_bytes, InflateLimit& narrowed) {
      google::protobuf::io::CodedInputStream in(
          reinterpret_cast<const uint8_t*>(first_bytes.data()), int(first_bytes.size()));
      std::string name;
      uint32_t length = 0;
      if (in.ReadTag() != ((1u << 3) | 2u) || !in.ReadVarint32(&length) ||
          !in.ReadString(&name, int(length)))
        return;
      try {
        const auto model = state_.repository->get(name, "");
        narrowed.bytes =
            request_byte_limit(model->scheduler->signature(), state_.max_request_bytes) +
            kMessageHeadroom;
        narrowed.why = "model " + name + "'s largest request, plus 1 MiB; --max-request-bytes";
      } catch (const Error&) {
        // an unknown model: refused once the request is parsed
      }
    };
    return limit;
  }

  // The method at `index` served as a streamed unary call on the received bytes: one request
  // read (parse_bounded), the typed handler, one response written.
  template <class Request, class Response>
  void serve(int index, Status (Service::*handler)(ServerContext*, const Request*, Response*)) {
    using Streamer = grpc::ServerUnaryStreamer<grpc::ByteBuffer, grpc::ByteBuffer>;
    MarkMethodStreamed(
        index, new grpc::internal::StreamedUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                   [this, index, handler](ServerContext* context, Streamer* stream) {
                     grpc::ByteBuffer received;
                     if (!stream->Read(&received))
                       return Status(grpc::StatusCode::INTERNAL, "no request message");
                     Request request;
                     Status status = parse_bounded(
                         received, [this, index] { return limit_for(index); }, request);
                     if (!status.ok()) return status;
                     Response response;
                     status = (this->*handler)(context, &request, &response);
                     if (!status.ok()) return status;
                     grpc::ByteBuffer reply;
                     bool own = false;
                     status =
                         grpc::SerializationTraits<Response>::Serialize(response, &reply, &own);
                     if (!status.ok()) return status;
                     if (!stream->Write(reply))
                       return Status(grpc::StatusCode::CANCELLED, "the client went away");
                     return Status::OK;
                   }));
  }

  static void add_tensor(inference::ModelMetadataResponse::TensorMetadata* t,
                         const models::TensorSpec& spec) {
    t->set_name(spec.name);
    t->set_datatype(std::string(models::triton_name(spec.dtype)));
    for (int64_t d : spec.shape) t->add_shape(d);
  }
  static void set_duration(inference::StatisticDuration* d, const Duration& from) {
    d->set_count(from.count);
    d->set_ns(from.ns);
  }
  static void fill_statistics(const ServedModel& m, inference::ModelStatistics* s) {
    const StatsSnapshot snap = m.stats->snapshot();
    s->set_name(m.name);
    s->set_version(std::to_string(m.version));
    s->set_last_inference(snap.last_inference_ms);
    s->set_inference_count(snap.inference_count);
    s->set_execution_count(snap.execution_count);
    auto* is = s->mutable_inference_stats();
    set_duration(is->mutable_success(), snap.success);
    set_duration(is->mutable_fail(), snap.fail);
    set_duration(is->mutable_queue(), snap.queue);
    set_duration(is->mutable_compute_input(), snap.compute_input);
    set_duration(is->mutable_compute_infer(), snap.compute_infer);
    set_duration(is->mutable_compute_output(), snap.compute_output);
    is->mutable_cache_hit();
    is->mutable_cache_miss();
    for (const auto& [size, b] : snap.batches) {
      auto* bs = s->add_batch_stats();
      bs->set_batch_size(size);
      set_duration(bs->mutable_compute_input(), b.compute_input);
      set_duration(bs->mutable_compute_infer(), b.compute_infer);
      set_duration(bs->mutable_compute_output(), b.compute_output);
    }
  }

  ServerState& state_;
  std::atomic<int64_t> answering_{0};
  std::atomic<int64_t> live_calls_{0};  // InferCalls not yet through OnDone

 public:
  // After grpc::Server::Wait (every call done, so every answer begun): waits until no answer is
  // still inside Finish and every call's OnDone has returned, so that nothing a call holds (the
  // memory trimmer's scope, the model) is torn down under a gRPC thread still finishing it.
  void wait_for_answers() const {
    while (answering_.load(std::memory_order_acquire) != 0 ||
           live_calls_.load(std::memory_order_acquire) != 0)
      std::this_thread::yield();
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

struct GrpcFrontend::Impl {
  std::unique_ptr<Service> service;
  HealthService health;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

GrpcFrontend::GrpcFrontend(ServerState& state, const GrpcOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->service = std::make_unique<Service>(state);
  // Reflection's requests are read by its own handlers, which let gRPC inflate a compressed one
  // whole: served only when asked for (grpcurl and similar tools).
  if (options.reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(
        {read_file(options.tls_key_file), read_file(options.tls_cert_file)});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(options.host + ":" + std::to_string(options.port), credentials,
                           &impl_->port);
  builder.SetMaxReceiveMessageSize(int(std::min<size_t>(options.max_receive_bytes, INT_MAX)));
  builder.SetMaxSendMessageSize(INT_MAX);
  // Compressed messages reach the methods as received; each inflates them with its own bound
  // (Service::serve). The receive limit above then applies to the bytes on the wire.
  builder.AddChannelArgument(GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION, 0);
  // A call holds one of the synchronous server's threads until its answer is sent. With gRPC's
  // default of at most 2 idle pollers, a thread that finishes a call while others poll exits and
  // the next call starts a new one: 64 clients made 2,250 threads a second (a fifth less
  // throughput than Triton). Idle handler threads up to this count are kept instead.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              options.handler_threads);
  builder.RegisterService(impl_->service.get());
  builder.RegisterService(impl_->health.service());
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0)
    throw Error(ErrorCode::kUnavailable,
                "gRPC: cannot listen on " + options.host + ":" + std::to_string(options.port));
}

GrpcFrontend::~GrpcFrontend() {
  shutdown();
}

int GrpcFrontend::port() const {
  return impl_->port;
}

void GrpcFrontend::set_serving(bool serving) {
  impl_->health.set_serving(serving);
}

void GrpcFrontend::shutdown() {
  if (impl_->server) {
    impl_->health.shut_down();  // Watch streams end, so Shutdown does not wait for them
    impl_->server->Shutdown();
    impl_->server->Wait();
    impl_->service->wait_for_answers();
    impl_->server.reset();
  }
}

}  // namespace kaas::server
