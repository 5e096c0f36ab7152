#pragma once
// One ONNX op of the importer, defined once in models/onnx_ops/<op>.cc: the ONNX op types it
// reads, how a node's attributes and inputs are read and checked, its shape rule, how it runs on
// kaas kernels, and which of ONNX's node tests cover it. table.h lists them all; parse, shape
// inference, execution, the supported-op message and the node tests are look-ups in that table.
// Internal to models/.

#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "kaas/backends/queue.h"
#include "kaas/models/onnx_graph.h"

namespace kaas::models::onnx_import {

using Shape = std::vector<int64_t>;

[[noreturn]] void malformed(const std::string& message);    // kInvalidArgument "ONNX model: ..."
[[noreturn]] void unsupported(const std::string& message);  // kUnimplemented "ONNX model: ..."
std::string node_label(const Op& op);                       // "node 'name' (OpType)"
std::string dtype_name(int32_t onnx_type);                  // "FLOAT", "INT8", ...

// An initializer or Constant tensor: FLOAT (raw_data or float_data) or INT64.
Value tensor_value(const onnx::TensorProto& t, const std::string& name);

// The graph being read: its values so far, by ONNX name.
struct ParseState {
  Graph& graph;
  const onnx::GraphProto& proto;
  std::map<std::string, int> ids;

  int define(Value v);  // kInvalidArgument when the name is already defined
  int add(Value v);     // a value without an ONNX name (made by the importer)
  int lookup(const Op& op, const std::string& name) const;  // -1 for "" (absent optional input)
};

// What an op's parse step sees: the node, its attributes and the graph read so far. op.inputs
// already holds the node's inputs (-1 for absent ones).
class NodeContext {
 public:
  NodeContext(const onnx::NodeProto& node, Op& op, ParseState& state)
      : node_(node), op_(op), state_(state) {}

  // Every attribute present must be one of `names` (else kUnimplemented naming it).
  void allow_attributes(std::initializer_list<std::string_view> names) const;
  const onnx::AttributeProto* find(const std::string& name) const;
  int64_t i(const std::string& name, int64_t fallback) const;
  float f(const std::string& name, float fallback) const;
  std::vector<int64_t> ints(const std::string& name) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  // The inputs present (trailing empty names do not count) are minimum..maximum.
  void expect_inputs(int minimum, int maximum) const;

  const onnx::NodeProto& node() const { return node_; }
  int64_t opset() const { return state_.graph.opset; }
  const Value& value(int id) const { return state_.graph.values[id]; }
  int add_constant(Value v) { return state_.add(std::move(v)); }
  // For nodes folded away at import (their parse returns false):
  void alias_output(int value) { state_.ids[node_.output(0)] = value; }
  void define_output(Value v);
  bool output_used(int index) const;  // read by a node or a graph output
  void log(std::string line) { state_.graph.log.push_back(std::move(line)); }

 private:
  [[noreturn]] void bad_type(const std::string& name, const char* type) const;
  const onnx::NodeProto& node_;
  Op& op_;
  ParseState& state_;
};

// Shape-rule helpers; errors are kInvalidArgument naming the node.
[[noreturn]] void bad_shape(const Op& op, const std::string& message);
int64_t normalise_axis(const Op& op, int64_t axis, int64_t rank, bool inclusive_end);
Shape broadcast(const Op& op, const Shape& a, const Shape& b);  // numpy rules
void check_rank_at_most_6(const Op& op, const Shape& shape);    // the elementwise kernels' limit

// What an op's run step sees: the queue, this batch's shapes and every value's device memory.
struct RunContext {
  const Queue& queue;
  const std::vector<Shape>& shapes;
  const std::function<float*(int)>& data_of;

  const Shape& shape(int value) const { return shapes[value]; }
  const float* in(const Op& op, size_t i) const { return data_of(op.inputs[i]); }
  const Shape& in_shape(const Op& op, size_t i) const { return shapes[op.inputs[i]]; }
  float* out(const Op& op) const { return data_of(op.output); }
  const Shape& out_shape(const Op& op) const { return shapes[op.output]; }
};

// A family of ONNX backend node tests (Debian libonnx-testdata) the op passes: folder/name, or
// every folder/name* when prefix.
struct NodeTests {
  std::string_view folder, name;
  bool prefix = false;
};

struct OpDef {
  std::span<const std::string_view> onnx_types;  // what node.op_type may be
  // Reads and checks the node into op (attributes into op.attrs). false: the node is folded away
  // at import (Identity, Constant) and no op is kept.
  bool (*parse)(NodeContext& node, Op& op) = nullptr;
  // The output shape at one batch size; throws bad_shape() when the inputs do not fit.
  Shape (*shape)(const Op& op, const Graph& graph, const std::vector<Shape>& shapes) = nullptr;
  void (*run)(const RunContext& ctx, const Op& op) = nullptr;  // queues the op's kernels
  bool output_aliases_input = false;  // no kernel: the output is the input's buffer, reshaped
  std::span<const NodeTests> node_tests;
};

}  // namespace kaas::models::onnx_import
