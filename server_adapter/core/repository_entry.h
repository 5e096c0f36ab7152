#pragma once
// One model repository entry in Triton's layout, read without any serving machinery:
// <root>/<model>/config.pbtxt (protobuf text format, inference.ModelConfig) and numeric
// <root>/<model>/<version>/ directories, of which the highest is served.
//
// What an entry says, and who reads it:
//   kind        parameter kaas_model ("onnx" by default; any kind in models::ModelKindRegistry).
//               platform "onnxruntime_onnx" and backend "onnxruntime" are ONNX models too, so
//               the file Triton serves with onnxruntime is served by kaas unchanged.
//   parameters  every `parameters` string value, passed to the kind (k, method, ...)
//   model file  <version>/model.onnx, or default_model_filename (a plain file name)
//   batching    max_batch_size and dynamic_batching (for kaas-server's scheduler)
//   instances   the instance_group counts
//   FP16/BF16   inputs/outputs declared TYPE_FP16 / TYPE_BF16 where the model has FP32 tensors:
//               converted at the boundary (boundary_model.h)
// kaas-server, the client's direct mode and the Triton backend all build models from an entry
// through prepare_entry(), so every kind is served the same way by all three.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/models/model_registry.h"
#include "model_config.pb.h"

namespace kaas::repository {

// Rejects names that could leave the repository or are not model directory names.
void check_model_name(const std::string& name);

// Parses <dir>/config.pbtxt; kNotFound without one, kInvalidArgument with the file, line and
// column for a syntax error.
inference::ModelConfig read_model_config(const std::filesystem::path& model_dir);
// The same for config.pbtxt text read elsewhere; `source` names it in messages.
inference::ModelConfig parse_model_config(const std::string& text, const std::string& source);

// Triton's model configuration JSON (what TRITONBACKEND_ModelConfig gives a backend) as a
// ModelConfig; fields kaas does not use are ignored. kInvalidArgument for malformed JSON.
inference::ModelConfig model_config_from_json(const std::string& json);
std::string model_config_to_json(const inference::ModelConfig& config);

struct DynamicBatching {
  bool enabled = false;
  std::vector<int64_t> preferred_sizes;  // each in 1..max_batch_size
  std::chrono::microseconds max_queue_delay{0};
  size_t max_queue_size = 0;  // 0: the server's own bound
  std::chrono::microseconds default_timeout{0};
  bool allow_timeout_override = true;
};

struct RepositoryEntry {
  std::string name;
  int64_t version = 0;
  inference::ModelConfig config;  // as read; complete_config() fills in the model's I/O
  std::string kind;
  models::ModelBuildRequest build;  // parameters, model file, max_batch_size, declared dims
  int instance_count = 1;
  DynamicBatching batching;
};

// Reads <root>/<name>: its config and highest version. kNotFound for an unknown model,
// kInvalidArgument naming the model for a bad config.
RepositoryEntry read_repository_entry(const std::filesystem::path& root, const std::string& name);

// An entry from a config that was read elsewhere (Triton hands the backend its config as JSON)
// and the directory of the version to serve.
RepositoryEntry entry_from_config(inference::ModelConfig config, const std::string& name,
                                  int64_t version, const std::filesystem::path& version_dir);

// The entry's kind, prepared (model file read and checked, parameters checked); its instances
// take and return the FP16 / BF16 tensors the config declares (boundary_model.h).
models::PreparedModel prepare_entry(const RepositoryEntry& entry);

// Checks the config's inputs/outputs against the model and adds those it leaves out, and sets
// max_batch_size to the model's; kInvalidArgument naming the model and tensor on a mismatch.
void complete_config(inference::ModelConfig& config, const models::ModelSignature& signature);

// One entry built on a backend: the entry (config completed) and one model object per instance
// (instance_group counts, or `instances_override` when > 0). `parameter_overrides` replace or add
// config `parameters` (the direct client's precision).
struct LoadedModel {
  RepositoryEntry entry;
  std::vector<std::unique_ptr<models::Model>> instances;
};
LoadedModel load_repository_model(
    const std::filesystem::path& root, const std::string& name, const Backend& backend,
    int instances_override = 0, const std::map<std::string, std::string>& parameter_overrides = {});

// The config.pbtxt data type of a kaas tensor type.
inference::DataType config_data_type(models::DataType dtype);

}  // namespace kaas::repository
