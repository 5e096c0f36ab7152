#pragma once
// The built-in kNN model (kernels/knn.h) as a servable model: ragged events in, K nearest
// neighbours of every point out.
//   points      FP32  [N, D]   all events' points, one event after another (D fixed or -1)
//   row_splits  INT64 [E + 1]  event boundaries
//   indices     INT32 [N, K]   neighbour indices (self first; -1 padding)
//   distances   FP32  [N, K]   squared L2 distances (+inf padding)
// No batch dimension: a request carries any number of events.

#include <memory>
#include <string>

#include "kaas/backends/backend.h"
#include "kaas/kernels/knn.h"
#include "kaas/models/model.h"

namespace kaas::models {

struct KnnModelOptions {
  std::string name = "knn";
  int k = 16;
  int64_t dims = -1;  // -1: any D in 1..16 per request
  KnnMethod method = KnnMethod::kAuto;
  int device = 0;  // the backend's device (GPU index)
};

std::unique_ptr<Model> make_knn_model(const Backend& backend, const KnnModelOptions& options = {});

// "auto", "brute_force" or "binned"; throws kInvalidArgument otherwise.
KnnMethod knn_method_from_string(const std::string& name);

}  // namespace kaas::models
