// kaas-make-emtrk-model: writes the EmTrkMichelId model (deterministic generated weights) into a
// Triton-layout model repository: <repository>/<name>/config.pbtxt + <name>/1/model.onnx.

#include <CLI/CLI.hpp>
#include <cstdio>

#include "backends/error.h"
#include "models/emtrk_model.h"

int main(int argc, char** argv) {
  CLI::App app{"kaas-make-emtrk-model: generate the EmTrkMichelId ONNX model and its config.pbtxt"};
  std::string repository, name = "emtrkmichelid", style = "keras";
  uint32_t seed = kaas::models::EmTrkModelOptions{}.seed;
  int max_batch_size = 1024;
  app.add_option("--repository", repository, "model repository directory")->required();
  app.add_option("--name", name, "model name (directory in the repository)");
  app.add_option("--style", style, "keras (NHWC input, as in production) or pytorch (NCHW input)")
      ->check(CLI::IsMember({"keras", "pytorch"}));
  app.add_option("--seed", seed, "weight generator seed");
  app.add_option("--max-batch-size", max_batch_size, "max_batch_size in config.pbtxt")
      ->check(CLI::Range(1, 1 << 20));
  CLI11_PARSE(app, argc, argv);
  try {
    kaas::models::EmTrkModelOptions options;
    options.style = style == "keras" ? kaas::models::EmTrkGraphStyle::kKeras
                                     : kaas::models::EmTrkGraphStyle::kPyTorch;
    options.seed = seed;
    kaas::models::write_emtrk_repository_entry(repository, name, options, max_batch_size);
    std::printf("wrote %s/%s/config.pbtxt and %s/%s/1/model.onnx (%lld parameters)\n",
                repository.c_str(), name.c_str(), repository.c_str(), name.c_str(),
                static_cast<long long>(kaas::models::kEmTrkParameters));
  } catch (const kaas::Error& e) {
    std::fprintf(stderr, "kaas-make-emtrk-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
