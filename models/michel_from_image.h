#pragma once
// michel_from_image: one plane's downsampled wire x bin image plus its hit list in, per-hit
// EmTrkMichelId scores out. Patch extraction (kernels/patches.h) writes straight into the
// CNN's device input buffer and the CNN runs on the same queue, chunk by chunk, so a client
// sends the ~60 MB image of an event instead of ~475 MB of patches.
//
// Inputs (no batch dimension; one plane per call):
//   image     FP32  [wires, bins]  downsampled and scaled (kaas::downsample_image's output)
//   hit_wire  INT32 [hits]
//   hit_tick  FP32  [hits]         peak time in ticks (bin = floor(tick / drift_window))
// Plans: patches extracted into the CNN's input buffer chunk by chunk (dense), or the image-level
// sparse plan (MichelFromImageOptions::sparse); describe() and last_plan() say which ran.
// Outputs:
//   scores    FP32  [hits, 4]      track, em, none (Softmax head), michel (Sigmoid head)
//   fiducial  UINT8 [hits]         1 when the hit is far enough from the plane edges
// The tick range accepted is [0, (bins + 1) * drift_window - 1): the image no longer says how
// many trailing ticks the plane had, so a hit in a partial last window is accepted (its bin is
// outside the image and reads the ADC-0 value, as in extract_patches).

#include <memory>
#include <optional>

#include <onnx/onnx_pb.h>

#include "kaas/backends/backend.h"
#include "kaas/kernels/patches.h"
#include "kaas/models/model.h"
#include "kaas/models/onnx_model.h"
#include "kaas/models/precision.h"

namespace kaas::models {

struct MichelFromImageOptions {
  std::string name = "michel_from_image";
  int64_t hits_per_chunk = 1024;           // patches per CNN execution (its max batch)
  PatchParams patch;                       // must match the CNN's input (48 x 48 by default)
  int device = 0;                          // the backend's device (GPU index)
  Precision precision = Precision::kFp32;  // of the CNN (see OnnxModelOptions::precision)
  // The image-level plan (fp32): the conv once over the plane where it has charge, each hit's
  // first dense layer over its window's active positions plus the constant of the empty ones
  // (kernels/sparse_conv_dense.h), instead of each hit's patch through the dense network. kAuto
  // takes it when the plane's measured occupancy and the CNN's timings at load say it is faster.
  SparsePlan sparse = SparsePlan::kAuto;
  int64_t sparse_delta_bytes = 8 << 20;  // the conv output kept at once (the dense plan's slab)
  std::string plan_file;                 // the model's plan file (OnnxModelOptions::plan_file)
};

// `cnn`: an EmTrkMichelId-like ONNX model, input [-1, pw, pb, 1] or [-1, 1, pw, pb], outputs
// [-1, 3] (softmax head) and [-1, 1] (michel head) in either order. Throws kaas::Error
// kInvalidArgument when the network does not fit this shape.
// What the last run of a michel_from_image model did: the image-level sparse plan or the dense
// one, the fraction of its hits' window positions that touch charge (-1: not looked at) and the
// groups of the sparse plan's conv output. nullopt for another kind of model.
struct MichelFromImageRun {
  bool sparse = false;
  double active = -1;
  int64_t groups = 0;
};
std::optional<MichelFromImageRun> michel_from_image_last_run(const Model& model);

std::unique_ptr<Model> make_michel_from_image(const onnx::ModelProto& cnn, const Backend& backend,
                                              const MichelFromImageOptions& options = {});

}  // namespace kaas::models
