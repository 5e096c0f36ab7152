# The installed kaas: shared libraries built from the static layers, the public headers under
# include/kaas/, and a relocatable CMake package (kaasConfig.cmake, namespaced targets) plus a
# pkg-config file. Binaries and the Triton backend install from their own directories.
#
#   kaas::kernels  libkaas_kernels.so  common (errors) + backends + kernels (CPU, gpu_emu,
#                                      CUDA/HIP objects when built); OpenMP, OpenBLAS, CUDA/HIP
#                                      runtimes are private
#   kaas::models   libkaas_models.so   models, ONNX import, model-repository entries; ONNX and
#                                      protobuf are private
#   kaas::client   libkaas_client.so   kaas::client (direct and remote); gRPC is private
#
# kaas::models and kaas::client exist where their components were built (KaasComponents.cmake).
# Each shared library holds the objects of its own layers only and links the one below, so a
# singleton (backend registry, model registry) exists once in a process.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KAAS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kaas)

function(kaas_shared_layer target)
  cmake_parse_arguments(arg "" "NAME" "LAYERS;PUBLIC;PRIVATE" ${ARGN})
  set(objects)
  foreach(layer ${arg_LAYERS})
    list(APPEND objects $<TARGET_OBJECTS:${layer}>)
    get_target_property(backend_objects ${layer} KAAS_BACKEND_OBJECTS)
    if(backend_objects)
      list(APPEND objects ${backend_objects})
    endif()
  endforeach()
  add_library(${target} SHARED ${objects})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME kaas_${arg_NAME} EXPORT_NAME ${arg_NAME}
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${KAAS_GENERATED_DIR}>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC ${arg_PUBLIC} PRIVATE ${arg_PRIVATE})
  # An unresolved symbol is a missing layer or dependency: fail at link time, not in the consumer
  # (sanitizer builds leave the runtime's symbols to the executable).
  if(NOT KAAS_SANITIZE AND NOT KAAS_FUZZ AND NOT KAAS_TSAN)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  # Installed next to each other: each finds the layer below in its own directory.
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN")
  add_library(kaas::${arg_NAME} ALIAS ${target})
endfunction()

# What the static layers link, minus the kaas layers themselves.
set(_kaas_kernels_private Threads::Threads)
if(KAAS_ENABLE_OPENMP)
  list(APPEND _kaas_kernels_private OpenMP::OpenMP_CXX)
endif()
if(KAAS_ENABLE_TBB)
  list(APPEND _kaas_kernels_private TBB::tbb)
endif()
if(KAAS_HAVE_OPENBLAS)
  list(APPEND _kaas_kernels_private ${KAAS_OPENBLAS_OPENMP_LIBRARY})
endif()
if(KAAS_HAVE_CUDA)
  list(APPEND _kaas_kernels_private CUDA::cudart)
endif()
if(KAAS_HAVE_CUBLAS)
  list(APPEND _kaas_kernels_private ${CMAKE_DL_LIBS})
endif()
if(KAAS_HAVE_HIP)
  list(APPEND _kaas_kernels_private hip::host)
endif()

# Each component installs its own library, headers and targets file; kaasConfig.cmake loads the
# ones this install has, so find_package(kaas COMPONENTS kernels) works from a kernels-only build.
set(KAAS_INSTALLED_COMPONENTS kernels)
kaas_shared_layer(kaas_kernels_shared NAME kernels LAYERS kaas_common kaas_backends kaas_kernels
                  PUBLIC Threads::Threads PRIVATE ${_kaas_kernels_private})
if(KAAS_BUILD_MODELS)
  list(APPEND KAAS_INSTALLED_COMPONENTS models)
  kaas_shared_layer(kaas_models_shared NAME models
                    LAYERS kaas_model_io kaas_models kaas_repository kaas_model_config_proto
                    PUBLIC kaas_kernels_shared PRIVATE onnx_proto onnx protobuf::libprotobuf)
endif()
if(KAAS_BUILD_CLIENT)
  list(APPEND KAAS_INSTALLED_COMPONENTS client)
  kaas_shared_layer(kaas_client_shared NAME client
                    LAYERS kaas_client kaas_protocol kaas_grpc_proto
                    PUBLIC kaas_models_shared PRIVATE gRPC::grpc++ protobuf::libprotobuf)
endif()

# Public headers: what a consumer includes, and what those include. Everything else (kernel
# bodies and the backend runtimes behind them, ONNX graph internals, the server) stays inside.
set(KAAS_PUBLIC_HEADERS_kernels
  backends/backend.h backends/backend_list.h backends/buffer.h backends/dispatch.h common/error.h
  backends/launch_config.h backends/math.h backends/portability.h backends/queue.h
  backends/view.h
  backends/half.h backends/gpu/half_native.h
  kernels/activation.h kernels/axpy.h kernels/conv2d.h kernels/conv_dense_heads.h
  kernels/convert.h kernels/elementwise.h kernels/gemm.h
  kernels/knn.h kernels/mlp_heads.h kernels/patches.h kernels/reduce.h kernels/scan.h
  kernels/softmax.h)
set(KAAS_PUBLIC_HEADERS_models
  models/knn_model.h models/model.h models/model_registry.h models/npy.h models/tensor.h)
# Installed as kaas/client/... (the path a consumer includes), from server_adapter/client/.
set(KAAS_PUBLIC_HEADERS_client
  client/direct_client.h client/inference_client.h client/remote_client.h)
foreach(component ${KAAS_INSTALLED_COMPONENTS})
  foreach(header ${KAAS_PUBLIC_HEADERS_${component}})
    get_filename_component(dir ${header} DIRECTORY)
    set(source ${PROJECT_SOURCE_DIR}/${header})
    if(component STREQUAL "client")
      set(source ${PROJECT_SOURCE_DIR}/server_adapter/${header})
    endif()
    install(FILES ${source} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kaas/${dir} COMPONENT devel)
  endforeach()
  string(SUBSTRING ${component} 0 1 first)
  string(TOUPPER ${first} first)
  string(SUBSTRING ${component} 1 -1 rest)
  install(TARGETS kaas_${component}_shared EXPORT kaas${first}${rest}Targets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT kaas${first}${rest}Targets NAMESPACE kaas:: DESTINATION ${KAAS_INSTALL_CMAKEDIR})
endforeach()
install(FILES ${KAAS_GENERATED_DIR}/kaas/build_config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kaas COMPONENT devel)

configure_package_config_file(cmake/kaasConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/kaasConfig.cmake
                              INSTALL_DESTINATION ${KAAS_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/kaasConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/kaasConfig.cmake
              ${PROJECT_BINARY_DIR}/package/kaasConfigVersion.cmake
        DESTINATION ${KAAS_INSTALL_CMAKEDIR})

# pkg-config for builds without CMake: `pkg-config --cflags --libs kaas`.
file(RELATIVE_PATH KAAS_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" KAAS_PC_TO_PREFIX "${KAAS_PC_TO_PREFIX}")
# The libraries of the installed components, the highest first.
set(KAAS_PC_LIBS)
foreach(component ${KAAS_INSTALLED_COMPONENTS})
  string(PREPEND KAAS_PC_LIBS "-lkaas_${component} ")
endforeach()
configure_file(cmake/kaas.pc.in ${PROJECT_BINARY_DIR}/package/kaas.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/kaas.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
