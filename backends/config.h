#pragma once
// Puts the including translation unit into exactly one backend. CMake compiles every
// `*.kern.cc` once per enabled backend with exactly one KAAS_BACKEND_<MACRO> defined (the
// suffixes of KAAS_BACKEND_LIST); the backend's namespace is `kaas::KAAS_BACKEND_NS` and its
// launch() comes from KAAS_BACKEND_LAUNCH_HEADER. One block per backend: what differs between
// them at compile time is said here and nowhere else.

#include "kaas/backends/portability.h"

#if defined(KAAS_BACKEND_SERIAL)
#define KAAS_BACKEND_NS serial
#define KAAS_BACKEND_IS_GPU 0
#define KAAS_BACKEND_LAUNCH_HEADER "kaas/backends/cpu/launch_serial.h"
#endif

#if defined(KAAS_BACKEND_OPENMP)
#ifdef KAAS_BACKEND_NS
#error "kaas: more than one backend selected (openmp and another)"
#endif
#define KAAS_BACKEND_NS openmp
#define KAAS_BACKEND_IS_GPU 0
#define KAAS_BACKEND_LAUNCH_HEADER "kaas/backends/cpu/launch_openmp.h"
#endif

#if defined(KAAS_BACKEND_TBB)
#ifdef KAAS_BACKEND_NS
#error "kaas: more than one backend selected (tbb and another)"
#endif
#define KAAS_BACKEND_NS tbb
#define KAAS_BACKEND_IS_GPU 0
#define KAAS_BACKEND_LAUNCH_HEADER "kaas/backends/cpu/launch_tbb.h"
#endif

#if defined(KAAS_BACKEND_GPU_EMU)
#ifdef KAAS_BACKEND_NS
#error "kaas: more than one backend selected (gpu_emu and another)"
#endif
#define KAAS_BACKEND_NS gpu_emu
#define KAAS_BACKEND_IS_GPU 0
#define KAAS_BACKEND_LAUNCH_HEADER "kaas/backends/gpu_emu/launch.h"
#endif

#if defined(KAAS_BACKEND_CUDA)
#ifdef KAAS_BACKEND_NS
#error "kaas: more than one backend selected (cuda and another)"
#endif
#define KAAS_BACKEND_NS cuda
#define KAAS_BACKEND_IS_GPU 1
#define KAAS_BACKEND_LAUNCH_HEADER "kaas/backends/gpu/launch.h"
#endif

#if defined(KAAS_BACKEND_HIP)
#ifdef KAAS_BACKEND_NS
#error "kaas: more than one backend selected (hip and another)"
#endif
#define KAAS_BACKEND_NS hip
#define KAAS_BACKEND_IS_GPU 1
#define KAAS_BACKEND_LAUNCH_HEADER "kaas/backends/gpu/launch.h"
#endif

#ifndef KAAS_BACKEND_NS
#error "kaas: no backend selected; define exactly one KAAS_BACKEND_<MACRO> of KAAS_BACKEND_LIST"
#endif

#if KAAS_BACKEND_IS_GPU && !KAAS_GPU_COMPILER
#error "kaas: a GPU backend must be compiled by nvcc or hipcc"
#endif

// Marks a kernel functor's call operator: device code on GPU backends, plain code on CPU ones.
#if KAAS_BACKEND_IS_GPU
#define KAAS_KERNEL __device__
#define KAAS_DEVICE __device__
#else
#define KAAS_KERNEL
#define KAAS_DEVICE
#endif
