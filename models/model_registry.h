#pragma once
// The model kinds kaas can build, by name. Every door onto a model — kaas-server, the client's
// direct mode, the Triton backend — builds through this registry, so a kind registered once is
// served by all three. A kind turns a build request (name, parameters, model file, batch size)
// into an InstanceFactory: the file is read and checked once, then one model object is made per
// instance, each on its own backend and device.
//
// Built-in kinds: "onnx" (an ONNX file on kaas kernels), "knn" (the exact kNN model) and
// "michel_from_image" (patch extraction + the CNN in an ONNX file).

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/models/model.h"

namespace kaas::models {

// A whole decimal integer (no spaces, no trailing characters), or nullopt.
std::optional<int64_t> parse_integer(std::string_view text);

// String parameters (config.pbtxt `parameters`), read with checks that name the model and key.
class ModelParameters {
 public:
  ModelParameters() = default;
  ModelParameters(std::string model, std::map<std::string, std::string> values)
      : model_(std::move(model)), values_(std::move(values)) {}

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  std::string text(const std::string& key, const std::string& fallback) const;
  // An integer in [min, max]; kInvalidArgument "model 'm': parameter k = 'x' ..." otherwise.
  int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  void set(const std::string& key, std::string value) { values_[key] = std::move(value); }

 private:
  std::string model_;
  std::map<std::string, std::string> values_;
};

// The model's plan file in its version folder: the planner's decisions that change bits, made
// once per model (docs/reproducibility.md). Config parameter plan_file: another path, or "off".
inline constexpr const char* kModelPlanFilename = "kaas_plan.tsv";

struct ModelBuildRequest {
  std::string name;
  ModelParameters parameters;
  std::filesystem::path model_file;  // <version>/model.onnx (or default_model_filename)
  // The config's max_batch_size (0: no batch dimension). When 0 and `auto_complete_max_batch`
  // > 0, a kind whose model can batch takes that instead (Triton's default-max-batch-size).
  int64_t max_batch = 0;
  int64_t auto_complete_max_batch = 0;
  // Declared input dims (config `input`, without the batch dimension), by name; kinds with
  // variable dimensions may fix them from here (knn's D).
  std::map<std::string, std::vector<int64_t>> input_dims;
};

// Makes one model object of a prepared kind on `backend`, device `device`.
using InstanceFactory = std::function<std::unique_ptr<Model>(const Backend& backend, int device)>;

struct PreparedModel {
  InstanceFactory make_instance;
};

struct ModelKind {
  std::string name;
  std::string description;
  bool needs_model_file = false;
  // Reads and checks the model file and parameters; throws kaas::Error (kInvalidArgument for a
  // bad parameter or file, naming it).
  std::function<PreparedModel(const ModelBuildRequest&)> prepare;
};

class ModelKindRegistry {
 public:
  // The process-wide registry, with the built-in kinds.
  static ModelKindRegistry& global();

  // Adds a kind; kInvalidArgument if the name is taken.
  void add(ModelKind kind);
  // kInvalidArgument naming the known kinds when `name` is not registered.
  const ModelKind& find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, ModelKind> kinds_;
};

}  // namespace kaas::models
