# gpu_emu: the GPU kernels' group-shared memory and barriers on CPU fibers. It is what tests the
# GPU code paths without a GPU; the tests need it, a build without them does not (the run
# command leaves it out: ~45 CPU-s of compiles).
option(KAAS_ENABLE_GPU_EMU "Build the emulated-GPU backend (gpu_emu, for tests)" ON)
if(KAAS_BUILD_TESTS AND NOT KAAS_ENABLE_GPU_EMU)
  message(FATAL_ERROR "KAAS_BUILD_TESTS needs KAAS_ENABLE_GPU_EMU: the tests run the GPU kernels' "
                      "logic on the emulated GPU")
endif()
kaas_backend(gpu_emu
  LAUNCH_HEADER kaas/backends/gpu_emu/launch.h
  RUNTIME_SOURCES scheduler.cc backend.cc)
