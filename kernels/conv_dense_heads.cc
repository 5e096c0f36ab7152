#include "kaas/kernels/conv_dense_heads.h"

#include <algorithm>
#include <string>

#include "kaas/backends/cpu/host_team.h"
#include "kaas/kernels/detail/checks.h"

namespace kaas {

using detail::str;

namespace {

constexpr const char* kWhere = "conv_dense_heads";

// The conv must be the plain valid, stride-1 NHWC convolution the slab passes slice by rows.
void check_conv(const Conv2dParams& c) {
  const bool valid =
      c.auto_pad == AutoPad::kValid || (c.auto_pad == AutoPad::kNotSet && c.pad_top == 0 &&
                                        c.pad_left == 0 && c.pad_bottom == 0 && c.pad_right == 0);
  require(c.layout == Layout::kNHWC, kWhere, "conv layout", "NHWC", "NCHW");
  require(valid && c.groups == 1 && c.stride_h == 1 && c.stride_w == 1 && c.dilation_h == 1 &&
              c.dilation_w == 1,
          kWhere, "conv", "valid padding, stride 1, dilation 1, groups 1",
          "pads " + str(c.pad_top) + "," + str(c.pad_left) + "," + str(c.pad_bottom) + "," +
              str(c.pad_right) + " stride " + str(c.stride_h) + "x" + str(c.stride_w) +
              " dilation " + str(c.dilation_h) + "x" + str(c.dilation_w) + " groups " +
              str(c.groups));
}

// The slab passes over patches [p0, p1) in tiles of `tile` patches, each tile's conv rows
// written to `slab` and accumulated into the rows of workspace.dense1 of its patches.
template <class T>
struct SlabPasses {
  const Queue& queue;
  View<const T, 4> input;
  const ConvDenseHeadsWeights<T>& weights;
  const ConvDenseHeadsWorkspace& workspace;
  int64_t out_h, row_values;
  int k_axis;
  int64_t n1;

  void run(int64_t p0, int64_t p1, int64_t tile, T* slab_data) const {
    const auto& w = weights.conv_weight.extent;  // [OC, C, KH, KW]
    const int64_t out_w = input.extent[2] - w[3] + 1;
    const int64_t rows_per_pass = std::min(workspace.rows_per_pass, out_h);
    View2<const float> bias1;
    if (weights.dense1_bias.extent[0] > 0) {
      bias1.data = weights.dense1_bias.data;
      bias1.extent[0] = 1, bias1.extent[1] = n1, bias1.stride[0] = 0,
      bias1.stride[1] = weights.dense1_bias.stride[0];
    }
    Conv2dParams slab_params = weights.conv;
    slab_params.auto_pad = AutoPad::kNotSet;
    slab_params.pad_top = slab_params.pad_left = slab_params.pad_bottom = slab_params.pad_right = 0;
    for (int64_t t0 = p0; t0 < p1; t0 += tile) {
      const int64_t nt = std::min(tile, p1 - t0);
      View2<float> acc = workspace.dense1;
      acc.data += t0 * acc.stride[0];
      acc.extent[0] = nt;
      for (int64_t h0 = 0; h0 < out_h; h0 += rows_per_pass) {
        const int64_t rows = std::min(rows_per_pass, out_h - h0);
        View<const T, 4> in = input;
        in.data += t0 * input.stride[0] + h0 * input.stride[1];
        in.extent[0] = nt;
        in.extent[1] = rows + w[2] - 1;
        const auto slab = make_view<4>(slab_data, {nt, rows, out_w, w[0]});
        conv2d(queue, in, weights.conv_weight, weights.conv_bias, slab, slab_params);
        // The K range of these conv rows: rows of W1, or columns with transB.
        View2<const T> w1_rows = weights.dense1_weight;
        w1_rows.data += h0 * row_values * w1_rows.stride[k_axis];
        w1_rows.extent[k_axis] = rows * row_values;
        GemmParams gp;
        gp.beta = 1.0f;
        gp.trans_b = weights.dense1_trans_b;
        gp.rows_independent = true;  // a patch's scores must not depend on its batch
        // K summed per conv output row (each pass ends at a row boundary): the bits of one call
        // over all of K, and of the unfused plan's Gemm (docs/reproducibility.md).
        if constexpr (std::is_same_v<T, float>) gp.k_chunk = row_values;
        gp.impl = workspace.dense1_impl;
        gp.epilogue = h0 + rows == out_h ? weights.dense1_epilogue : Epilogue{};
        GemmPackedBf16 packed_rows;
        GemmPackedPanels panel_rows;
        const int64_t k0 = h0 * row_values;
        const int64_t kc = rows * row_values;
        if constexpr (std::is_same_v<T, float>) {
          if (weights.dense1_panels != nullptr) {
            panel_rows = gemm_packed_rows(*weights.dense1_panels, k0, kc);
            gp.packed_panels = &panel_rows;
          }
        }
        // Packed pairs can be sliced at even k0 and end mid-matrix only after an even kc.
        if (weights.dense1_packed != nullptr && k0 % 2 == 0 &&
            (kc % 2 == 0 || k0 + kc == weights.dense1_packed->k)) {
          packed_rows = gemm_packed_rows(*weights.dense1_packed, k0, kc);
          gp.packed_b = &packed_rows;
        }
        const View2<const float> c = h0 == 0 ? bias1 : View2<const float>(acc);
        gemm(queue, make_view<2>(static_cast<const T*>(slab_data), {nt, kc}), w1_rows, c, acc, gp);
      }
    }
  }
};

}  // namespace

std::string_view to_string(ConvDenseHeadsSplit split) {
  return split == ConvDenseHeadsSplit::kBatch ? "batch" : "kernels";
}

int conv_dense_heads_batch_threads(const Queue& queue) {
  return host::team_size(traits_of(queue.backend_id()).threads);
}

int64_t conv_dense_heads_slab_rows(int64_t out_h, int64_t out_w, int64_t out_channels,
                                   int64_t batch_tile, int64_t slab_bytes, int64_t element_bytes) {
  const int64_t row_bytes = batch_tile * out_w * out_channels * element_bytes;
  return std::clamp<int64_t>(slab_bytes / std::max<int64_t>(row_bytes, 1), 1,
                             std::max<int64_t>(out_h, 1));
}

int64_t conv_dense_heads_slab_budget(const Backend& backend, int64_t out_h, int64_t out_w,
                                     int64_t out_channels, int64_t batch_tile,
                                     int64_t host_slab_bytes, int64_t element_bytes) {
  return backend.device_memory_is_host()
             ? host_slab_bytes
             : batch_tile * out_h * out_w * out_channels * element_bytes;
}

template <class T>
ConvDenseHeadsRun conv_dense_heads(const Queue& queue, View<const T, 4> input,
                                   const ConvDenseHeadsWeights<T>& weights,
                                   const ConvDenseHeadsWorkspace& workspace, View2<float> out_a,
                                   View2<float> out_b) {
  check_conv(weights.conv);
  detail::check_view(input, kWhere, "input");
  detail::check_view(weights.conv_weight, kWhere, "conv_weight");
  detail::check_view(weights.dense1_weight, kWhere, "dense1_weight");
  detail::check_view(workspace.dense1, kWhere, "workspace.dense1");
  const auto& x = input.extent;                // [n, H, W, C]
  const auto& w = weights.conv_weight.extent;  // [OC, C, KH, KW]
  detail::check_same_extent(x[3], w[1], kWhere, "conv_weight input channels");
  require(x[1] >= w[2] && x[2] >= w[3], kWhere, "input height x width",
          "at least the kernel's " + str(w[2]) + "x" + str(w[3]), str(x[1]) + "x" + str(x[2]));
  const int64_t n = x[0], out_h = x[1] - w[2] + 1, out_w = x[2] - w[3] + 1;
  const int64_t row_values = out_w * w[0], flat = out_h * row_values;
  const int k_axis = weights.dense1_trans_b ? 1 : 0;
  detail::check_same_extent(flat, weights.dense1_weight.extent[k_axis], kWhere,
                            "dense1_weight K (conv output height x width x channels)");
  const int64_t n1 = weights.dense1_weight.extent[1 - k_axis];
  require(weights.dense1_bias.extent[0] == 0 || weights.dense1_bias.extent[0] == n1, kWhere,
          "dense1_bias extent", "0 or " + str(n1), str(weights.dense1_bias.extent[0]));
  require(workspace.dense1.extent[0] >= n && workspace.dense1.extent[1] == n1, kWhere,
          "workspace.dense1 shape", "at least [" + str(n) + ", " + str(n1) + "]",
          shape_string(workspace.dense1.extent));
  require(workspace.batch_tile >= 1 && workspace.rows_per_pass >= 1 && workspace.slab != nullptr,
          kWhere, "workspace", "a slab, batch_tile >= 1 and rows_per_pass >= 1",
          "batch_tile " + str(workspace.batch_tile) + ", rows_per_pass " +
              str(workspace.rows_per_pass));
  ConvDenseHeadsRun ran;
  if (n == 0) return ran;

  const SlabPasses<T> passes{queue, input, weights, workspace, out_h, row_values, k_axis, n1};
  const int64_t tile = std::min(n, workspace.batch_tile);
  T* const slab = static_cast<T*>(workspace.slab);
  bool batch_split = false;
  const int64_t slab_values = std::min(workspace.rows_per_pass, out_h) * out_w * w[0];
  const int threads = conv_dense_heads_batch_threads(queue);
  batch_split = workspace.split == ConvDenseHeadsSplit::kBatch && threads > 1 && tile >= threads;
  if (batch_split) {
    // Member t takes patches [n t / T, n (t + 1) / T) in tiles of `share` patches, on slab
    // patches [t share, (t + 1) share): disjoint rows of the slab and of the accumulator. The
    // kernels called inside a member run on its thread alone. The slab holds batch_tile patches,
    // `threads` shares, so the team is never larger (a runtime may give fewer). The share is the
    // slab's, not the batch's: a member whose part is one patch more than the batch's half (33
    // patches: 16 and 17) must not take a second pass, which streams the first dense layer's
    // weights again (+60 % time at batch 33 on a Zen 5 VM).
    const int team =
        host::run_team(traits_of(queue.backend_id()).threads, true, [&](host::TeamMember& member) {
          const int64_t size = member.size(), t = member.index();
          const int64_t share = std::max<int64_t>(workspace.batch_tile / size, 1);
          passes.run(n * t / size, n * (t + 1) / size, share, slab + t * share * slab_values);
        });
    ran = {ConvDenseHeadsSplit::kBatch, team};
  }
  if (!batch_split) passes.run(0, n, tile, slab);
  View2<const float> dense1 = workspace.dense1;
  dense1.extent[0] = n;
  mlp_two_heads(queue, dense1, weights.hidden, weights.head_a, weights.head_b, out_a, out_b);
  return ran;
}

template ConvDenseHeadsRun conv_dense_heads<float>(const Queue&, View<const float, 4>,
                                                   const ConvDenseHeadsWeights<float>&,
                                                   const ConvDenseHeadsWorkspace&, View2<float>,
                                                   View2<float>);
template ConvDenseHeadsRun conv_dense_heads<bf16>(const Queue&, View<const bf16, 4>,
                                                  const ConvDenseHeadsWeights<bf16>&,
                                                  const ConvDenseHeadsWorkspace&, View2<float>,
                                                  View2<float>);
template ConvDenseHeadsRun conv_dense_heads<fp16>(const Queue&, View<const fp16, 4>,
                                                  const ConvDenseHeadsWeights<fp16>&,
                                                  const ConvDenseHeadsWorkspace&, View2<float>,
                                                  View2<float>);

}  // namespace kaas
