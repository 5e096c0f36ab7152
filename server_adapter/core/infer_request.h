#pragma once
// One inference request as every door hands it to a scheduler: its inputs and what bounds its
// life — the queue timeout it asked for, its client's deadline, and whether its client has gone.
// A request past any of them is dropped before it executes.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "kaas/models/tensor.h"

namespace kaas::server {

struct InferRequest {
  std::vector<models::HostTensor> inputs;
  std::optional<std::chrono::microseconds> timeout;  // queue timeout (the request's parameter)
  // The client's deadline (gRPC): past it nobody reads the answer.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Set by the front end once the client has gone (cancelled, or it stopped waiting).
  std::shared_ptr<const std::atomic<bool>> abandoned;
};

}  // namespace kaas::server
