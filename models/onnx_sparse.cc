#include "kaas/models/onnx_sparse.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <span>

#include "kaas/kernels/scan.h"
#include "kaas/models/onnx_ops/attrs.h"

namespace kaas::models {

bool SparseNetwork::sparse_pays(double active) const {
  if (dense_row_s <= 0) return false;
  return sparse_empty_row_s + active * (sparse_full_row_s - sparse_empty_row_s) < dense_row_s;
}

namespace onnx_import {

using Shape = std::vector<int64_t>;

SparseFused::SparseFused(const Queue& queue, const Graph& g, const ConvDenseHeads& p,
                         const std::vector<Shape>& max_shapes,
                         const std::function<float*(int)>& data_of, int64_t max_batch,
                         int64_t delta_bytes)
    : queue_(queue) {
  const Op& conv = g.ops[p.conv];
  const Op& dense1 = g.ops[p.dense1];
  const ConvAttrs& conv_attrs = conv.attr<ConvAttrs>();
  Shape x = max_shapes[conv.inputs[0]];
  if (conv_attrs.c1_as_nhwc) x = {x[0], x[2], x[3], x[1]};
  const Shape& w = max_shapes[conv.inputs[1]];  // [OC, C, KH, KW]
  SparseNetwork& net = network_;
  net.in_h = x[1], net.in_w = x[2], net.channels = x[3];
  net.kernel_h = w[2], net.kernel_w = w[3];
  net.out_h = x[1] - w[2] + 1, net.out_w = x[2] - w[3] + 1;
  const int64_t oc = w[0], k = net.out_h * net.out_w * oc;
  n1_ = max_shapes[dense1.output][1];

  const bool has_conv_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  const std::vector<float> no_bias;
  const auto conv_constant = sparse_conv_constant(
      has_conv_bias ? g.values[conv.inputs[2]].data : no_bias, oc, conv_attrs.conv.epilogue);
  // W1 as [K, N1] row-major: transB weights (PyTorch Linear) are transposed once here.
  const GemmParams& dense1_params = dense1.attr<GemmParams>();
  const std::vector<float>& stored = g.values[dense1.inputs[1]].data;
  std::vector<float> transposed;
  if (dense1_params.trans_b) {
    transposed.resize(stored.size());
    for (int64_t row = 0; row < k; ++row)
      for (int64_t j = 0; j < n1_; ++j)
        transposed[size_t(row * n1_ + j)] = stored[size_t(j * k + row)];
  }
  const std::vector<float>& w1 = dense1_params.trans_b ? transposed : stored;
  const bool has_dense1_bias = dense1.inputs.size() > 2 && dense1.inputs[2] >= 0;
  const auto dense1_constant =
      sparse_dense1_constant(conv_constant, w1.data(), k, n1_,
                             has_dense1_bias ? g.values[dense1.inputs[2]].data.data() : nullptr);

  conv_constant_ = to_device(queue, std::span<const float>(conv_constant));
  dense1_constant_ = to_device(queue, std::span<const float>(dense1_constant));
  const float* w1_device = data_of(dense1.inputs[1]);
  if (dense1_params.trans_b) {
    dense1_weight_ = to_device(queue, std::span<const float>(transposed));
    w1_device = dense1_weight_.data();
  }
  net.conv.conv_weight =
      make_view<4>(static_cast<const float*>(data_of(conv.inputs[1])), {w[0], w[1], w[2], w[3]});
  if (has_conv_bias)
    net.conv.conv_bias = make_view(static_cast<const float*>(data_of(conv.inputs[2])), oc);
  net.conv.conv_epilogue = conv_attrs.conv.epilogue;
  net.conv.conv_constant = make_view(static_cast<const float*>(conv_constant_.data()), oc);
  net.dense1.weight = make_view<2>(w1_device, {k, n1_});
  net.dense1.constant = make_view(static_cast<const float*>(dense1_constant_.data()), n1_);
  net.dense1.epilogue = dense1_params.epilogue;
  net.hidden = dense_layer(g.ops[p.dense2], max_shapes, data_of);
  net.head_a = dense_layer(g.ops[p.head_a], max_shapes, data_of);
  net.head_b = dense_layer(g.ops[p.head_b], max_shapes, data_of);

  const size_t positions = size_t(max_batch * net.out_h * net.out_w);
  index_ = make_device_buffer<int32_t>(queue, positions);
  offsets_ = make_device_buffer<int32_t>(queue, positions);
  positions_ = make_device_buffer<int32_t>(queue, positions);
  scan_ = make_device_buffer<int32_t>(
      queue, size_t(exclusive_scan_workspace_size(queue, int64_t(positions))));
  const int64_t capacity =
      std::max(net.out_h * net.out_w, delta_bytes / int64_t(oc * sizeof(float)));
  delta_ = make_device_buffer<float>(queue, size_t(capacity * oc));
  std::vector<int32_t> iota(static_cast<size_t>(max_batch)),
      zeros(static_cast<size_t>(max_batch), 0);
  std::iota(iota.begin(), iota.end(), 0);
  window_image_ = to_device(queue, std::span<const int32_t>(iota));
  window_origin_ = to_device(queue, std::span<const int32_t>(zeros));
  queue.wait();
}

double SparseFused::index(int64_t n, const float* input) {
  const SparseNetwork& net = network_;
  const auto images = make_view<4>(input, {n, net.in_h, net.in_w, net.channels});
  const int64_t total = n * net.out_h * net.out_w;
  active_ = sparse_conv_index(queue_, images, net.kernel_h, net.kernel_w,
                              make_view<3>(index_.data(), {n, net.out_h, net.out_w}),
                              make_view(offsets_.data(), total), scan_.view(), positions_.view());
  last_n_ = n;
  return total > 0 ? double(active_) / double(total) : 0.0;
}

const int32_t* SparseFused::host_offsets() {
  if (queue_.backend().device_memory_is_host()) return offsets_.data();
  const SparseNetwork& net = network_;
  const int64_t total = last_n_ * net.out_h * net.out_w;
  host_offsets_.resize(size_t(total));
  queue_.backend().copy(host_offsets_.data(), offsets_.data(), size_t(total) * sizeof(int32_t),
                        CopyKind::kDeviceToHost, queue_.native_stream());
  queue_.wait();
  return host_offsets_.data();
}

std::vector<double> SparseFused::active_per_row() {
  const SparseNetwork& net = network_;
  const int64_t per_patch = net.out_h * net.out_w;
  const int32_t* offsets = host_offsets();
  std::vector<double> active(static_cast<size_t>(last_n_));
  for (int64_t r = 0; r < last_n_; ++r) {
    const int64_t end = r + 1 < last_n_ ? int64_t(offsets[(r + 1) * per_patch]) : active_;
    active[size_t(r)] = double(end - offsets[r * per_patch]) / double(per_patch);
  }
  return active;
}

void SparseFused::run(int64_t n, const float* input, float* dense1, float* out_a, float* out_b,
                      const std::vector<int32_t>* rows) {
  require(n == last_n_, "sparse conv-dense-heads", "batch of run()", "that of index()",
          std::to_string(n));
  const SparseNetwork& net = network_;
  const int64_t per_patch = net.out_h * net.out_w;
  const int32_t* offsets = host_offsets();
  const int64_t m = rows != nullptr ? int64_t(rows->size()) : n;
  const int32_t* images_of = window_image_.data();
  if (rows != nullptr) {  // the listed patches only, in their order
    copy_to_device(queue_, std::span<const int32_t>(*rows), window_image_);
    images_of = window_image_.data();
  } else if (listed_) {
    std::vector<int32_t> iota(static_cast<size_t>(window_image_.size()));
    std::iota(iota.begin(), iota.end(), 0);
    copy_to_device(queue_, std::span<const int32_t>(iota), window_image_);
  }
  listed_ = rows != nullptr;
  std::vector<SparseRange> ranges(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const int64_t r = rows != nullptr ? (*rows)[size_t(i)] : i;
    ranges[size_t(i)] = {offsets[r * per_patch],
                         r + 1 < n ? int64_t(offsets[(r + 1) * per_patch]) : active_};
  }
  const auto images = make_view<4>(input, {n, net.in_h, net.in_w, net.channels});
  const int64_t oc = net.conv.conv_weight.extent[0];
  const SparseWindows windows{
      make_view(images_of, m), make_view(static_cast<const int32_t*>(window_origin_.data()), m),
      make_view(static_cast<const int32_t*>(window_origin_.data()), m), net.out_h, net.out_w};
  const auto d1 = make_view<2>(dense1, {m, n1_});
  sparse_conv_dense1_grouped(
      queue_, images, net.conv, make_view(static_cast<const int32_t*>(positions_.data()), active_),
      make_view<3>(static_cast<const int32_t*>(index_.data()), {n, net.out_h, net.out_w}),
      ranges.data(), windows, net.dense1,
      make_view<2>(delta_.data(), {int64_t(delta_.size()) / oc, oc}), d1);
  mlp_two_heads(queue_, View2<const float>(d1), net.hidden, net.head_a, net.head_b,
                make_view<2>(out_a, {m, net.head_a.w.extent[1]}),
                make_view<2>(out_b, {m, net.head_b.w.extent[1]}));
}

std::string SparseFused::describe() const {
  const SparseNetwork& net = network_;
  char line[256];
  std::snprintf(line, sizeof line,
                "sparse: conv %lldx%lld windows touching charge only, first dense layer %s "
                "(constant + active positions), delta buffer %lld positions",
                static_cast<long long>(net.kernel_h), static_cast<long long>(net.kernel_w),
                sparse_dense1_impl(queue_, n1_),
                static_cast<long long>(int64_t(delta_.size()) / net.conv.conv_weight.extent[0]));
  return line;
}

}  // namespace onnx_import
}  // namespace kaas::models
