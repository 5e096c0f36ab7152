#include "kaas/models/onnx_unfused_plan.h"

#include <algorithm>
#include <functional>
#include <map>

#include "kaas/models/onnx_ops/op_def.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

UnfusedPlan::UnfusedPlan(const Queue& queue, const Graph& graph,
                         const std::vector<Shape>& max_shapes, ValueStorage& storage,
                         Precision precision)
    : queue_(queue), graph_(graph), storage_(storage) {
  const int end = static_cast<int>(graph.ops.size());
  std::vector<int> root(graph.values.size());
  for (size_t v = 0; v < root.size(); ++v) root[v] = static_cast<int>(v);
  for (const Op& op : graph.ops) {
    if (op.def->output_aliases_input) root[op.output] = root[op.inputs[0]];
  }
  std::vector<int> last_use(graph.values.size(), -1);
  for (int i = 0; i < end; ++i) {
    for (int in : graph.ops[i].inputs) {
      if (in >= 0) last_use[root[in]] = std::max(last_use[root[in]], i);
    }
  }
  for (const auto& [name, id] : graph.outputs) last_use[root[id]] = end;
  std::multimap<size_t, int> free_pool;  // capacity -> buffer
  for (int id : graph.inputs) storage.assign(id, storage.add(element_count(max_shapes[id])));
  for (int i = 0; i < end; ++i) {
    const Op& op = graph.ops[i];
    if (op.def->output_aliases_input) {
      storage.assign(op.output, storage.buffer_of(op.inputs[0]));
    } else {
      const size_t need = size_t(element_count(max_shapes[op.output]));
      const auto fit = free_pool.lower_bound(need);
      if (fit != free_pool.end()) {
        storage.assign(op.output, fit->second);
        free_pool.erase(fit);
      } else {
        storage.assign(op.output, storage.add(int64_t(need)));
      }
    }
    for (int in : op.inputs) {
      if (in < 0 || graph.values[root[in]].constant || last_use[root[in]] != i) continue;
      last_use[root[in]] = -2;  // freed once, even when read twice by this op
      const int buffer = storage.buffer_of(root[in]);
      free_pool.emplace(storage.capacity(buffer), buffer);
    }
  }
  for (const Op& op : graph.ops)
    op_lines_.push_back(op.op_type + " " + op.node + " -> " + shape_string(max_shapes[op.output]));
  if (precision != Precision::kFp32)
    reduced_ops_ = std::make_unique<ReducedOps>(queue, graph, max_shapes, precision);
}

std::vector<std::string> UnfusedPlan::precision_lines() const {
  if (!reduced_ops_) return {"precision fp32: every op"};
  return reduced_ops_->plan();
}

void UnfusedPlan::run(const std::vector<Shape>& shapes) const {
  const std::function<float*(int)> data_of = [this](int v) { return storage_.data(v); };
  const RunContext context{queue_, shapes, data_of};
  for (const Op& op : graph_.ops) {
    if (reduced_ops_ && reduced_ops_->run(context, op)) continue;
    if (op.def->run != nullptr) op.def->run(context, op);
  }
}

}  // namespace kaas::models::onnx_import
