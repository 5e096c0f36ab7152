#include "kaas/models/model_registry.h"

#include <charconv>
#include <mutex>

#include "kaas/common/error.h"
#include "kaas/models/knn_model.h"
#include "kaas/models/michel_from_image.h"
#include "kaas/models/onnx_model.h"

namespace kaas::models {

namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

// The model's plan file, beside its model file in the version folder (kernels/planner.h); the
// model parameter plan_file overrides it ("off": this machine's planner cache only).
std::string plan_file_of(const ModelBuildRequest& request) {
  const std::string configured = request.parameters.text("plan_file", "");
  if (configured == "off") return {};
  if (!configured.empty()) return configured;
  return (request.model_file.parent_path() / kModelPlanFilename).string();
}

PreparedModel prepare_onnx(const ModelBuildRequest& request) {
  auto proto = std::make_shared<const onnx::ModelProto>(read_onnx_file(request.model_file));
  const bool batched = onnx_model_is_batched(*proto);
  int64_t max_batch = request.max_batch;
  if (max_batch == 0 && batched && request.auto_complete_max_batch > 0)
    max_batch = request.auto_complete_max_batch;
  if (batched && max_batch == 0)
    throw Error(ErrorCode::kInvalidArgument,
                "model '" + request.name +
                    "': max_batch_size is 0 but the model has a dynamic batch dimension");
  if (!batched && max_batch > 0)
    throw Error(ErrorCode::kInvalidArgument, "model '" + request.name + "': max_batch_size is " +
                                                 std::to_string(max_batch) +
                                                 " but the model has no dynamic batch dimension");
  OnnxModelOptions options;
  options.name = request.name;
  options.max_batch = std::max<int64_t>(max_batch, 1);
  options.precision = precision_from_string(request.parameters.text("precision", "fp32"),
                                            "model '" + request.name + "'");
  options.sparse = sparse_plan_from_string(request.parameters.text("sparse", "auto"),
                                           "model '" + request.name + "' parameter sparse");
  options.plan_file = plan_file_of(request);
  PreparedModel prepared;
  prepared.make_instance = [proto, options](const Backend& backend, int device) mutable {
    options.device = device;
    return make_onnx_model(*proto, backend, options);
  };
  return prepared;
}

void require_unbatched(const ModelBuildRequest& request, const char* why) {
  if (request.max_batch != 0)
    throw Error(ErrorCode::kInvalidArgument, "model '" + request.name + "': max_batch_size is " +
                                                 std::to_string(request.max_batch) + "; " + why);
}

PreparedModel prepare_knn(const ModelBuildRequest& request) {
  require_unbatched(request, "the knn model takes max_batch_size 0 (ragged events per request)");
  KnnModelOptions options;
  options.name = request.name;
  options.k = int(request.parameters.integer("k", 16, 1, kKnnMaxK));
  options.method = knn_method_from_string(request.parameters.text("method", "auto"));
  if (const auto it = request.input_dims.find("points");
      it != request.input_dims.end() && it->second.size() == 2)
    options.dims = it->second[1];
  // Checks k and dims now, so a bad parameter fails the load and not the first request.
  make_knn_model(find_backend("serial"), options);
  PreparedModel prepared;
  prepared.make_instance = [options](const Backend& backend, int device) mutable {
    options.device = device;
    return make_knn_model(backend, options);
  };
  return prepared;
}

PreparedModel prepare_michel_from_image(const ModelBuildRequest& request) {
  require_unbatched(request, "michel_from_image takes max_batch_size 0 (one plane per request)");
  auto proto = std::make_shared<const onnx::ModelProto>(read_onnx_file(request.model_file));
  MichelFromImageOptions options;
  options.name = request.name;
  options.hits_per_chunk = request.parameters.integer("hits_per_chunk", 1024, 1, 1 << 20);
  options.precision = precision_from_string(request.parameters.text("precision", "fp32"),
                                            "model '" + request.name + "'");
  options.sparse = sparse_plan_from_string(request.parameters.text("sparse", "auto"),
                                           "model '" + request.name + "' parameter sparse");
  options.plan_file = plan_file_of(request);
  PreparedModel prepared;
  prepared.make_instance = [proto, options](const Backend& backend, int device) mutable {
    options.device = device;
    return make_michel_from_image(*proto, backend, options);
  };
  return prepared;
}

ModelKindRegistry make_builtin_registry() {
  ModelKindRegistry registry;
  registry.add({"onnx", "an ONNX model file on kaas kernels (parameters precision, sparse)", true,
                prepare_onnx});
  registry.add({"knn", "exact k nearest neighbours over ragged events (parameters k, method)",
                false, prepare_knn});
  registry.add({"michel_from_image",
                "plane image + hits -> per-hit EmTrkMichelId scores (parameters hits_per_chunk, "
                "precision, sparse)",
                true, prepare_michel_from_image});
  return registry;
}

}  // namespace

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::string ModelParameters::text(const std::string& key, const std::string& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

int64_t ModelParameters::integer(const std::string& key, int64_t fallback, int64_t min,
                                 int64_t max) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string where =
      "model '" + model_ + "': parameter " + key + " = '" + escape_for_message(it->second) + "'";
  const auto value = parse_integer(it->second);
  if (!value) throw Error(ErrorCode::kInvalidArgument, where + " is not an integer");
  if (*value < min || *value > max)
    throw Error(ErrorCode::kInvalidArgument,
                where + " is outside " + std::to_string(min) + ".." + std::to_string(max));
  return *value;
}

ModelKindRegistry& ModelKindRegistry::global() {
  static ModelKindRegistry registry = make_builtin_registry();
  return registry;
}

void ModelKindRegistry::add(ModelKind kind) {
  std::lock_guard lock(registry_mutex());
  if (kinds_.count(kind.name))
    throw Error(ErrorCode::kInvalidArgument,
                "model kind '" + kind.name + "' is already registered");
  const std::string name = kind.name;
  kinds_.emplace(name, std::move(kind));
}

const ModelKind& ModelKindRegistry::find(const std::string& name) const {
  std::lock_guard lock(registry_mutex());
  const auto it = kinds_.find(name);
  if (it != kinds_.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : kinds_) known += (known.empty() ? "" : ", ") + k;
  throw Error(ErrorCode::kInvalidArgument,
              "model kind '" + name + "' is not known (expected " + known + ")");
}

std::vector<std::string> ModelKindRegistry::names() const {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> names;
  for (const auto& [name, kind] : kinds_) names.push_back(name);
  return names;
}

}  // namespace kaas::models
