#pragma once
// kaas-server as an object: the repository, the gRPC, REST and metrics front ends, and the
// shutdown sequence (drain: not ready but serving -> stop accepting -> answer everything
// accepted).

#include <memory>
#include <string>

#include "kaas/server_adapter/server/grpc_frontend.h"
#include "kaas/server_adapter/server/http_frontend.h"
#include "kaas/server_adapter/server/metrics.h"
#include "kaas/server_adapter/server/model_repository.h"
#include "kaas/server_adapter/server/shared_memory.h"

namespace kaas::server {

struct ServerOptions {
  std::string model_repository;
  std::string backend = "auto";
  std::string host = "127.0.0.1";
  int http_port = 8000, grpc_port = 8001, metrics_port = 8002;  // 0: pick a free port
  ModelControl control = ModelControl::kNone;
  std::string tls_cert_file, tls_key_file;
  HttpServerOptions http;      // REST limits, timeouts and threads (host, port and TLS from above)
  ClientShmPolicy client_shm;  // off by default (--allow-client-shm)
  // The largest inference request's tensor bytes (--max-request-bytes): gRPC's receive limit
  // (plus 1 MiB for the message around them) and the most a compressed REST body inflates to.
  size_t max_request_bytes = size_t(64) << 20;
  int grpc_handler_threads = 256;  // gRPC handler threads kept between calls
  bool grpc_reflection = false;    // gRPC server reflection
  // The largest reply a request may ask for (--max-response-bytes; binary bytes, or REST JSON
  // text), refused before the model runs.
  size_t max_response_bytes = size_t(64) << 20;
};

class Server {
 public:
  explicit Server(const ServerOptions& options);
  ~Server();
  int http_port() const { return http_->port(); }
  int grpc_port() const { return grpc_->port(); }
  int metrics_port() const { return metrics_->port(); }
  const ModelRepository& repository() const { return *repository_; }
  // Not ready (ServerReady, /v2/health/ready, grpc.health.v1 NOT_SERVING) while inference is
  // still served, so that balancers and clients stop routing here before shutdown().
  void begin_drain();
  void shutdown();

 private:
  ServerState state_;
  std::unique_ptr<MemoryTrimmer> memory_trimmer_;  // outlives the front ends that report to it
  std::unique_ptr<SharedMemoryRegistry> shared_memory_;  // outlives the front ends too
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<GrpcFrontend> grpc_;
  std::unique_ptr<HttpFrontend> http_;
  std::unique_ptr<MetricsEndpoint> metrics_;
  bool stopped_ = false;
};

}  // namespace kaas::server
