# The components of kaas and the packages each needs beyond the one below it:
#   kernels  backends + kernels, kaas-info, kaas-kernel-bench: a C++20 compiler and Threads
#            (OpenMP, OpenBLAS, CUDA, HIP where found); always built
#   models   + protobuf, ONNX                  (KAAS_BUILD_MODELS)
#   client   + gRPC                            (KAAS_BUILD_CLIENT)
#   server   + Boost, OpenSSL, zlib, nlohmann-json, prometheus-cpp: kaas-server and the Triton
#            plugin                            (KAAS_BUILD_SERVER)
# kaas-reco (the demo) needs the client, libpng, cairo and nlohmann-json. Each option defaults to ON when its packages
# (and the component below) are found; KAAS_REQUIRE_COMPONENTS (CI) turns all on, so a missing
# package is an error rather than a component silently left out. The test and benchmark tools are
# optional the same way: GoogleTest (or its sources in KAAS_GTEST_SOURCE_DIR, for a bare node),
# Eigen (a second reference in two kernel tests), Google Benchmark (kaas-bench).

# Finds each package quietly and appends the missing ones to <missing_var>.
macro(kaas_find_optional missing_var)
  foreach(_kaas_spec ${ARGN})
    string(REPLACE ":" ";" _kaas_args ${_kaas_spec})
    list(GET _kaas_args 0 _kaas_name)
    find_package(${_kaas_args} QUIET)
    if(NOT ${_kaas_name}_FOUND)
      list(APPEND ${missing_var} ${_kaas_name})
    endif()
  endforeach()
endmacro()

# Sets KAAS_BUILD_<COMPONENT>: the option as given, or ON where nothing is missing; an option that
# is ON with packages missing is an error that names them and their Debian packages.
function(kaas_component name description missing debian_packages)
  string(TOUPPER ${name} upper)
  set(default OFF)
  if(KAAS_REQUIRE_COMPONENTS OR NOT missing)
    set(default ON)
  endif()
  option(KAAS_BUILD_${upper} "${description}" ${default})
  if(KAAS_BUILD_${upper} AND missing)
    message(FATAL_ERROR "kaas component '${name}' is on (KAAS_BUILD_${upper}) but needs "
                        "${missing} (Debian: ${debian_packages}); install them or configure with "
                        "-DKAAS_BUILD_${upper}=OFF")
  endif()
  if(KAAS_BUILD_${upper})
    message(STATUS "kaas component ${name}: on")
  elseif(missing)
    message(STATUS "kaas component ${name}: off (not found: ${missing})")
  else()
    message(STATUS "kaas component ${name}: off (KAAS_BUILD_${upper}=OFF)")
  endif()
endfunction()

# CLI11 (header only) parses the command lines of every kaas binary: the package, else its
# headers in KAAS_CLI11_INCLUDE_DIR (a bare node). The binaries reach it through kaas_cli
# (common/cli.h), compiled once (common/CMakeLists.txt). Without it the kernels component still
# builds its library, tests and kaas-self-check, which takes no options.
set(KAAS_CLI11_INCLUDE_DIR "" CACHE PATH "CLI11 headers (CLI/CLI.hpp) when the package is missing")
find_package(CLI11 CONFIG QUIET)
add_library(kaas_cli11_headers INTERFACE)
if(CLI11_FOUND)
  target_link_libraries(kaas_cli11_headers INTERFACE CLI11::CLI11)
elseif(EXISTS "${KAAS_CLI11_INCLUDE_DIR}/CLI/CLI.hpp")
  target_include_directories(kaas_cli11_headers SYSTEM INTERFACE ${KAAS_CLI11_INCLUDE_DIR})
  set(CLI11_FOUND TRUE)
else()
  message(STATUS "kaas: CLI11 not found (Debian libcli11-dev, or KAAS_CLI11_INCLUDE_DIR): "
                 "kaas-info and kaas-kernel-bench are left out, kaas-self-check is built")
endif()

# models: ONNX through Debian's libonnx-dev protobuf classes (its config needs protobuf first).
set(_kaas_models_missing)
kaas_find_optional(_kaas_models_missing Protobuf)
if(Protobuf_FOUND)
  kaas_find_optional(_kaas_models_missing ONNX)
else()
  list(APPEND _kaas_models_missing ONNX)
endif()
if(NOT CLI11_FOUND)
  list(APPEND _kaas_models_missing CLI11)  # the model tools' command lines
endif()
kaas_component(models "Build the models (ONNX import, EmTrkMichelId, model repository)"
               "${_kaas_models_missing}" "libprotobuf-dev protobuf-compiler libonnx-dev libcli11-dev")

set(_kaas_client_missing)
if(NOT KAAS_BUILD_MODELS)
  set(_kaas_client_missing "the models component")
endif()
kaas_find_optional(_kaas_client_missing gRPC:CONFIG)
kaas_component(client "Build kaas::client (in process and over KServe v2 gRPC)"
               "${_kaas_client_missing}" "libgrpc++-dev protobuf-compiler-grpc")

set(_kaas_server_missing)
if(NOT KAAS_BUILD_CLIENT)
  set(_kaas_server_missing "the client component")
endif()
kaas_find_optional(_kaas_server_missing Boost:1.74 OpenSSL ZLIB nlohmann_json
                   prometheus-cpp:CONFIG)
kaas_component(server "Build kaas-server and the Triton backend plugin"
               "${_kaas_server_missing}"
               "libboost-dev libssl-dev zlib1g-dev nlohmann-json3-dev prometheus-cpp-dev")

# kaas-reco --display writes PNGs.
set(_kaas_reco_missing)
if(NOT KAAS_BUILD_CLIENT)
  set(_kaas_reco_missing "the client component")
endif()
kaas_find_optional(_kaas_reco_missing PNG nlohmann_json)
# The event displays' figure (text, axes, legend) is drawn with cairo.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(Cairo QUIET IMPORTED_TARGET cairo)
endif()
if(NOT Cairo_FOUND)
  list(APPEND _kaas_reco_missing cairo)
endif()
kaas_component(reco "Build the reconstruction demo kaas-reco (toy LArTPC events)"
               "${_kaas_reco_missing}" "libpng-dev nlohmann-json3-dev libcairo2-dev")

# Test and benchmark tools. GoogleTest from the package, else from its sources (a bare GPU node
# has no -dev packages; KAAS_GTEST_SOURCE_DIR names a googletest tree, e.g. Debian's
# /usr/src/googletest copied there).
set(KAAS_GTEST_SOURCE_DIR "" CACHE PATH "GoogleTest sources to build when the package is missing")
find_package(GTest QUIET)
set(_kaas_tests_default OFF)
if(GTest_FOUND OR EXISTS "${KAAS_GTEST_SOURCE_DIR}/CMakeLists.txt")
  set(_kaas_tests_default ON)
endif()
option(KAAS_BUILD_TESTS "Build the tests (GoogleTest)" ${_kaas_tests_default})
if(KAAS_BUILD_TESTS AND NOT GTest_FOUND)
  if(NOT EXISTS "${KAAS_GTEST_SOURCE_DIR}/CMakeLists.txt")
    message(FATAL_ERROR "KAAS_BUILD_TESTS needs GoogleTest: install googletest (Debian: googletest "
                        "libgtest-dev) or set KAAS_GTEST_SOURCE_DIR to a googletest source tree")
  endif()
  message(STATUS "kaas tests: GoogleTest built from ${KAAS_GTEST_SOURCE_DIR}")
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(${KAAS_GTEST_SOURCE_DIR} ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  if(NOT TARGET GTest::gtest_main)  # googletest >= 1.11 defines the aliases itself
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
  endif()
elseif(NOT KAAS_BUILD_TESTS)
  message(STATUS "kaas tests: off (GoogleTest not found; KAAS_GTEST_SOURCE_DIR not set)")
endif()
find_package(Eigen3 QUIET NO_MODULE)
find_package(benchmark QUIET)

# Command-line front ends (option parsing and calls into the libraries) and kaas_cli (CLI11,
# compiled once for all of them: common/cli.h) compile at -O1: nothing they run themselves is hot,
# and kaas_cli takes 5.8 CPU-s at -O1 against 9.1 at -O3 (g++ 12). Benchmarks with timing loops
# of their own are not front ends. Not under ThreadSanitizer: there, out-of-line std::string
# copies in an -O1 executable would serve libgrpc's calls and be reported from our frames
# (scripts/test.sh).
function(kaas_command_line_front_end target)
  if(NOT KAAS_TSAN)
    get_target_property(sources ${target} SOURCES)
    set_source_files_properties(${sources} PROPERTIES COMPILE_OPTIONS -O1)
  endif()
endfunction()
