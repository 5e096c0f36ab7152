#pragma once
// TRITONBACKEND_ModelInstanceExecute for kaas models. Triton hands an instance 1..N requests,
// each with its own batch. They are read and checked one by one (a bad request gets its own
// error response and leaves the others alone), joined along the batch dimension into as few
// model executions as the model allows (same non-batch shapes, at most max_batch rows), and
// the outputs are scattered back: one final response per request, statistics per request and
// per execution, every request released. Models without a batch dimension run request by
// request. If a joined execution fails, its requests are re-run one at a time so only the
// request that caused the failure gets the error.

#include <cstdint>

#include "kaas/server_adapter/triton/model_state.h"

namespace kaas::triton {

void execute_requests(InstanceState& instance, TRITONBACKEND_Request** requests, uint32_t count);

}  // namespace kaas::triton
