#include "kaas/models/onnx_value_storage.h"

#include <algorithm>

namespace kaas::models::onnx_import {

ValueStorage::ValueStorage(const Queue& queue, const Graph& graph)
    : queue_(queue), buffer_of_(graph.values.size(), -1) {
  const auto uses = use_counts(graph);
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const auto& value = graph.values[v];
    if (!value.constant || value.is_int64 || uses[v] == 0) continue;
    buffer_of_[v] = static_cast<int>(buffers_.size());
    buffers_.push_back(to_device(queue_, value.data));
  }
  queue_.wait();
}

int ValueStorage::add(int64_t elements) {
  buffers_.push_back(make_device_buffer<float>(queue_, size_t(std::max<int64_t>(elements, 1))));
  return static_cast<int>(buffers_.size()) - 1;
}

void ValueStorage::release_intermediates(const Graph& graph) {
  std::vector<bool> keep(buffers_.size(), false);
  for (int id : graph.inputs) keep[size_t(buffer_of(id))] = true;
  for (const auto& [name, id] : graph.outputs) keep[size_t(buffer_of(id))] = true;
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].constant && buffer_of_[v] >= 0) keep[size_t(buffer_of_[v])] = true;
  for (size_t b = 0; b < buffers_.size(); ++b)
    if (!keep[b]) buffers_[b] = {};
}

}  // namespace kaas::models::onnx_import
