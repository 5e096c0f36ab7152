# cuda: nvcc, on by default where it is found. sm_70 and older need CUDA < 13.
include(CheckLanguage)
check_language(CUDA)
set(_kaas_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(_kaas_cuda_default ON)
endif()
option(KAAS_ENABLE_CUDA "Build the CUDA backend (needs nvcc)" ${_kaas_cuda_default})
set(KAAS_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures (sm_70 and older need CUDA < 13)")
if(KAAS_ENABLE_CUDA)
  # The launcher keeps ptxas's resource report per object (<object>.ptxas.txt).
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${PROJECT_SOURCE_DIR}/scripts/nvcc_report.sh)
  set(CMAKE_CUDA_ARCHITECTURES ${KAAS_CUDA_ARCHITECTURES})
  enable_language(CUDA)
  # CMake 3.25 predates nvcc's C++20 support; tell it the flag.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
endif()
kaas_backend(cuda GPU COMPILER nvcc
  LAUNCH_HEADER kaas/backends/gpu/launch.h
  RUNTIME_OBJECTS backend.cc
  LIBRARIES CUDA::cudart)
