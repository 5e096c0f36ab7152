#include "tests/kernels/onnx_node_runner.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "backends/buffer.h"
#include "kernels/conv2d.h"
#include "kernels/gemm.h"
#include "kernels/softmax.h"

namespace kaas::testing {

namespace fs = std::filesystem;

fs::path onnx_testdata_root() {
  const char* env = std::getenv("KAAS_ONNX_TESTDATA");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(KAAS_ONNX_TESTDATA_DIR);
}

std::vector<OnnxNodeCase> required_onnx_node_cases() {
  // Float convolution tests only (ConvInteger and ConvTranspose are other operators). Plain
  // prefix / exact-name matching: std::regex trips g++ 12's -Wmaybe-uninitialized under ASan.
  struct Family {
    const char* folder;
    const char* name;
    bool prefix;
  };
  const Family families[] = {
      {"node", "test_conv_with_", true},
      {"node", "test_gemm_", true},
      {"node", "test_matmul_2d", false},
      {"node", "test_matmul_3d", false},
      {"node", "test_matmul_4d", false},
      {"node", "test_softmax_", true},
      {"node", "test_logsoftmax_", true},
      {"node", "test_sigmoid", true},
      {"node", "test_relu", false},
      {"node", "test_leakyrelu", true},
      {"pytorch-converted", "test_Conv2d", true},
      {"pytorch-converted", "test_Linear", true},
      {"pytorch-converted", "test_Softmax", false},
      {"pytorch-converted", "test_LogSoftmax", false},
  };
  std::vector<OnnxNodeCase> cases;
  for (const char* folder : {"node", "pytorch-converted"}) {
    const fs::path dir = onnx_testdata_root() / folder;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      for (const Family& f : families) {
        if (std::string_view(f.folder) != folder) continue;
        if (f.prefix ? name.rfind(f.name, 0) == 0 : name == f.name) {
          cases.push_back({entry.path(), std::string(folder) + "/" + name});
          break;
        }
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return cases;
}

namespace {

// A float tensor in device memory; views of the same storage (Transpose) share it.
struct Tensor {
  std::shared_ptr<DeviceBuffer<float>> storage;
  std::vector<int64_t> shape, strides;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  bool contiguous() const {
    int64_t expected = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (shape[d] != 1 && strides[d] != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
  float* data() const { return storage->data(); }
};

std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

Tensor make_tensor(const Queue& queue, std::vector<int64_t> shape) {
  Tensor t;
  t.strides = dense_strides(shape);
  t.shape = std::move(shape);
  t.storage =
      std::make_shared<DeviceBuffer<float>>(make_device_buffer<float>(queue, size_t(t.size())));
  return t;
}

// Thrown for a graph kaas cannot run; the test reports it as a skip with this reason.
struct Unsupported {
  std::string reason;
};

std::vector<float> float_values(const onnx::TensorProto& proto) {
  if (proto.data_type() != onnx::TensorProto::FLOAT) {
    throw Unsupported{"tensor '" + proto.name() + "' has data type " +
                      onnx::TensorProto::DataType_Name(
                          static_cast<onnx::TensorProto::DataType>(proto.data_type())) +
                      "; kaas kernels take FLOAT"};
  }
  int64_t count = 1;
  for (int64_t d : proto.dims()) count *= d;
  std::vector<float> values(static_cast<size_t>(count));
  if (!proto.raw_data().empty()) {
    if (proto.raw_data().size() != values.size() * sizeof(float)) {
      throw std::runtime_error("tensor '" + proto.name() + "': raw_data size does not match dims");
    }
    std::memcpy(values.data(), proto.raw_data().data(), proto.raw_data().size());
  } else {
    if (proto.float_data_size() != count)
      throw std::runtime_error("tensor '" + proto.name() + "': float_data size");
    std::copy(proto.float_data().begin(), proto.float_data().end(), values.begin());
  }
  return values;
}

template <class Message>
Message parse_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  Message message;
  if (!in || !message.ParseFromIstream(&in))
    throw std::runtime_error("cannot parse " + path.string());
  return message;
}

Tensor upload(const Queue& queue, const onnx::TensorProto& proto) {
  const auto values = float_values(proto);
  Tensor t = make_tensor(queue, std::vector<int64_t>(proto.dims().begin(), proto.dims().end()));
  copy_to_device(queue, std::span<const float>(values), *t.storage);
  return t;
}

std::vector<float> download(const Queue& queue, const Tensor& t) {
  if (!t.contiguous()) throw std::runtime_error("graph output is a non-contiguous view");
  std::vector<float> host(static_cast<size_t>(t.size()));
  copy_to_host(queue, *t.storage, std::span<float>(host));
  queue.wait();
  return host;
}

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t int_attribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->i() : fallback;
}
float float_attribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const auto* a = find_attribute(node, name);
  return a ? a->f() : fallback;
}
std::vector<int64_t> ints_attribute(const onnx::NodeProto& node, const std::string& name) {
  const auto* a = find_attribute(node, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

View2<const float> view2(const Tensor& t) {
  View2<const float> v;
  v.data = t.data();
  for (int d = 0; d < 2; ++d) v.extent[d] = t.shape[d], v.stride[d] = t.strides[d];
  return v;
}

class Interpreter {
 public:
  Interpreter(const Queue& queue, int64_t opset) : queue_(queue), opset_(opset) {}

  std::map<std::string, Tensor> values;

  void run(const onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    if (op == "Conv") return conv(node);
    if (op == "Gemm") return gemm_node(node);
    if (op == "MatMul") return matmul_node(node);
    if (op == "Softmax" || op == "LogSoftmax") return softmax_node(node);
    if (op == "Relu" || op == "LeakyRelu" || op == "Sigmoid") return activation(node);
    if (op == "Transpose") return transpose(node);
    if (op == "Flatten") return flatten(node);
    if (op == "Dropout" || op == "Identity") {  // inference: both pass the input through
      values[node.output(0)] = in(node, 0);
      return;
    }
    throw Unsupported{"node '" + node.name() + "' is a " + op + ", which kaas has no kernel for"};
  }

 private:
  const Tensor& in(const onnx::NodeProto& node, int i) { return values.at(node.input(i)); }
  bool has_input(const onnx::NodeProto& node, int i) {
    return node.input_size() > i && !node.input(i).empty();
  }

  void conv(const onnx::NodeProto& node) {
    const Tensor& x = in(node, 0);
    const Tensor& w = in(node, 1);
    if (x.shape.size() != 4)
      throw Unsupported{"Conv on rank " + std::to_string(x.shape.size()) +
                        " (kaas: 2-D convolution)"};
    Conv2dParams p;
    const auto strides = ints_attribute(node, "strides"),
               dilations = ints_attribute(node, "dilations");
    const auto pads = ints_attribute(node, "pads");
    if (!strides.empty()) p.stride_h = strides[0], p.stride_w = strides[1];
    if (!dilations.empty()) p.dilation_h = dilations[0], p.dilation_w = dilations[1];
    if (!pads.empty())
      p.pad_top = pads[0], p.pad_left = pads[1], p.pad_bottom = pads[2], p.pad_right = pads[3];
    p.groups = int_attribute(node, "group", 1);
    if (const auto* a = find_attribute(node, "auto_pad")) {
      const std::string mode = a->s();
      p.auto_pad = mode == "VALID"        ? AutoPad::kValid
                   : mode == "SAME_UPPER" ? AutoPad::kSameUpper
                   : mode == "SAME_LOWER" ? AutoPad::kSameLower
                                          : AutoPad::kNotSet;
    }
    const int64_t xe[4] = {x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
    const int64_t we[4] = {w.shape[0], w.shape[1], w.shape[2], w.shape[3]};
    const Conv2dShape s = conv2d_output_shape(p, xe, we);
    Tensor y = make_tensor(queue_, {s.batch, s.out_channels, s.out_h, s.out_w});
    View1<const float> bias;
    if (has_input(node, 2))
      bias = make_view(static_cast<const float*>(in(node, 2).data()), in(node, 2).size());
    conv2d(queue_, make_view<4>(static_cast<const float*>(x.data()), xe),
           make_view<4>(static_cast<const float*>(w.data()), we), bias,
           make_view<4>(y.data(), {s.batch, s.out_channels, s.out_h, s.out_w}), p);
    values[node.output(0)] = std::move(y);
  }

  void gemm_node(const onnx::NodeProto& node) {
    const Tensor& a = in(node, 0);
    const Tensor& b = in(node, 1);
    GemmParams p;
    p.trans_a = int_attribute(node, "transA", 0) != 0;
    p.trans_b = int_attribute(node, "transB", 0) != 0;
    p.alpha = float_attribute(node, "alpha", 1.0f);
    p.beta = float_attribute(node, "beta", 1.0f);
    const int64_t m = p.trans_a ? a.shape[1] : a.shape[0], n = p.trans_b ? b.shape[0] : b.shape[1];
    View2<const float> c;
    if (has_input(node, 2)) {
      const Tensor& ct = in(node, 2);
      c.data = ct.data();
      if (ct.shape.size() == 2) {
        c = view2(ct);
      } else if (ct.shape.size() == 1) {  // [N] or [1]: one row
        c.extent[0] = 1, c.extent[1] = ct.shape[0], c.stride[0] = 0, c.stride[1] = ct.strides[0];
      } else {  // a scalar
        c.extent[0] = c.extent[1] = 1;
      }
    }
    Tensor y = make_tensor(queue_, {m, n});
    gemm(queue_, view2(a), view2(b), c, make_view<2>(y.data(), {m, n}), p);
    values[node.output(0)] = std::move(y);
  }

  void matmul_node(const onnx::NodeProto& node) {
    const Tensor& a = in(node, 0);
    const Tensor& b = in(node, 1);
    if (a.shape.size() == 2 && b.shape.size() == 2) {  // strided operands allowed
      Tensor y = make_tensor(queue_, {a.shape[0], b.shape[1]});
      gemm(queue_, view2(a), view2(b), {}, make_view<2>(y.data(), {a.shape[0], b.shape[1]}),
           GemmParams{false, false, 1, 0, {}, GemmImpl::kAuto});
      values[node.output(0)] = std::move(y);
      return;
    }
    if (!a.contiguous() || !b.contiguous())
      throw Unsupported{"batched MatMul of a transposed view"};
    std::vector<int64_t> shape;
    const size_t rank = std::max(a.shape.size(), b.shape.size());
    for (size_t d = 0; d + 2 < rank; ++d) {
      const int64_t da = d + a.shape.size() >= rank ? a.shape[d + a.shape.size() - rank] : 1;
      const int64_t db = d + b.shape.size() >= rank ? b.shape[d + b.shape.size() - rank] : 1;
      shape.push_back(std::max(da, db));
    }
    shape.push_back(a.shape[a.shape.size() - 2]);
    shape.push_back(b.shape.back());
    Tensor y = make_tensor(queue_, shape);
    matmul(queue_, a.data(), a.shape, b.data(), b.shape, y.data());
    values[node.output(0)] = std::move(y);
  }

  // Opset < 13 flattens to 2-D at `axis` (default 1); opset >= 13 normalises along `axis` alone
  // (default -1).
  void softmax_node(const onnx::NodeProto& node) {
    const Tensor& x = in(node, 0);
    if (!x.contiguous()) throw Unsupported{"softmax of a transposed view"};
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = int_attribute(node, "axis", opset_ >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    int64_t outer = 1, length = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) {
        outer *= x.shape[d];
      } else if (d == axis || opset_ < 13) {
        length *= x.shape[d];
      } else {
        inner *= x.shape[d];
      }
    }
    Tensor y = make_tensor(queue_, x.shape);
    softmax(queue_, node.op_type() == "Softmax" ? SoftmaxKind::kSoftmax : SoftmaxKind::kLogSoftmax,
            make_view<3>(static_cast<const float*>(x.data()), {outer, length, inner}),
            make_view<3>(y.data(), {outer, length, inner}));
    values[node.output(0)] = std::move(y);
  }

  void activation(const onnx::NodeProto& node) {
    const Tensor& x = in(node, 0);
    if (!x.contiguous()) throw Unsupported{"activation of a transposed view"};
    Epilogue e;
    e.activation = node.op_type() == "Relu"      ? Activation::kRelu
                   : node.op_type() == "Sigmoid" ? Activation::kSigmoid
                                                 : Activation::kLeakyRelu;
    e.alpha = float_attribute(node, "alpha", 0.01f);
    Tensor y = make_tensor(queue_, x.shape);
    activate(queue_, e, make_view(static_cast<const float*>(x.data()), x.size()),
             make_view(y.data(), y.size()));
    values[node.output(0)] = std::move(y);
  }

  // A reshape of a contiguous tensor to [prod(dims < axis), prod(dims >= axis)]: no copy.
  void flatten(const onnx::NodeProto& node) {
    const Tensor& x = in(node, 0);
    if (!x.contiguous()) throw Unsupported{"Flatten of a transposed view (the importer folds it)"};
    int64_t axis = int_attribute(node, "axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < x.shape.size(); ++d) (int64_t(d) < axis ? outer : inner) *= x.shape[d];
    Tensor y = x;
    y.shape = {outer, inner};
    y.strides = dense_strides(y.shape);
    values[node.output(0)] = std::move(y);
  }

  // A view with permuted strides over the same memory: no copy.
  void transpose(const onnx::NodeProto& node) {
    const Tensor& x = in(node, 0);
    auto perm = ints_attribute(node, "perm");
    if (perm.empty()) {
      for (size_t d = x.shape.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
    }
    Tensor y = x;
    for (size_t d = 0; d < perm.size(); ++d) {
      y.shape[d] = x.shape[perm[d]];
      y.strides[d] = x.strides[perm[d]];
    }
    values[node.output(0)] = std::move(y);
  }

  const Queue& queue_;
  int64_t opset_;
};

}  // namespace

OnnxCaseResult run_onnx_node_case(const Backend& backend, const OnnxNodeCase& c) {
  OnnxCaseResult result;
  const auto model = parse_file<onnx::ModelProto>(c.directory / "model.onnx");
  int64_t opset = 1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  const auto& graph = model.graph();
  std::set<std::string> supported = {"Conv",       "Gemm",    "MatMul",    "Softmax",
                                     "LogSoftmax", "Relu",    "LeakyRelu", "Sigmoid",
                                     "Transpose",  "Flatten", "Dropout",   "Identity"};
  std::set<std::string> missing;
  for (const auto& node : graph.node()) {
    if (!supported.count(node.op_type())) missing.insert(node.op_type());
  }
  if (!missing.empty()) {
    std::string ops;
    for (const auto& op : missing) ops += (ops.empty() ? "" : ", ") + op;
    result.skip_reason = "the graph uses " + ops +
                         ", which kaas has no kernel for (an expanded "
                         "decomposition of the operator, not the operator itself)";
    return result;
  }
  Queue queue(backend);
  std::set<std::string> initializer_names;
  for (const auto& init : graph.initializer()) initializer_names.insert(init.name());
  std::vector<std::string> input_names;
  for (const auto& input : graph.input()) {
    if (!initializer_names.count(input.name())) input_names.push_back(input.name());
  }
  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(c.directory)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      data_sets.push_back(entry.path());
    }
  }
  std::sort(data_sets.begin(), data_sets.end());
  try {
    for (const auto& set : data_sets) {
      Interpreter interpreter(queue, opset);
      for (const auto& init : graph.initializer())
        interpreter.values[init.name()] = upload(queue, init);
      for (size_t i = 0; i < input_names.size(); ++i) {
        const auto proto =
            parse_file<onnx::TensorProto>(set / ("input_" + std::to_string(i) + ".pb"));
        interpreter.values[input_names[i]] = upload(queue, proto);
      }
      for (const auto& node : graph.node()) interpreter.run(node);
      for (int o = 0; o < graph.output_size(); ++o) {
        const auto expected_proto =
            parse_file<onnx::TensorProto>(set / ("output_" + std::to_string(o) + ".pb"));
        const auto expected = float_values(expected_proto);
        const auto got = download(queue, interpreter.values.at(graph.output(o).name()));
        ++result.outputs_compared;
        if (got.size() != expected.size()) {
          ++result.mismatches;
          result.first_mismatch = "output " + graph.output(o).name() + " has " +
                                  std::to_string(got.size()) + " values, expected " +
                                  std::to_string(expected.size());
          continue;
        }
        for (size_t i = 0; i < got.size(); ++i) {
          // numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7), as ONNX's backend test runner
          const bool close =
              std::abs(double(got[i]) - expected[i]) <= 1e-7 + 1e-3 * std::abs(double(expected[i]));
          if (!close && result.mismatches++ == 0) {
            result.first_mismatch = set.filename().string() + " output " + graph.output(o).name() +
                                    "[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
                                    ", expected " + std::to_string(expected[i]);
          }
        }
      }
    }
  } catch (const Unsupported& u) {
    result.skip_reason = u.reason;
    return result;
  }
  result.ran = true;
  return result;
}

std::vector<std::vector<float>> run_onnx_graph(const Backend& backend,
                                               const onnx::ModelProto& model,
                                               const std::vector<HostTensor>& inputs) {
  int64_t opset = 1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  const auto& graph = model.graph();
  Queue queue(backend);
  Interpreter interpreter(queue, opset);
  std::set<std::string> initializer_names;
  for (const auto& init : graph.initializer()) {
    initializer_names.insert(init.name());
    interpreter.values[init.name()] = upload(queue, init);
  }
  size_t next = 0;
  for (const auto& input : graph.input()) {
    if (initializer_names.count(input.name())) continue;
    if (next >= inputs.size()) throw std::runtime_error("missing input " + input.name());
    Tensor t = make_tensor(queue, inputs[next].shape);
    copy_to_device(queue, std::span<const float>(inputs[next].values), *t.storage);
    interpreter.values[input.name()] = std::move(t);
    ++next;
  }
  try {
    for (const auto& node : graph.node()) interpreter.run(node);
  } catch (const Unsupported& u) {
    throw std::runtime_error(u.reason);
  }
  std::vector<std::vector<float>> outputs;
  for (const auto& output : graph.output())
    outputs.push_back(download(queue, interpreter.values.at(output.name())));
  return outputs;
}

}  // namespace kaas::testing
