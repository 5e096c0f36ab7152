#include "kaas/server_adapter/core/default_repository.h"

#include <algorithm>

#include <google/protobuf/text_format.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "kaas/common/error.h"
#include "kaas/server_adapter/core/repository_entry.h"

namespace kaas::server {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw Error(ErrorCode::kInternal, "cannot write " + path.string());
}

// config.pbtxt: a comment line, then the message as protobuf's text format.
void write_config(const fs::path& dir, const std::string& comment,
                  const inference::ModelConfig& config) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(config, &text))
    throw Error(ErrorCode::kInternal, "cannot print the config of " + config.name());
  write_text(dir / "config.pbtxt", "# " + comment + "\n" + text);
}

inference::ModelConfig kaas_model_config(
    const std::string& name, const std::string& kind,
    std::initializer_list<std::pair<const char*, const char*>> parameters) {
  inference::ModelConfig config;
  config.set_name(name);
  config.set_backend("kaas");
  config.set_max_batch_size(0);
  (*config.mutable_parameters())["kaas_model"].set_string_value(kind);
  for (const auto& [key, value] : parameters)
    (*config.mutable_parameters())[key].set_string_value(value);
  config.add_instance_group()->set_count(1);
  return config;
}

// The entry rewritten for Triton's kaas backend, with the I/O kaas completes it with.
void write_triton_config(const fs::path& root, const std::string& name) {
  auto loaded = repository::load_repository_model(root, name, find_backend("serial"), 1);
  inference::ModelConfig& config = loaded.entry.config;
  if (config.backend() != "kaas") {
    config.clear_platform();
    config.set_backend("kaas");
    (*config.mutable_parameters())["kaas_model"].set_string_value(loaded.entry.kind);
  }
  write_config(root / name,
               "Triton with the kaas backend (libtriton_kaas.so); written by kaas-make-repository "
               "--for triton",
               config);
}

}  // namespace

void write_emtrk_repository_entry(const fs::path& repository, const std::string& name,
                                  const models::EmTrkGeneratorOptions& options, int max_batch) {
  const fs::path dir = repository / name;
  std::error_code ec;
  fs::create_directories(dir / "1", ec);
  if (ec)
    throw Error(ErrorCode::kInternal,
                "cannot create " + (dir / "1").string() + ": " + ec.message());
  const auto model = models::generate_emtrk_onnx(options);
  {
    std::ofstream out(dir / "1" / "model.onnx", std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out))
      throw Error(ErrorCode::kInternal, "cannot write " + (dir / "1" / "model.onnx").string());
  }
  const bool keras = options.style != models::EmTrkGraphStyle::kPyTorch;
  inference::ModelConfig config;
  config.set_name(name);
  config.set_platform("onnxruntime_onnx");
  config.set_max_batch_size(max_batch);
  auto* input = config.add_input();
  input->set_name("main_input");
  input->set_data_type(inference::TYPE_FP32);
  input->set_format(keras ? inference::ModelInput::FORMAT_NHWC
                          : inference::ModelInput::FORMAT_NCHW);
  for (int64_t d : keras ? std::vector<int64_t>{48, 48, 1} : std::vector<int64_t>{1, 48, 48})
    input->add_dims(d);
  for (const auto& [output, width] :
       {std::pair{"em_trk_none_netout/Softmax", 3}, std::pair{"michel_netout/Sigmoid", 1}}) {
    auto* o = config.add_output();
    o->set_name(output);
    o->set_data_type(inference::TYPE_FP32);
    o->add_dims(width);
  }
  // A full batch of the CNN's plan (256), or the whole max batch below that: a preferred size
  // above max_batch_size is a config the server refuses.
  config.mutable_dynamic_batching()->add_preferred_batch_size(std::min(256, max_batch));
  config.mutable_dynamic_batching()->set_max_queue_delay_microseconds(500);
  config.add_instance_group()->set_count(1);
  write_config(dir,
               std::string("EmTrkMichelId patch CNN (") +
                   (options.weights_dir.empty() ? "kaas-generated weights" : "trained weights") +
                   "). Serves in kaas and in Triton.",
               config);
}

void write_default_repository(const fs::path& root, int max_batch, RepositoryFlavor flavor,
                              const fs::path& emtrk_weights) {
  models::EmTrkGeneratorOptions emtrk;
  emtrk.weights_dir = emtrk_weights;
  write_emtrk_repository_entry(root, "emtrkmichelid", emtrk, max_batch);
  fs::create_directories(root / "michel_from_image" / "1");
  fs::copy_file(root / "emtrkmichelid" / "1" / "model.onnx",
                root / "michel_from_image" / "1" / "model.onnx",
                fs::copy_options::overwrite_existing);
  write_config(
      root / "michel_from_image",
      "One plane's downsampled image + its hits -> per-hit EmTrkMichelId scores (patch "
      "extraction and the CNN in 1/model.onnx, on the device).",
      kaas_model_config("michel_from_image", "michel_from_image", {{"hits_per_chunk", "1024"}}));
  fs::create_directories(root / "knn" / "1");
  write_config(root / "knn",
               "Built-in exact kNN over ragged events: points [N, D] + row_splits [E + 1].",
               kaas_model_config("knn", "knn", {{"k", "16"}, {"method", "auto"}}));
  if (flavor == RepositoryFlavor::kTriton) {
    for (const char* name : {"emtrkmichelid", "michel_from_image", "knn"})
      write_triton_config(root, name);
  }
}

}  // namespace kaas::server
