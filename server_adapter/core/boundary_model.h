#pragma once
// FP16 / BF16 at a served model's boundary. Models compute on FP32 tensors; a config.pbtxt may
// declare one of the model's FP32 inputs or outputs as TYPE_FP16 or TYPE_BF16. The served model
// then takes and returns that datatype: its inputs are widened to float before the model runs
// and its outputs rounded (to nearest, ties to even; infinities and NaNs kept) after, with the
// conversions of backends/half.h. kaas-server, the client's direct mode and the Triton backend
// all get this through prepare_entry(); a config that declares neither is served unchanged.

#include <map>
#include <memory>
#include <string>

#include "kaas/models/model.h"
#include "model_config.pb.h"

namespace kaas::repository {

// The 16-bit wire types a config declares, by tensor name (only FP16 / BF16 entries).
struct BoundaryTypes {
  std::map<std::string, models::DataType> inputs, outputs;
  bool empty() const { return inputs.empty() && outputs.empty(); }
};
BoundaryTypes boundary_types(const inference::ModelConfig& config);

// `inner` behind the boundary `types`. kInvalidArgument "model 'm' config: ..." naming the
// tensor, the declared and the model's type when a declared tensor of the model is not FP32.
// (A declared name the model does not have is left to complete_config, which names it.)
std::unique_ptr<models::Model> with_boundary(std::unique_ptr<models::Model> inner,
                                             const BoundaryTypes& types);

}  // namespace kaas::repository
