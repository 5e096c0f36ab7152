#pragma once
// The REST front end (KServe v2 + Triton extensions) on cpp-httplib with nlohmann JSON: health,
// server and model metadata, config, statistics, repository index / load / unload, and infer
// with JSON data (nested or flat) or the binary tensor data extension
// (Inference-Header-Content-Length), gzip/deflate request bodies, errors as {"error": "..."}.

#include <memory>
#include <string>

#include "server_adapter/server_state.h"

namespace kaas::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string tls_cert_file, tls_key_file;  // both set: HTTPS
  size_t max_body_bytes = size_t(1) << 30;  // after decompression
  int threads = 16;
};

class HttpFrontend {
 public:
  HttpFrontend(ServerState& state, const HttpOptions& options);
  ~HttpFrontend();
  int port() const;
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kaas::server
