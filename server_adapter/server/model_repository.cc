#include "kaas/server_adapter/server/model_repository.h"

#include <algorithm>

#include "kaas/common/error.h"

namespace kaas::server {

namespace fs = std::filesystem;

namespace {

// A requested version as Triton reads it: a decimal integer ("01" is 1); -1 means the default.
int64_t parse_version(const std::string& model, const std::string& text) {
  const auto value = models::parse_integer(text);
  if (!value || *value < -1)
    throw Error(ErrorCode::kInvalidArgument, "model '" + model + "': version '" +
                                                 escape_for_message(text) +
                                                 "' is not a version number");
  return *value;
}

}  // namespace

ModelRepository::ModelRepository(fs::path root, const Backend& backend, ModelControl control)
    : root_(std::move(root)), backend_(backend), control_(control) {
  if (!fs::is_directory(root_))
    throw Error(ErrorCode::kNotFound,
                "model repository '" + root_.string() + "' is not a directory");
  if (control_ == ModelControl::kExplicit) return;
  for (const std::string& name : model_directories()) {
    try {
      ready_[name] = load_model(name);
    } catch (const std::exception& e) {
      failed_[name] = e.what();
    }
  }
}

ModelRepository::~ModelRepository() {
  drain_all();
}

std::vector<std::string> ModelRepository::model_directories() const {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root_)) {
    if (entry.is_directory() && fs::exists(entry.path() / "config.pbtxt"))
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<ServedModel> ModelRepository::load_model(const std::string& name) const {
  repository::LoadedModel loaded = repository::load_repository_model(root_, name, backend_);
  const repository::DynamicBatching& batching = loaded.entry.batching;
  BatchingPolicy policy;
  if (batching.enabled) {
    policy.dynamic = true;  // the scheduler joins requests only when the model has a batch dim
    policy.preferred_sizes = batching.preferred_sizes;
    policy.max_queue_delay = batching.max_queue_delay;
    if (batching.max_queue_size > 0) policy.max_queue_size = batching.max_queue_size;
    policy.default_timeout = batching.default_timeout;
    policy.allow_timeout_override = batching.allow_timeout_override;
  }
  auto served = std::make_shared<ServedModel>();
  served->name = name;
  served->version = loaded.entry.version;
  served->config = std::move(loaded.entry.config);
  served->stats = std::make_shared<ModelStats>();
  served->plan = loaded.instances.front()->describe();
  served->scheduler =
      std::make_unique<ModelScheduler>(name, std::move(loaded.instances), policy, served->stats);
  return served;
}

std::shared_ptr<ServedModel> ModelRepository::get(const std::string& name,
                                                  const std::string& version) const {
  check_model_name(name);
  std::lock_guard lock(mutex_);
  const auto it = ready_.find(name);
  if (it == ready_.end()) {
    if (failed_.count(name))
      throw Error(ErrorCode::kUnavailable,
                  "model '" + name + "' is not ready: " + failed_.at(name));
    if (fs::exists(root_ / name / "config.pbtxt"))
      throw Error(ErrorCode::kUnavailable, "model '" + name + "' is not loaded");
    throw Error(ErrorCode::kNotFound, "unknown model '" + name + "'");
  }
  if (!version.empty() && parse_version(name, version) != -1 &&
      parse_version(name, version) != it->second->version)
    throw Error(ErrorCode::kNotFound, "model '" + name + "' has no version '" + version +
                                          "' (serving version " +
                                          std::to_string(it->second->version) + ")");
  return it->second;
}

std::vector<ModelIndexEntry> ModelRepository::index(bool ready_only) const {
  std::vector<ModelIndexEntry> entries;
  std::lock_guard lock(mutex_);
  std::vector<std::string> names = model_directories();
  for (const auto& [name, model] : ready_) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (const auto it = ready_.find(name); it != ready_.end()) {
      entries.push_back({name, std::to_string(it->second->version), "READY", ""});
    } else if (!ready_only) {
      const auto f = failed_.find(name);
      entries.push_back({name, "", "UNAVAILABLE", f == failed_.end() ? "unloaded" : f->second});
    }
  }
  return entries;
}

std::vector<std::shared_ptr<ServedModel>> ModelRepository::ready_models() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ServedModel>> models;
  for (const auto& [name, model] : ready_) models.push_back(model);
  return models;
}

void ModelRepository::require_explicit_control(const std::string& name) const {
  if (control_ != ModelControl::kExplicit)
    throw Error(
        ErrorCode::kUnavailable,
        "explicit model load / unload is not allowed (start with --model-control-mode explicit)");
  check_model_name(name);
}

void ModelRepository::load(const std::string& name) {
  require_explicit_control(name);
  if (!fs::exists(root_ / name / "config.pbtxt"))
    throw Error(ErrorCode::kNotFound, "no model '" + name + "' in the repository");
  std::shared_ptr<ServedModel> model;
  try {
    model = load_model(name);
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    failed_[name] = e.what();
    throw;
  }
  std::shared_ptr<ServedModel> previous;
  {
    std::lock_guard lock(mutex_);
    failed_.erase(name);
    if (auto it = ready_.find(name); it != ready_.end()) previous = it->second;
    ready_[name] = model;
  }
  if (previous) previous->scheduler->drain();
}

void ModelRepository::unload(const std::string& name) {
  require_explicit_control(name);
  std::shared_ptr<ServedModel> model;
  {
    std::lock_guard lock(mutex_);
    const auto it = ready_.find(name);
    if (it == ready_.end()) throw Error(ErrorCode::kNotFound, "model '" + name + "' is not loaded");
    model = it->second;
    ready_.erase(it);
  }
  model->scheduler->drain();
}

void ModelRepository::drain_all() {
  for (const auto& model : ready_models()) model->scheduler->drain();
}

}  // namespace kaas::server
