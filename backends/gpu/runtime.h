#pragma once
// The thin mapping between the CUDA and HIP runtimes: the GPU backend is written once against
// these names and compiled by nvcc (kaas::cuda) and hipcc (kaas::hip).

#include <cstring>

#include "kaas/backends/config.h"

#if defined(KAAS_BACKEND_CUDA)
#include <cuda_runtime.h>
#elif defined(KAAS_BACKEND_HIP)
#include <hip/hip_runtime.h>
#else
#error "backends/gpu/runtime.h is only for the cuda and hip backends"
#endif

namespace kaas::KAAS_BACKEND_NS::rt {

#if defined(KAAS_BACKEND_CUDA)
using error_t = cudaError_t;
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
using device_prop_t = cudaDeviceProp;
inline constexpr error_t kSuccess = cudaSuccess;
inline constexpr const char* kRuntimeName = "CUDA";
inline const char* error_string(error_t e) {
  return cudaGetErrorString(e);
}
inline error_t get_last_error() {
  return cudaGetLastError();
}
inline error_t device_count(int* n) {
  return cudaGetDeviceCount(n);
}
inline error_t set_device(int d) {
  return cudaSetDevice(d);
}
inline error_t device_properties(device_prop_t* p, int d) {
  return cudaGetDeviceProperties(p, d);
}
inline error_t malloc_device(void** p, size_t bytes) {
  return cudaMalloc(p, bytes);
}
inline error_t free_device(void* p) {
  return cudaFree(p);
}
inline error_t malloc_pinned(void** p, size_t bytes) {
  return cudaMallocHost(p, bytes);
}
inline error_t free_pinned(void* p) {
  return cudaFreeHost(p);
}
inline error_t stream_create(stream_t* s) {
  return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
}
inline error_t stream_destroy(stream_t s) {
  return cudaStreamDestroy(s);
}
inline error_t stream_synchronize(stream_t s) {
  return cudaStreamSynchronize(s);
}
inline error_t event_create(event_t* e) {
  return cudaEventCreate(e);
}
inline error_t event_destroy(event_t e) {
  return cudaEventDestroy(e);
}
inline error_t event_record(event_t e, stream_t s) {
  return cudaEventRecord(e, s);
}
inline error_t event_synchronize(event_t e) {
  return cudaEventSynchronize(e);
}
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) {
  return cudaEventElapsedTime(ms, a, b);
}
inline error_t memcpy_h2d(void* d, const void* s, size_t n, stream_t st) {
  return cudaMemcpyAsync(d, s, n, cudaMemcpyHostToDevice, st);
}
inline error_t memcpy_d2h(void* d, const void* s, size_t n, stream_t st) {
  return cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToHost, st);
}
inline error_t memcpy_d2d(void* d, const void* s, size_t n, stream_t st) {
  return cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, st);
}
inline constexpr size_t kIpcHandleBytes = sizeof(cudaIpcMemHandle_t);
inline error_t ipc_open(void** p, const void* handle) {
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle, sizeof(h));
  return cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
}
inline error_t ipc_close(void* p) {
  return cudaIpcCloseMemHandle(p);
}
inline const char* arch_name(const device_prop_t&) {
  return nullptr;
}  // from major.minor
#else
using error_t = hipError_t;
using stream_t = hipStream_t;
using event_t = hipEvent_t;
using device_prop_t = hipDeviceProp_t;
inline constexpr error_t kSuccess = hipSuccess;
inline constexpr const char* kRuntimeName = "HIP";
inline const char* error_string(error_t e) {
  return hipGetErrorString(e);
}
inline error_t get_last_error() {
  return hipGetLastError();
}
inline error_t device_count(int* n) {
  return hipGetDeviceCount(n);
}
inline error_t set_device(int d) {
  return hipSetDevice(d);
}
inline error_t device_properties(device_prop_t* p, int d) {
  return hipGetDeviceProperties(p, d);
}
inline error_t malloc_device(void** p, size_t bytes) {
  return hipMalloc(p, bytes);
}
inline error_t free_device(void* p) {
  return hipFree(p);
}
inline error_t malloc_pinned(void** p, size_t bytes) {
  return hipHostMalloc(p, bytes, hipHostMallocDefault);
}
inline error_t free_pinned(void* p) {
  return hipHostFree(p);
}
inline error_t stream_create(stream_t* s) {
  return hipStreamCreateWithFlags(s, hipStreamNonBlocking);
}
inline error_t stream_destroy(stream_t s) {
  return hipStreamDestroy(s);
}
inline error_t stream_synchronize(stream_t s) {
  return hipStreamSynchronize(s);
}
inline error_t event_create(event_t* e) {
  return hipEventCreate(e);
}
inline error_t event_destroy(event_t e) {
  return hipEventDestroy(e);
}
inline error_t event_record(event_t e, stream_t s) {
  return hipEventRecord(e, s);
}
inline error_t event_synchronize(event_t e) {
  return hipEventSynchronize(e);
}
inline error_t event_elapsed_ms(float* ms, event_t a, event_t b) {
  return hipEventElapsedTime(ms, a, b);
}
inline error_t memcpy_h2d(void* d, const void* s, size_t n, stream_t st) {
  return hipMemcpyAsync(d, s, n, hipMemcpyHostToDevice, st);
}
inline error_t memcpy_d2h(void* d, const void* s, size_t n, stream_t st) {
  return hipMemcpyAsync(d, s, n, hipMemcpyDeviceToHost, st);
}
inline error_t memcpy_d2d(void* d, const void* s, size_t n, stream_t st) {
  return hipMemcpyAsync(d, s, n, hipMemcpyDeviceToDevice, st);
}
inline constexpr size_t kIpcHandleBytes = sizeof(hipIpcMemHandle_t);
inline error_t ipc_open(void** p, const void* handle) {
  hipIpcMemHandle_t h;
  std::memcpy(&h, handle, sizeof(h));
  return hipIpcOpenMemHandle(p, h, hipIpcMemLazyEnablePeerAccess);
}
inline error_t ipc_close(void* p) {
  return hipIpcCloseMemHandle(p);
}
inline const char* arch_name(const device_prop_t& p) {
  return p.gcnArchName;
}
#endif

}  // namespace kaas::KAAS_BACKEND_NS::rt
