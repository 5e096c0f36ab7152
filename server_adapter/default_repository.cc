#include "kaas/server_adapter/default_repository.h"

#include <google/protobuf/text_format.h>

#include <fstream>
#include <string>

#include "kaas/common/error.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/server_adapter/repository_entry.h"

namespace kaas::server {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw Error(ErrorCode::kInternal, "cannot write " + path.string());
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
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  write_text(root / name / "config.pbtxt",
             "# Triton with the kaas backend (libtriton_kaas.so); written by kaas-make-repository "
             "--for triton\n" +
                 text);
}

}  // namespace

void write_default_repository(const fs::path& root, int max_batch_size, RepositoryFlavor flavor,
                              const fs::path& emtrk_weights) {
  models::EmTrkGeneratorOptions emtrk;
  emtrk.weights_dir = emtrk_weights;
  models::write_emtrk_repository_entry(root, "emtrkmichelid", emtrk, max_batch_size);
  fs::create_directories(root / "michel_from_image" / "1");
  fs::copy_file(root / "emtrkmichelid" / "1" / "model.onnx",
                root / "michel_from_image" / "1" / "model.onnx",
                fs::copy_options::overwrite_existing);
  write_text(root / "michel_from_image" / "config.pbtxt",
             "# One plane's downsampled image + its hits -> per-hit EmTrkMichelId scores\n"
             "# (patch extraction and the CNN in 1/model.onnx, on the device).\n"
             "name: \"michel_from_image\"\nbackend: \"kaas\"\nmax_batch_size: 0\n"
             "parameters { key: \"kaas_model\" value { string_value: \"michel_from_image\" } }\n"
             "parameters { key: \"hits_per_chunk\" value { string_value: \"1024\" } }\n"
             "instance_group [ { count: 1 } ]\n");
  fs::create_directories(root / "knn" / "1");
  write_text(root / "knn" / "config.pbtxt",
             "# Built-in exact kNN over ragged events: points [N, D] + row_splits [E + 1].\n"
             "name: \"knn\"\nbackend: \"kaas\"\nmax_batch_size: 0\n"
             "parameters { key: \"kaas_model\" value { string_value: \"knn\" } }\n"
             "parameters { key: \"k\" value { string_value: \"16\" } }\n"
             "parameters { key: \"method\" value { string_value: \"auto\" } }\n"
             "instance_group [ { count: 1 } ]\n");
  if (flavor == RepositoryFlavor::kTriton) {
    for (const char* name : {"emtrkmichelid", "michel_from_image", "knn"})
      write_triton_config(root, name);
  }
}

}  // namespace kaas::server
