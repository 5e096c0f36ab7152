#pragma once
// The ProtoDUNE EmTrkMichelId patch CNN as an ONNX model with the production graph and tensor
// names, and deterministic weights (no trained weights are public; real users drop in theirs):
//   main_input [-1, 48, 48, 1] (NHWC: wires x drift bins) -> Conv 48 x 5 x 5 valid + ReLU ->
//   Flatten (Keras channels-last order) -> Dense 128 ReLU -> Dense 32 ReLU ->
//   em_trk_none_netout/Softmax [-1, 3] (track, em, none) and michel_netout/Sigmoid [-1, 1].
// 11,900,420 parameters, 28.4 MFLOP per patch.

#include <cstdint>
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

namespace kaas::models {

enum class EmTrkGraphStyle {
  kKeras,    // NHWC input, Transpose around the NCHW Conv, Dropout kept, Keras flatten order
  kPyTorch,  // NCHW input [-1, 1, 48, 48], Conv, Flatten, Gemm with transB (PyTorch Linear)
};

inline constexpr int64_t kEmTrkParameters = 11'900'420;

struct EmTrkGeneratorOptions {
  EmTrkGraphStyle style = EmTrkGraphStyle::kKeras;
  uint32_t seed = 20261122;  // same seed, same bytes, on every machine
};

onnx::ModelProto generate_emtrk_onnx(const EmTrkGeneratorOptions& options = {});

// Writes a Triton-layout repository entry: <repository>/<name>/config.pbtxt and
// <repository>/<name>/1/model.onnx. Throws kaas::Error on I/O failure.
void write_emtrk_repository_entry(const std::filesystem::path& repository, const std::string& name,
                                  const EmTrkGeneratorOptions& options = {},
                                  int max_batch_size = 1024);

}  // namespace kaas::models
