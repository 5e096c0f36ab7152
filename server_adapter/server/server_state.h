#pragma once
// What both front ends share: the repository, readiness, server identity.

#include <atomic>
#include <string>
#include <vector>

#include "kaas/build_config.h"
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
};

// The platform a model reports in metadata: config platform, else its backend.
inline std::string model_platform(const ServedModel& m) {
  return m.config.platform().empty() ? m.config.backend() : m.config.platform();
}

}  // namespace kaas::server
