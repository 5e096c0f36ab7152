#!/usr/bin/env bash
# The test command: installs what is missing, then builds and tests four configurations:
#   1. g++ + libgomp, every backend (CUDA sm_80/sm_90 and HIP gfx90a/gfx940 compile and link;
#      their runtime tests skip without a device), -Werror; the whole ctest suite; then a short
#      version of the run command (a one-epoch training smoke whose exported model must match
#      the trained network, kaas-server + kaas-reco on small events) on that build
#      and installs it to a temporary prefix, against which examples/consumer is built and run
#   2. g++ with AddressSanitizer + UndefinedBehaviorSanitizer, CPU backends
#   3. clang++ + LLVM's OpenMP runtime (libomp), CPU backends, -Werror
#   4. g++ with ThreadSanitizer, serial + gpu_emu (libgomp is not instrumented): only the server,
#      the client and their tests are built and run (ctest label tsan)
# In CI (CI=true) a missing nvcc or hipcc is an error instead of a disabled backend.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

bash scripts/install_deps.sh
bash scripts/python_env.sh

require_gpu=OFF
if [[ "${CI:-}" == "true" ]]; then require_gpu=ON; fi

step() { printf '\n==== %s ====\n' "$*"; }

step "1/4 g++ + libgomp, all backends"
cmake -S . -B build/test-gcc -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
  -DKAAS_WERROR=ON -DKAAS_REQUIRE_GPU_COMPILERS=$require_gpu
cmake --build build/test-gcc -j "$jobs"
ctest --test-dir build/test-gcc -j "$jobs" --output-on-failure
bash scripts/ptxas_summary.sh build/test-gcc

step "the run command, short: one-epoch training smoke, server + kaas-reco on 2 small events (build/test-gcc)"
KAAS_BUILD_DIR=build/test-gcc KAAS_RUN_EVENTS=2 KAAS_TRAIN_SMOKE=1 \
  KAAS_RECO_ARGS="--wires 480 --ticks 3000 --tracks 16 --showers 4" bash scripts/run.sh

step "kaas as a package: install build/test-gcc to a temporary prefix, build examples/consumer against it"
package_work=$(mktemp -d)
trap 'rm -rf "$package_work"' EXIT
cmake --install build/test-gcc --prefix "$package_work/prefix" > "$package_work/install.log" ||
  { cat "$package_work/install.log"; exit 1; }
.venv/bin/python tests/package/test_consumer.py --prefix "$package_work/prefix" \
  --source-dir "$KAAS_ROOT" --build-dir build/test-gcc --work-dir "$package_work/work"

step "the Python module against the same install: pip install . into .venv, then pytest"
CMAKE_PREFIX_PATH="$package_work/prefix" .venv/bin/pip install --quiet --no-build-isolation \
  --disable-pip-version-check .
KAAS_PREFIX="$package_work/prefix" .venv/bin/python -m pytest -q tests/python
# The module points at the temporary prefix, which goes when this script ends.
.venv/bin/pip uninstall --quiet --yes kaas

step "2/4 g++ ASan + UBSan, CPU backends"
cmake -S . -B build/test-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ \
  -DKAAS_SANITIZE=ON -DKAAS_ENABLE_CUDA=OFF -DKAAS_ENABLE_HIP=OFF -DKAAS_BUILD_BENCH=OFF \
  -DKAAS_WERROR=ON
cmake --build build/test-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/test-asan -j "$jobs" --output-on-failure -L "cpu|gpu_emu"

step "3/4 clang++ + libomp, CPU backends"
cmake -S . -B build/test-clang -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DKAAS_ENABLE_CUDA=OFF -DKAAS_ENABLE_HIP=OFF -DKAAS_WERROR=ON
cmake --build build/test-clang -j "$jobs"
ctest --test-dir build/test-clang -j "$jobs" --output-on-failure -L "cpu|gpu_emu"

step "4/4 g++ ThreadSanitizer: server, scheduler, client (serial + gpu_emu)"
cmake -S . -B build/test-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ \
  -DKAAS_TSAN=ON -DKAAS_ENABLE_OPENMP=OFF -DKAAS_ENABLE_CUDA=OFF -DKAAS_ENABLE_HIP=OFF \
  -DKAAS_BUILD_BENCH=OFF -DKAAS_WERROR=ON
cmake --build build/test-tsan -j "$jobs" --target kaas-server kaas-make-repository kaas-infer \
  test_client test_gpu_emu_backend
# Suppressions: only what is proven to lie outside kaas (each with its reason in the file).
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$KAAS_ROOT/scripts/tsan.supp" \
  ctest --test-dir build/test-tsan -j "$jobs" --output-on-failure -L tsan

step "all configurations passed"
