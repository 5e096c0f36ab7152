#include "kaas/models/onnx_graph.h"

#include <onnx/checker.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "kaas/backends/error.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

namespace {

[[noreturn]] void malformed(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "ONNX model: " + message);
}

[[noreturn]] void unsupported(const std::string& message) {
  throw Error(ErrorCode::kUnimplemented, "ONNX model: " + message);
}

std::string node_label(const Op& op) {
  return "node '" + op.node + "' (" + op.op_type + ")";
}

std::string dtype_name(int32_t type) {
  return onnx::TensorProto::DataType_IsValid(type)
             ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(type))
             : "data type " + std::to_string(type);
}

// Reads an initializer or Constant value: FLOAT (from raw_data or float_data) or INT64.
Value tensor_value(const onnx::TensorProto& t, const std::string& name) {
  Value v;
  v.name = name;
  v.constant = true;
  for (int64_t d : t.dims()) {
    if (d < 0) malformed("tensor '" + name + "' has a negative dimension");
    v.shape.push_back(d);
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    unsupported("tensor '" + name +
                "' keeps its data in an external file; kaas reads "
                "self-contained model files (save without external data)");
  }
  const int64_t count = element_count(v.shape);
  const auto& raw = t.raw_data();
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    v.data.resize(static_cast<size_t>(count));
    if (!raw.empty()) {
      if (raw.size() != size_t(count) * sizeof(float))
        malformed("tensor '" + name + "': raw_data has " + std::to_string(raw.size()) +
                  " bytes, dims " + shape_string(v.shape) + " need " + std::to_string(count * 4));
      std::memcpy(v.data.data(), raw.data(), raw.size());
    } else {
      if (t.float_data_size() != count)
        malformed("tensor '" + name + "': float_data has " + std::to_string(t.float_data_size()) +
                  " values, dims " + shape_string(v.shape) + " need " + std::to_string(count));
      std::copy(t.float_data().begin(), t.float_data().end(), v.data.begin());
    }
  } else if (t.data_type() == onnx::TensorProto::INT64) {
    v.is_int64 = true;
    v.int_data.resize(static_cast<size_t>(count));
    if (!raw.empty()) {
      if (raw.size() != size_t(count) * sizeof(int64_t))
        malformed("tensor '" + name + "': raw_data size does not match dims " +
                  shape_string(v.shape));
      std::memcpy(v.int_data.data(), raw.data(), raw.size());
    } else {
      if (t.int64_data_size() != count)
        malformed("tensor '" + name + "': int64_data size does not match dims " +
                  shape_string(v.shape));
      std::copy(t.int64_data().begin(), t.int64_data().end(), v.int_data.begin());
    }
  } else {
    unsupported("tensor '" + name + "' has " + dtype_name(t.data_type()) +
                "; kaas takes FLOAT tensors (and INT64 shapes)");
  }
  return v;
}

class NodeReader {
 public:
  NodeReader(const onnx::NodeProto& node, Op& op, std::set<std::string> allowed)
      : node_(node), op_(op) {
    for (const auto& a : node.attribute()) {
      if (!allowed.count(a.name()))
        unsupported(node_label(op) + ": attribute '" + a.name() + "' is not supported");
    }
  }
  const onnx::AttributeProto* find(const std::string& name) const {
    for (const auto& a : node_.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t i(const std::string& name, int64_t fallback) const {
    const auto* a = find(name);
    if (a && a->type() != onnx::AttributeProto::INT) bad_type(name, "INT");
    return a ? a->i() : fallback;
  }
  float f(const std::string& name, float fallback) const {
    const auto* a = find(name);
    if (a && a->type() != onnx::AttributeProto::FLOAT) bad_type(name, "FLOAT");
    return a ? a->f() : fallback;
  }
  std::vector<int64_t> ints(const std::string& name) const {
    const auto* a = find(name);
    if (a && a->type() != onnx::AttributeProto::INTS) bad_type(name, "INTS");
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  std::string s(const std::string& name, const std::string& fallback) const {
    const auto* a = find(name);
    if (a && a->type() != onnx::AttributeProto::STRING) bad_type(name, "STRING");
    return a ? a->s() : fallback;
  }
  void expect_inputs(int minimum, int maximum) const {
    int present = node_.input_size();
    while (present > 0 && node_.input(present - 1).empty()) --present;
    if (present < minimum || node_.input_size() > maximum)
      malformed(node_label(op_) + ": has " + std::to_string(node_.input_size()) +
                " inputs, expected " + std::to_string(minimum) + ".." + std::to_string(maximum));
  }

 private:
  [[noreturn]] void bad_type(const std::string& name, const char* type) const {
    malformed(node_label(op_) + ": attribute '" + name + "' must be " + type);
  }
  const onnx::NodeProto& node_;
  Op& op_;
};

void read_conv(const NodeReader& r, Op& op) {
  r.expect_inputs(2, 3);
  const auto strides = r.ints("strides"), dilations = r.ints("dilations"), pads = r.ints("pads");
  const auto kernel_shape = r.ints("kernel_shape");
  auto two = [&](const std::vector<int64_t>& v, const char* name) {
    if (!v.empty() && v.size() != 2)
      unsupported(node_label(op) + ": " + name + " has " + std::to_string(v.size()) +
                  " values; kaas convolves in 2-D");
  };
  two(strides, "strides");
  two(dilations, "dilations");
  two(kernel_shape, "kernel_shape");
  if (!pads.empty() && pads.size() != 4)
    unsupported(node_label(op) + ": pads has " + std::to_string(pads.size()) +
                " values; kaas convolves in 2-D (4 pads)");
  if (!strides.empty()) op.conv.stride_h = strides[0], op.conv.stride_w = strides[1];
  if (!dilations.empty()) op.conv.dilation_h = dilations[0], op.conv.dilation_w = dilations[1];
  if (!pads.empty())
    op.conv.pad_top = pads[0], op.conv.pad_left = pads[1], op.conv.pad_bottom = pads[2],
    op.conv.pad_right = pads[3];
  op.conv.groups = r.i("group", 1);
  const std::string auto_pad = r.s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    op.conv.auto_pad = AutoPad::kValid;
  } else if (auto_pad == "SAME_UPPER") {
    op.conv.auto_pad = AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    op.conv.auto_pad = AutoPad::kSameLower;
  } else if (auto_pad != "NOTSET") {
    malformed(node_label(op) + ": auto_pad '" + auto_pad + "' is not an ONNX value");
  }
  op.kernel_shape = kernel_shape;
}

}  // namespace

Graph parse(const onnx::ModelProto& model) {
  if (!model.has_graph()) malformed("no graph (empty, truncated or not an ONNX file)");
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    malformed(std::string("fails the ONNX checker: ") + e.what());
  }
  Graph g;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") g.opset = o.version();
  }
  const auto& graph = model.graph();
  std::map<std::string, int> ids;
  auto define = [&](Value v) {
    if (ids.count(v.name)) malformed("value '" + v.name + "' is defined twice");
    ids[v.name] = static_cast<int>(g.values.size());
    g.values.push_back(std::move(v));
    return static_cast<int>(g.values.size()) - 1;
  };
  for (const auto& init : graph.initializer()) define(tensor_value(init, init.name()));
  for (const auto& input : graph.input()) {
    if (ids.count(input.name())) continue;  // an initializer listed as input (old exporters)
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
      if (!known) g.batched = true;
      v.shape.push_back(known ? dims[d].dim_value() : kVariableDim);
    }
    g.inputs.push_back(define(std::move(v)));
  }
  auto input_id = [&](const Op& op, const std::string& name) {
    if (name.empty()) return -1;
    const auto it = ids.find(name);
    if (it == ids.end()) malformed(node_label(op) + ": input '" + name + "' is not defined before");
    return it->second;
  };
  int index = 0;
  for (const auto& node : graph.node()) {
    Op op;
    op.node = node.name();
    if (op.node.empty()) op.node = std::string("#").append(std::to_string(index));
    op.op_type = node.op_type();
    ++index;
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      unsupported(node_label(op) + ": operator domain '" + node.domain() + "' is not supported");
    if (node.output_size() < 1) malformed(node_label(op) + ": has no output");
    const std::string& t = node.op_type();
    if (t == "Dropout" || t == "Identity") {
      NodeReader r(node, op,
                   t == "Dropout" ? std::set<std::string>{"ratio", "seed", "is_test"}
                                  : std::set<std::string>{});
      if (t == "Dropout" && node.input_size() > 2 && !node.input(2).empty()) {
        const int mode = input_id(op, node.input(2));
        const Value& m = g.values[mode];
        if (!m.constant)
          unsupported(node_label(op) + ": training_mode must be a constant false for inference");
        const bool on = m.is_int64 ? (!m.int_data.empty() && m.int_data[0] != 0) : false;
        if (on) unsupported(node_label(op) + ": training_mode is true (kaas runs inference)");
      }
      if (node.output_size() > 1 && !node.output(1).empty()) {
        bool used = false;
        for (const auto& other : graph.node()) {
          for (const auto& in : other.input()) used = used || in == node.output(1);
        }
        for (const auto& out : graph.output()) used = used || out.name() == node.output(1);
        if (used)
          unsupported(node_label(op) + ": its mask output is used; kaas runs inference only");
      }
      // Inference: the output is the input. The name now refers to the input's value.
      ids[node.output(0)] = input_id(op, node.input(0));
      g.log.push_back("removed " + t + " " + op.node);
      continue;
    }
    if (t == "Constant") {
      NodeReader r(node, op, {"value"});
      const auto* a = r.find("value");
      if (!a || a->type() != onnx::AttributeProto::TENSOR)
        unsupported(node_label(op) + ": only the tensor 'value' form is supported");
      define(tensor_value(a->t(), node.output(0)));
      continue;
    }
    if (t == "Conv") {
      op.kind = OpKind::kConv;
      read_conv(NodeReader(node, op,
                           {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}),
                op);
    } else if (t == "Gemm") {
      op.kind = OpKind::kGemm;
      // Opset < 7 marks a broadcast C with 'broadcast'; kaas always broadcasts C ONNX-style.
      NodeReader r(node, op,
                   g.opset < 7
                       ? std::set<std::string>{"alpha", "beta", "transA", "transB", "broadcast"}
                       : std::set<std::string>{"alpha", "beta", "transA", "transB"});
      r.expect_inputs(2, 3);
      op.gemm.alpha = r.f("alpha", 1.0f);
      op.gemm.beta = r.f("beta", 1.0f);
      op.gemm.trans_a = r.i("transA", 0) != 0;
      op.gemm.trans_b = r.i("transB", 0) != 0;
    } else if (t == "MatMul") {
      op.kind = OpKind::kMatMul;
      NodeReader(node, op, {}).expect_inputs(2, 2);
    } else if (t == "Add") {
      op.kind = OpKind::kAdd;
      NodeReader(node, op, {}).expect_inputs(2, 2);
    } else if (t == "Relu" || t == "LeakyRelu" || t == "Sigmoid") {
      op.kind = OpKind::kActivation;
      NodeReader r(node, op,
                   t == "LeakyRelu" ? std::set<std::string>{"alpha"} : std::set<std::string>{});
      r.expect_inputs(1, 1);
      op.activation.activation = t == "Relu"      ? Activation::kRelu
                                 : t == "Sigmoid" ? Activation::kSigmoid
                                                  : Activation::kLeakyRelu;
      op.activation.alpha = r.f("alpha", 0.01f);
    } else if (t == "Softmax" || t == "LogSoftmax") {
      op.kind = OpKind::kSoftmax;
      NodeReader r(node, op, {"axis"});
      r.expect_inputs(1, 1);
      op.softmax = t == "Softmax" ? SoftmaxKind::kSoftmax : SoftmaxKind::kLogSoftmax;
      op.softmax_2d = g.opset < 13;
      op.axis = r.i("axis", g.opset < 13 ? 1 : -1);
    } else if (t == "Flatten") {
      op.kind = OpKind::kFlatten;
      NodeReader r(node, op, {"axis"});
      r.expect_inputs(1, 1);
      op.axis = r.i("axis", 1);
    } else if (t == "Reshape") {
      op.kind = OpKind::kReshape;
      NodeReader r(node, op, {"allowzero"});
      r.expect_inputs(2, 2);
      op.allow_zero = r.i("allowzero", 0) != 0;
    } else if (t == "Transpose") {
      op.kind = OpKind::kTranspose;
      NodeReader r(node, op, {"perm"});
      r.expect_inputs(1, 1);
      op.perm = r.ints("perm");
    } else if (t == "Concat") {
      op.kind = OpKind::kConcat;
      NodeReader r(node, op, {"axis"});
      r.expect_inputs(1, 1 << 20);
      if (!r.find("axis")) malformed(node_label(op) + ": attribute 'axis' is required");
      op.axis = r.i("axis", 0);
    } else {
      unsupported(node_label(op) +
                  ": operator not supported (kaas imports Conv, Gemm, MatMul, Add, Relu, "
                  "LeakyRelu, Sigmoid, Softmax, LogSoftmax, Flatten, Reshape, Transpose, Concat, "
                  "Dropout, Identity, Constant)");
    }
    for (const auto& in : node.input()) op.inputs.push_back(input_id(op, in));
    if (op.kind == OpKind::kReshape && !g.values[op.inputs[1]].is_int64)
      unsupported(node_label(op) + ": the target shape must be a constant INT64 tensor");
    for (int o = 1; o < node.output_size(); ++o) {
      if (!node.output(o).empty())
        unsupported(node_label(op) + ": has " + std::to_string(node.output_size()) +
                    " outputs; kaas supports one");
    }
    Value out;
    out.name = node.output(0);
    op.output = define(std::move(out));
    g.ops.push_back(std::move(op));
  }
  for (const auto& output : graph.output()) {
    const auto it = ids.find(output.name());
    if (it == ids.end()) malformed("graph output '" + output.name() + "' is never computed");
    g.outputs.emplace_back(output.name(), it->second);
  }
  if (g.inputs.empty()) unsupported("the graph has no runtime inputs");
  if (g.outputs.empty()) malformed("the graph has no outputs");
  infer_shapes(g, 1);  // every shape and attribute error now, not at the first request
  if (g.batched) infer_shapes(g, 2);
  return g;
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
