#include "kaas/models/michel_from_image.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <span>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/common/error.h"
#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/mlp_heads.h"
#include "kaas/kernels/planner.h"
#include "kaas/kernels/scan.h"
#include "kaas/kernels/sparse_conv_dense.h"
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
    cnn_options.sparse = options.sparse;
    cnn_options.plan_file = options.plan_file;
    cnn_ = make_onnx_device_model(cnn, backend, cnn_options);
    check_cnn();
    signature_.max_batch = 0;
    signature_.inputs = {{"image", DataType::kFloat32, {kVariableDim, kVariableDim}},
                         {"hit_wire", DataType::kInt32, {kVariableDim}},
                         {"hit_tick", DataType::kFloat32, {kVariableDim}}};
    signature_.outputs = {{"scores", DataType::kFloat32, {kVariableDim, 4}},
                          {"fiducial", DataType::kUint8, {kVariableDim}}};
    const SparseNetwork* net = sparse_network();
    if (net != nullptr && options_.sparse == SparsePlan::kAuto && net->dense_row_s > 0) calibrate();
  }

  const std::string& name() const override { return name_; }
  const ModelSignature& signature() const override { return signature_; }
  std::vector<std::string> describe() const override {
    std::vector<std::string> lines = {"extract_patches -> CNN input buffer, " +
                                      std::to_string(options_.hits_per_chunk) + " hits per chunk"};
    if (const SparseNetwork* net = sparse_network()) {
      lines.push_back(std::string("image-level sparse plan: ") +
                      (options_.sparse == SparsePlan::kSparse
                           ? "every plane"
                           : "per plane, when its measured occupancy says it is faster") +
                      " (conv once per plane where it has charge, first dense layer " +
                      sparse_dense1_impl(cnn_->queue(), net->dense1.weight.extent[1]) + ")");
      if (!calibration_.empty()) lines.push_back(calibration_);
    }
    for (const auto& line : cnn_->describe()) lines.push_back("cnn: " + line);
    return lines;
  }

  MichelFromImageRun last_run() const {
    std::lock_guard lock(mutex_);
    return last_run_;
  }

  // Every output has one row per hit.
  std::optional<int64_t> output_rows(std::span<const TensorView> inputs) const override {
    for (const TensorView& t : inputs)
      if (t.name == "hit_wire" && !t.shape.empty()) return t.shape.front();
    return std::nullopt;
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
      last_run_ = {};
      const bool sparse = sparse_network() != nullptr &&
                          run_sparse(n_wires, bins, tick_limit, wires.values<int32_t>(),
                                     ticks.values<float>(), scores.values<float>());
      if (!sparse) run_dense(n_wires, bins, tick_limit, hits, scores.values<float>());
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
  // Patches cut chunk by chunk into the CNN's input buffer, the CNN on each chunk.
  void run_dense(int64_t n_wires, int64_t bins, int64_t tick_limit, int64_t hits,
                 std::span<float> s) {
    const Queue& queue = cnn_->queue();
    const int64_t pw = options_.patch.patch_wires, pb = options_.patch.patch_bins;
    std::vector<float> softmax(size_t(options_.hits_per_chunk) * 3),
        michel(size_t(options_.hits_per_chunk));
    float* patches = cnn_->device_input(0);
    for (int64_t begin = 0; begin < hits; begin += options_.hits_per_chunk) {
      const int64_t n = std::min(options_.hits_per_chunk, hits - begin);
      View1<const int32_t> w = make_view(static_cast<const int32_t*>(hit_wire_.data()) + begin, n);
      View1<const float> t = make_view(static_cast<const float*>(hit_tick_.data()) + begin, n);
      extract_patches(queue,
                      make_view<2>(static_cast<const float*>(image_.data()), {n_wires, bins}),
                      tick_limit, w, t, make_view<3>(patches, {n, pw, pb}),
                      make_view(fiducial_.data() + begin, n), options_.patch);
      const auto out = cnn_->run_device(n);
      backend_copy(queue, softmax.data(), out[softmax_output_], size_t(n) * 3);
      backend_copy(queue, michel.data(), out[1 - softmax_output_], size_t(n));
      queue.wait();
      for (int64_t h = 0; h < n; ++h) {
        for (int k = 0; k < 3; ++k) s[size_t((begin + h) * 4 + k)] = softmax[size_t(h * 3 + k)];
        s[size_t((begin + h) * 4 + 3)] = michel[size_t(h)];
      }
    }
  }

  template <class T>
  static void ensure(DeviceBuffer<T>& buffer, size_t count, const Queue& queue) {
    if (buffer.size() < count) buffer = make_device_buffer<T>(queue, count);
  }
  static void backend_copy(const Queue& queue, float* host, const float* device, size_t count) {
    if (count == 0) return;
    queue.backend().copy(host, device, count * sizeof(float), CopyKind::kDeviceToHost,
                         queue.native_stream());
  }

  // The CNN's network for the sparse kernels, when the plan may use it.
  const SparseNetwork* sparse_network() const {
    if (options_.sparse == SparsePlan::kDense) return nullptr;
    const SparseNetwork* net = cnn_->sparse_network();
    const bool fits = net != nullptr && net->in_h == options_.patch.patch_wires &&
                      net->in_w == options_.patch.patch_bins && net->channels == 1;
    return fits ? net : nullptr;
  }

  // The padded plane and its conv-window index (which windows see charge), on the device and
  // as host copies.
  struct IndexedPlane {
    View<const float, 4> plane;
    View<int32_t, 3> index;
    int64_t index_h, index_w, total, count;
    const int32_t* host_index;
    const int32_t* offsets;
  };

  // Hits in order of their window's first row, with each one's window and band of active conv
  // positions, and the active fraction of their windows.
  struct HitWindows {
    std::vector<int32_t> order, rows, columns;
    std::vector<SparseRange> ranges;
    double active = 0.0;
  };

  IndexedPlane index_plane(const SparseNetwork& net, int64_t n_wires, int64_t bins,
                           int64_t tick_limit, int64_t hits) {
    const Queue& queue = cnn_->queue();
    const int64_t pw = options_.patch.patch_wires, pb = options_.patch.patch_bins;
    const int64_t padded_h = n_wires + pw, padded_w = bins + pb;
    IndexedPlane p{};
    p.index_h = padded_h - net.kernel_h + 1, p.index_w = padded_w - net.kernel_w + 1;
    p.total = p.index_h * p.index_w;
    ensure(padded_, size_t(padded_h * padded_w), queue);
    ensure(window_row_, size_t(hits), queue);
    ensure(window_column_, size_t(hits), queue);
    patch_windows(queue, make_view<2>(static_cast<const float*>(image_.data()), {n_wires, bins}),
                  tick_limit, make_view(static_cast<const int32_t*>(hit_wire_.data()), hits),
                  make_view(static_cast<const float*>(hit_tick_.data()), hits),
                  make_view<2>(padded_.data(), {padded_h, padded_w}),
                  make_view(window_row_.data(), hits), make_view(window_column_.data(), hits),
                  make_view(fiducial_.data(), hits), options_.patch);
    ensure(index_, size_t(p.total), queue);
    ensure(offsets_, size_t(p.total), queue);
    ensure(positions_, size_t(p.total), queue);
    ensure(scan_, size_t(exclusive_scan_workspace_size(queue, p.total)), queue);
    p.plane = make_view<4>(static_cast<const float*>(padded_.data()),
                           {int64_t(1), padded_h, padded_w, int64_t(1)});
    p.index = make_view<3>(index_.data(), {int64_t(1), p.index_h, p.index_w});
    p.count = sparse_conv_index(queue, p.plane, net.kernel_h, net.kernel_w, p.index,
                                offsets_.view(), scan_.view(), positions_.view());
    p.host_index = host_copy(queue, index_, p.total, host_index_);
    p.offsets = host_copy(queue, offsets_, p.total, host_offsets_);
    return p;
  }

  // The windows' active positions counted on a summed-area table of the plane's activity.
  HitWindows hit_windows(const SparseNetwork& net, const IndexedPlane& p,
                         std::span<const int32_t> hit_wires,
                         std::span<const float> hit_ticks) const {
    const int64_t hits = int64_t(hit_wires.size()), index_w = p.index_w;
    HitWindows w;
    w.order.resize(static_cast<size_t>(hits));
    for (int64_t h = 0; h < hits; ++h) w.order[size_t(h)] = int32_t(h);
    std::stable_sort(w.order.begin(), w.order.end(), [&](int32_t a, int32_t b) {
      return hit_wires[size_t(a)] < hit_wires[size_t(b)];
    });
    std::vector<int64_t> table(size_t((p.index_h + 1) * (index_w + 1)), 0);
    for (int64_t y = 0; y < p.index_h; ++y)
      for (int64_t x = 0; x < index_w; ++x)
        table[size_t((y + 1) * (index_w + 1) + x + 1)] =
            (p.host_index[y * index_w + x] >= 0) + table[size_t(y * (index_w + 1) + x + 1)] +
            table[size_t((y + 1) * (index_w + 1) + x)] - table[size_t(y * (index_w + 1) + x)];
    const size_t n_hits = static_cast<size_t>(hits);
    w.rows.resize(n_hits), w.columns.resize(n_hits), w.ranges.resize(n_hits);
    int64_t window_active = 0;
    for (int64_t i = 0; i < hits; ++i) {
      const int64_t h = w.order[size_t(i)];
      const int64_t y = hit_wires[size_t(h)];
      const int64_t x = int64_t(hit_ticks[size_t(h)]) / options_.patch.drift_window;
      w.rows[size_t(i)] = int32_t(y), w.columns[size_t(i)] = int32_t(x);
      auto at = [&](int64_t yy, int64_t xx) { return table[size_t(yy * (index_w + 1) + xx)]; };
      window_active +=
          at(y + net.out_h, x + net.out_w) - at(y, x + net.out_w) - at(y + net.out_h, x) + at(y, x);
      const int64_t end = (y + net.out_h) * index_w;
      w.ranges[size_t(i)] = {p.offsets[y * index_w],
                             end < p.total ? int64_t(p.offsets[end]) : p.count};
    }
    w.active = hits > 0 ? double(window_active) / double(hits * net.out_h * net.out_w) : 0.0;
    return w;
  }

  // Chunks of hits bound the first layer's and the heads' buffers; in each, groups of hits
  // whose bands of conv rows fit the delta buffer.
  void run_sparse_chunks(const SparseNetwork& net, const IndexedPlane& p, const HitWindows& w,
                         std::span<float> scores) {
    const Queue& queue = cnn_->queue();
    const int64_t hits = int64_t(w.order.size());
    const int64_t chunk = std::max<int64_t>(options_.hits_per_chunk, 8192);
    const int64_t n1 = net.dense1.weight.extent[1], oc = net.conv.conv_weight.extent[0];
    int64_t widest = 1;  // a group holds at least one hit's band of conv rows
    for (const SparseRange& r : w.ranges) widest = std::max(widest, r.last - r.first);
    const int64_t capacity =
        std::max(widest, options_.sparse_delta_bytes / int64_t(oc * sizeof(float)));
    ensure(delta_, size_t(capacity * oc), queue);
    ensure(dense1_, size_t(std::min(chunk, hits) * n1), queue);
    ensure(out_a_, size_t(std::min(chunk, hits) * 3), queue);
    ensure(out_b_, size_t(std::min(chunk, hits)), queue);
    ensure(window_image_, size_t(hits), queue);
    const std::vector<int32_t> zeros(size_t(hits), 0);
    copy_to_device(queue, std::span<const int32_t>(w.rows), window_row_);
    copy_to_device(queue, std::span<const int32_t>(w.columns), window_column_);
    copy_to_device(queue, std::span<const int32_t>(zeros), window_image_);
    std::vector<float> softmax(size_t(std::min(chunk, hits) * 3)),
        michel(size_t(std::min(chunk, hits)));
    for (int64_t begin = 0; begin < hits; begin += chunk) {
      const int64_t n = std::min(chunk, hits - begin);
      const SparseWindows windows{
          make_view(static_cast<const int32_t*>(window_image_.data()) + begin, n),
          make_view(static_cast<const int32_t*>(window_row_.data()) + begin, n),
          make_view(static_cast<const int32_t*>(window_column_.data()) + begin, n), net.out_h,
          net.out_w};
      const auto d1 = make_view<2>(dense1_.data(), {n, n1});
      last_run_.groups += sparse_conv_dense1_grouped(
          queue, p.plane, net.conv,
          make_view(static_cast<const int32_t*>(positions_.data()), p.count),
          View<const int32_t, 3>(p.index), w.ranges.data() + begin, windows, net.dense1,
          make_view<2>(delta_.data(), {capacity, oc}), d1);
      mlp_two_heads(queue, View2<const float>(d1), net.hidden, net.head_a, net.head_b,
                    make_view<2>(out_a_.data(), {n, int64_t(3)}),
                    make_view<2>(out_b_.data(), {n, int64_t(1)}));
      backend_copy(queue, softmax.data(), out_a_.data(), size_t(n) * 3);
      backend_copy(queue, michel.data(), out_b_.data(), size_t(n));
      queue.wait();
      for (int64_t i = 0; i < n; ++i) {
        const size_t h = size_t(w.order[size_t(begin + i)]);
        for (int k = 0; k < 3; ++k) scores[h * 4 + size_t(k)] = softmax[size_t(i * 3 + k)];
        scores[h * 4 + 3] = michel[size_t(i)];
      }
    }
  }

  // The image-level plan: returns false (nothing written) when kAuto finds the dense plan
  // faster for this plane.
  bool run_sparse(int64_t n_wires, int64_t bins, int64_t tick_limit,
                  std::span<const int32_t> hit_wires, std::span<const float> hit_ticks,
                  std::span<float> scores) {
    const SparseNetwork& net = *sparse_network();
    const IndexedPlane plane =
        index_plane(net, n_wires, bins, tick_limit, int64_t(hit_wires.size()));
    const HitWindows windows = hit_windows(net, plane, hit_wires, hit_ticks);
    last_run_.active = windows.active;
    if (options_.sparse != SparsePlan::kSparse && !force_sparse_ &&
        !sparse_pays(net, windows.active))
      return false;
    last_run_.sparse = true;
    run_sparse_chunks(net, plane, windows, scores);
    return true;
  }

  // The image-level plan's cost per hit at `active` (0..1), from the timings taken at load
  // (calibrate()), against the CNN's dense cost per patch.
  bool sparse_pays(const SparseNetwork& net, double active) const {
    if (image_full_hit_s_ <= 0) return net.sparse_pays(active);
    return image_empty_hit_s_ + active * (image_full_hit_s_ - image_empty_hit_s_) < net.dense_row_s;
  }

  // Times the image-level plan at load on a plane with charge everywhere (values over the
  // network's input range) and on an empty one, hits_per_chunk hits each.
  void calibrate() {
    const int64_t pw = options_.patch.patch_wires, pb = options_.patch.patch_bins;
    const int64_t wires = pw + 16, bins = pb + 16;
    const int64_t hits = options_.hits_per_chunk;
    std::vector<float> charged(size_t(wires * bins)), empty(charged.size(), 0.0f);
    for (size_t i = 0; i < charged.size(); ++i) charged[i] = sparse_trial_charge(i);
    std::vector<int32_t> wire(static_cast<size_t>(hits));
    std::vector<float> tick(static_cast<size_t>(hits));
    for (int64_t h = 0; h < hits; ++h) {
      wire[size_t(h)] = int32_t(h * 37 % wires);
      tick[size_t(h)] = float(h * 53 % (bins * options_.patch.drift_window));
    }
    auto input_of = [&](const std::vector<float>& image) {
      return std::vector<HostTensor>{
          HostTensor::make<float>("image", DataType::kFloat32, {wires, bins}, image),
          HostTensor::make<int32_t>("hit_wire", DataType::kInt32, {hits}, wire),
          HostTensor::make<float>("hit_tick", DataType::kFloat32, {hits}, tick)};
    };
    const auto charged_in = input_of(charged), empty_in = input_of(empty);
    // Timed by the planner and cached with its decisions: every process on this CPU predicts
    // the same, so a plane gets the same plan (and bits) in process and on a server.
    const std::vector<planner::Candidate> candidates = {
        {"image-level sparse, every window charged", [&] { run(charged_in); }},
        {"image-level sparse, no charge", [&] { run(empty_in); }}};
    const SparseNetwork& net = *sparse_network();
    // A decision of the model (which hits take the image-level sparse plan changes their bits):
    // no backend or thread count in the point, kept in the model's plan file.
    const std::string point = "michel_from_image sparse window " + std::to_string(net.out_h) + "x" +
                              std::to_string(net.out_w) + " weights " +
                              std::to_string(net.weights_digest) + " hits " + std::to_string(hits);
    force_sparse_ = true;
    const planner::Decision d =
        planner::choose(point, candidates, planner::Mode::kMeasure, {}, options_.plan_file);
    force_sparse_ = false;
    image_full_hit_s_ = d.ms[0] / 1e3 / double(hits);
    image_empty_hit_s_ = d.ms[1] / 1e3 / double(hits);
    const double dense = sparse_network()->dense_row_s;
    const double breakeven =
        image_full_hit_s_ > image_empty_hit_s_
            ? (dense - image_empty_hit_s_) / (image_full_hit_s_ - image_empty_hit_s_)
            : 1.0;
    char line[256];
    std::snprintf(line, sizeof line,
                  "image-level sparse planner: per 1000 hits dense %.1f ms, sparse %.1f ms with "
                  "no charge and %.1f ms with every window charged%s: sparse below %.0f %% of "
                  "positions active",
                  dense * 1e6, image_empty_hit_s_ * 1e6, image_full_hit_s_ * 1e6,
                  d.from_plan_file ? " (the model's plan file)"
                  : d.from_cache   ? " (cached)"
                                   : "",
                  std::clamp(breakeven, 0.0, 1.0) * 100);
    calibration_ = line;
  }

  // The values of a device buffer on the host: the buffer itself where device memory is the
  // host's, else a copy into `host`.
  static const int32_t* host_copy(const Queue& queue, const DeviceBuffer<int32_t>& buffer,
                                  int64_t count, std::vector<int32_t>& host) {
    if (queue.backend().device_memory_is_host()) return buffer.data();
    host.resize(size_t(count));
    queue.backend().copy(host.data(), buffer.data(), size_t(count) * sizeof(int32_t),
                         CopyKind::kDeviceToHost, queue.native_stream());
    queue.wait();
    return host.data();
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
  // The image-level plan's buffers.
  DeviceBuffer<float> padded_, delta_, dense1_, out_a_, out_b_;
  DeviceBuffer<int32_t> window_image_, window_row_, window_column_, index_, offsets_, positions_,
      scan_;
  std::vector<int32_t> host_index_, host_offsets_;
  MichelFromImageRun last_run_;
  bool force_sparse_ = false;  // while calibrating
  double image_empty_hit_s_ = 0, image_full_hit_s_ = 0;
  std::string calibration_;
  mutable std::mutex mutex_;
};

}  // namespace

std::optional<MichelFromImageRun> michel_from_image_last_run(const Model& model) {
  if (const auto* m = dynamic_cast<const MichelFromImage*>(&model)) return m->last_run();
  return std::nullopt;
}

std::unique_ptr<Model> make_michel_from_image(const onnx::ModelProto& cnn, const Backend& backend,
                                              const MichelFromImageOptions& options) {
  require(options.hits_per_chunk >= 1, "michel_from_image", "hits_per_chunk", ">= 1",
          std::to_string(options.hits_per_chunk));
  return std::make_unique<MichelFromImage>(cnn, backend, options);
}

}  // namespace kaas::models
