#pragma once
// The model repository in Triton's layout: <root>/<model>/config.pbtxt (protobuf text format,
// inference.ModelConfig) and <root>/<model>/<version>/ (numeric). Served kinds:
//  - ONNX models: platform "onnxruntime_onnx", backend "onnxruntime", or backend "kaas" with
//    parameter kaas_model "onnx" (the default); <version>/model.onnx (or default_model_filename);
//  - backend "kaas", kaas_model "knn": the built-in kNN model (parameters k, method);
//  - backend "kaas", kaas_model "michel_from_image": patch extraction + the CNN in
//    <version>/model.onnx (parameter hits_per_chunk).
// The highest version directory is served. A model that fails to load stays in the index as
// UNAVAILABLE with the reason; the others serve.

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "model_config.pb.h"
#include "server_adapter/scheduler.h"
#include "server_adapter/stats.h"

namespace kaas::server {

enum class ModelControl { kNone, kExplicit };

struct ServedModel {
  std::string name;
  int64_t version = 0;
  inference::ModelConfig config;  // as read, completed with the model's inputs and outputs
  std::shared_ptr<ModelStats> stats;
  std::unique_ptr<ModelScheduler> scheduler;
};

struct ModelIndexEntry {
  std::string name, version, state, reason;
};

// Rejects names that could leave the repository or are not model directory names.
void check_model_name(const std::string& name);

// Parses <dir>/config.pbtxt; throws kInvalidArgument with the file, line and column.
inference::ModelConfig read_model_config(const std::filesystem::path& model_dir);

// One repository entry built on a backend: its highest version, its config checked against the
// model and completed, and one model object per instance (instance_group counts, or
// `instances_override` when > 0). The server schedules them; DirectClient runs one in process.
struct LoadedModel {
  inference::ModelConfig config;
  int64_t version = 0;
  std::vector<std::unique_ptr<models::Model>> instances;
};
LoadedModel load_repository_model(const std::filesystem::path& root, const std::string& name,
                                  const Backend& backend, int instances_override = 0);

class ModelRepository {
 public:
  ModelRepository(std::filesystem::path root, const Backend& backend, ModelControl control);
  ~ModelRepository();

  // A ready model; kNotFound for an unknown model or version, kUnavailable when not loaded.
  std::shared_ptr<ServedModel> get(const std::string& name, const std::string& version = "") const;
  std::vector<ModelIndexEntry> index(bool ready_only) const;
  std::vector<std::shared_ptr<ServedModel>> ready_models() const;
  // Explicit model control only (kUnavailable otherwise): (re)load or unload one model.
  void load(const std::string& name);
  void unload(const std::string& name);
  ModelControl control() const { return control_; }
  // Stops accepting requests on every model and answers everything already accepted.
  void drain_all();

 private:
  std::shared_ptr<ServedModel> load_model(const std::string& name) const;
  void require_explicit_control(const std::string& name) const;
  std::vector<std::string> model_directories() const;

  std::filesystem::path root_;
  const Backend& backend_;
  ModelControl control_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<ServedModel>> ready_;
  std::map<std::string, std::string> failed_;  // name -> reason
};

}  // namespace kaas::server
