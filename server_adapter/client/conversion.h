#pragma once
// The input/output handling DirectClient and RemoteClient share: checking a call's entries
// against the model's signature before anything runs or is sent, joining rectangular entries
// along the batch dimension, and splitting joined outputs back into entries.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/client/inference_client.h"

namespace kaas::client {

// Checks every entry (each input once, datatype, shape, byte size) and, in rectangular mode,
// that the entries can be joined: a batched model, equal non-batch dimensions, the joined batch
// within max_batch. Returns each entry's batch size (1 for a model without a batch dimension).
// Throws kInvalidArgument naming the model, the entry and the input.
std::vector<int64_t> check_entries(const models::ModelSignature& signature,
                                   const CallRequest& request, BatchMode mode,
                                   std::string_view model);

// The outputs asked for, in the order asked (all, in model order, when none are named).
std::vector<HostTensor> keep_outputs(std::vector<HostTensor> outputs,
                                     std::span<const std::string> requested,
                                     std::string_view model);

}  // namespace kaas::client
