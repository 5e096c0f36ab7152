#pragma once
// The ONNX importer's intermediate form: an ONNX graph parsed and checked into kaas ops, with
// static shapes except a dynamic batch dimension, then simplified (see simplify()). Internal to
// models/; onnx_model.h is the public entry.

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "kaas/kernels/activation.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/softmax.h"

namespace kaas::models::onnx_import {

enum class OpKind {
  kConv,
  kGemm,
  kMatMul,
  kAdd,
  kActivation,
  kSoftmax,
  kTranspose,
  kConcat,
  kFlatten,
  kReshape
};

struct Op {
  OpKind kind;
  std::string node;         // the ONNX node's name (or "#<index>" when it has none), for messages
  std::string op_type;      // the ONNX op it came from (after fusions: "Conv+Relu", ...)
  std::vector<int> inputs;  // value ids; -1 for an absent optional input
  int output = -1;
  Conv2dParams conv;             // kConv (layout NCHW from ONNX; NHWC after simplification)
  bool conv_c1_as_nhwc = false;  // kConv: input stored NCHW with C = 1, read as NHWC (same bytes)
  GemmParams gemm;               // kGemm (epilogue = fused activation)
  Epilogue activation;           // kActivation
  SoftmaxKind softmax = SoftmaxKind::kSoftmax;
  bool softmax_2d = false;            // kSoftmax of opset < 13: coerced to 2-D at axis
  int64_t axis = 0;                   // kSoftmax, kConcat, kFlatten
  std::vector<int64_t> perm;          // kTranspose
  std::vector<int64_t> kernel_shape;  // kConv, when given (checked against the weight)
  bool allow_zero = false;            // kReshape
};

struct Value {
  std::string name;
  std::vector<int64_t> shape;  // graph inputs: declared (first dim -1 when dynamic); constants
  bool constant = false;
  bool is_int64 = false;          // INT64 constants (Reshape shapes)
  std::vector<float> data;        // FLOAT constant values
  std::vector<int64_t> int_data;  // INT64 constant values
};

struct Graph {
  std::vector<Value> values;
  std::vector<Op> ops;                               // in execution order
  std::vector<int> inputs;                           // runtime inputs (not initializers)
  std::vector<std::pair<std::string, int>> outputs;  // external name -> value
  bool batched = false;                              // some input has a dynamic first dimension
  int64_t opset = 0;
  std::vector<std::string> log;  // what parse/simplify did, for Model::describe()
};

// Checks (onnx::checker, then kaas's own op/attribute/dtype checks) and converts. Throws
// kaas::Error kInvalidArgument for a malformed model, kUnimplemented for an unsupported op or
// attribute; messages name the node and op.
Graph parse(const onnx::ModelProto& model);

// Shapes of every value for one batch size (the dynamic first input dimension set to `batch`).
// Throws like parse() for inconsistent shapes.
std::vector<std::vector<int64_t>> infer_shapes(const Graph& graph, int64_t batch);

// Graph simplification: Gemm/MatMul + constant Add -> bias; Relu/LeakyRelu/Sigmoid fused into
// the producing Conv/Gemm; Transpose(NHWC->NCHW) -> Conv -> Transpose(NCHW->NHWC) -> NHWC Conv;
// Transpose -> Flatten -> dense folded into the dense weights; a C=1 NCHW Conv feeding
// Flatten -> dense run as NHWC with the dense weights permuted to match.
void simplify(Graph& graph);

// Number of ops reading each value (graph outputs count as one extra use).
std::vector<int> use_counts(const Graph& graph);

}  // namespace kaas::models::onnx_import
