// cuBLAS: row-major C = A.B is column-major C^T = B^T.A^T, so the operands swap places.
//
// The library is opened when the CUDA backend first asks for it, not linked: libcublas pulls in
// libcublasLt, whose ~375k relocations cost every process that links it ~26k page faults, 210 MB
// of resident memory and ~0.1 CPU-s at start, on CPU-only nodes too (bench/results/
// test-command-cpu.md). Only the types come from the header; the four entry points are looked up.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>
#include <unordered_map>

#include "kaas/backends/blas/vendor_blas.h"
#include "kaas/common/error.h"

namespace kaas::blas {

namespace {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  std::string unavailable;  // why it could not be loaded; empty when it was
};

template <typename Function>
bool look_up(void* library, const char* symbol, Function& function, std::string& unavailable) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  if (function == nullptr) unavailable = std::string("cuBLAS has no ") + symbol;
  return function != nullptr;
}

// By soname first (the loader's paths, ld.so.conf on a CUDA node), then in the toolkit this
// build was made with.
CublasApi load_cublas() {
  CublasApi api;
  void* library = dlopen(KAAS_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();  // the soname's, the one a CUDA node is expected to resolve
    api.unavailable = std::string("cuBLAS (" KAAS_CUBLAS_SONAME ") could not be loaded: ") +
                      (reason != nullptr ? reason : "unknown reason");
    library = dlopen(KAAS_CUBLAS_BUILD_PATH, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return api;
    api.unavailable.clear();
  }
  // Never closed: per-thread handles are destroyed at thread exit, after any static teardown.
  if (look_up(library, "cublasCreate_v2", api.create, api.unavailable) &&
      look_up(library, "cublasDestroy_v2", api.destroy, api.unavailable) &&
      look_up(library, "cublasSetStream_v2", api.set_stream, api.unavailable)) {
    look_up(library, "cublasSgemm_v2", api.sgemm, api.unavailable);
  }
  return api;
}

const CublasApi& cublas() {
  static const CublasApi api = load_cublas();
  return api;
}

void check(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(ErrorCode::kInternal,
              std::string("cuBLAS ") + call + " failed with status " + std::to_string(status));
}

// One handle per thread and device (cuBLAS handles are not meant to be shared between
// threads); they live until the thread ends.
cublasHandle_t handle_for(int device) {
  struct Handles {
    std::unordered_map<int, cublasHandle_t> by_device;
    ~Handles() {
      for (auto& [device, handle] : by_device) cublas().destroy(handle);
    }
  };
  thread_local Handles handles;
  auto it = handles.by_device.find(device);
  if (it != handles.by_device.end()) return it->second;
  cublasHandle_t handle{};
  check(cublas().create(&handle), "cublasCreate");
  handles.by_device.emplace(device, handle);
  return handle;
}

}  // namespace

std::string cublas_unavailable() {
  return cublas().unavailable;
}

void cublas_sgemm(const Queue& queue, const SgemmCall& call) {
  const CublasApi& api = cublas();
  if (!api.unavailable.empty()) throw Error(ErrorCode::kUnavailable, api.unavailable);
  if (cudaSetDevice(queue.device()) != cudaSuccess) {
    throw Error(ErrorCode::kInternal, "cuBLAS: cudaSetDevice failed");
  }
  cublasHandle_t handle = handle_for(queue.device());
  check(api.set_stream(handle, static_cast<cudaStream_t>(queue.native_stream())),
        "cublasSetStream");
  check(api.sgemm(handle, call.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                  call.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(call.n),
                  static_cast<int>(call.m), static_cast<int>(call.k), &call.alpha, call.b,
                  static_cast<int>(call.ldb), call.a, static_cast<int>(call.lda), &call.beta,
                  call.c, static_cast<int>(call.ldc)),
        "cublasSgemm");
}

const char* cublas_name() {
  return "cuBLAS";
}

}  // namespace kaas::blas
