#pragma once
// grpc.health.v1.Health for kaas-server: Check and Watch on the overall status ("") and on
// inference.GRPCInferenceService, as grpc++'s default service answers them, but reading each
// request itself (grpc_bounded.h) so that a compressed one inflates at most 1 KiB.

#include <memory>

namespace grpc {
class Service;
}

namespace kaas::server {

class HealthService {
 public:
  HealthService();
  ~HealthService();
  grpc::Service* service();  // to register with the grpc::ServerBuilder
  void set_serving(bool serving);
  // Before grpc::Server::Shutdown: NOT_SERVING, and every Watch stream ends.
  void shut_down();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kaas::server
