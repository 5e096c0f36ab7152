#include "kaas/client/conversion.h"

#include <algorithm>
#include <cstring>

#include "kaas/server_adapter/core/batch_pipeline.h"
#include "kaas/server_adapter/core/tensor_codec.h"

namespace kaas::client {

std::vector<int64_t> check_entries(const models::ModelSignature& signature,
                                   const CallRequest& request, BatchMode mode,
                                   std::string_view model) {
  std::string where = "model '";
  where.append(model).append("'");
  if (request.entries.empty())
    throw Error(ErrorCode::kInvalidArgument, where + ": no inputs were set");
  const bool batched = signature.max_batch > 0;
  const bool joined = mode == BatchMode::kRectangular && request.entries.size() > 1;
  if (joined && !batched)
    throw Error(ErrorCode::kInvalidArgument,
                where + " has no batch dimension: " + std::to_string(request.entries.size()) +
                    " entries need the ragged batch mode (one request per entry)");
  std::vector<int64_t> batches;
  int64_t total = 0;
  for (size_t e = 0; e < request.entries.size(); ++e) {
    std::vector<TensorView> views;
    for (const InputRef& in : request.entries[e]) views.push_back(in.view());
    const std::string entry_where = request.entries.size() > 1
                                        ? std::string(model) + " entry " + std::to_string(e)
                                        : std::string(model);
    const models::CheckedInputs checked = models::check_inputs(signature, views, entry_where);
    batches.push_back(batched ? checked.batch : 1);
    total += batches.back();
    if (joined && e > 0) {
      for (size_t i = 0; i < views.size(); ++i) {
        const auto first = request.entries[0][i].shape, here = request.entries[e][i].shape;
        require(serving::same_item_shapes(first, here), where,
                "entry " + std::to_string(e) + " input '" + signature.inputs[i].name +
                    "' shape after the batch dimension (rectangular mode)",
                "as entry 0: " + shape_string(first), shape_string(here));
      }
    }
  }
  if (joined)
    require(total <= signature.max_batch, where, "joined batch of the rectangular entries",
            "at most " + std::to_string(signature.max_batch), std::to_string(total));
  return batches;
}

std::vector<HostTensor> keep_outputs(std::vector<HostTensor> outputs,
                                     std::span<const std::string> requested,
                                     std::string_view model) {
  if (requested.empty()) return outputs;
  const auto selected = server::select_outputs(outputs, requested, model);
  std::vector<HostTensor> kept;
  for (const HostTensor* t : selected) kept.push_back(*t);
  return kept;
}

}  // namespace kaas::client
