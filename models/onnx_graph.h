#pragma once
// The ONNX importer's intermediate form: an ONNX graph parsed and checked into kaas ops, with
// static shapes except a dynamic batch dimension, then simplified (see simplify()). Internal to
// models/; onnx_model.h is the public entry.

#include <any>
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kaas::models::onnx_import {

struct OpDef;  // what an op is and does: one entry of the op table (onnx_ops/table.h)

struct Op {
  const OpDef* def = nullptr;
  std::string node;         // the ONNX node's name (or "#<index>" when it has none), for messages
  std::string op_type;      // the ONNX op it came from (after fusions: "Conv+Relu", ...)
  std::vector<int> inputs;  // value ids; -1 for an absent optional input
  int output = -1;
  std::any attrs;  // the op's own attribute struct, read by its OpDef (see onnx_ops/attrs.h)

  bool is(const OpDef& d) const { return def == &d; }
  template <class A>
  A& attr() {
    return std::any_cast<A&>(attrs);
  }
  template <class A>
  const A& attr() const {
    return std::any_cast<const A&>(attrs);
  }
  bool has_input(size_t i) const { return inputs.size() > i && inputs[i] >= 0; }
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
