// The ONNX graph reader: checks, then values (initializers, inputs) and one op-table look-up per
// node (onnx_ops/table.h), then shape inference over the ops.

#include "kaas/models/onnx_graph.h"

#include <onnx/checker.h>

#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

namespace {

void check(const onnx::ModelProto& model) {
  if (!model.has_graph()) malformed("no graph (empty, truncated or not an ONNX file)");
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    malformed(std::string("fails the ONNX checker: ") + e.what());
  }
}

int64_t default_domain_opset(const onnx::ModelProto& model) {
  int64_t opset = 0;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  return opset;
}

// A runtime input: FLOAT with static dimensions, except a dynamic first one (the batch).
Value input_value(const onnx::ValueInfoProto& input, bool& batched) {
  const auto& type = input.type();
  if (!type.has_tensor_type()) unsupported("input '" + input.name() + "' is not a tensor");
  if (type.tensor_type().elem_type() != onnx::TensorProto::FLOAT)
    unsupported("input '" + input.name() + "' has " + dtype_name(type.tensor_type().elem_type()) +
                "; kaas models take FLOAT inputs");
  if (!type.tensor_type().has_shape())
    unsupported("input '" + input.name() + "' has no declared shape");
  Value v;
  v.name = input.name();
  const auto& dims = type.tensor_type().shape().dim();
  for (int d = 0; d < dims.size(); ++d) {
    const bool known = dims[d].has_dim_value() && dims[d].dim_value() >= 0;
    if (!known && d != 0)
      unsupported("input '" + input.name() + "' dimension " + std::to_string(d) +
                  " is dynamic; kaas needs static dimensions except the first (batch)");
    if (!known) batched = true;
    v.shape.push_back(known ? dims[d].dim_value() : kVariableDim);
  }
  return v;
}

void read_values(ParseState& state) {
  for (const auto& init : state.proto.initializer()) state.define(tensor_value(init, init.name()));
  for (const auto& input : state.proto.input()) {
    if (state.ids.count(input.name())) continue;  // an initializer listed as input (old exporters)
    state.graph.inputs.push_back(state.define(input_value(input, state.graph.batched)));
  }
}

// One node: its op-table entry reads and checks it; kept ops get their output value.
void read_node(ParseState& state, const onnx::NodeProto& node, int index) {
  Op op;
  op.node = node.name();
  // append, not "#" + ...: g++ 12 reports a false -Wrestrict on the operator+ form
  if (op.node.empty()) op.node = std::string("#").append(std::to_string(index));
  op.op_type = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    unsupported(node_label(op) + ": operator domain '" + node.domain() + "' is not supported");
  if (node.output_size() < 1) malformed(node_label(op) + ": has no output");
  op.def = find_op(node.op_type());
  if (op.def == nullptr)
    unsupported(node_label(op) + ": operator not supported (kaas imports " + supported_op_types() +
                ")");
  for (const auto& in : node.input()) op.inputs.push_back(state.lookup(op, in));
  NodeContext context(node, op, state);
  if (!op.def->parse(context, op)) return;  // folded away (Identity, Constant, ...)
  for (int o = 1; o < node.output_size(); ++o) {
    if (!node.output(o).empty())
      unsupported(node_label(op) + ": has " + std::to_string(node.output_size()) +
                  " outputs; kaas supports one");
  }
  Value out;
  out.name = node.output(0);
  op.output = state.define(std::move(out));
  state.graph.ops.push_back(std::move(op));
}

void read_outputs(ParseState& state) {
  for (const auto& output : state.proto.output()) {
    const auto it = state.ids.find(output.name());
    if (it == state.ids.end()) malformed("graph output '" + output.name() + "' is never computed");
    state.graph.outputs.emplace_back(output.name(), it->second);
  }
}

}  // namespace

Graph parse(const onnx::ModelProto& model) {
  check(model);
  Graph g;
  g.opset = default_domain_opset(model);
  ParseState state{g, model.graph(), {}};
  read_values(state);
  int index = 0;
  for (const auto& node : model.graph().node()) read_node(state, node, index++);
  read_outputs(state);
  if (g.inputs.empty()) unsupported("the graph has no runtime inputs");
  if (g.outputs.empty()) malformed("the graph has no outputs");
  infer_shapes(g, 1);  // every shape and attribute error now, not at the first request
  if (g.batched) infer_shapes(g, 2);
  return g;
}

std::vector<std::vector<int64_t>> infer_shapes(const Graph& graph, int64_t batch) {
  std::vector<Shape> shapes(graph.values.size());
  for (size_t v = 0; v < graph.values.size(); ++v) shapes[v] = graph.values[v].shape;
  for (int id : graph.inputs) {
    if (!shapes[id].empty() && shapes[id][0] == kVariableDim) shapes[id][0] = batch;
  }
  for (const Op& op : graph.ops) shapes[op.output] = op.def->shape(op, graph, shapes);
  return shapes;
}

std::vector<int> use_counts(const Graph& graph) {
  std::vector<int> uses(graph.values.size(), 0);
  for (const Op& op : graph.ops) {
    for (int in : op.inputs) {
      if (in >= 0) ++uses[in];
    }
  }
  for (const auto& [name, id] : graph.outputs) ++uses[id];
  return uses;
}

}  // namespace kaas::models::onnx_import
