// The entry points Triton looks up in libtriton_kaas.so (the only symbols it exports; the
// linker version script keeps everything else local). Every entry point turns exceptions into
// a Triton error: nothing escapes into the server.

#include <memory>
#include <string>

#include "kaas/common/error.h"
#include "kaas/server_adapter/triton/execute.h"
#include "kaas/server_adapter/triton/model_state.h"
#include "kaas/server_adapter/triton/triton_util.h"

namespace {

using kaas::triton::BackendOptions;
using kaas::triton::check;
using kaas::triton::InstanceState;
using kaas::triton::ModelState;

template <class Body>
TRITONSERVER_Error* guarded(Body&& body) {
  try {
    body();
    return nullptr;
  } catch (const std::exception& e) {
    return kaas::triton::to_triton_error(e);
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kaas: unknown exception");
  }
}

const char* kind_name(TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_CPU:
      return "KIND_CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU:
      return "KIND_GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL:
      return "KIND_MODEL";
    default:
      return "KIND_AUTO";
  }
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  return guarded([&] {
    uint32_t major = 0, minor = 0;
    check(TRITONBACKEND_ApiVersion(&major, &minor), "backend API version");
    if (major != kaas::triton::kBackendApiMajor || minor < kaas::triton::kBackendApiMinor)
      throw kaas::Error(kaas::ErrorCode::kUnimplemented,
                        "kaas backend needs Triton backend API " +
                            std::to_string(kaas::triton::kBackendApiMajor) + "." +
                            std::to_string(kaas::triton::kBackendApiMinor) +
                            " or a later minor version; this server has " + std::to_string(major) +
                            "." + std::to_string(minor));
    TRITONSERVER_Message* message = nullptr;
    check(TRITONBACKEND_BackendConfig(backend, &message), "backend config");  // Triton's
    auto options = std::make_unique<BackendOptions>(
        kaas::triton::parse_backend_options(kaas::triton::message_json(message)));
    KAAS_TRITON_LOG(INFO, "backend API " + std::to_string(major) + "." + std::to_string(minor) +
                              "; CPU instances on '" + options->cpu_backend + "', threads " +
                              (options->threads > 0 ? std::to_string(options->threads)
                                                    : std::string("OpenMP default")));
    check(TRITONBACKEND_BackendSetState(backend, options.get()), "backend state");
    options.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend) {
  return guarded([&] {
    void* state = nullptr;
    check(TRITONBACKEND_BackendState(backend, &state), "backend state");
    delete static_cast<BackendOptions*>(state);
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  return guarded([&] {
    TRITONBACKEND_Backend* backend = nullptr;
    void* options = nullptr;
    check(TRITONBACKEND_ModelBackend(model, &backend), "model backend");
    check(TRITONBACKEND_BackendState(backend, &options), "backend state");
    auto state = std::make_unique<ModelState>(model, *static_cast<BackendOptions*>(options));
    KAAS_TRITON_LOG(INFO, "model '" + state->name() + "' version " +
                              std::to_string(state->entry().version) + ": kind " +
                              state->entry().kind + ", max_batch_size " +
                              std::to_string(state->entry().config.max_batch_size()));
    check(TRITONBACKEND_ModelSetState(model, state.get()), "model state");
    state.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return guarded([&] {
    void* state = nullptr;
    check(TRITONBACKEND_ModelState(model, &state), "model state");
    delete static_cast<ModelState*>(state);
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return guarded([&] {
    const char* name = nullptr;
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
    int32_t device = 0;
    TRITONBACKEND_Model* model = nullptr;
    void* model_state = nullptr;
    check(TRITONBACKEND_ModelInstanceName(instance, &name), "instance name");
    check(TRITONBACKEND_ModelInstanceKind(instance, &kind), "instance kind");
    check(TRITONBACKEND_ModelInstanceDeviceId(instance, &device), "instance device");
    check(TRITONBACKEND_ModelInstanceModel(instance, &model), "instance model");
    check(TRITONBACKEND_ModelState(model, &model_state), "model state");
    auto state = std::make_unique<InstanceState>();
    state->name = name;
    state->model = static_cast<ModelState*>(model_state);
    state->triton = instance;
    state->backend = &state->model->instance_backend(kind);
    state->device = kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? device : 0;
    state->instance = state->model->make_instance(*state->backend, state->device);
    KAAS_TRITON_LOG(INFO, "instance " + state->name + " (" + kind_name(kind) + " device " +
                              std::to_string(device) + ") on kaas backend " +
                              std::string(state->backend->name()) + " device " +
                              std::to_string(state->device));
    check(TRITONBACKEND_ModelInstanceSetState(instance, state.get()), "instance state");
    state.release();
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  return guarded([&] {
    void* state = nullptr;
    check(TRITONBACKEND_ModelInstanceState(instance, &state), "instance state");
    delete static_cast<InstanceState*>(state);
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  // Only a failure before any request was touched may be returned (Triton then answers them);
  // after that, execute_requests answers and releases every request itself.
  void* state = nullptr;
  if (TRITONSERVER_Error* error = TRITONBACKEND_ModelInstanceState(instance, &state)) return error;
  if (state == nullptr)
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "kaas: instance has no state");
  try {
    kaas::triton::execute_requests(*static_cast<InstanceState*>(state), requests, request_count);
  } catch (const std::exception& e) {  // out of memory while answering: nothing left to do
    KAAS_TRITON_LOG(ERROR, std::string("execute: ") + e.what());
  }
  return nullptr;
}

}  // extern "C"
