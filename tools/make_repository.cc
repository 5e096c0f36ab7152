// kaas-make-repository: writes the default model repository (for kaas-server, or with --for
// triton for tritonserver with the kaas backend):
//   emtrkmichelid      the EmTrkMichelId patch CNN (ONNX, dynamic batching; generated
//                      weights, or trained ones with --emtrk-weights)
//   michel_from_image  image + hits -> per-hit scores (the same CNN in 1/model.onnx)
//   knn                the built-in kNN model (k = 16)

#include <cstdio>

#include "kaas/common/cli.h"
#include "kaas/server_adapter/core/default_repository.h"

int main(int argc, char** argv) {
  kaas::cli::App app{"kaas-make-repository: generate the default kaas-server model repository"};
  std::string repository;
  int max_batch_size = 1024;
  std::string target = "kaas";
  app.add_option("--repository", repository, "directory to write")->required();
  app.add_option("--max-batch-size", max_batch_size, "EmTrkMichelId max_batch_size")
      ->check(kaas::cli::range(1, 1 << 20));
  app.add_option("--for", target,
                 "kaas: for kaas-server; triton: for tritonserver with the kaas backend "
                 "(backend \"kaas\" everywhere, inputs and outputs written out)")
      ->check(kaas::cli::one_of({"kaas", "triton"}));
  std::string emtrk_weights;
  app.add_option("--emtrk-weights", emtrk_weights,
                 "trained EmTrkMichelId weights (.npy per initializer, as "
                 "scripts/train_toy_model.sh writes them); default: generated weights")
      ->check(kaas::cli::existing_directory());
  if (const auto status = app.parse(argc, argv)) return *status;
  try {
    kaas::server::write_default_repository(repository, max_batch_size,
                                           target == "triton"
                                               ? kaas::server::RepositoryFlavor::kTriton
                                               : kaas::server::RepositoryFlavor::kKaasServer,
                                           emtrk_weights);
    std::printf(
        "wrote %s for %s: emtrkmichelid (%s), michel_from_image, knn\n", repository.c_str(),
        target.c_str(),
        emtrk_weights.empty() ? "generated weights" : ("weights from " + emtrk_weights).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-make-repository: %s\n", e.what());
    return 1;
  }
  return 0;
}
