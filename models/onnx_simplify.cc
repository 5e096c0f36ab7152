// Graph simplification passes of the ONNX importer (see onnx_graph.h, simplify()).

#include <algorithm>
#include <string>
#include <vector>

#include "kaas/models/onnx_graph.h"
#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

namespace {

using Shape = std::vector<int64_t>;

class Pass {
 public:
  explicit Pass(Graph& graph)
      : g(graph),
        uses(use_counts(graph)),
        shapes(infer_shapes(graph, 1)),
        removed(graph.ops.size(), false) {}

  // The op producing `value`, or nullptr for an input or constant.
  Op* producer(int value) {
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (!removed[i] && g.ops[i].output == value) return &g.ops[i];
    }
    return nullptr;
  }
  // The only op reading `value` when it has exactly one reader and is not a graph output.
  Op* sole_consumer(int value) {
    if (uses[value] != 1) return nullptr;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (removed[i]) continue;
      for (int in : g.ops[i].inputs) {
        if (in == value) return &g.ops[i];
      }
    }
    return nullptr;  // its one use is as a graph output
  }
  void remove(const Op& op) { removed[&op - g.ops.data()] = true; }
  ~Pass() {
    std::vector<Op> kept;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (!removed[i]) kept.push_back(std::move(g.ops[i]));
    }
    g.ops = std::move(kept);
  }

  Graph& g;
  std::vector<int> uses;
  std::vector<Shape> shapes;
  std::vector<bool> removed;
};

bool is_constant(const Graph& g, int value) {
  return value >= 0 && g.values[value].constant;
}

bool has_c(const Op& op) {
  return op.inputs.size() > 2 && op.inputs[2] >= 0;
}

// A dense layer: Gemm(X, constant W) without transA whose X is `value`.
bool is_dense_on(const Graph& g, const Op* op, int value) {
  return op != nullptr && op->is(gemm_op) && op->inputs[0] == value &&
         !op->attr<GemmParams>().trans_a && is_constant(g, op->inputs[1]);
}

// The weight `op` reads at input 1, about to be rewritten (its name gains `suffix`): the value
// itself when no other op or output reads it, else a copy that `op` reads from now on. Rewritten
// in place, EmTrkMichelId's first dense layer (47.6 MB) is neither allocated again at every load
// nor kept twice for the model's life.
Value& rewritable_weight(Graph& g, Op& op, const std::string& suffix) {
  int w = op.inputs[1];
  if (use_counts(g)[size_t(w)] > 1) {
    Value copy = g.values[size_t(w)];
    g.values.push_back(std::move(copy));
    w = op.inputs[1] = static_cast<int>(g.values.size()) - 1;
  }
  g.values[size_t(w)].name += suffix;
  return g.values[size_t(w)];
}

// Rewrites the dense weight so its K rows follow a new input order: new row k is old row
// new_to_old[k] (columns when W is stored transposed, [N, K]).
void permute_dense_rows(Graph& g, Op& dense, const std::vector<int64_t>& new_to_old) {
  Value& w = rewritable_weight(g, dense, "/kaas_folded");
  const int64_t rows = w.shape[0], cols = w.shape[1];
  if (!dense.attr<GemmParams>().trans_b) {
    // Each cycle of the permutation moves its rows once, its first row held aside.
    std::vector<bool> moved(static_cast<size_t>(rows), false);
    std::vector<float> held(static_cast<size_t>(cols));
    const auto row = [&](int64_t r) { return w.data.begin() + r * cols; };
    for (int64_t start = 0; start < rows; ++start) {
      if (moved[size_t(start)]) continue;
      std::copy_n(row(start), cols, held.begin());
      for (int64_t k = start;;) {
        moved[size_t(k)] = true;
        const int64_t from = new_to_old[size_t(k)];
        if (from == start) {
          std::copy(held.begin(), held.end(), row(k));
          break;
        }
        std::copy_n(row(from), cols, row(k));
        k = from;
      }
    }
  } else {
    std::vector<float> permuted(static_cast<size_t>(cols));
    for (int64_t n = 0; n < rows; ++n) {
      const auto row = w.data.begin() + n * cols;
      for (int64_t k = 0; k < cols; ++k) permuted[size_t(k)] = row[new_to_old[size_t(k)]];
      std::copy(permuted.begin(), permuted.end(), row);
    }
  }
}

// MatMul(A [M,K], constant B [K,N]) -> Gemm; Gemm without C followed by Add of a constant [N] /
// [1,N] / [1] / [] -> Gemm with C.
void fold_bias(Graph& g) {
  Pass p(g);
  for (Op& op : g.ops) {
    if (op.is(matmul_op) && p.shapes[op.inputs[0]].size() == 2 &&
        p.shapes[op.inputs[1]].size() == 2 && is_constant(g, op.inputs[1])) {
      op.def = &gemm_op;
      GemmParams params;
      params.rows_independent = true;  // as a Gemm node's (onnx_ops/gemm.cc)
      op.attrs = params;
    }
    if (!op.is(gemm_op) || has_c(op)) continue;
    Op* add = p.sole_consumer(op.output);
    if (add == nullptr || !add->is(add_op)) continue;
    const int bias = add->inputs[0] == op.output ? add->inputs[1] : add->inputs[0];
    const Shape& b = p.shapes[bias];
    const int64_t n = p.shapes[op.output][1];
    const bool row = b.empty() || (b.size() == 1 && (b[0] == n || b[0] == 1)) ||
                     (b.size() == 2 && b[0] == 1 && (b[1] == n || b[1] == 1));
    if (!is_constant(g, bias) || !row) continue;
    op.inputs.resize(3);
    op.inputs[2] = bias;
    op.attr<GemmParams>().beta = 1.0f;
    op.output = add->output;
    op.op_type += "+Add";
    p.remove(*add);
    g.log.push_back("bias " + g.values[bias].name + " fused into " + op.node);
  }
}

void fuse_activations(Graph& g) {
  Pass p(g);
  for (Op& act : g.ops) {
    if (!act.is(activation_op)) continue;
    Op* prod = p.producer(act.inputs[0]);
    if (prod == nullptr || p.uses[act.inputs[0]] != 1) continue;
    Epilogue* e = prod->is(conv_op)   ? &prod->attr<ConvAttrs>().conv.epilogue
                  : prod->is(gemm_op) ? &prod->attr<GemmParams>().epilogue
                                      : nullptr;
    if (e == nullptr || e->activation != Activation::kNone) continue;
    *e = act.attr<Epilogue>();
    prod->output = act.output;
    prod->op_type += "+" + act.op_type;
    p.remove(act);
    g.log.push_back(act.op_type + " " + act.node + " fused into " + prod->node);
  }
}

bool is_flatten_1(const Op* op) {
  return op != nullptr && op->is(flatten_op) && op->attr<FlattenAttrs>().axis == 1;
}

bool perm_is(const Op* op, std::initializer_list<int64_t> perm) {
  if (op == nullptr || !op->is(transpose_op)) return false;
  const auto& p = op->attr<TransposeAttrs>().perm;
  return std::equal(p.begin(), p.end(), perm.begin(), perm.end());
}

// Reshape to a constant [-1, N] or [0, N] where N is the product of the input's non-batch
// dimensions is Flatten(axis=1) (tf2onnx writes Keras' Flatten so): rewritten, so that the
// passes and the fused plan that look for Flatten see one spelling.
void reshape_as_flatten(Graph& g) {
  Pass p(g);
  for (Op& op : g.ops) {
    if (!op.is(reshape_op) || op.inputs.size() != 2 || !is_constant(g, op.inputs[1])) continue;
    const std::vector<int64_t>& spec = g.values[op.inputs[1]].int_data;
    const Shape& x = p.shapes[op.inputs[0]];
    if (spec.size() != 2 || x.size() < 2 || (spec[0] != -1 && spec[0] != 0)) continue;
    const int64_t inner = element_count(Shape(x.begin() + 1, x.end()));
    if (spec[1] != inner) continue;
    op.def = &flatten_op;
    op.attrs = FlattenAttrs{1};
    op.inputs.resize(1);
    op.op_type = "Flatten";
    g.log.push_back("Reshape " + op.node + " to " + shape_string(spec) +
                    " is Flatten(axis=1): rewritten");
  }
}

// Keras exports: Transpose(0,3,1,2) -> Conv -> Transpose(0,2,3,1) is an NHWC convolution.
void fuse_nhwc_conv(Graph& g) {
  Pass p(g);
  for (Op& conv : g.ops) {
    if (!conv.is(conv_op) || conv.attr<ConvAttrs>().conv.layout != Layout::kNCHW) continue;
    Op* before = p.producer(conv.inputs[0]);
    Op* after = p.sole_consumer(conv.output);
    if (!perm_is(before, {0, 3, 1, 2}) || p.uses[conv.inputs[0]] != 1 ||
        !perm_is(after, {0, 2, 3, 1}))
      continue;
    conv.inputs[0] = before->inputs[0];
    conv.attr<ConvAttrs>().conv.layout = Layout::kNHWC;
    conv.output = after->output;
    p.remove(*before);
    p.remove(*after);
    g.log.push_back("Transpose " + before->node + " / Transpose " + after->node +
                    " folded: " + conv.node + " runs NHWC");
  }
}

// Row-major flat index of `index` over `dims`.
int64_t flat(const Shape& dims, const Shape& index) {
  int64_t k = 0;
  for (size_t d = 0; d < dims.size(); ++d) k = k * dims[d] + index[d];
  return k;
}

// For each flat position of a tensor of `dims`, the flat position of the same element in the
// tensor permuted by `perm` (out dims[i] = dims[perm[i]]).
std::vector<int64_t> permuted_positions(const Shape& dims, const Shape& perm) {
  Shape out_dims(dims.size()), index(dims.size()), out_index(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out_dims[i] = dims[perm[i]];
  const int64_t count = element_count(dims);
  std::vector<int64_t> positions(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = k;
    for (size_t d = dims.size(); d-- > 0;) index[d] = rest % dims[d], rest /= dims[d];
    for (size_t i = 0; i < dims.size(); ++i) out_index[i] = index[perm[i]];
    positions[k] = flat(out_dims, out_index);
  }
  return positions;
}

// Transpose(perm, batch axis fixed) -> Flatten(1) -> dense: the dense weight absorbs the
// permutation and Flatten reads the untransposed tensor.
void fold_transpose_flatten(Graph& g) {
  Pass p(g);
  for (Op& t : g.ops) {
    if (!t.is(transpose_op)) continue;
    const auto& perm = t.attr<TransposeAttrs>().perm;
    if (perm.empty() || perm[0] != 0) continue;
    Op* f = p.sole_consumer(t.output);
    if (!is_flatten_1(f)) continue;
    Op* dense = p.sole_consumer(f->output);
    if (!is_dense_on(g, dense, f->output)) continue;
    const Shape& x = p.shapes[t.inputs[0]];
    Shape inner(x.begin() + 1, x.end()), inner_perm;
    for (size_t i = 1; i < perm.size(); ++i) inner_perm.push_back(perm[i] - 1);
    // Element at x-flat k sits at transposed-flat positions[k]: the new weight row k is the old
    // row positions[k].
    permute_dense_rows(g, *dense, permuted_positions(inner, inner_perm));
    f->inputs[0] = t.inputs[0];
    p.remove(t);
    g.log.push_back("Transpose " + t.node + " folded into the weights of " + dense->node);
  }
}

// NCHW Conv on a 1-channel input whose output only feeds Flatten(1) -> dense: the input bytes
// are already NHWC, so the conv runs NHWC (the fast CPU path) and the dense weight is permuted
// from (c, h, w) to (h, w, c) order.
void nhwc_for_single_channel_conv(Graph& g) {
  Pass p(g);
  for (Op& conv : g.ops) {
    if (!conv.is(conv_op)) continue;
    ConvAttrs& a = conv.attr<ConvAttrs>();
    if (a.conv.layout != Layout::kNCHW || p.shapes[conv.inputs[0]][1] != 1 || a.conv.groups != 1)
      continue;
    Op* f = p.sole_consumer(conv.output);
    if (!is_flatten_1(f)) continue;
    Op* dense = p.sole_consumer(f->output);
    if (!is_dense_on(g, dense, f->output)) continue;
    const Shape& y = p.shapes[conv.output];  // [1, C, H, W]
    // NHWC flat position k (h, w, c) reads the NCHW-ordered row: positions of (h,w,c)-ordered
    // elements within the (c,h,w) order.
    permute_dense_rows(g, *dense, permuted_positions({y[2], y[3], y[1]}, {2, 0, 1}));
    a.c1_as_nhwc = true;
    a.conv.layout = Layout::kNHWC;
    g.log.push_back(conv.node + " runs NHWC (1 input channel); weights of " + dense->node +
                    " permuted to match");
  }
}

// Gemm(transB) with a constant B (PyTorch Linear): store B^T once, so every GEMM path,
// including the row-major CPU fast path, reads a [K, N] weight.
void untranspose_constant_weights(Graph& g) {
  for (Op& op : g.ops) {
    if (!op.is(gemm_op) || !op.attr<GemmParams>().trans_b || !is_constant(g, op.inputs[1]))
      continue;
    const Value& w = g.values[op.inputs[1]];
    const int64_t rows = w.shape[0], cols = w.shape[1];  // [N, K]
    Value t;
    t.name = w.name + "/kaas_transposed";
    t.constant = true;
    t.shape = {cols, rows};
    t.data.resize(w.data.size());
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t k = 0; k < cols; ++k) t.data[k * rows + n] = w.data[n * cols + k];
    }
    const std::string name = w.name;
    // Nothing else reads the stored [N, K] weight: its memory goes now, not with the model.
    if (use_counts(g)[size_t(op.inputs[1])] == 1)
      std::vector<float>().swap(g.values[size_t(op.inputs[1])].data);
    g.values.push_back(std::move(t));
    op.inputs[1] = static_cast<int>(g.values.size()) - 1;
    op.attr<GemmParams>().trans_b = false;
    g.log.push_back("weight " + name + " of " + op.node + " stored transposed (transB folded)");
  }
}

}  // namespace

void simplify(Graph& graph) {
  reshape_as_flatten(graph);
  fold_bias(graph);
  fuse_activations(graph);
  fuse_nhwc_conv(graph);
  fold_transpose_flatten(graph);
  nhwc_for_single_channel_conv(graph);
  untranspose_constant_weights(graph);
}

}  // namespace kaas::models::onnx_import
