# tbb: kernels as oneTBB tasks in the caller's arena, for frameworks that schedule with TBB and
# ban OpenMP (CMSSW, art). Off under ThreadSanitizer (Debian's libtbb is not instrumented, so its
# task hand-overs would read as races). Its kernel objects call host_team.cc and need no TBB
# headers; its runtime does.
find_package(TBB QUIET CONFIG)
set(_kaas_tbb_default OFF)
if(TBB_FOUND AND NOT KAAS_TSAN)
  set(_kaas_tbb_default ON)
endif()
option(KAAS_ENABLE_TBB "Build the tbb backend (oneTBB)" ${_kaas_tbb_default})
if(KAAS_ENABLE_TBB)
  find_package(TBB REQUIRED CONFIG)
endif()
kaas_backend(tbb
  LAUNCH_HEADER kaas/backends/cpu/launch_tbb.h
  RUNTIME_SOURCES tbb_team.cc tbb_backend.cc
  LIBRARIES TBB::tbb)
