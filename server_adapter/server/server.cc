#include "kaas/server_adapter/server/server.h"

#include "kaas/backends/backend.h"

namespace kaas::server {

namespace {

// The backend that opens CUDA IPC handles, when this build has one.
const Backend* cuda_backend() {
  for (const Backend* b : compiled_backends())
    if (b->name() == "cuda") return b;
  return nullptr;
}

}  // namespace

Server::Server(const ServerOptions& options) {
  const Backend& backend =
      options.backend == "auto" ? default_backend() : find_backend(options.backend);
  state_.backend_name = std::string(backend.name());
  memory_trimmer_ = std::make_unique<MemoryTrimmer>();
  state_.memory_trimmer = memory_trimmer_.get();
  shared_memory_ = std::make_unique<SharedMemoryRegistry>(cuda_backend(), options.client_shm);
  state_.shared_memory = shared_memory_.get();
  state_.max_request_bytes = options.max_request_bytes;
  state_.max_response_bytes = options.max_response_bytes;
  repository_ =
      std::make_unique<ModelRepository>(options.model_repository, backend, options.control);
  state_.repository = repository_.get();
  grpc_ = std::make_unique<GrpcFrontend>(
      state_, GrpcOptions{.host = options.host,
                          .port = options.grpc_port,
                          .tls_cert_file = options.tls_cert_file,
                          .tls_key_file = options.tls_key_file,
                          .max_receive_bytes = options.max_request_bytes + (size_t(1) << 20),
                          .handler_threads = options.grpc_handler_threads,
                          .reflection = options.grpc_reflection});
  HttpServerOptions http = options.http;
  http.host = options.host;
  http.port = options.http_port;
  http.tls_cert_file = options.tls_cert_file;
  http.tls_key_file = options.tls_key_file;
  http_ = std::make_unique<HttpFrontend>(state_, http);
  metrics_ = std::make_unique<MetricsEndpoint>(state_, options.host, options.metrics_port);
  state_.accepting = true;
  state_.ready = true;
  grpc_->set_serving(true);
}

void Server::begin_drain() {
  state_.ready = false;  // ready probes and health watchers see it; inference still served
  grpc_->set_serving(false);
}

Server::~Server() {
  shutdown();
}

void Server::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  state_.ready = false;
  state_.accepting = false;  // new inference requests: UNAVAILABLE / 503
  grpc_->set_serving(false);
  grpc_->shutdown();  // waits for in-flight calls
  http_->shutdown();  // waits for in-flight requests
  repository_->drain_all();
}

}  // namespace kaas::server
