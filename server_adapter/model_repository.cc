#include "server_adapter/model_repository.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "backends/error.h"
#include "models/knn_model.h"
#include "models/michel_from_image.h"
#include "models/onnx_model.h"

namespace kaas::server {

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
  throw Error(ErrorCode::kInvalidArgument, "model '" + model + "' config.pbtxt: " + what);
}

inference::DataType config_type(DataType d) {
  switch (d) {
    case DataType::kFloat32:
      return inference::TYPE_FP32;
    case DataType::kInt32:
      return inference::TYPE_INT32;
    case DataType::kInt64:
      return inference::TYPE_INT64;
    case DataType::kUint8:
      return inference::TYPE_UINT8;
  }
  return inference::TYPE_INVALID;
}

std::string parameter(const inference::ModelConfig& c, const std::string& key,
                      const std::string& fallback) {
  const auto it = c.parameters().find(key);
  return it == c.parameters().end() ? fallback : it->second.string_value();
}

int64_t int_parameter(const inference::ModelConfig& c, const std::string& key, int64_t fallback) {
  const std::string text = parameter(c, key, "");
  if (text.empty()) return fallback;
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  bad_config(c.name(), "parameter " + key + " = '" + text + "' is not an integer");
}

// The model's tensors without the batch dimension, as config dims.
std::vector<int64_t> config_dims(const models::TensorSpec& spec, bool batched) {
  return std::vector<int64_t>(spec.shape.begin() + (batched ? 1 : 0), spec.shape.end());
}

// Checks the config's inputs/outputs against the model and fills in what the config leaves out.
template <class ConfigTensors>
void reconcile(const std::string& model, ConfigTensors* configured,
               const std::vector<models::TensorSpec>& specs, bool batched, const char* kind) {
  for (const auto& c : *configured) {
    const auto it =
        std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == c.name(); });
    if (it == specs.end())
      bad_config(model,
                 std::string(kind) + " '" + c.name() + "' is not a " + kind + " of the model");
    if (c.data_type() != config_type(it->dtype))
      bad_config(model, std::string(kind) + " '" + c.name() + "' data_type " +
                            inference::DataType_Name(c.data_type()) + ", the model has " +
                            inference::DataType_Name(config_type(it->dtype)));
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
    added->set_data_type(config_type(spec.dtype));
    for (int64_t d : config_dims(spec, batched)) added->add_dims(d);
  }
}

}  // namespace

void check_model_name(const std::string& name) {
  const bool chars_ok =
      !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!chars_ok || name == "." || name == ".." || name.find("..") != std::string::npos)
    throw Error(ErrorCode::kInvalidArgument,
                "model name '" + name + "' is not valid (letters, digits, '_', '-', '.'; no '..')");
}

inference::ModelConfig read_model_config(const fs::path& model_dir) {
  const fs::path file = model_dir / "config.pbtxt";
  std::ifstream in(file);
  if (!in) throw Error(ErrorCode::kNotFound, "no config.pbtxt in " + model_dir.string());
  std::stringstream text;
  text << in.rdbuf();
  inference::ModelConfig config;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);  // Triton fields kaas does not use (optimization, warmup, ...)
  if (!parser.ParseFromString(text.str(), &config))
    throw Error(ErrorCode::kInvalidArgument, file.string() + ": " + errors.text);
  return config;
}

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

LoadedModel load_repository_model(const fs::path& root, const std::string& name,
                                  const Backend& backend, int instances_override) {
  check_model_name(name);
  const fs::path dir = root / name;
  LoadedModel loaded;
  loaded.config = read_model_config(dir);
  inference::ModelConfig& config = loaded.config;
  if (!config.name().empty() && config.name() != name)
    bad_config(name, "name '" + config.name() + "' differs from its directory '" + name + "'");
  config.set_name(name);
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string v = entry.path().filename().string();
    if (entry.is_directory() && !v.empty() && std::all_of(v.begin(), v.end(), ::isdigit))
      loaded.version = std::max<int64_t>(loaded.version, std::stoll(v));
  }
  if (loaded.version == 0) bad_config(name, "no numeric version directory in " + dir.string());
  const fs::path version_dir = dir / std::to_string(loaded.version);

  const std::string kind = parameter(config, "kaas_model", "onnx");
  const bool onnx_platform = config.platform() == "onnxruntime_onnx" ||
                             config.backend() == "onnxruntime" ||
                             (config.backend() == "kaas" && kind == "onnx");
  if (!onnx_platform && config.backend() != "kaas")
    bad_config(name, "platform '" + config.platform() + "' / backend '" + config.backend() +
                         "' is not served by kaas (onnxruntime_onnx, onnxruntime or kaas)");
  int instances = 0;
  for (const auto& group : config.instance_group()) instances += std::max(group.count(), 1);
  instances = std::max(instances, 1);
  if (instances_override > 0) instances = instances_override;
  if (instances > 64) bad_config(name, "instance_group counts add up to more than 64");

  std::vector<std::unique_ptr<models::Model>>& models = loaded.instances;
  const std::string file =
      config.default_model_filename().empty() ? "model.onnx" : config.default_model_filename();
  if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
    bad_config(name, "default_model_filename '" + file + "' must be a plain file name");
  if (onnx_platform) {
    if (config.max_batch_size() < 0) bad_config(name, "max_batch_size must be >= 0");
    const auto proto = models::read_onnx_file(version_dir / file);
    models::OnnxModelOptions options;
    options.name = name;
    options.max_batch = std::max(config.max_batch_size(), 1);
    for (int i = 0; i < instances; ++i)
      models.push_back(models::make_onnx_model(proto, backend, options));
    const bool batched = models.front()->signature().max_batch > 0;
    if (batched && config.max_batch_size() == 0)
      bad_config(name, "max_batch_size is 0 but the model has a dynamic batch dimension");
    if (!batched && config.max_batch_size() > 0)
      bad_config(name, "max_batch_size is " + std::to_string(config.max_batch_size()) +
                           " but the model has no dynamic batch dimension");
  } else if (kind == "knn") {
    if (config.max_batch_size() != 0) bad_config(name, "the knn model takes max_batch_size 0");
    models::KnnModelOptions options;
    options.name = name;
    options.k = int(int_parameter(config, "k", 16));
    options.method = models::knn_method_from_string(parameter(config, "method", "auto"));
    for (const auto& in : config.input()) {
      if (in.name() == "points" && in.dims_size() == 2) options.dims = in.dims(1);
    }
    for (int i = 0; i < instances; ++i) models.push_back(models::make_knn_model(backend, options));
  } else if (kind == "michel_from_image") {
    if (config.max_batch_size() != 0)
      bad_config(name, "michel_from_image takes max_batch_size 0 (one plane per request)");
    const auto proto = models::read_onnx_file(version_dir / file);
    models::MichelFromImageOptions options;
    options.name = name;
    options.hits_per_chunk = int_parameter(config, "hits_per_chunk", 1024);
    for (int i = 0; i < instances; ++i)
      models.push_back(models::make_michel_from_image(proto, backend, options));
  } else {
    bad_config(name,
               "parameter kaas_model '" + kind + "': expected onnx, knn or michel_from_image");
  }
  const auto& sig = models.front()->signature();
  const bool batched = sig.max_batch > 0;
  reconcile(name, config.mutable_input(), sig.inputs, batched, "input");
  reconcile(name, config.mutable_output(), sig.outputs, batched, "output");
  return loaded;
}

std::shared_ptr<ServedModel> ModelRepository::load_model(const std::string& name) const {
  LoadedModel loaded = load_repository_model(root_, name, backend_);
  auto served = std::make_shared<ServedModel>();
  served->name = name;
  served->version = loaded.version;
  served->config = std::move(loaded.config);
  const inference::ModelConfig& config = served->config;
  std::vector<std::unique_ptr<models::Model>>& models = loaded.instances;
  const bool batched = models.front()->signature().max_batch > 0;

  BatchingPolicy policy;
  if (config.has_dynamic_batching()) {
    const auto& db = config.dynamic_batching();
    policy.dynamic = batched;
    for (int32_t size : db.preferred_batch_size()) {
      if (size < 1 || size > config.max_batch_size())
        bad_config(name, "preferred_batch_size " + std::to_string(size) + " outside 1.." +
                             std::to_string(config.max_batch_size()));
      policy.preferred_sizes.push_back(size);
    }
    policy.max_queue_delay = std::chrono::microseconds(db.max_queue_delay_microseconds());
    const auto& q = db.default_queue_policy();
    if (q.max_queue_size() > 0) policy.max_queue_size = q.max_queue_size();
    policy.default_timeout = std::chrono::microseconds(q.default_timeout_microseconds());
    policy.allow_timeout_override =
        q.allow_timeout_override() || q.default_timeout_microseconds() == 0;
  }
  served->stats = std::make_shared<ModelStats>();
  served->scheduler =
      std::make_unique<ModelScheduler>(name, std::move(models), policy, served->stats);
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
  if (!version.empty() && version != std::to_string(it->second->version))
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
