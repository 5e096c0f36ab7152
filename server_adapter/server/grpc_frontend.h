#pragma once
// The gRPC front end: inference.GRPCInferenceService (KServe v2 + Triton extensions),
// grpc.health.v1.Health (health_service.h) and, when asked, server reflection; compressed
// messages inflated with a bound (grpc_bounded.h). Port 0 picks a free port (port()).

#include <memory>
#include <string>

#include "kaas/server_adapter/server/server_state.h"

namespace kaas::server {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 8001;
  std::string tls_cert_file, tls_key_file;  // both set: TLS
  // Largest message received, as sent (gRPC refuses larger ones with RESOURCE_EXHAUSTED before
  // they reach a handler); a compressed one also stops inflating at its method's bound.
  size_t max_receive_bytes = size_t(65) << 20;
  // Handler threads kept between calls (gRPC's MAX_POLLERS): more calls than this at once still
  // get a thread each, created for the call.
  int handler_threads = 256;
  bool reflection = false;  // gRPC server reflection (its requests are inflated by gRPC, whole)
};

class GrpcFrontend {
 public:
  GrpcFrontend(ServerState& state, const GrpcOptions& options);
  ~GrpcFrontend();
  int port() const;
  void set_serving(bool serving);  // health service status
  void shutdown();                 // stops accepting; in-flight calls finish

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kaas::server
