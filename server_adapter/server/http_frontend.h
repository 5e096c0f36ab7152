#pragma once
// The REST front end (KServe v2 + Triton extensions) on kaas's event-driven HTTP server: health,
// server and model metadata, config, statistics, repository index / load / unload, and infer
// with JSON data (nested or flat) or the binary tensor data extension
// (Inference-Header-Content-Length), gzip/deflate request bodies (checksums verified), errors as
// {"error": "..."}.

#include <memory>

#include "kaas/server_adapter/server/http_server.h"
#include "kaas/server_adapter/server/server_state.h"

namespace kaas::server {

class HttpFrontend {
 public:
  // options.max_body_bytes bounds the body both as received and after decompression.
  HttpFrontend(ServerState& state, const HttpServerOptions& options);
  ~HttpFrontend();
  int port() const;
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kaas::server
