# openmp: kernels on an OpenMP team of the caller's requested size (libgomp with g++, libomp with
# clang++).
find_package(OpenMP QUIET COMPONENTS CXX)
option(KAAS_ENABLE_OPENMP "Build the OpenMP backend" ${OpenMP_CXX_FOUND})
if(KAAS_ENABLE_OPENMP)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
endif()
kaas_backend(openmp
  LAUNCH_HEADER kaas/backends/cpu/launch_openmp.h
  RUNTIME_SOURCES openmp_backend.cc
  LIBRARIES OpenMP::OpenMP_CXX)
