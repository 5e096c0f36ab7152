#pragma once
// The one batch pipeline of every door onto a model (kaas-server's scheduler, the Triton plugin,
// kaas::client's direct and remote modes, kaas-infer): several requests ("parts") joined along
// the batch dimension into one execution, the outputs split back by rows, and one failure rule:
// when a joined execution fails, each part is re-run alone, so only the part that caused the
// failure fails.

#include <chrono>
#include <exception>
#include <memory>
#include <span>
#include <vector>

#include "kaas/models/model.h"

namespace kaas::serving {

using models::HostTensor;
using models::TensorView;

// One request of a joined execution: its inputs in one order shared by all parts (the model's
// signature order) and its rows (1 for a model without a batch dimension).
struct BatchPart {
  std::vector<TensorView> inputs;
  int64_t rows = 1;
};

// Whether two requests' inputs (same order) can be joined: equal shapes past dimension 0.
bool same_item_shapes(std::span<const int64_t> a, std::span<const int64_t> b);
bool same_item_shapes(std::span<const TensorView> a, std::span<const TensorView> b);

// Input `input` of the parts joined: its shape, its size, and its bytes written to `out` (which
// holds joined_bytes). For callers that put the joined bytes elsewhere (a gRPC message).
std::vector<int64_t> joined_shape(std::span<const BatchPart> parts, size_t input);
size_t joined_bytes(std::span<const BatchPart> parts, size_t input);
void copy_joined(std::span<const BatchPart> parts, size_t input, std::byte* out);

// The parts' inputs joined along dimension 0 (the one copy a joined execution makes); their
// shapes past dimension 0 must agree (checked before, by whoever grouped them).
std::vector<HostTensor> join_parts(std::span<const BatchPart> parts);

// Rows [first, first + rows) of a batched tensor: their bytes in place (kInternal outside the
// tensor), or as a new tensor.
std::span<const std::byte> row_bytes(const HostTensor& t, int64_t first, int64_t rows);
HostTensor tensor_rows(const HostTensor& t, int64_t first, int64_t rows);

// Outputs of a joined execution split into each part's rows (`rows` per part, in order).
std::vector<std::vector<HostTensor>> split_outputs(std::vector<HostTensor> outputs,
                                                   std::span<const int64_t> rows);

// What one part got: rows [first_row, first_row + rows) of `outputs` (shared by the parts of one
// execution, so a consumer that writes the rows elsewhere copies them once), or its error.
struct PartOutcome {
  std::shared_ptr<std::vector<HostTensor>> outputs;
  int64_t first_row = 0;
  int64_t rows = 0;
  bool alone = false;  // the execution was this part's alone: every output is all its own
  std::exception_ptr error;

  // This part's outputs as tensors of their own: moved out when the part ran alone, else its
  // rows copied. Rethrows the part's error.
  std::vector<HostTensor> take();
};

struct BatchRun {
  std::vector<PartOutcome> parts;
  int executions = 0;  // 1, or 1 + parts.size() when the joined one failed
  std::chrono::nanoseconds join{0}, run{0};
};

// Runs the parts as one execution of `model`: joined when there are several, then split by
// rows; a failed joined execution is followed by one execution per part.
BatchRun run_parts(models::Model& model, std::span<const BatchPart> parts);

}  // namespace kaas::serving
