// kaas-make-emtrk-model: writes the EmTrkMichelId model (deterministic generated weights, or
// trained ones from --weights) into a Triton-layout model repository:
// <repository>/<name>/config.pbtxt + <name>/1/model.onnx.

#include <cstdio>

#include <random>

#include "kaas/common/cli.h"
#include "kaas/common/error.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/npy.h"
#include "kaas/server_adapter/core/default_repository.h"

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-make-emtrk-model: generate the EmTrkMichelId ONNX model and its config.pbtxt"};
  std::string repository, name = "emtrkmichelid", style = "keras";
  uint32_t seed = kaas::models::EmTrkGeneratorOptions{}.seed;
  int max_batch_size = 1024;
  app.add_option("--repository", repository, "model repository directory")->required();
  app.add_option("--name", name, "model name (directory in the repository)");
  app.add_option("--style", style,
                 "keras (NHWC input, as in production), tf2onnx (the Keras graph as tf2onnx "
                 "writes it: Reshape, MatMul + Add) or pytorch (NCHW input)")
      ->check(kaas::cli::one_of({"keras", "tf2onnx", "pytorch"}));
  app.add_option("--seed", seed, "weight generator seed");
  std::string weights_dir;
  app.add_option("--weights", weights_dir,
                 "trained weights: a directory of .npy files, one per initializer "
                 "(scripts/train_toy_model.py writes them)")
      ->check(kaas::cli::existing_directory());
  app.add_option("--max-batch-size", max_batch_size, "max_batch_size in config.pbtxt")
      ->check(kaas::cli::range(1, 1 << 20));
  std::string example_path;
  int64_t example_count = 256;
  app.add_option("--example-patches", example_path,
                 "also write deterministic example patches (.npy, NHWC or NCHW per --style)");
  app.add_option("--example-count", example_count, "number of example patches")
      ->check(kaas::cli::range(int64_t(1), int64_t(1) << 20));
  if (const auto status = app.parse(argc, argv)) return *status;
  try {
    kaas::models::EmTrkGeneratorOptions options;
    options.style = style == "keras"     ? kaas::models::EmTrkGraphStyle::kKeras
                    : style == "tf2onnx" ? kaas::models::EmTrkGraphStyle::kTf2onnx
                                         : kaas::models::EmTrkGraphStyle::kPyTorch;
    options.seed = seed;
    options.weights_dir = weights_dir;
    kaas::server::write_emtrk_repository_entry(repository, name, options, max_batch_size);
    std::printf(
        "wrote %s/%s/config.pbtxt and %s/%s/1/model.onnx (%lld parameters, %s)\n",
        repository.c_str(), name.c_str(), repository.c_str(), name.c_str(),
        static_cast<long long>(kaas::models::kEmTrkParameters),
        weights_dir.empty() ? "generated weights" : ("weights from " + weights_dir).c_str());
    if (!example_path.empty()) {
      // ADC-like values in the scaled range -5..15 with a zero (below threshold) background.
      std::mt19937 engine(seed);
      std::vector<float> values(size_t(example_count) * 48 * 48);
      for (auto& v : values) {
        const double unit = double(engine() >> 8) * (1.0 / 16777216.0);
        v = unit < 0.7 ? 0.0f : static_cast<float>(unit * 20.0 - 5.0);
      }
      const std::vector<int64_t> shape = style != "pytorch"
                                             ? std::vector<int64_t>{example_count, 48, 48, 1}
                                             : std::vector<int64_t>{example_count, 1, 48, 48};
      kaas::models::write_npy(example_path,
                              kaas::models::HostTensor::make<float>(
                                  "main_input", kaas::models::DataType::kFloat32, shape, values));
      std::printf("wrote %s (%lld example patches)\n", example_path.c_str(),
                  static_cast<long long>(example_count));
    }
  } catch (const kaas::Error& e) {
    std::fprintf(stderr, "kaas-make-emtrk-model: %s\n", e.what());
    return 1;
  }
  return 0;
}
