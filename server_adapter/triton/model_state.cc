#include "kaas/server_adapter/triton/model_state.h"

#include <nlohmann/json.hpp>

#include "kaas/common/error.h"
#include "kaas/server_adapter/triton/triton_util.h"

namespace kaas::triton {

namespace {

using nlohmann::json;

// Triton's own command-line keys, present in every backend's config.
bool is_triton_key(const std::string& key) {
  return key == "auto-complete-config" || key == "backend-directory" ||
         key == "min-compute-capability" || key == "default-max-batch-size";
}

int64_t option_integer(const std::string& key, const std::string& text, int64_t min, int64_t max) {
  const auto value = models::parse_integer(text);
  if (!value || *value < min || *value > max)
    throw Error(ErrorCode::kInvalidArgument,
                "--backend-config=kaas," + key + "=" + escape_for_message(text) +
                    ": expected an integer in " + std::to_string(min) + ".." + std::to_string(max));
  return *value;
}

const Backend& available_backend(const std::string& name, const std::string& why) {
  const Backend& backend = find_backend(name);
  if (!backend.available())
    throw Error(ErrorCode::kUnavailable,
                why + ": kaas backend '" + name +
                    "' is not available here: " + backend.unavailable_reason());
  return backend;
}

}  // namespace

BackendOptions parse_backend_options(const std::string& text) {
  BackendOptions options;
  const json config = json::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object())
    throw Error(ErrorCode::kInvalidArgument, "backend config is not a JSON object");
  const auto cmdline = config.find("cmdline");
  if (cmdline == config.end() || !cmdline->is_object()) return options;
  for (const auto& [key, value] : cmdline->items()) {
    if (!value.is_string()) continue;
    const std::string v = value.get<std::string>();
    if (key == "default-backend") {
      const Backend& backend = find_backend(v);  // kNotFound names the compiled backends
      options.cpu_backend = std::string(backend.name());
    } else if (key == "threads") {
      options.threads = int(option_integer(key, v, 0, 4096));
    } else if (key == "default-max-batch-size") {
      options.default_max_batch = option_integer(key, v, 0, 1 << 20);
    } else if (!is_triton_key(key)) {
      KAAS_TRITON_LOG(WARN, "ignoring unknown backend config '" + key +
                                "' (kaas reads "
                                "default-backend, threads)");
    }
  }
  return options;
}

ModelState::ModelState(TRITONBACKEND_Model* model, const BackendOptions& options)
    : options_(options) {
  const char* name = nullptr;
  uint64_t version = 0;
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  check(TRITONBACKEND_ModelName(model, &name), "model name");
  check(TRITONBACKEND_ModelVersion(model, &version), "model version");
  check(TRITONBACKEND_ModelRepository(model, &artifact, &location), "model repository");
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    throw Error(ErrorCode::kUnimplemented,
                "model '" + std::string(name) + "': kaas reads models from the filesystem only");
  TRITONSERVER_Message* message = nullptr;
  check(TRITONBACKEND_ModelConfig(model, 1, &message), "model config");
  std::string triton_json;
  try {
    triton_json = message_json(message);
  } catch (...) {
    TRITONSERVER_MessageDelete(message);
    throw;
  }
  TRITONSERVER_MessageDelete(message);

  const std::filesystem::path version_dir =
      std::filesystem::path(location) / std::to_string(version);
  entry_ = repository::entry_from_config(repository::model_config_from_json(triton_json), name,
                                         int64_t(version), version_dir);
  bool auto_complete = false;
  check(TRITONBACKEND_ModelAutoCompleteConfig(model, &auto_complete), "auto-complete flag");
  if (auto_complete) entry_.build.auto_complete_max_batch = options_.default_max_batch;
  prepared_ = repository::prepare_entry(entry_);

  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int device = 0;
  if (entry_.config.instance_group_size() > 0 &&
      entry_.config.instance_group(0).kind() == inference::ModelInstanceGroup::KIND_GPU) {
    kind = TRITONSERVER_INSTANCEGROUPKIND_GPU;
    if (entry_.config.instance_group(0).gpus_size() > 0)
      device = entry_.config.instance_group(0).gpus(0);
  }
  spare_backend_ = &instance_backend(kind);
  spare_device_ = device;
  // The planner measures at load on this thread: with the count the instances will use.
  spare_backend_->set_caller_threads(options_.threads);
  spare_ = prepared_.make_instance(*spare_backend_, device);
  repository::complete_config(entry_.config, spare_->signature());
  if (auto_complete) complete_config(model, triton_json);
}

void ModelState::complete_config(TRITONBACKEND_Model* model, const std::string& triton_json) {
  json config = json::parse(triton_json);
  const json completed = json::parse(repository::model_config_to_json(entry_.config));
  const int64_t old_max_batch = config.value("max_batch_size", int64_t(0));
  config["max_batch_size"] = entry_.config.max_batch_size();
  config["input"] = completed.value("input", json::array());
  config["output"] = completed.value("output", json::array());
  // As Triton's own backends do: a model that auto-complete made batchable gets the dynamic
  // batcher unless the config chose a scheduler.
  if (old_max_batch == 0 && entry_.config.max_batch_size() > 0 &&
      !config.contains("dynamic_batching") && !config.contains("sequence_batching"))
    config["dynamic_batching"] = json::object();
  const std::string text = config.dump();
  TRITONSERVER_Message* message = nullptr;
  check(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()),
        "completed model config");
  TRITONSERVER_Error* error = TRITONBACKEND_ModelSetConfig(model, 1, message);
  TRITONSERVER_MessageDelete(message);
  check(error, "setting the completed model config");
  KAAS_TRITON_LOG(INFO, "model '" + name() + "': config completed: max_batch_size " +
                            std::to_string(entry_.config.max_batch_size()) + ", " +
                            std::to_string(entry_.config.input_size()) + " inputs, " +
                            std::to_string(entry_.config.output_size()) + " outputs");
}

const Backend& ModelState::instance_backend(TRITONSERVER_InstanceGroupKind kind) const {
  const std::string requested = entry_.build.parameters.text("kaas_backend", "");
  if (!requested.empty())
    return available_backend(requested, "model '" + name() + "' parameter kaas_backend");
  if (kind != TRITONSERVER_INSTANCEGROUPKIND_GPU)
    return available_backend(options_.cpu_backend, "model '" + name() + "' KIND_CPU instance");
  std::string reasons;
  for (const char* gpu : {"cuda", "hip"}) {
    for (const Backend* backend : compiled_backends()) {
      if (backend->name() != gpu) continue;
      if (backend->available()) return *backend;
      reasons +=
          std::string(reasons.empty() ? "" : "; ") + gpu + ": " + backend->unavailable_reason();
    }
  }
  throw Error(ErrorCode::kUnavailable,
              "model '" + name() + "' KIND_GPU instance: no GPU backend available (" +
                  (reasons.empty() ? "kaas was built without CUDA and HIP" : reasons) + ")");
}

std::unique_ptr<models::Model> ModelState::make_instance(const Backend& backend, int device) {
  std::unique_ptr<models::Model> spare;
  {
    std::lock_guard lock(mutex_);
    spare = std::move(spare_);
  }
  if (spare && spare_backend_ == &backend && device == spare_device_) return spare;
  backend.set_caller_threads(options_.threads);
  return prepared_.make_instance(backend, device);
}

}  // namespace kaas::triton
