#include <array>
#include <string>

#include "kaas/backends/backend.h"
#include "kaas/backends/error.h"
#include "kaas/build_config.h"

namespace kaas {

namespace serial {
const Backend& backend_instance();
}
#if KAAS_HAVE_OPENMP
namespace openmp {
const Backend& backend_instance();
}
#endif
namespace gpu_emu {
const Backend& backend_instance();
}
#if KAAS_HAVE_CUDA
namespace cuda {
const Backend& backend_instance();
}
#endif
#if KAAS_HAVE_HIP
namespace hip {
const Backend& backend_instance();
}
#endif

std::span<const Backend* const> compiled_backends() {
  static const auto backends = std::to_array<const Backend*>({
    &serial::backend_instance(),
#if KAAS_HAVE_OPENMP
        &openmp::backend_instance(),
#endif
        &gpu_emu::backend_instance(),
#if KAAS_HAVE_CUDA
        &cuda::backend_instance(),
#endif
#if KAAS_HAVE_HIP
        &hip::backend_instance(),
#endif
  });
  return backends;
}

const Backend& find_backend(std::string_view name) {
  if (name == "auto") return default_backend();
  std::string known;
  for (const Backend* b : compiled_backends()) {
    if (b->name() == name) return *b;
    if (!known.empty()) known += ", ";
    known += b->name();
  }
  throw Error(ErrorCode::kNotFound,
              "backend: expected one of auto, " + known + ", received '" + std::string(name) + "'");
}

const Backend& default_backend() {
  for (BackendId preferred : {BackendId::kCuda, BackendId::kHip, BackendId::kOpenmp}) {
    for (const Backend* b : compiled_backends()) {
      if (b->id() == preferred && b->available()) return *b;
    }
  }
  return serial::backend_instance();
}

std::string_view to_string(BackendId id) {
  switch (id) {
    case BackendId::kSerial:
      return "serial";
    case BackendId::kOpenmp:
      return "openmp";
    case BackendId::kGpuEmu:
      return "gpu_emu";
    case BackendId::kCuda:
      return "cuda";
    case BackendId::kHip:
      return "hip";
  }
  return "unknown";
}

std::string_view cuda_architectures() {
  return KAAS_CUDA_ARCHITECTURES;
}
std::string_view hip_architectures() {
  return KAAS_HIP_ARCHITECTURES;
}

}  // namespace kaas
