// cuBLAS: row-major C = A.B is column-major C^T = B^T.A^T, so the operands swap places.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <unordered_map>

#include "kaas/backends/blas/vendor_blas.h"
#include "kaas/common/error.h"

namespace kaas::blas {

namespace {

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
      for (auto& [device, handle] : by_device) cublasDestroy(handle);
    }
  };
  thread_local Handles handles;
  auto it = handles.by_device.find(device);
  if (it != handles.by_device.end()) return it->second;
  cublasHandle_t handle{};
  check(cublasCreate(&handle), "cublasCreate");
  handles.by_device.emplace(device, handle);
  return handle;
}

}  // namespace

void cublas_sgemm(const Queue& queue, const SgemmCall& call) {
  if (cudaSetDevice(queue.device()) != cudaSuccess) {
    throw Error(ErrorCode::kInternal, "cuBLAS: cudaSetDevice failed");
  }
  cublasHandle_t handle = handle_for(queue.device());
  check(cublasSetStream(handle, static_cast<cudaStream_t>(queue.native_stream())),
        "cublasSetStream");
  check(cublasSgemm(handle, call.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
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
