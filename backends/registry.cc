#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/backend_list.h"
#include "kaas/build_config.h"
#include "kaas/common/error.h"

namespace kaas {

void* Backend::open_ipc_memory(std::span<const std::byte>, int) const {
  throw Error(ErrorCode::kUnimplemented,
              "backend '" + std::string(name()) + "' has no inter-process device memory");
}

void Backend::close_ipc_memory(void*) const {}

// Each compiled backend's runtime side, defined in its folder.
#define KAAS_DECLARE_BACKEND_INSTANCE(ns, id, macro, ...) \
  KAAS_IF_COMPILED(                                       \
      macro, namespace ns { const Backend& backend_instance(); })
KAAS_BACKEND_LIST(KAAS_DECLARE_BACKEND_INSTANCE)
#undef KAAS_DECLARE_BACKEND_INSTANCE

namespace {

struct CompiledBackend {
  const Backend* backend;
  int auto_preference;  // higher wins for "auto"; 0: never chosen automatically
};

const std::vector<CompiledBackend>& compiled_list() {
#define KAAS_COMPILED_BACKEND(ns, id, macro, preference, ...) \
  KAAS_IF_COMPILED(macro, CompiledBackend{&ns::backend_instance(), preference}, )
  static const std::vector<CompiledBackend> list{KAAS_BACKEND_LIST(KAAS_COMPILED_BACKEND)};
#undef KAAS_COMPILED_BACKEND
  return list;
}

}  // namespace

std::span<const Backend* const> compiled_backends() {
  static const std::vector<const Backend*> backends = [] {
    std::vector<const Backend*> list;
    for (const CompiledBackend& entry : compiled_list()) list.push_back(entry.backend);
    return list;
  }();
  return backends;
}

std::string backend_choices() {
  std::string choices = "auto";
  for (const Backend* b : compiled_backends()) choices += ", " + std::string(b->name());
  return choices;
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
  const CompiledBackend* best = nullptr;
  for (const CompiledBackend& entry : compiled_list()) {
    if (entry.auto_preference == 0 || !entry.backend->available()) continue;
    if (best == nullptr || entry.auto_preference > best->auto_preference) best = &entry;
  }
  // serial is always compiled and always available.
  return best != nullptr ? *best->backend : serial::backend_instance();
}

std::string_view to_string(BackendId id) {
#define KAAS_BACKEND_NAME_CASE(ns, enumerator, ...) \
  case BackendId::enumerator:                       \
    return #ns;
  switch (id) { KAAS_BACKEND_LIST(KAAS_BACKEND_NAME_CASE) }
#undef KAAS_BACKEND_NAME_CASE
  return "unknown";
}

std::string_view cuda_architectures() {
  return KAAS_CUDA_ARCHITECTURES;
}
std::string_view hip_architectures() {
  return KAAS_HIP_ARCHITECTURES;
}

}  // namespace kaas
