// The ONNX importer: model bytes -> checked kaas graph -> shapes for batch 1 -> simplified graph.
// (Building device buffers is left out: that is sized by the declared shapes, not parsing.)

#include "fuzz/fuzz_target.h"
#include "kaas/models/onnx_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, int(size))) return 0;
  return kaas::fuzz::rejecting_errors([&] {
    auto graph = kaas::models::onnx_import::parse(model);
    (void)kaas::models::onnx_import::infer_shapes(graph, 1);
    kaas::models::onnx_import::simplify(graph);
  });
}
