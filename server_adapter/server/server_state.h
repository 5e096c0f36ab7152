#pragma once
// What both front ends share: the repository, readiness, server identity.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kaas/build_config.h"
#include "kaas/models/tensor.h"
#include "kaas/server_adapter/server/memory_trimmer.h"
#include "kaas/server_adapter/server/model_repository.h"
#include "kaas/server_adapter/server/shared_memory.h"

namespace kaas::server {

inline constexpr const char* kServerName = "kaas";
inline constexpr const char* kServerVersion = KAAS_VERSION;  // the CMake project version

// Triton extension names kaas implements; the shared-memory ones only while client shared memory
// is allowed (--allow-client-shm), as Triton advertises them.
inline std::vector<std::string> server_extensions(bool client_shm) {
  std::vector<std::string> extensions = {"model_configuration",
                                         "binary_tensor_data",
                                         "statistics",
                                         "model_repository",
                                         "model_repository(unload_dependents)",
                                         "parameters"};
  if (client_shm) {
    extensions.emplace_back("system_shared_memory");
    extensions.emplace_back("cuda_shared_memory");
  }
  return extensions;
}

struct ServerState {
  ModelRepository* repository = nullptr;
  // Advertised readiness (ServerReady, /v2/health/ready, grpc.health.v1): false before start
  // and from the start of a drain, so balancers and clients move away.
  std::atomic<bool> ready{false};
  // Inference accepted: true from start until shutdown, through the drain period.
  std::atomic<bool> accepting{false};
  std::string backend_name;
  MemoryTrimmer* memory_trimmer = nullptr;        // told the size of every inference request
  SharedMemoryRegistry* shared_memory = nullptr;  // regions registered by same-node clients
  // The largest inference request (its tensors' bytes) any model may be sent
  // (--max-request-bytes); request_byte_limit narrows it per model.
  size_t max_request_bytes = size_t(64) << 20;
  // The largest reply a request may ask for (--max-response-bytes): checked before the model
  // runs wherever the outputs' size follows from the inputs.
  size_t max_response_bytes = size_t(64) << 20;
};

// The most tensor bytes one request to a model with this signature can carry: max batch x the
// item bytes of every input when all their dimensions are fixed, else (a dimension any size: kNN
// points, a plane image) `cap`; never more than `cap`. Compressed bodies stop inflating there.
inline size_t request_byte_limit(const models::ModelSignature& signature, size_t cap) {
  size_t bytes = 0;
  for (const auto& input : signature.inputs) {
    size_t item = models::element_size(input.dtype);
    const size_t first = signature.max_batch > 0 ? 1 : 0;  // the batch dimension
    for (size_t d = first; d < input.shape.size(); ++d) {
      if (input.shape[d] < 0) return cap;
      item *= size_t(input.shape[d]);
      if (item > cap) return cap;
    }
    bytes += item * size_t(std::max<int64_t>(signature.max_batch, 1));
    if (bytes > cap) return cap;
  }
  return bytes;
}

// The platform a model reports in metadata: config platform, else its backend.
inline std::string model_platform(const ServedModel& m) {
  return m.config.platform().empty() ? m.config.backend() : m.config.platform();
}

}  // namespace kaas::server
