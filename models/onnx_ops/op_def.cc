// The helpers every op definition shares: errors, tensor reading, attribute reading, shape rules.

#include "kaas/models/onnx_ops/op_def.h"

#include <algorithm>
#include <cstring>

#include "kaas/common/error.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

void malformed(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "ONNX model: " + message);
}

void unsupported(const std::string& message) {
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

int ParseState::define(Value v) {
  if (ids.count(v.name)) malformed("value '" + v.name + "' is defined twice");
  const int id = add(std::move(v));
  ids[graph.values[id].name] = id;
  return id;
}

int ParseState::add(Value v) {
  graph.values.push_back(std::move(v));
  return static_cast<int>(graph.values.size()) - 1;
}

int ParseState::lookup(const Op& op, const std::string& name) const {
  if (name.empty()) return -1;
  const auto it = ids.find(name);
  if (it == ids.end()) malformed(node_label(op) + ": input '" + name + "' is not defined before");
  return it->second;
}

void NodeContext::allow_attributes(std::initializer_list<std::string_view> names) const {
  for (const auto& a : node_.attribute()) {
    if (std::find(names.begin(), names.end(), a.name()) == names.end())
      unsupported(node_label(op_) + ": attribute '" + a.name() + "' is not supported");
  }
}

const onnx::AttributeProto* NodeContext::find(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t NodeContext::i(const std::string& name, int64_t fallback) const {
  const auto* a = find(name);
  if (a && a->type() != onnx::AttributeProto::INT) bad_type(name, "INT");
  return a ? a->i() : fallback;
}

float NodeContext::f(const std::string& name, float fallback) const {
  const auto* a = find(name);
  if (a && a->type() != onnx::AttributeProto::FLOAT) bad_type(name, "FLOAT");
  return a ? a->f() : fallback;
}

std::vector<int64_t> NodeContext::ints(const std::string& name) const {
  const auto* a = find(name);
  if (a && a->type() != onnx::AttributeProto::INTS) bad_type(name, "INTS");
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

std::string NodeContext::s(const std::string& name, const std::string& fallback) const {
  const auto* a = find(name);
  if (a && a->type() != onnx::AttributeProto::STRING) bad_type(name, "STRING");
  return a ? a->s() : fallback;
}

void NodeContext::expect_inputs(int minimum, int maximum) const {
  int present = node_.input_size();
  while (present > 0 && node_.input(present - 1).empty()) --present;
  if (present < minimum || node_.input_size() > maximum)
    malformed(node_label(op_) + ": has " + std::to_string(node_.input_size()) +
              " inputs, expected " + std::to_string(minimum) + ".." + std::to_string(maximum));
}

void NodeContext::define_output(Value v) {
  v.name = node_.output(0);
  state_.define(std::move(v));
}

bool NodeContext::output_used(int index) const {
  const std::string& name = node_.output(index);
  for (const auto& other : state_.proto.node()) {
    for (const auto& in : other.input()) {
      if (in == name) return true;
    }
  }
  for (const auto& out : state_.proto.output()) {
    if (out.name() == name) return true;
  }
  return false;
}

void NodeContext::bad_type(const std::string& name, const char* type) const {
  malformed(node_label(op_) + ": attribute '" + name + "' must be " + type);
}

void bad_shape(const Op& op, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument,
              "ONNX model: node '" + op.node + "' (" + op.op_type + "): " + message);
}

int64_t normalise_axis(const Op& op, int64_t axis, int64_t rank, bool inclusive_end) {
  const int64_t hi = inclusive_end ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    bad_shape(op,
              "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast(const Op& op, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1)
      bad_shape(op, "shapes " + shape_string(a) + " and " + shape_string(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_rank_at_most_6(const Op& op, const Shape& shape) {
  if (shape.size() > 6) bad_shape(op, "rank " + std::to_string(shape.size()) + " > 6");
}

}  // namespace kaas::models::onnx_import
