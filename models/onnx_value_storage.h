#pragma once
// The device storage of an ONNX model's values, which its plans share: the graph's constants
// uploaded once, and buffers for its inputs, intermediates and outputs; several values may share
// a buffer (by liveness, or a Flatten aliasing its input). Internal to models/.

#include <cstdint>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/backends/queue.h"
#include "kaas/models/onnx_graph.h"

namespace kaas::models::onnx_import {

class ValueStorage {
 public:
  // Uploads every float constant an op reads; the other values have no buffer yet.
  ValueStorage(const Queue& queue, const Graph& graph);

  // A new buffer of `elements` floats (at least one); returns its index.
  int add(int64_t elements);
  void assign(int value, int buffer) { buffer_of_[size_t(value)] = buffer; }
  int buffer_of(int value) const { return buffer_of_[size_t(value)]; }
  size_t capacity(int buffer) const { return buffers_[size_t(buffer)].size(); }

  const DeviceBuffer<float>& storage(int value) const { return buffers_[size_t(buffer_of(value))]; }
  float* data(int value) const { return storage(value).data(); }

  // Frees the buffers no input, output or constant of `graph` uses (the intermediates of a plan
  // that was measured and not chosen).
  void release_intermediates(const Graph& graph);

 private:
  const Queue& queue_;
  std::vector<DeviceBuffer<float>> buffers_;
  std::vector<int> buffer_of_;  // per value; -1 without a buffer
};

}  // namespace kaas::models::onnx_import
