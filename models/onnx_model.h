#pragma once
// ONNX models on kaas kernels: load a model.onnx (Debian's libonnx protobuf classes and
// checker), simplify the graph, plan device buffers for a maximum batch and run on any backend.
// Inputs and outputs by name; the first input dimension may be dynamic (the batch).
//
// Execution plans:
//  - unfused: one kernel per remaining op, intermediates in pooled device buffers reused by
//    liveness. Always available; the oracle of the fused plan.
//  - fused "conv-dense-heads" (EmTrkMichelId's shape, any sizes): NHWC Conv (valid, stride 1)
//    -> Flatten -> dense -> dense -> {dense -> Softmax, dense(+activation)}. The conv output
//    never exists as a whole: it is produced a few rows at a time into a cache-sized slab and
//    immediately accumulated into the first dense layer; the second dense layer and both heads
//    run as one kernel (mlp_two_heads). With OnnxModelOptions::precision bf16 / fp16 the conv
//    and the first dense layer read 16-bit weights (rounded once at load), input and slab.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "kaas/backends/backend.h"
#include "kaas/backends/queue.h"
#include "kaas/kernels/planner.h"
#include "kaas/models/model.h"
#include "kaas/models/precision.h"

namespace kaas::models {

enum class FusedPlan {
  kAuto,     // fused when the graph matches, else unfused
  kOff,      // always unfused
  kRequire,  // fused or a kUnimplemented error saying why the graph does not match
};

struct OnnxModelOptions {
  std::string name = "model";
  int64_t max_batch = 256;  // buffers are planned for this many (dynamic-batch models)
  FusedPlan fused = FusedPlan::kAuto;
  int64_t fused_batch_tile = 256;      // patches per conv slab pass
  int64_t fused_slab_bytes = 8 << 20;  // conv slab budget on CPU backends (stays in the L3)
  int device = 0;                      // the backend's device (GPU index)
  // bf16 / fp16: the fused plan's conv and first dense layer on 16-bit weights and activations
  // (fp32 accumulation, bias, later layers and outputs); other plans accept only fp32.
  Precision precision = Precision::kFp32;
  // The fused plan's thread split and first-layer GEMM: measured at load by the planner
  // (kernels/planner.h; cached per CPU model and shape), or today's fixed rules. Unset: the
  // KAAS_PLANNER environment variable (measure unless "fixed").
  std::optional<planner::Mode> planner;
  // Pins the fused plan's planner candidate by its name in the plan log (e.g. "batch split,
  // avx512_bf16 vdpbf16ps"): nothing measured, nothing cached. Empty: the planner chooses. A name
  // that is not a candidate on this backend and CPU is rejected with the list of candidates.
  std::string fused_candidate;
};

// An imported model with device-level access, for models that chain the network with other
// kernels on its queue (michel_from_image). Not thread-safe at this level: the owner serialises.
class OnnxDeviceModel : public Model {
 public:
  virtual const Queue& queue() const = 0;
  // The device buffer of input `index` (room for max_batch rows), filled by the caller.
  virtual float* device_input(size_t index) = 0;
  // Runs on the inputs already in device memory, for `batch` rows (1..max_batch; ignored for a
  // model without a batch dimension). Returns the outputs' device pointers in signature order,
  // valid until the next call; the work is queued, not waited for.
  virtual std::vector<const float*> run_device(int64_t batch) = 0;
};

std::unique_ptr<OnnxDeviceModel> make_onnx_device_model(const onnx::ModelProto& model,
                                                        const Backend& backend,
                                                        const OnnxModelOptions& options = {});

// Parses a model file; throws kaas::Error kInvalidArgument naming the file for an unreadable,
// truncated or malformed file.
onnx::ModelProto read_onnx_file(const std::filesystem::path& path);

// Whether the model has a batch dimension (some graph input with a dynamic first dimension, the
// rule the importer applies), without importing it.
bool onnx_model_is_batched(const onnx::ModelProto& model);

std::unique_ptr<Model> make_onnx_model(const onnx::ModelProto& model, const Backend& backend,
                                       const OnnxModelOptions& options = {});
std::unique_ptr<Model> load_onnx_model(const std::filesystem::path& path, const Backend& backend,
                                       const OnnxModelOptions& options = {});

}  // namespace kaas::models
