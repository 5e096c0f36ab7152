#include "kaas/server_adapter/core/repository_entry.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "kaas/common/error.h"
#include "kaas/server_adapter/core/boundary_model.h"

namespace kaas::repository {

namespace fs = std::filesystem;
using models::DataType;

namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!text.empty()) text += "; ";
    text += "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int line, int column, const std::string& message) override {
    AddError(line, column, "warning: " + message);
  }
  std::string text;
};

[[noreturn]] void bad_config(const std::string& model, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "model '" + model + "' config: " + what);
}

// The model's tensors without the batch dimension, as config dims.
std::vector<int64_t> config_dims(const models::TensorSpec& spec, bool batched) {
  return std::vector<int64_t>(spec.shape.begin() + (batched ? 1 : 0), spec.shape.end());
}

template <class ConfigTensors>
void reconcile(const std::string& model, ConfigTensors* configured,
               const std::vector<models::TensorSpec>& specs, bool batched, const char* kind) {
  for (const auto& c : *configured) {
    const auto it =
        std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == c.name(); });
    if (it == specs.end())
      bad_config(model,
                 std::string(kind) + " '" + c.name() + "' is not a " + kind + " of the model");
    if (c.data_type() != config_data_type(it->dtype))
      bad_config(model, std::string(kind) + " '" + c.name() + "' data_type " +
                            inference::DataType_Name(c.data_type()) + ", the model has " +
                            inference::DataType_Name(config_data_type(it->dtype)));
    const auto dims = config_dims(*it, batched);
    const std::vector<int64_t> given(c.dims().begin(), c.dims().end());
    if (given != dims)
      bad_config(model, std::string(kind) + " '" + c.name() + "' dims " +
                            models::shape_string(given) + ", the model has " +
                            models::shape_string(dims) +
                            (batched ? " (without the batch dimension)" : ""));
  }
  for (const auto& spec : specs) {
    const bool listed = std::any_of(configured->begin(), configured->end(),
                                    [&](const auto& c) { return c.name() == spec.name; });
    if (listed) continue;
    auto* added = configured->Add();
    added->set_name(spec.name);
    added->set_data_type(config_data_type(spec.dtype));
    for (int64_t d : config_dims(spec, batched)) added->add_dims(d);
  }
}

DynamicBatching read_batching(const inference::ModelConfig& config) {
  DynamicBatching batching;
  if (!config.has_dynamic_batching()) return batching;
  const auto& db = config.dynamic_batching();
  batching.enabled = true;
  for (int32_t size : db.preferred_batch_size()) {
    if (size < 1 || size > config.max_batch_size())
      bad_config(config.name(), "preferred_batch_size " + std::to_string(size) + " outside 1.." +
                                    std::to_string(config.max_batch_size()));
    batching.preferred_sizes.push_back(size);
  }
  batching.max_queue_delay = std::chrono::microseconds(db.max_queue_delay_microseconds());
  const auto& q = db.default_queue_policy();
  batching.max_queue_size = q.max_queue_size();
  batching.default_timeout = std::chrono::microseconds(q.default_timeout_microseconds());
  batching.allow_timeout_override =
      q.allow_timeout_override() || q.default_timeout_microseconds() == 0;
  return batching;
}

}  // namespace

inference::DataType config_data_type(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return inference::TYPE_FP32;
    case DataType::kInt32:
      return inference::TYPE_INT32;
    case DataType::kInt64:
      return inference::TYPE_INT64;
    case DataType::kUint8:
      return inference::TYPE_UINT8;
    case DataType::kFloat16:
      return inference::TYPE_FP16;
    case DataType::kBFloat16:
      return inference::TYPE_BF16;
  }
  return inference::TYPE_INVALID;
}

void check_model_name(const std::string& name) {
  const bool chars_ok =
      !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!chars_ok || name == "." || name == ".." || name.find("..") != std::string::npos)
    throw Error(ErrorCode::kInvalidArgument,
                "model name '" + escape_for_message(name) +
                    "' is not valid (letters, digits, '_', '-', '.'; no '..')");
}

inference::ModelConfig read_model_config(const fs::path& model_dir) {
  const fs::path file = model_dir / "config.pbtxt";
  if (!fs::exists(file))
    throw Error(ErrorCode::kNotFound, "no config.pbtxt in " + model_dir.string());
  if (!fs::is_regular_file(file))
    throw Error(ErrorCode::kInvalidArgument, file.string() + " is not a regular file");
  std::ifstream in(file);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "cannot read " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), file.string());
}

inference::ModelConfig parse_model_config(const std::string& text, const std::string& source) {
  inference::ModelConfig config;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);  // Triton fields kaas does not use (optimization, warmup, ...)
  if (!parser.ParseFromString(text, &config))
    throw Error(ErrorCode::kInvalidArgument, source + ": " + errors.text);
  return config;
}

inference::ModelConfig model_config_from_json(const std::string& json) {
  inference::ModelConfig config;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &config, options);
  if (!status.ok())
    throw Error(ErrorCode::kInvalidArgument,
                "model configuration JSON: " + std::string(status.message()));
  return config;
}

std::string model_config_to_json(const inference::ModelConfig& config) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  const auto status = google::protobuf::util::MessageToJsonString(config, &json, options);
  if (!status.ok())
    throw Error(ErrorCode::kInternal,
                "model configuration to JSON: " + std::string(status.message()));
  return json;
}

RepositoryEntry entry_from_config(inference::ModelConfig config, const std::string& name,
                                  int64_t version, const fs::path& version_dir) {
  if (!config.name().empty() && config.name() != name)
    bad_config(name, "name '" + config.name() + "' differs from its directory '" + name + "'");
  config.set_name(name);
  RepositoryEntry entry;
  entry.name = name;
  entry.version = version;
  std::map<std::string, std::string> parameters;
  for (const auto& [key, value] : config.parameters()) parameters[key] = value.string_value();
  entry.kind = parameters.count("kaas_model") ? parameters.at("kaas_model") : "onnx";
  const bool onnx_platform =
      config.platform() == "onnxruntime_onnx" || config.backend() == "onnxruntime";
  if (onnx_platform && entry.kind != "onnx")
    bad_config(name, "platform/backend onnxruntime serves ONNX models, not kaas_model '" +
                         entry.kind + "'");
  if (!onnx_platform && config.backend() != "kaas")
    bad_config(name, "platform '" + config.platform() + "' / backend '" + config.backend() +
                         "' is not served by kaas (onnxruntime_onnx, onnxruntime or kaas)");
  if (config.max_batch_size() < 0) bad_config(name, "max_batch_size must be >= 0");
  const auto& kind = models::ModelKindRegistry::global().find(entry.kind);

  int instances = 0;
  for (const auto& group : config.instance_group()) {
    if (group.count() < 0) bad_config(name, "instance_group count must be >= 0");
    instances += std::max(group.count(), 1);
  }
  entry.instance_count = std::max(instances, 1);
  if (entry.instance_count > 64) bad_config(name, "instance_group counts add up to more than 64");

  models::ModelBuildRequest& build = entry.build;
  build.name = name;
  build.parameters = models::ModelParameters(name, std::move(parameters));
  build.max_batch = config.max_batch_size();
  for (const auto& in : config.input())
    build.input_dims[in.name()] = std::vector<int64_t>(in.dims().begin(), in.dims().end());
  const std::string file =
      config.default_model_filename().empty() ? "model.onnx" : config.default_model_filename();
  if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
    bad_config(name, "default_model_filename '" + file + "' must be a plain file name");
  if (kind.needs_model_file) build.model_file = version_dir / file;
  entry.batching = read_batching(config);
  entry.config = std::move(config);
  return entry;
}

RepositoryEntry read_repository_entry(const fs::path& root, const std::string& name) {
  check_model_name(name);
  const fs::path dir = root / name;
  if (!fs::exists(dir / "config.pbtxt"))
    throw Error(ErrorCode::kNotFound,
                "unknown model '" + name + "' in repository " + root.string());
  inference::ModelConfig config = read_model_config(dir);
  int64_t version = 0;
  for (const auto& item : fs::directory_iterator(dir)) {
    const std::string v = item.path().filename().string();
    if (!item.is_directory() || v.empty() || !std::all_of(v.begin(), v.end(), ::isdigit)) continue;
    const auto number = models::parse_integer(v);
    if (!number)
      bad_config(name, "version directory '" + v + "' is out of range (at most " +
                           std::to_string(INT64_MAX) + ")");
    version = std::max(version, *number);
  }
  if (version == 0) bad_config(name, "no numeric version directory in " + dir.string());
  return entry_from_config(std::move(config), name, version, dir / std::to_string(version));
}

models::PreparedModel prepare_entry(const RepositoryEntry& entry) {
  models::PreparedModel prepared =
      models::ModelKindRegistry::global().find(entry.kind).prepare(entry.build);
  const BoundaryTypes types = boundary_types(entry.config);
  if (!types.empty()) {
    // Inputs/outputs the config declares FP16 / BF16: converted around every instance.
    prepared.make_instance = [inner = std::move(prepared.make_instance), types](
                                 const Backend& backend, int device) {
      return with_boundary(inner(backend, device), types);
    };
  }
  return prepared;
}

void complete_config(inference::ModelConfig& config, const models::ModelSignature& signature) {
  const bool batched = signature.max_batch > 0;
  config.set_max_batch_size(int32_t(signature.max_batch));
  reconcile(config.name(), config.mutable_input(), signature.inputs, batched, "input");
  reconcile(config.name(), config.mutable_output(), signature.outputs, batched, "output");
}

LoadedModel load_repository_model(const fs::path& root, const std::string& name,
                                  const Backend& backend, int instances_override,
                                  const std::map<std::string, std::string>& parameter_overrides) {
  LoadedModel loaded;
  loaded.entry = read_repository_entry(root, name);
  for (const auto& [key, value] : parameter_overrides)
    loaded.entry.build.parameters.set(key, value);
  const auto prepared = prepare_entry(loaded.entry);
  const int count = instances_override > 0 ? instances_override : loaded.entry.instance_count;
  for (int i = 0; i < count; ++i) loaded.instances.push_back(prepared.make_instance(backend, 0));
  complete_config(loaded.entry.config, loaded.instances.front()->signature());
  return loaded;
}

}  // namespace kaas::repository
