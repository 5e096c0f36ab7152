#pragma once
// Prometheus metrics on their own port, GET /metrics (prometheus-cpp text format), with Triton's
// names and labels {model, version}, read from the models' statistics at scrape time.

#include <memory>
#include <string>

#include "kaas/server_adapter/server/server_state.h"

namespace kaas::server {

class MetricsEndpoint {
 public:
  MetricsEndpoint(ServerState& state, const std::string& host, int port);
  ~MetricsEndpoint();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kaas::server
