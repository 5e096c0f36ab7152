#pragma once
// kaas-server's model repository in Triton's layout: each entry is read by the repository entry
// reader (server_adapter/repository_entry.h: kinds, parameters, files, batching), built through
// the model-kind registry and put behind a ModelScheduler. The highest version is served. A model
// that fails to load stays in the index as UNAVAILABLE with the reason; the others serve.

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/server_adapter/core/repository_entry.h"
#include "kaas/server_adapter/server/scheduler.h"
#include "kaas/server_adapter/server/stats.h"
#include "model_config.pb.h"

namespace kaas::server {

enum class ModelControl { kNone, kExplicit };

struct ServedModel {
  std::string name;
  int64_t version = 0;
  inference::ModelConfig config;  // as read, completed with the model's inputs and outputs
  std::shared_ptr<ModelStats> stats;
  std::unique_ptr<ModelScheduler> scheduler;
  std::vector<std::string> plan;  // the first instance's describe(): simplification, precision
};

struct ModelIndexEntry {
  std::string name, version, state, reason;
};

using repository::check_model_name;

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
