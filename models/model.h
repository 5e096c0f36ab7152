#pragma once
// What every servable model is to its callers (kaas-infer, kaas-server, the client API): a
// signature and a run() on host tensors. Implementations preallocate their device memory for
// max_batch at construction; run() calls on one instance are serialised (one execution at a
// time, as one Triton model instance).

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kaas/models/tensor.h"

namespace kaas::models {

class Model {
 public:
  virtual ~Model() = default;
  virtual const std::string& name() const = 0;
  virtual const ModelSignature& signature() const = 0;
  // One line per step of the execution plan (which kernels run, what was folded or fused).
  virtual std::vector<std::string> describe() const = 0;
  // Inputs by name in any order (checked with check_inputs); outputs in signature order.
  // Throws kaas::Error; the model stays usable after an error. The views are read during the
  // call only.
  virtual std::vector<HostTensor> run(std::span<const TensorView> inputs) = 0;
  // The length of every output's leading variable dimension for these inputs, known before
  // running, so a server can refuse a request whose answer would be too large; nullopt: not
  // known. Default: a batched model's outputs have its inputs' rows.
  virtual std::optional<int64_t> output_rows(std::span<const TensorView> inputs) const {
    if (signature().max_batch > 0 && !inputs.empty() && !inputs.front().shape.empty())
      return inputs.front().shape.front();
    return std::nullopt;
  }
  std::vector<HostTensor> run(std::span<const HostTensor> inputs) { return run(views_of(inputs)); }
};

}  // namespace kaas::models
