# hip: hipcc, on by default where it is found.
find_program(KAAS_HIPCC hipcc)
set(_kaas_hip_default OFF)
if(KAAS_HIPCC)
  set(_kaas_hip_default ON)
endif()
option(KAAS_ENABLE_HIP "Build the HIP backend (needs hipcc)" ${_kaas_hip_default})
set(KAAS_HIP_ARCHITECTURES "gfx90a;gfx940" CACHE STRING "HIP offload architectures")
if(KAAS_ENABLE_HIP)
  find_package(hip CONFIG REQUIRED)
endif()
kaas_backend(hip GPU COMPILER hipcc
  LAUNCH_HEADER kaas/backends/gpu/launch.h
  RUNTIME_OBJECTS backend.cc
  LIBRARIES hip::host)
