#pragma once
// The state libtriton_kaas.so keeps in Triton's slots: backend options (from
// --backend-config=kaas,key=value), one ModelState per loaded model (its repository entry and
// prepared kind) and one InstanceState per model instance (a kaas model object on a backend and
// device). Models are built by the same repository entry reader and model-kind registry that
// kaas-server and kaas::client's direct mode use.

#include <memory>
#include <mutex>
#include <string>

#include "kaas/backends/backend.h"
#include "kaas/models/model.h"
#include "kaas/server_adapter/core/repository_entry.h"
#include "kaas/server_adapter/triton/triton_api.h"

namespace kaas::triton {

struct BackendOptions {
  std::string cpu_backend = "openmp";  // default-backend: KIND_CPU instances
  int threads = 0;                     // threads: OpenMP threads per instance (0: OpenMP's)
  int64_t default_max_batch = 4;       // Triton's default-max-batch-size (auto-complete)
};

// `json`: Triton's backend config ({"cmdline":{"key":"value",...}}). kInvalidArgument naming the
// key for a bad value or an unknown kaas key.
BackendOptions parse_backend_options(const std::string& json);

class ModelState {
 public:
  // Reads the model's config from Triton, prepares its kind and, when Triton allows it,
  // completes the config (inputs, outputs, max_batch_size) and hands it back.
  ModelState(TRITONBACKEND_Model* model, const BackendOptions& options);

  const std::string& name() const { return entry_.name; }
  const repository::RepositoryEntry& entry() const { return entry_; }
  const BackendOptions& options() const { return options_; }

  // A model object for one instance on `backend`/`device`; the one built for the signature at
  // load time is handed out first when it matches.
  std::unique_ptr<models::Model> make_instance(const Backend& backend, int device);
  // The kaas backend of an instance: the `kaas_backend` parameter, else the backend option
  // for CPU instances and CUDA (or HIP) for GPU instances.
  const Backend& instance_backend(TRITONSERVER_InstanceGroupKind kind) const;

 private:
  void complete_config(TRITONBACKEND_Model* model, const std::string& triton_json);

  BackendOptions options_;
  repository::RepositoryEntry entry_;
  models::PreparedModel prepared_;
  std::mutex mutex_;
  std::unique_ptr<models::Model> spare_;  // built at load time to learn the signature
  const Backend* spare_backend_ = nullptr;
  int spare_device_ = 0;
};

struct InstanceState {
  std::string name;
  ModelState* model = nullptr;
  TRITONBACKEND_ModelInstance* triton = nullptr;
  const Backend* backend = nullptr;
  int device = 0;
  std::unique_ptr<models::Model> instance;
};

}  // namespace kaas::triton
