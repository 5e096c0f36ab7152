// Relu, LeakyRelu, Sigmoid: elementwise activations (simplification fuses them into the
// producing Conv/Gemm when it can).

#include "kaas/kernels/softmax.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace activation_entry {

bool parse(NodeContext& n, Op& op) {
  const std::string& t = op.op_type;
  if (t == "LeakyRelu") {
    n.allow_attributes({"alpha"});
  } else {
    n.allow_attributes({});
  }
  n.expect_inputs(1, 1);
  Epilogue e;
  e.activation = t == "Relu"      ? Activation::kRelu
                 : t == "Sigmoid" ? Activation::kSigmoid
                                  : Activation::kLeakyRelu;
  e.alpha = n.f("alpha", 0.01f);
  op.attrs = e;
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  return shapes[op.inputs[0]];
}

void run(const RunContext& ctx, const Op& op) {
  activate(ctx.queue, op.attr<Epilogue>(),
           make_view(ctx.in(op, 0), element_count(ctx.in_shape(op, 0))),
           make_view(ctx.out(op), element_count(ctx.out_shape(op))));
}

constexpr std::string_view kTypes[] = {"Relu", "LeakyRelu", "Sigmoid"};
constexpr NodeTests kTests[] = {{"node", "test_sigmoid", true},
                                {"node", "test_relu"},
                                {"node", "test_leakyrelu", true},
                                {"pytorch-converted", "test_ReLU"},
                                {"pytorch-converted", "test_LeakyReLU", true},
                                {"pytorch-converted", "test_Sigmoid"}};

}  // namespace activation_entry

const OpDef activation_op{.onnx_types = activation_entry::kTypes,
                          .parse = activation_entry::parse,
                          .shape = activation_entry::shape,
                          .run = activation_entry::run,
                          .node_tests = activation_entry::kTests};

}  // namespace kaas::models::onnx_import
