// kaas-make-repository: writes the default kaas-server model repository:
//   emtrkmichelid      the EmTrkMichelId patch CNN (ONNX, dynamic batching)
//   michel_from_image  image + hits -> per-hit scores (the same CNN in 1/model.onnx)
//   knn                the built-in kNN model (k = 16)

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backends/error.h"
#include "models/emtrk_model.h"

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw kaas::Error(kaas::ErrorCode::kInternal, "cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kaas-make-repository: generate the default kaas-server model repository"};
  std::string repository;
  int max_batch_size = 1024;
  app.add_option("--repository", repository, "directory to write")->required();
  app.add_option("--max-batch-size", max_batch_size, "EmTrkMichelId max_batch_size")
      ->check(CLI::Range(1, 1 << 20));
  CLI11_PARSE(app, argc, argv);
  try {
    const fs::path root(repository);
    kaas::models::write_emtrk_repository_entry(root, "emtrkmichelid", {}, max_batch_size);
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
    std::printf("wrote %s: emtrkmichelid, michel_from_image, knn\n", repository.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-make-repository: %s\n", e.what());
    return 1;
  }
  return 0;
}
