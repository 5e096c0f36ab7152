#pragma once
// The gRPC front end: inference.GRPCInferenceService (KServe v2 + Triton extensions),
// grpc.health.v1.Health and server reflection, max message size INT32_MAX, compressed messages
// accepted. Port 0 picks a free port (port()).

#include <memory>
#include <string>

#include "kaas/server_adapter/server/server_state.h"

namespace kaas::server {

struct GrpcOptions {
  std::string host = "127.0.0.1";
  int port = 8001;
  std::string tls_cert_file, tls_key_file;  // both set: TLS
  // Largest message received, after decompression (gRPC refuses larger ones with
  // RESOURCE_EXHAUSTED before they reach a handler).
  size_t max_receive_bytes = size_t(65) << 20;
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
