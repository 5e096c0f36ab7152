#include "kaas/models/michel_from_image.h"

#include <mutex>

#include "kaas/backends/buffer.h"
#include "kaas/common/error.h"
#include "kaas/models/onnx_model.h"

namespace kaas::models {

namespace {

class MichelFromImage final : public Model {
 public:
  MichelFromImage(const onnx::ModelProto& cnn, const Backend& backend,
                  const MichelFromImageOptions& options)
      : name_(options.name), options_(options) {
    OnnxModelOptions cnn_options;
    cnn_options.name = options.name + "/cnn";
    cnn_options.max_batch = options.hits_per_chunk;
    cnn_options.device = options.device;
    cnn_options.precision = options.precision;
    cnn_ = make_onnx_device_model(cnn, backend, cnn_options);
    check_cnn();
    signature_.max_batch = 0;
    signature_.inputs = {{"image", DataType::kFloat32, {kVariableDim, kVariableDim}},
                         {"hit_wire", DataType::kInt32, {kVariableDim}},
                         {"hit_tick", DataType::kFloat32, {kVariableDim}}};
    signature_.outputs = {{"scores", DataType::kFloat32, {kVariableDim, 4}},
                          {"fiducial", DataType::kUint8, {kVariableDim}}};
  }

  const std::string& name() const override { return name_; }
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::string> describe() const override {
    std::vector<std::string> lines = {"extract_patches -> CNN input buffer, " +
                                      std::to_string(options_.hits_per_chunk) + " hits per chunk"};
    for (const auto& line : cnn_->describe()) lines.push_back("cnn: " + line);
    return lines;
  }

  using Model::run;
  std::vector<HostTensor> run(std::span<const TensorView> inputs) override {
    const CheckedInputs in = check_inputs(signature_, inputs, name_);
    const TensorView& image = in.ordered[0];
    const TensorView& wires = in.ordered[1];
    const TensorView& ticks = in.ordered[2];
    const int64_t hits = wires.shape[0];
    require(ticks.shape[0] == hits, "model '" + name_ + "'", "hit_tick length",
            std::to_string(hits) + " (as hit_wire)", std::to_string(ticks.shape[0]));
    std::lock_guard lock(mutex_);
    const Queue& queue = cnn_->queue();
    try {
      const int64_t n_wires = image.shape[0], bins = image.shape[1];
      ensure(image_, size_t(n_wires * bins), queue);
      ensure(hit_wire_, size_t(hits), queue);
      ensure(hit_tick_, size_t(hits), queue);
      ensure(fiducial_, size_t(hits), queue);
      copy_to_device(queue, image.values<float>(), image_);
      copy_to_device(queue, wires.values<int32_t>(), hit_wire_);
      copy_to_device(queue, ticks.values<float>(), hit_tick_);
      HostTensor scores{"scores", DataType::kFloat32, {hits, 4}, {}};
      scores.bytes.resize(size_t(hits) * 4 * sizeof(float));
      HostTensor fiducial{"fiducial", DataType::kUint8, {hits}, {}};
      fiducial.bytes.resize(size_t(hits));
      const int64_t window = options_.patch.drift_window;
      const int64_t tick_limit = (bins + 1) * window - 1;
      const int64_t pw = options_.patch.patch_wires, pb = options_.patch.patch_bins;
      std::vector<float> softmax(size_t(options_.hits_per_chunk) * 3),
          michel(size_t(options_.hits_per_chunk));
      float* patches = cnn_->device_input(0);
      for (int64_t begin = 0; begin < hits; begin += options_.hits_per_chunk) {
        const int64_t n = std::min(options_.hits_per_chunk, hits - begin);
        View1<const int32_t> w =
            make_view(static_cast<const int32_t*>(hit_wire_.data()) + begin, n);
        View1<const float> t = make_view(static_cast<const float*>(hit_tick_.data()) + begin, n);
        extract_patches(queue,
                        make_view<2>(static_cast<const float*>(image_.data()), {n_wires, bins}),
                        tick_limit, w, t, make_view<3>(patches, {n, pw, pb}),
                        make_view(fiducial_.data() + begin, n), options_.patch);
        const auto out = cnn_->run_device(n);
        backend_copy(queue, softmax.data(), out[softmax_output_], size_t(n) * 3);
        backend_copy(queue, michel.data(), out[1 - softmax_output_], size_t(n));
        queue.wait();
        auto s = scores.values<float>();
        for (int64_t h = 0; h < n; ++h) {
          for (int k = 0; k < 3; ++k) s[size_t((begin + h) * 4 + k)] = softmax[size_t(h * 3 + k)];
          s[size_t((begin + h) * 4 + 3)] = michel[size_t(h)];
        }
      }
      copy_to_host(queue, fiducial_, fiducial.values<uint8_t>(), 0);
      queue.wait();
      std::vector<HostTensor> outputs;
      outputs.push_back(std::move(scores));
      outputs.push_back(std::move(fiducial));
      return outputs;
    } catch (...) {
      queue.wait();
      throw;
    }
  }

 private:
  template <class T>
  static void ensure(DeviceBuffer<T>& buffer, size_t count, const Queue& queue) {
    if (buffer.size() < count) buffer = make_device_buffer<T>(queue, count);
  }
  static void backend_copy(const Queue& queue, float* host, const float* device, size_t count) {
    if (count == 0) return;
    queue.backend().copy(host, device, count * sizeof(float), CopyKind::kDeviceToHost,
                         queue.native_stream());
  }

  void check_cnn() {
    const auto& sig = cnn_->signature();
    const std::string where = "michel_from_image CNN";
    const int64_t pw = options_.patch.patch_wires, pb = options_.patch.patch_bins;
    require(sig.max_batch > 0 && sig.inputs.size() == 1, where, "inputs",
            "one input with a dynamic batch dimension", std::to_string(sig.inputs.size()));
    const auto& shape = sig.inputs[0].shape;
    const bool nhwc = shape == std::vector<int64_t>{-1, pw, pb, 1};
    const bool nchw = shape == std::vector<int64_t>{-1, 1, pw, pb};
    require(nhwc || nchw, where, "input shape",
            "[-1," + std::to_string(pw) + "," + std::to_string(pb) + ",1] or [-1,1," +
                std::to_string(pw) + "," + std::to_string(pb) + "]",
            shape_string(shape));
    require(sig.outputs.size() == 2, where, "outputs", "2 ([-1,3] and [-1,1])",
            std::to_string(sig.outputs.size()));
    const auto &a = sig.outputs[0].shape, &b = sig.outputs[1].shape;
    const std::vector<int64_t> three{-1, 3}, one{-1, 1};
    require((a == three && b == one) || (a == one && b == three), where, "output shapes",
            "[-1,3] and [-1,1]", shape_string(a) + " and " + shape_string(b));
    softmax_output_ = a == three ? 0 : 1;
  }

  std::string name_;
  MichelFromImageOptions options_;
  std::unique_ptr<OnnxDeviceModel> cnn_;
  ModelSignature signature_;
  size_t softmax_output_ = 0;
  DeviceBuffer<float> image_, hit_tick_;
  DeviceBuffer<int32_t> hit_wire_;
  DeviceBuffer<uint8_t> fiducial_;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<Model> make_michel_from_image(const onnx::ModelProto& cnn, const Backend& backend,
                                              const MichelFromImageOptions& options) {
  require(options.hits_per_chunk >= 1, "michel_from_image", "hits_per_chunk", ">= 1",
          std::to_string(options.hits_per_chunk));
  return std::make_unique<MichelFromImage>(cnn, backend, options);
}

}  // namespace kaas::models
