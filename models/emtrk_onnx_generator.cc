#include "kaas/models/emtrk_onnx_generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <vector>

#include "kaas/backends/half.h"
#include "kaas/common/error.h"
#include "kaas/models/npy.h"

namespace kaas::models {

namespace {

constexpr int64_t kPatch = 48, kKernel = 5, kFilters = 48, kConvOut = kPatch - kKernel + 1;  // 44
constexpr int64_t kFlat = kConvOut * kConvOut * kFilters;  // 92,928

// Weights from a fixed generator with a specified algorithm (mt19937's raw output is fixed by
// the standard; the <random> distributions are not), uniform in +-sqrt(6 / (fan_in + fan_out))
// (Glorot) so activations keep a sensible scale through the network.
class WeightGenerator {
 public:
  explicit WeightGenerator(uint32_t seed) : engine_(seed) {}
  static double glorot_limit(int64_t fan_in, int64_t fan_out) {
    return std::sqrt(6.0 / double(fan_in + fan_out));
  }
  float glorot(double limit) {
    const double unit = double(engine_() >> 8) * (1.0 / 16777216.0);  // [0, 1), 24 bits
    return static_cast<float>((2.0 * unit - 1.0) * limit);
  }
  float small_bias() {
    return static_cast<float>(double(engine_() >> 8) * (0.02 / 16777216.0) - 0.01);
  }

 private:
  std::mt19937 engine_;
};

onnx::TensorProto* add_float_initializer(onnx::GraphProto& graph, const std::string& name,
                                         const std::vector<int64_t>& dims) {
  auto* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  return t;
}

void add_initializer(onnx::GraphProto& graph, const std::string& name,
                     const std::vector<int64_t>& dims, const std::vector<float>& values) {
  // little-endian, as ONNX wants
  add_float_initializer(graph, name, dims)
      ->set_raw_data(values.data(), values.size() * sizeof(float));
}

// A generated initializer, drawn chunk by chunk straight into its raw_data: the weights exist
// once while the model is built (a second 47.6 MB copy made every generation slower).
template <class Draw>
void add_drawn_initializer(onnx::GraphProto& graph, const std::string& name,
                           const std::vector<int64_t>& dims, Draw draw) {
  std::string& raw = *add_float_initializer(graph, name, dims)->mutable_raw_data();
  const size_t count = size_t(models::element_count(dims));
  raw.resize(count * sizeof(float));
  std::array<float, 1024> chunk;
  for (size_t begin = 0; begin < count; begin += chunk.size()) {
    const size_t n = std::min(chunk.size(), count - begin);
    for (size_t i = 0; i < n; ++i) chunk[i] = draw();
    std::memcpy(raw.data() + begin * sizeof(float), chunk.data(), n * sizeof(float));
  }
}

// Each initializer either generated or read from <weights_dir>/<name with '/' as '_'>.npy.
class WeightSource {
 public:
  explicit WeightSource(const EmTrkGeneratorOptions& options)
      : generator_(options.seed), dir_(options.weights_dir) {}
  bool trained() const { return !dir_.empty(); }

  void add_kernel(onnx::GraphProto& graph, const std::string& name,
                  const std::vector<int64_t>& dims, int64_t fan_in, int64_t fan_out) {
    if (trained()) return add_initializer(graph, name, dims, load(name, dims));
    const double limit = WeightGenerator::glorot_limit(fan_in, fan_out);
    add_drawn_initializer(graph, name, dims, [&] { return generator_.glorot(limit); });
  }
  void add_bias(onnx::GraphProto& graph, const std::string& name, int64_t count) {
    if (trained()) return add_initializer(graph, name, {count}, load(name, {count}));
    add_drawn_initializer(graph, name, {count}, [&] { return generator_.small_bias(); });
  }

  std::vector<float> load(const std::string& name, const std::vector<int64_t>& dims) {
    std::string file = name;
    std::replace(file.begin(), file.end(), '/', '_');
    const auto path = dir_ / (file + ".npy");
    const HostTensor t = read_npy(path, name);
    const bool half = t.dtype == DataType::kFloat16;
    if ((t.dtype != DataType::kFloat32 && !half) || t.shape != dims)
      throw Error(ErrorCode::kInvalidArgument,
                  path.string() + ": expected FP32 or FP16 " + shape_string(dims) + ", found " +
                      std::string(triton_name(t.dtype)) + " " + shape_string(t.shape));
    if (!half) {
      const auto values = t.values<float>();
      return {values.begin(), values.end()};
    }
    // Weights kept as data in FP16 (data/emtrk-toy): widened exactly, the model stays FP32.
    const auto halves = t.values<fp16>();
    std::vector<float> values(halves.size());
    std::transform(halves.begin(), halves.end(), values.begin(),
                   [](fp16 h) { return math::to_float(h); });
    return values;
  }

 private:
  WeightGenerator generator_;
  std::filesystem::path dir_;
};

onnx::NodeProto* add_node(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                          std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = graph.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

void add_ints(onnx::NodeProto* node, const std::string& name, std::vector<int64_t> values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void add_int(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void add_value_info(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                    const std::string& name, std::vector<int64_t> dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) {
    auto* dim = tensor->mutable_shape()->add_dim();
    if (d < 0) {
      dim->set_dim_param("batch");
    } else {
      dim->set_dim_value(d);
    }
  }
}

// A dense layer: Gemm(x, W [in, out], b) (Keras) or Gemm(x, W^T [out, in], b, transB=1)
// (PyTorch). `pytorch_rows` maps a PyTorch input position to its Keras row (the flatten orders
// differ); trained [in, out] kernels are rearranged with it, generated ones are used as drawn.
void add_dense(
    onnx::GraphProto& graph, WeightSource& weights, EmTrkGraphStyle style, const std::string& name,
    const std::string& input, const std::string& output, int64_t in, int64_t out,
    const std::function<int64_t(int64_t)>& pytorch_rows = [](int64_t i) { return i; }) {
  if (style != EmTrkGraphStyle::kPyTorch) {
    weights.add_kernel(graph, name + "/kernel", {in, out}, in, out);
  } else if (!weights.trained()) {
    weights.add_kernel(graph, name + "/kernel", {out, in}, in, out);
  } else {
    const std::vector<float> w = weights.load(name + "/kernel", {in, out});
    std::vector<float> transposed(w.size());
    for (int64_t i = 0; i < in; ++i)
      for (int64_t o = 0; o < out; ++o)
        transposed[size_t(o * in + i)] = w[size_t(pytorch_rows(i) * out + o)];
    add_initializer(graph, name + "/kernel", {out, in}, transposed);
  }
  weights.add_bias(graph, name + "/bias", out);
  if (style == EmTrkGraphStyle::kTf2onnx) {
    add_node(graph, "MatMul", name + "/MatMul", {input, name + "/kernel"}, {name + "/MatMul:0"});
    add_node(graph, "Add", name + "/BiasAdd", {name + "/MatMul:0", name + "/bias"}, {output});
    return;
  }
  auto* gemm = add_node(graph, "Gemm", name, {input, name + "/kernel", name + "/bias"}, {output});
  if (style == EmTrkGraphStyle::kPyTorch) add_int(gemm, "transB", 1);
}

// Conv2D 48x5x5 + ReLU, then Flatten in Keras order (Transposes and Dropout where Keras exports
// have them); returns the name of the flattened output.
std::string add_conv_and_flatten(onnx::GraphProto& graph, WeightSource& weights,
                                 EmTrkGraphStyle style) {
  const bool keras = style != EmTrkGraphStyle::kPyTorch;
  weights.add_kernel(graph, "conv2d/kernel", {kFilters, 1, kKernel, kKernel}, kKernel * kKernel,
                     kFilters * kKernel * kKernel);
  weights.add_bias(graph, "conv2d/bias", kFilters);
  std::string x = "main_input";
  if (keras) {  // ONNX Conv is NCHW: Keras exports wrap it in Transposes
    add_ints(add_node(graph, "Transpose", "conv2d/to_nchw", {x}, {"conv2d/input_nchw"}), "perm",
             {0, 3, 1, 2});
    x = "conv2d/input_nchw";
  }
  auto* conv =
      add_node(graph, "Conv", "conv2d", {x, "conv2d/kernel", "conv2d/bias"}, {"conv2d/output"});
  add_ints(conv, "kernel_shape", {kKernel, kKernel});
  add_ints(conv, "strides", {1, 1});
  add_ints(conv, "pads", {0, 0, 0, 0});
  add_node(graph, "Relu", "conv2d/Relu", {"conv2d/output"}, {"conv2d/Relu:0"});
  x = "conv2d/Relu:0";
  if (keras) {
    add_ints(add_node(graph, "Transpose", "conv2d/to_nhwc", {x}, {"conv2d/output_nhwc"}), "perm",
             {0, 2, 3, 1});
    add_node(graph, "Dropout", "dropout", {"conv2d/output_nhwc"}, {"dropout/Identity:0"});
    x = "dropout/Identity:0";
  }
  if (style == EmTrkGraphStyle::kTf2onnx) {
    auto* shape = graph.add_initializer();
    shape->set_name("flatten/Const:0");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(2);
    shape->add_int64_data(-1);
    shape->add_int64_data(kFlat);
    add_node(graph, "Reshape", "flatten/Reshape", {x, "flatten/Const:0"}, {"flatten/Reshape:0"});
  } else {
    add_int(add_node(graph, "Flatten", "flatten", {x}, {"flatten/Reshape:0"}), "axis", 1);
  }
  return "flatten/Reshape:0";
}

// Dense 128 + ReLU, Dense 32 + ReLU (Dropouts where Keras exports have them), then the two heads
// and the graph's outputs.
void add_dense_layers_and_heads(onnx::GraphProto& graph, WeightSource& weights,
                                EmTrkGraphStyle style, const std::string& flat) {
  const bool keras = style != EmTrkGraphStyle::kPyTorch;
  // PyTorch flattens NCHW: input c * 44 * 44 + h * 44 + w is Keras row (h * 44 + w) * 48 + c.
  add_dense(graph, weights, style, "dense", flat, "dense/BiasAdd:0", kFlat, 128, [](int64_t i) {
    const int64_t c = i / (kConvOut * kConvOut), hw = i % (kConvOut * kConvOut);
    return hw * kFilters + c;
  });
  add_node(graph, "Relu", "dense/Relu", {"dense/BiasAdd:0"}, {"dense/Relu:0"});
  std::string x = "dense/Relu:0";
  if (keras) {
    add_node(graph, "Dropout", "dropout_1", {x}, {"dropout_1/Identity:0"});
    x = "dropout_1/Identity:0";
  }
  add_dense(graph, weights, style, "dense_1", x, "dense_1/BiasAdd:0", 128, 32);
  add_node(graph, "Relu", "dense_1/Relu", {"dense_1/BiasAdd:0"}, {"dense_1/Relu:0"});
  x = "dense_1/Relu:0";
  if (keras) {
    add_node(graph, "Identity", "dropout_2", {x}, {"dropout_2/Identity:0"});
    x = "dropout_2/Identity:0";
  }
  add_dense(graph, weights, style, "em_trk_none_netout", x, "em_trk_none_netout/BiasAdd:0", 32, 3);
  add_int(add_node(graph, "Softmax", "em_trk_none_netout/Softmax", {"em_trk_none_netout/BiasAdd:0"},
                   {"em_trk_none_netout/Softmax"}),
          "axis", 1);
  add_dense(graph, weights, style, "michel_netout", x, "michel_netout/BiasAdd:0", 32, 1);
  add_node(graph, "Sigmoid", "michel_netout/Sigmoid", {"michel_netout/BiasAdd:0"},
           {"michel_netout/Sigmoid"});
  add_value_info(graph.mutable_output(), "em_trk_none_netout/Softmax", {-1, 3});
  add_value_info(graph.mutable_output(), "michel_netout/Sigmoid", {-1, 1});
}

}  // namespace

onnx::ModelProto generate_emtrk_onnx(const EmTrkGeneratorOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name("kaas");
  model.set_producer_version("0.1");
  model.set_doc_string(
      options.weights_dir.empty()
          ? "EmTrkMichelId track/shower/Michel patch CNN (ProtoDUNE), generated "
            "weights; graph and names as in production"
          : "EmTrkMichelId track/shower/Michel patch CNN (ProtoDUNE), weights from " +
                options.weights_dir.string() + "; graph and names as in production");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  auto& graph = *model.mutable_graph();
  graph.set_name("emtrkmichelid");
  WeightSource weights(options);
  const bool keras = options.style != EmTrkGraphStyle::kPyTorch;
  add_value_info(graph.mutable_input(), "main_input",
                 keras ? std::vector<int64_t>{-1, kPatch, kPatch, 1}
                       : std::vector<int64_t>{-1, 1, kPatch, kPatch});
  const std::string flat = add_conv_and_flatten(graph, weights, options.style);
  add_dense_layers_and_heads(graph, weights, options.style, flat);
  return model;
}

}  // namespace kaas::models
