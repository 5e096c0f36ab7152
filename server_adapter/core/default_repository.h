#pragma once
// The default kaas-server model repository (what kaas-make-repository writes and the run
// command serves):
//   emtrkmichelid      the EmTrkMichelId patch CNN (ONNX, dynamic batching)
//   michel_from_image  one plane's image + hits -> per-hit scores (the same CNN in 1/model.onnx)
//   knn                the built-in kNN model (k = 16)

#include <filesystem>
#include <string>

#include "kaas/models/emtrk_onnx_generator.h"

namespace kaas::server {

enum class RepositoryFlavor {
  kKaasServer,  // as kaas-server reads it (emtrkmichelid on platform onnxruntime_onnx)
  // For Triton with the kaas backend: every model on backend "kaas", its inputs and outputs
  // written out (so it also loads with --disable-auto-complete-config).
  kTriton,
};

// Writes a Triton-layout entry of the EmTrkMichelId CNN: <repository>/<name>/config.pbtxt
// (platform onnxruntime_onnx, dynamic batching, preferred batch 256) and
// <repository>/<name>/1/model.onnx. Throws kaas::Error on I/O failure.
void write_emtrk_repository_entry(const std::filesystem::path& repository, const std::string& name,
                                  const models::EmTrkGeneratorOptions& options = {},
                                  int max_batch = 1024);

// `emtrk_weights`: a directory of trained EmTrkMichelId weights (.npy, see
// models/emtrk_onnx_generator.h); empty for the deterministic generated ones. Throws kaas::Error
// on I/O failure or bad weight files.
void write_default_repository(const std::filesystem::path& root, int max_batch = 1024,
                              RepositoryFlavor flavor = RepositoryFlavor::kKaasServer,
                              const std::filesystem::path& emtrk_weights = {});

}  // namespace kaas::server
