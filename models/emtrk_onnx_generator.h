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
  kTf2onnx,  // as tf2onnx writes a Keras model: kKeras with Flatten as Reshape to the constant
             // [-1, 92928] and each dense layer as MatMul + Add
};

inline constexpr int64_t kEmTrkParameters = 11'900'420;

struct EmTrkGeneratorOptions {
  EmTrkGraphStyle style = EmTrkGraphStyle::kKeras;
  uint32_t seed = 20261122;  // same seed, same bytes, on every machine
  // Trained weights instead of generated ones: one float32 .npy per initializer, named as in
  // the graph with '/' as '_' (conv2d_kernel.npy [48, 1, 5, 5], conv2d_bias.npy [48],
  // dense_kernel.npy [92928, 128] with rows in Keras flatten order (h * 44 + w) * 48 + c,
  // dense_1_kernel.npy [128, 32], em_trk_none_netout_kernel.npy [32, 3],
  // michel_netout_kernel.npy [32, 1] and their biases): dense kernels [in, out] as Keras holds
  // them, for either graph style (the PyTorch style transposes and reorders them).
  std::filesystem::path weights_dir{};
};

// Throws kaas::Error naming the file for a missing, malformed or wrongly shaped weight file.
onnx::ModelProto generate_emtrk_onnx(const EmTrkGeneratorOptions& options = {});

// The repository entry around it (config.pbtxt + 1/model.onnx) is written by
// server_adapter/default_repository.h, which builds the config as a protobuf message.

}  // namespace kaas::models
