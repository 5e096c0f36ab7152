# The backends and single-source compilation: every `*.kern.cc` is compiled once per enabled
# backend, each time with exactly one KAAS_BACKEND_* macro, into that backend's namespace.
#
# The names, in order, come from KAAS_BACKEND_LIST (backends/backend_list.h). Each backend
# describes itself in its folder, backends/<folder>/<name>.cmake: it defines its option
# KAAS_ENABLE_<NAME> (finding what it needs) and calls
#   kaas_backend(<name> [GPU] [COMPILER host|nvcc|hipcc] LAUNCH_HEADER <header>
#                [RUNTIME_SOURCES <files...>] [RUNTIME_OBJECTS <files...>] [LIBRARIES <targets...>])
#     GPU              device code (KAAS_BACKEND_IS_GPU 1; nvcc or hipcc must compile it)
#     COMPILER         host: the C++ compiler (default); nvcc: through a generated .cu that
#                      includes the source (a batch of them in a unity build); hipcc: hipcc -x hip,
#                      driven directly (CMake's HIP language needs a hip-lang package Debian lacks)
#     LAUNCH_HEADER    its launch(), as "kaas/backends/..." (KAAS_BACKEND_LAUNCH_HEADER)
#     RUNTIME_SOURCES  host sources of its runtime side, added to kaas_backends
#     RUNTIME_OBJECTS  runtime sources compiled as the backend's own objects (GPU runtimes)
#     LIBRARIES        what its runtime and kernel objects link (OpenMP, oneTBB, the GPU runtime)
# From these: KAAS_BACKENDS (the enabled ones), KAAS_HAVE_<NAME> (0 or 1, for
# kaas/build_config.h) and the generated kaas/backend_config.h (each backend's block for
# backends/config.h).
#
# kaas_add_backend_objects(<target> SOURCES <files...> [BACKENDS <backends...>])
# adds the objects to the existing library <target> (and lists them in its KAAS_BACKEND_OBJECTS
# property); BACKENDS defaults to all enabled ones. With CMAKE_UNITY_BUILD on, nvcc and hipcc
# get the sources in batches of CMAKE_UNITY_BUILD_BATCH_SIZE, as the host compiler does (CMake
# 3.25 batches only C and C++): each nvcc or hipcc call pays ~6-8 s of its own (runtime headers
# parsed for the host and each architecture, its tool chain started), whatever the kernel.

set(KAAS_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
set(_kaas_include_dirs ${PROJECT_SOURCE_DIR} ${KAAS_GENERATED_DIR})

function(kaas_backend name)
  cmake_parse_arguments(ARG "GPU" "COMPILER;LAUNCH_HEADER"
                        "RUNTIME_SOURCES;RUNTIME_OBJECTS;LIBRARIES" ${ARGN})
  string(TOUPPER ${name} upper)
  if(NOT ARG_LAUNCH_HEADER)
    message(FATAL_ERROR "kaas_backend(${name}): LAUNCH_HEADER is required")
  endif()
  if(NOT DEFINED KAAS_ENABLE_${upper})
    message(FATAL_ERROR "kaas_backend(${name}): ${CMAKE_CURRENT_LIST_FILE} must define "
                        "KAAS_ENABLE_${upper} first")
  endif()
  if(NOT ARG_COMPILER)
    set(ARG_COMPILER host)
  endif()
  if(NOT ARG_COMPILER MATCHES "^(host|nvcc|hipcc)$")
    message(FATAL_ERROR "kaas_backend(${name}): COMPILER ${ARG_COMPILER}: expected host, nvcc or hipcc")
  endif()
  set(gpu 0)
  if(ARG_GPU)
    set(gpu 1)
  endif()
  foreach(kind RUNTIME_SOURCES RUNTIME_OBJECTS)
    set(absolute)
    foreach(source IN LISTS ARG_${kind})
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
      list(APPEND absolute ${source})
    endforeach()
    set(KAAS_BACKEND_${upper}_${kind} ${absolute} PARENT_SCOPE)
  endforeach()
  set(KAAS_BACKEND_${upper}_GPU ${gpu} PARENT_SCOPE)
  set(KAAS_BACKEND_${upper}_COMPILER ${ARG_COMPILER} PARENT_SCOPE)
  set(KAAS_BACKEND_${upper}_LAUNCH_HEADER ${ARG_LAUNCH_HEADER} PARENT_SCOPE)
  set(KAAS_BACKEND_${upper}_LIBRARIES ${ARG_LIBRARIES} PARENT_SCOPE)
  set(KAAS_BACKEND_${upper}_DECLARED ON PARENT_SCOPE)
endfunction()

# The names, in the order of the list (X(name, ...) lines).
file(READ ${PROJECT_SOURCE_DIR}/backends/backend_list.h _kaas_list_text)
string(REGEX MATCHALL "\n  X\\([a-z_0-9]+," _kaas_list_entries "${_kaas_list_text}")
set(KAAS_ALL_BACKENDS)
foreach(entry IN LISTS _kaas_list_entries)
  string(REGEX REPLACE "^\n  X\\(([a-z_0-9]+),$" "\\1" name "${entry}")
  list(APPEND KAAS_ALL_BACKENDS ${name})
endforeach()

set(KAAS_BACKENDS)
set(KAAS_HAVE_BACKEND_DEFINES)
set(_kaas_backend_blocks)
foreach(backend IN LISTS KAAS_ALL_BACKENDS)
  string(TOUPPER ${backend} upper)
  file(GLOB _kaas_backend_file ${PROJECT_SOURCE_DIR}/backends/*/${backend}.cmake)
  list(LENGTH _kaas_backend_file found)
  if(NOT found EQUAL 1)
    message(FATAL_ERROR "backend ${backend} (backends/backend_list.h): expected one "
                        "backends/<folder>/${backend}.cmake, found ${found}")
  endif()
  include(${_kaas_backend_file})
  if(NOT KAAS_BACKEND_${upper}_DECLARED)
    message(FATAL_ERROR "${_kaas_backend_file} did not call kaas_backend(${backend} ...)")
  endif()
  set(KAAS_HAVE_${upper} 0)
  if(KAAS_ENABLE_${upper})
    set(KAAS_HAVE_${upper} 1)
    list(APPEND KAAS_BACKENDS ${backend})
  endif()
  string(APPEND KAAS_HAVE_BACKEND_DEFINES "#define KAAS_HAVE_${upper} ${KAAS_HAVE_${upper}}\n")
  string(APPEND _kaas_backend_blocks
         "\n#if defined(KAAS_BACKEND_${upper})\n"
         "#ifdef KAAS_BACKEND_NS\n"
         "#error \"kaas: more than one backend selected (${backend} and another)\"\n"
         "#endif\n"
         "#define KAAS_BACKEND_NS ${backend}\n"
         "#define KAAS_BACKEND_IS_GPU ${KAAS_BACKEND_${upper}_GPU}\n"
         "#define KAAS_BACKEND_LAUNCH_HEADER \"${KAAS_BACKEND_${upper}_LAUNCH_HEADER}\"\n"
         "#endif\n")
endforeach()
file(CONFIGURE OUTPUT ${KAAS_GENERATED_DIR}/kaas/backend_config.h
     CONTENT "#pragma once\n// Generated by cmake/KaasBackends.cmake from backends/*/<name>.cmake: \
each backend's block of backends/config.h.\n${_kaas_backend_blocks}")

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
    set(compiler ${KAAS_BACKEND_${upper}_COMPILER})
    if(compiler STREQUAL "hipcc")
      _kaas_add_hipcc_objects(${target} ${backend} ${ARG_SOURCES})
    else()
      _kaas_add_object_library(${target} ${backend} ${compiler} ${ARG_SOURCES})
    endif()
    target_link_libraries(${target} PUBLIC ${KAAS_BACKEND_${upper}_LIBRARIES})
  endforeach()
endfunction()

# The number of sources per nvcc or hipcc call: 1, or with CMAKE_UNITY_BUILD its batch size.
function(_kaas_device_batch_size out_var)
  set(batch_size 1)
  if(CMAKE_UNITY_BUILD)
    set(batch_size 8)  # CMake's default
    if(DEFINED CMAKE_UNITY_BUILD_BATCH_SIZE)
      set(batch_size ${CMAKE_UNITY_BUILD_BATCH_SIZE})
    endif()
  endif()
  list(LENGTH ARGN count)
  if(batch_size EQUAL 0 OR batch_size GREATER count)  # 0: all in one, as in CMake
    set(batch_size ${count})
  endif()
  set(${out_var} ${batch_size} PARENT_SCOPE)
endfunction()

# The files nvcc or hipcc compile for the sources, written into `dir` as wrappers that include
# them: <source path with __ for />${ext} per source, or <unity_name>_unity_<n>${ext} per batch.
function(_kaas_device_translation_units out_var dir unity_name ext)
  _kaas_device_batch_size(batch_size ${ARGN})
  list(LENGTH ARGN count)
  set(units)
  set(content)
  set(in_batch 0)
  foreach(src IN LISTS ARGN)
    get_filename_component(abs ${src} ABSOLUTE)
    string(APPEND content "#include \"${abs}\"\n")
    math(EXPR in_batch "${in_batch} + 1")
    list(LENGTH units done)
    math(EXPR remaining "${count} - ${done} * ${batch_size} - ${in_batch}")
    if(in_batch LESS batch_size AND remaining GREATER 0)
      continue()
    endif()
    if(batch_size EQUAL 1)
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
      string(REPLACE "/" "__" flat ${rel})
      set(unit ${dir}/${flat}${ext})
    else()
      set(unit ${dir}/${unity_name}_unity_${done}${ext})
    endif()
    file(CONFIGURE OUTPUT ${unit} CONTENT "${content}")
    list(APPEND units ${unit})
    set(content)
    set(in_batch 0)
  endforeach()
  set(${out_var} ${units} PARENT_SCOPE)
endfunction()

# nvcc's front end (cicc) runs once per virtual architecture. For a list of plain numbers
# (the default 80;90) one PTX, the lowest architecture's, is compiled by ptxas into machine code
# for each listed one and embedded for the driver to compile for newer GPUs: the kernels use
# nothing above sm_80 (no __CUDA_ARCH__ test), and the kernels' unity batch compiles in 30 instead
# of 45 CPU-s (bench/results/test-command-cpu.md). Any other list (native, 90a, all) is CMake's.
function(_kaas_cuda_architectures objlib)
  set(numbers ${KAAS_CUDA_ARCHITECTURES})
  list(FILTER numbers INCLUDE REGEX "^[0-9]+$")
  list(LENGTH numbers count)
  list(LENGTH KAAS_CUDA_ARCHITECTURES all)
  if(count EQUAL 0 OR NOT count EQUAL all)
    set_target_properties(${objlib} PROPERTIES CUDA_ARCHITECTURES "${KAAS_CUDA_ARCHITECTURES}")
    return()
  endif()
  list(SORT numbers COMPARE NATURAL)
  list(GET numbers 0 lowest)
  list(TRANSFORM numbers PREPEND "sm_")
  string(JOIN "," machine_code ${numbers})
  set_target_properties(${objlib} PROPERTIES CUDA_ARCHITECTURES OFF)
  target_compile_options(${objlib} PRIVATE
    "--generate-code=arch=compute_${lowest},code=[compute_${lowest},${machine_code}]")
endfunction()

# The host compiler's or nvcc's objects of one backend: an object library <target>_<backend>.
function(_kaas_add_object_library target backend compiler)
  string(TOUPPER ${backend} upper)
  set(objlib ${target}_${backend})
  if(compiler STREQUAL "nvcc")
    _kaas_device_translation_units(shims ${CMAKE_CURRENT_BINARY_DIR}/cuda_shims ${objlib} .cu
                                   ${ARGN})
    add_library(${objlib} OBJECT ${shims})
    target_compile_options(${objlib} PRIVATE
      --expt-relaxed-constexpr -Xptxas=-v -Xcompiler=-Wall,-Wextra
      $<$<BOOL:${KAAS_WERROR}>:-Werror=all-warnings>)
    _kaas_cuda_architectures(${objlib})
  else()
    add_library(${objlib} OBJECT ${ARGN})
    if(KAAS_CPU_ARCH)
      target_compile_options(${objlib} PRIVATE -march=${KAAS_CPU_ARCH})
    endif()
  endif()
  target_link_libraries(${objlib} PRIVATE ${KAAS_BACKEND_${upper}_LIBRARIES})
  target_compile_definitions(${objlib} PRIVATE KAAS_BACKEND_${upper}=1)
  target_include_directories(${objlib} PRIVATE ${_kaas_include_dirs})
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:${objlib}>)
  # $<TARGET_OBJECTS:${target}> leaves these out; the shared libraries of the installed
  # package (KaasPackage.cmake) take them from here.
  set_property(TARGET ${target} APPEND PROPERTY KAAS_BACKEND_OBJECTS $<TARGET_OBJECTS:${objlib}>)
endfunction()

# hipcc's objects of one backend, one custom command per source.
function(_kaas_add_hipcc_objects target backend)
  string(TOUPPER ${backend} upper)
  set(objects)
  set(arch_flags)
  foreach(arch IN LISTS KAAS_HIP_ARCHITECTURES)
    list(APPEND arch_flags --offload-arch=${arch})
  endforeach()
  set(hip_flags -O3 -std=c++20 -fPIC -Wall -Wextra)
  if(KAAS_WERROR)
    list(APPEND hip_flags -Werror)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/hip_objects)
  _kaas_device_batch_size(batch_size ${ARGN})
  set(units)
  if(batch_size EQUAL 1)  # hipcc takes each source as it is
    foreach(src IN LISTS ARGN)
      get_filename_component(abs ${src} ABSOLUTE)
      list(APPEND units ${abs})
    endforeach()
  else()
    _kaas_device_translation_units(units ${dir} ${target}_${backend} .hip ${ARGN})
  endif()
  foreach(unit IN LISTS units)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${unit})
    string(REPLACE "/" "__" flat ${rel})
    if(batch_size GREATER 1)
      get_filename_component(flat ${unit} NAME)
      file(RELATIVE_PATH rel ${PROJECT_BINARY_DIR} ${unit})
    endif()
    set(obj ${dir}/${flat}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${KAAS_HIPCC} -x hip ${hip_flags} ${arch_flags} -DKAAS_BACKEND_${upper}=1
              -I${PROJECT_SOURCE_DIR} -I${KAAS_GENERATED_DIR} -MD -MF ${obj}.d
              -c ${unit} -o ${obj}
      DEPENDS ${unit}
      DEPFILE ${obj}.d
      COMMENT "hipcc (${KAAS_HIP_ARCHITECTURES}) ${rel}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  target_sources(${target} PRIVATE ${objects})
  set_property(TARGET ${target} APPEND PROPERTY KAAS_BACKEND_OBJECTS ${objects})
endfunction()
