#!/usr/bin/env bash
# The test command: installs what is missing, then builds and tests four configurations, each
# building only what it tests and nothing twice, and prints how long every step took:
#   1. g++ + libgomp, every component and backend (CUDA sm_80/sm_90 and HIP gfx90a/gfx940 compile
#      and link; their runtime tests skip without a device), -Werror; the whole ctest suite; then
#      the training smoke (a one-epoch model whose export must match the trained network) and a
#      short version of the run command (kaas-server + kaas-reco on small events); the
#      install of that build, against which examples/consumer and the Python module are built
#   2. g++ with AddressSanitizer + UndefinedBehaviorSanitizer (UBSan's null and pointer-overflow
#      checks left to ASan: CMakeLists.txt), CPU backends: the code with memory
#      handling of its own (ctest label asan: backends, kernel cases, parsers, model import,
#      the toy event, fuzz replays, batch pipeline, shared-memory registry), only
#      the targets of those tests; not the numeric suite again
#   3. clang++ + LLVM's OpenMP runtime (libomp), -Werror, the kernels component alone with every
#      optional package hidden from CMake, as on a bare GPU node: scripts/gpu_check.sh --cpu-only
#      (every case of every kernel, the kernel tests, the kernel-level benchmark and its results
#      file), its install consumed by examples/consumer_kernels; and gpu_check.sh without a GPU
#      must refuse
#   4. g++ with ThreadSanitizer, serial + gpu_emu (libgomp is not instrumented): only the server,
#      the client and their tests are built and run (ctest label tsan); the serial kernel bodies,
#      single-threaded arithmetic, are left uninstrumented and the x86 SIMD paths out of the build
#      (KAAS_CPU_SIMD_PATHS=OFF: 23 -> 3 CPU-s), so step 1's tools serve as references capped to
#      the portable tier (KAAS_MAX_CPU_ISA=portable)
# Configurations 2 and 4 compile in the background at the lowest priority from the start of
# step 1's tests, in the core time the tests leave idle; each step waits for its own build.
# In CI (CI=true) a missing nvcc or hipcc, or a missing package of any component, is an error
# instead of a disabled backend or component.
#
# The budget: CI stops a run at 90 minutes, and the slowest machine kind it runs on (a fresh
# 2-vCPU AVX2-only AMD EPYC, no compiler cache) must finish within 45. The script prints each
# step's wall and CPU time and the ten longest tests: a change pays for the tests it adds. Check
# a property once where it does not depend on the backend, on the worst cases rather than a large
# random sample; poll for a condition instead of sleeping; give the sanitizers only the code
# they add something to; keep GPU translation units small; keep names distinct across a target's
# sources (every configuration is a unity build) (bench/results/test-command-cpu.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

bash scripts/install_deps.sh
bash scripts/python_env.sh

require_gpu=OFF
if [[ "${CI:-}" == "true" ]]; then require_gpu=ON; fi

# The planner's trials run here on a machine the tests load: their times would mislead a later
# run of kaas on this machine, so every step keeps its plans in a cache of its own (the user's
# ~/.cache/kaas/plans.tsv is not touched), new for each run.
export KAAS_PLANNER_CACHE="$KAAS_ROOT/build/test-planner-cache.tsv"
mkdir -p build
rm -f "$KAAS_PLANNER_CACHE" "$KAAS_PLANNER_CACHE.lock"

# Every step's wall time and CPU time (user + system of the commands it ran), printed as it ends
# and summed up at the end, with the ten longest tests of every ctest run.
test_start=$(date +%s)
step_name=""
step_start=$test_start
step_cpu_start=0
timings=()
test_logs=$(mktemp -d)
# CPU seconds used so far by this script's finished children: cutime + cstime of this shell
# (fields 16 and 17 of /proc/<pid>/stat, in clock ticks; $$ is this shell in a subshell too).
# children_cpu [PID]: the same for another shell (a background subshell's $BASHPID).
children_cpu() {
  awk -v tick="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%d", ($14 + $15) / tick }' \
    "/proc/${1:-$$}/stat"
}
# A step's CPU leaves out the background builds (below) that ended during it: each has its own
# line, with the CPU its subshell's children used.
end_step() {
  if [[ -n "$step_name" ]]; then
    local took=$(($(date +%s) - step_start))
    local cpu=$(($(children_cpu) - step_cpu_start - $(background_cpu_reaped) + step_background_start))
    timings+=("$(printf '%5d s %6d s  %s' "$took" "$cpu" "$step_name")")
    printf -- '---- %s: %d s (CPU %d s)\n' "$step_name" "$took" "$cpu"
  fi
}
step() {
  end_step
  step_name="$*"
  step_start=$(date +%s)
  step_cpu_start=$(children_cpu)
  step_background_start=$(background_cpu_reaped)
  printf '\n==== %s ====\n' "$*"
}
# ctest CONFIG ARGS...: ctest, its output kept for the longest-tests table.
run_ctest() {
  local config="$1"
  shift
  ctest "$@" 2>&1 | tee "$test_logs/$config.log"
  return "${PIPESTATUS[0]}"
}
longest_tests() {
  printf '\n==== the ten longest tests ====\n'
  for log in "$test_logs"/*.log; do
    [[ -f "$log" ]] || continue
    sed -n "s/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .* \([0-9.]*\) sec\$/\2 $(basename "$log" .log) \1/p" "$log"
  done | sort -rn | head -10 | awk '{ printf "%7.1f s  %-6s %s\n", $1, $2, $3 }'
}

# The sanitizer configurations compile in the background at the lowest priority (nice 19) from
# the start of step 1's tests: the tests leave about a fifth of the two cores idle (server tests
# waiting on their servers and clients, the autoscaling test alone), which the builds fill, and a
# test that wants its core gets it back at once (a nice-0 task preempts a nice-19 one on wake-up;
# CFS gives the nice-19 task 1.5 % of a contended core). Each build's output is printed, and its
# CPU time counted, in the step that waits for it.
declare -A background_pid=() background_started=()
# start_background NAME COMMAND...: COMMAND (a function of this script) at nice 19; on exit the
# subshell writes its children's CPU seconds to NAME.cpu.
start_background() {
  local name="$1"
  shift
  (
    trap "children_cpu \$BASHPID > '$test_logs/$name.cpu'" EXIT
    renice -n 19 -p "$BASHPID" > /dev/null
    "$@"
  ) > "$test_logs/$name.build.txt" 2>&1 &
  background_pid[$name]=$!
  background_started[$name]=$!
}
# CPU seconds of the background builds that have ended and been reaped (bash reaps a child as
# it ends; from then on its CPU is in children_cpu).
background_cpu_reaped() {
  local name total=0
  for name in "${!background_started[@]}"; do
    if [[ -f "$test_logs/$name.cpu" ]] && ! kill -0 "${background_started[$name]}" 2> /dev/null; then
      total=$((total + $(< "$test_logs/$name.cpu")))
    fi
  done
  echo "$total"
}
# stop_background: ends what is still running of them (the script stopped early).
stop_background() {
  local name
  for name in "${!background_pid[@]}"; do kill_tree "${background_pid[$name]}"; done
}
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2> /dev/null || true
}
# finish_background NAME: waits for it, prints its output, stops the script if it failed.
finish_background() {
  local name="$1" status=0
  wait "${background_pid[$name]}" || status=$?
  unset "background_pid[$name]"
  printf -- '---- the %s build (in the background since step 1'"'"'s tests) ----\n' "$name"
  cat "$test_logs/$name.build.txt"
  local cpu
  cpu=$(< "$test_logs/$name.cpu")
  printf -- '---- the %s build: CPU %d s\n' "$name" "$cpu"
  timings+=("$(printf '%5s   %6d s  the %s build, in the background (nice 19)' - "$cpu" "$name")")
  if ((status != 0)); then
    echo "the $name build failed (exit $status)"
    exit 1
  fi
}

# Unity builds (CMake batches 16 sources of a target into one translation unit, so shared headers
# are parsed once; cmake/KaasBackends.cmake does the same for nvcc and hipcc): every configuration
# compiles in about two thirds of the CPU time (bench/results/test-command-cpu.md; configuration 3:
# 270 -> 210 CPU-s with its libraries batched too). Each source compiling alone -- its own
# includes complete -- is left to the plain build (scripts/run.sh, the README's cmake line).
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)

# ASan compiles at -O1 with line tables only (-g1), as its documentation advises: stack traces
# keep file and line, and a test file such as tests/kernels/test_gemm.cc compiles in 11.5 s
# instead of 24.4 s (-O2 -g, measured here); the server adapter and the models, whose ASan tests
# are short, at -O0 (kaas_asan_at_o0() in CMakeLists.txt). TSan stays at -O2: at -O1 std::string's
# out-of-line copies in our binaries serve libgrpc's own calls, and TSan reports gRPC's races on
# gRPC's data (which scripts/tsan.supp leaves to the library) from our frames. Both keep line
# tables only (-g1): reports name file and line, and the compile skips full debug info.
asan_flags="-O1 -g1 -DNDEBUG"
tsan_flags="-O2 -g1 -DNDEBUG"

# The two sanitizer builds (run in the background, see start_background).
build_asan() {
  cmake -S . -B build/test-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ \
    "${unity[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$asan_flags" \
    -DKAAS_SANITIZE=ON -DKAAS_ENABLE_CUDA=OFF -DKAAS_ENABLE_HIP=OFF -DKAAS_BUILD_BENCH=OFF \
    -DKAAS_ENABLE_TBB=OFF -DKAAS_WERROR=ON -DKAAS_REQUIRE_COMPONENTS=$require_gpu
  # What `ctest -L asan` runs (tests/CMakeLists.txt says which tests and why; a target missing here
  # fails that test, so the list cannot fall behind silently): backends, kernel cases, parsers and
  # model import, the toy event, the fuzz replays, the batch pipeline, the shared-memory
  # registry. The numeric suite (models on openmp and gpu_emu, the 16-bit precision sample, the
  # kNN cross-check) ran in step 1 and is not run again here.
  asan_targets=(test_core test_gpu_emu_backend test_openmp_backend test_backends test_kernels
                test_onnx_nodes test_models test_toy_event kaas-fuzz-rest_infer
                kaas-fuzz-grpc_infer kaas-fuzz-model_config kaas-fuzz-onnx_import kaas-fuzz-npy
                test_batch_pipeline test_shared_memory_registry test_bounded_inflate)
  cmake --build build/test-asan -j "$jobs" --target "${asan_targets[@]}"
}
build_tsan() {
  cmake -S . -B build/test-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ \
    "${unity[@]}" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$tsan_flags" \
    -DKAAS_TSAN=ON -DKAAS_ENABLE_OPENMP=OFF -DKAAS_ENABLE_CUDA=OFF -DKAAS_ENABLE_HIP=OFF \
    -DKAAS_BUILD_BENCH=OFF -DKAAS_CPU_SIMD_PATHS=OFF -DKAAS_WERROR=ON \
    -DKAAS_TEST_TOOLS_DIR="$PWD/build/test-gcc/tools"
  # The repository writer and kaas-infer are the tests' fixtures: step 1's (KAAS_TEST_TOOLS_DIR).
  cmake --build build/test-tsan -j "$jobs" --target kaas-server test_client test_gpu_emu_backend
}

package_work=$(mktemp -d)
smoke_pid=""
trap '[[ -n "$smoke_pid" ]] && kill "$smoke_pid" 2> /dev/null; stop_background
      rm -rf "$package_work" "$test_logs"' EXIT

step "1/4 g++ + libgomp, all backends"
cmake -S . -B build/test-gcc -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ "${unity[@]}" \
  -DKAAS_WERROR=ON -DKAAS_REQUIRE_GPU_COMPILERS=$require_gpu -DKAAS_REQUIRE_COMPONENTS=$require_gpu
cmake --build build/test-gcc -j "$jobs"
start_background asan build_asan
start_background tsan build_tsan
run_ctest gcc --test-dir build/test-gcc -j "$jobs" --output-on-failure
bash scripts/ptxas_summary.sh build/test-gcc

step "at once: the training smoke and the run command (short); kaas as a package; the Python module"
# Three independent checks of build/test-gcc run side by side: each alone left a core idle
# (pip's downloads, jax's start, the servers' waits): 94 s one after the other on a Zen 4 VM.
# OpenMP threads wait passively, as in ctest: a spinning barrier would take the other's core.
export OMP_WAIT_POLICY=passive
# The training path cannot rot: a one-epoch model on 2 small events, exported and checked
# against the trained network; then the run command on the trained model kept as data.
(
  KAAS_TRAIN_SMOKE=1 bash scripts/train_toy_model.sh build/test-gcc
  KAAS_BUILD_DIR=build/test-gcc KAAS_RUN_EVENTS=2 \
    KAAS_RECO_ARGS="--wires 480 --ticks 3000 --tracks 16 --showers 4" bash scripts/run.sh
) > "$test_logs/smoke.txt" 2>&1 &
smoke_pid=$!

# kaas as a package: build/test-gcc installed to a temporary prefix, examples/consumer built
# against it; then the Python module against the same install (pip install . into .venv, pytest).
# As in ctest, the planner's fixed rules and no planner cache: the consumer and the Python tests
# check the package, not the plans, and leave the user's cache alone (the measuring planner's
# trials were 12 of their 27 CPU-s).
cmake --install build/test-gcc --prefix "$package_work/prefix" > "$package_work/install.log" ||
  { cat "$package_work/install.log"; exit 1; }
KAAS_PLANNER=fixed KAAS_PLANNER_CACHE=off .venv/bin/python tests/package/test_consumer.py \
  --prefix "$package_work/prefix" --source-dir "$KAAS_ROOT" --build-dir build/test-gcc \
  --work-dir "$package_work/work"
CMAKE_PREFIX_PATH="$package_work/prefix" .venv/bin/pip install --quiet --no-build-isolation \
  --disable-pip-version-check .
KAAS_PLANNER=fixed KAAS_PLANNER_CACHE=off KAAS_PREFIX="$package_work/prefix" \
  .venv/bin/python -m pytest -q tests/python
# The module points at the temporary prefix, which goes when this script ends.
.venv/bin/pip uninstall --quiet --yes kaas

printf '\n---- the training smoke and the run command (their output) ----\n'
smoke_status=0
wait "$smoke_pid" || smoke_status=$?
smoke_pid=""
cat "$test_logs/smoke.txt"
if ((smoke_status != 0)); then
  echo "the training smoke or the run command failed (exit $smoke_status)"
  exit 1
fi
unset OMP_WAIT_POLICY

step "2/4 g++ ASan + UBSan, CPU backends: the code with its own memory handling (ctest -L asan)"
finish_background asan
# LeakSanitizer suppressions: only allocations proven to be a library's own for-life caches.
# clear_shadow_mmap_threshold: the emulated GPU switches fibers at every barrier, and ASan clears
# the shadow of the fiber's stack each time; above the threshold (64 KiB by default) by mmap,
# which split and merged the process's mappings for 7 s of system time in a 1.5 s kNN test
# whenever the stacks fell on page boundaries (bimodal, run to run). memset is the same clearing.
ASAN_OPTIONS=detect_leaks=1:clear_shadow_mmap_threshold=1073741824 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="suppressions=$KAAS_ROOT/scripts/lsan.supp" \
  run_ctest asan --test-dir build/test-asan -j "$jobs" --output-on-failure -L asan

step "3/4 clang++ + libomp, the kernels component alone, every optional package hidden (gpu_check.sh --cpu-only)"
# Without a GPU the script must refuse before building anything.
if ! command -v nvidia-smi > /dev/null 2>&1; then
  set +e
  refusal=$(bash scripts/gpu_check.sh 2>&1)
  refusal_status=$?
  set -e
  if [[ $refusal_status -ne 3 || "$refusal" != *"no NVIDIA GPU here"* ]]; then
    echo "gpu_check.sh without a GPU: expected exit 3 and 'no NVIDIA GPU here', got $refusal_status: $refusal"
    exit 1
  fi
  echo "gpu_check.sh without a GPU refuses: $refusal"
fi
# The CPU stand-ins for the device: openmp (on libomp) and gpu_emu (the GPU bodies), and the
# backend-independent kernel tests; the serial instance and the per-tier runs repeat kernel
# sources that step 1 ran (serial: the same bodies one group at a time).
CXX=clang++ bash scripts/gpu_check.sh --cpu-only --build-dir build/test-kernels \
  --results-dir build/test-kernels --seconds 0.2 --unity \
  --exclude-tests '^(test_kernels\.serial|kernel_tiers\..*)$'
/usr/bin/python3 tests/package/test_kernels_only.py --build-dir build/test-kernels \
  --source-dir "$KAAS_ROOT" --work-dir "$package_work/kernels-only"

step "4/4 g++ ThreadSanitizer: server, scheduler, client (serial + gpu_emu)"
finish_background tsan
# Suppressions: only what is proven to lie outside kaas (each with its reason in the file).
# The server without SIMD paths runs the portable rows: step 1's kaas-infer, the tests'
# in-process reference, is capped to them.
KAAS_MAX_CPU_ISA=portable \
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$KAAS_ROOT/scripts/tsan.supp" \
  run_ctest tsan --test-dir build/test-tsan -j "$jobs" --output-on-failure -L tsan

end_step
longest_tests
printf '\n==== step times (wall, CPU) ====\n'
printf '%s\n' "${timings[@]}"
printf '%5d s %6d s  total\n' "$(($(date +%s) - test_start))" "$(children_cpu)"
echo "all configurations passed"
