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
//  - sparse: beside the fused plan in fp32, the patches whose conv windows are mostly empty.
// Each plan is an object of its own (onnx_unfused_plan.h, onnx_fused_plan.h,
// onnx_sparse_execution.h) over the values' shared device storage (onnx_value_storage.h);
// OnnxModel chooses among them and writes the plan log (plan_log.h).

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "kaas/backends/backend.h"
#include "kaas/backends/queue.h"
#include "kaas/kernels/mlp_heads.h"
#include "kaas/kernels/planner.h"
#include "kaas/kernels/sparse_conv_dense.h"
#include "kaas/models/model.h"
#include "kaas/models/precision.h"

namespace kaas::models {

enum class FusedPlan {
  kAuto,     // fused when the graph matches, else unfused
  kOff,      // always unfused
  kRequire,  // fused or a kUnimplemented error saying why the graph does not match
};

// Whether the fused plan skips the conv windows that see only zeros (kernels/sparse_conv_dense.h;
// fp32 only). kAuto: patch by patch (so a patch's plan, and its bits, do not depend on its
// batch), from the patch's measured occupancy and the timings the model took at load, cached by
// the planner (sparse where predicted faster); in the planner's fixed mode, dense.
enum class SparsePlan { kAuto, kDense, kSparse };
std::string_view to_string(SparsePlan plan);
// "auto", "dense" or "sparse"; anything else throws kInvalidArgument naming `where`.
SparsePlan sparse_plan_from_string(std::string_view text, const std::string& where);

struct OnnxModelOptions {
  std::string name = "model";
  int64_t max_batch = 256;  // buffers are planned for this many (dynamic-batch models)
  FusedPlan fused = FusedPlan::kAuto;
  int64_t fused_batch_tile = 256;      // patches per conv slab pass
  int64_t fused_slab_bytes = 8 << 20;  // conv slab budget on CPU backends (stays in the L3)
  // fp32 on CPU backends: the planner also times the batch split with smaller slab passes, each
  // thread's share of the slab within this many bytes (0: one core's L2), as its conv writes
  // and its first-layer tiles read the slab again once per column panel.
  int64_t fused_thread_slab_bytes = 0;
  int device = 0;  // the backend's device (GPU index)
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
  // The model's plan file (e.g. <repository>/<model>/<version>/kaas_plan.tsv): the decisions that
  // change bits -- the sparse plan's timings, the 16-bit first-layer kernels -- are made once
  // per model and kept there; every process that loads the model reads them, the first one
  // measures under the file's lock (kernels/planner.h, docs/reproducibility.md). Empty: this
  // machine's planner cache only.
  std::string plan_file;
  SparsePlan sparse = SparsePlan::kAuto;
};

// The fused plan's network as the sparse kernels take it (device views, valid while the model
// lives), and what the model measured at load: seconds per row of the dense plan, and of the
// sparse plan on all-zero and on all-charged rows (0 when nothing was measured).
struct SparseNetwork {
  SparseConvWeights conv;
  SparseDense1Weights dense1;
  DenseLayer hidden, head_a, head_b;  // head_a: the softmax head (its softmax included)
  int64_t in_h = 0, in_w = 0, channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  double dense_row_s = 0, sparse_empty_row_s = 0, sparse_full_row_s = 0;
  uint64_t weights_digest = 0;  // of the conv and first dense weights (keys cached timings)
  // Whether the sparse plan is predicted faster for rows whose windows are `active` (0..1) active.
  bool sparse_pays(double active) const;
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
  // The network for the sparse kernels; nullptr unless the fused plan runs in fp32.
  virtual const SparseNetwork* sparse_network() const = 0;
  // Whether the last run took the sparse execution (for how many patches: kAuto decides patch
  // by patch), and the fraction of conv positions active in its batch (-1 when not looked at).
  struct LastRun {
    bool sparse = false;  // some of its patches ran sparse
    double active = -1;
    int64_t sparse_rows = 0;  // how many
  };
  virtual LastRun last_run() const = 0;
};

// Value i of the sparse planners' charged trial input: the network's rescaled-ADC range, never 0,
// so every conv window is active.
inline float sparse_trial_charge(size_t i) {
  return float(int(i * 7919 % 1999) + 1) / 100 - 5;
}

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
