# The backend list and single-source compilation: every `*.kern.cc` is compiled once per enabled backend, each time
# with exactly one KAAS_BACKEND_* macro, into that backend's namespace.
#   serial, openmp, tbb, gpu_emu: the host C++ compiler (openmp adds OpenMP flags; tbb's
#        launches call host_team.cc, so its objects need no TBB headers)
#   cuda: nvcc, through a generated one-line .cu that includes the source
#   hip: hipcc -x hip, driven directly (CMake's HIP language needs a hip-lang package Debian
#        lacks)
#
# kaas_add_backend_objects(<target> SOURCES <files...> [BACKENDS <backends...>])
# adds the objects to the existing library <target> (and lists them in its KAAS_BACKEND_OBJECTS
# property); BACKENDS defaults to all enabled ones.

# The backends, in the order of KAAS_BACKEND_LIST (backends/backend_list.h, checked by
# test_core). serial is always built; the others follow KAAS_ENABLE_<BACKEND>.
set(KAAS_ALL_BACKENDS serial openmp tbb gpu_emu cuda hip)
set(KAAS_ENABLE_SERIAL ON)
set(KAAS_BACKENDS)
set(KAAS_HAVE_BACKEND_DEFINES)
foreach(backend IN LISTS KAAS_ALL_BACKENDS)
  string(TOUPPER ${backend} upper)
  set(KAAS_HAVE_${upper} 0)
  if(KAAS_ENABLE_${upper})
    set(KAAS_HAVE_${upper} 1)
    list(APPEND KAAS_BACKENDS ${backend})
  endif()
  string(APPEND KAAS_HAVE_BACKEND_DEFINES "#define KAAS_HAVE_${upper} ${KAAS_HAVE_${upper}}\n")
endforeach()
set(KAAS_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_config.h.in ${KAAS_GENERATED_DIR}/kaas/build_config.h
               @ONLY)

set(_kaas_include_dirs ${PROJECT_SOURCE_DIR} ${KAAS_GENERATED_DIR})

function(kaas_add_backend_objects target)
  cmake_parse_arguments(ARG "" "" "SOURCES;BACKENDS" ${ARGN})
  if(NOT ARG_BACKENDS)
    set(ARG_BACKENDS ${KAAS_BACKENDS})
  endif()
  foreach(backend IN LISTS ARG_BACKENDS)
    if(NOT backend IN_LIST KAAS_BACKENDS)
      continue()
    endif()
    string(TOUPPER ${backend} upper)
    set(objlib ${target}_${backend})
    if(backend STREQUAL "cuda")
      set(shims)
      foreach(src IN LISTS ARG_SOURCES)
        get_filename_component(abs ${src} ABSOLUTE)
        file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
        string(REPLACE "/" "__" flat ${rel})
        set(shim ${CMAKE_CURRENT_BINARY_DIR}/cuda_shims/${flat}.cu)
        file(CONFIGURE OUTPUT ${shim} CONTENT "#include \"${abs}\"\n")
        list(APPEND shims ${shim})
      endforeach()
      add_library(${objlib} OBJECT ${shims})
      target_compile_options(${objlib} PRIVATE
        --expt-relaxed-constexpr -Xptxas=-v -Xcompiler=-Wall,-Wextra
        $<$<BOOL:${KAAS_WERROR}>:-Werror=all-warnings>)
      set_target_properties(${objlib} PROPERTIES CUDA_ARCHITECTURES "${KAAS_CUDA_ARCHITECTURES}")
      target_link_libraries(${objlib} PRIVATE CUDA::cudart)
    elseif(backend STREQUAL "hip")
      set(objects)
      set(arch_flags)
      foreach(arch IN LISTS KAAS_HIP_ARCHITECTURES)
        list(APPEND arch_flags --offload-arch=${arch})
      endforeach()
      set(hip_flags -O3 -std=c++20 -fPIC -Wall -Wextra)
      if(KAAS_WERROR)
        list(APPEND hip_flags -Werror)
      endif()
      foreach(src IN LISTS ARG_SOURCES)
        get_filename_component(abs ${src} ABSOLUTE)
        file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
        string(REPLACE "/" "__" flat ${rel})
        set(obj ${CMAKE_CURRENT_BINARY_DIR}/hip_objects/${flat}.o)
        add_custom_command(
          OUTPUT ${obj}
          COMMAND ${KAAS_HIPCC} -x hip ${hip_flags} ${arch_flags} -DKAAS_BACKEND_HIP=1
                  -I${PROJECT_SOURCE_DIR} -I${KAAS_GENERATED_DIR} -MD -MF ${obj}.d
                  -c ${abs} -o ${obj}
          DEPENDS ${abs}
          DEPFILE ${obj}.d
          COMMENT "hipcc (${KAAS_HIP_ARCHITECTURES}) ${rel}"
          VERBATIM)
        list(APPEND objects ${obj})
      endforeach()
      target_sources(${target} PRIVATE ${objects})
      set_property(TARGET ${target} APPEND PROPERTY KAAS_BACKEND_OBJECTS ${objects})
      target_link_libraries(${target} PUBLIC hip::host)
      continue()
    else()
      add_library(${objlib} OBJECT ${ARG_SOURCES})
      if(KAAS_CPU_ARCH)
        target_compile_options(${objlib} PRIVATE -march=${KAAS_CPU_ARCH})
      endif()
      if(backend STREQUAL "openmp")
        target_link_libraries(${objlib} PRIVATE OpenMP::OpenMP_CXX)
      endif()
    endif()
    target_compile_definitions(${objlib} PRIVATE KAAS_BACKEND_${upper}=1)
    target_include_directories(${objlib} PRIVATE ${_kaas_include_dirs})
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${objlib}>)
    # $<TARGET_OBJECTS:${target}> leaves these out; the shared libraries of the installed
    # package (KaasPackage.cmake) take them from here.
    set_property(TARGET ${target} APPEND PROPERTY KAAS_BACKEND_OBJECTS $<TARGET_OBJECTS:${objlib}>)
    if(backend STREQUAL "openmp")
      target_link_libraries(${target} PUBLIC OpenMP::OpenMP_CXX)
    elseif(backend STREQUAL "cuda")
      target_link_libraries(${target} PUBLIC CUDA::cudart)
    endif()
  endforeach()
endfunction()
