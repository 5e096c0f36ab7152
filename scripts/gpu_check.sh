#!/usr/bin/env bash
# One command for a GPU node: builds the kernels component with CUDA for this device's own
# architecture and checks and measures it there.
#
#   scripts/gpu_check.sh [--cpu-only] [--build-dir DIR] [--results-dir DIR] [--seconds S]
#                        [--exclude-tests REGEX]
#
# Steps (each one's time and result printed, and written to the results file):
#   1. the device: nvidia-smi (name, driver, clocks, memory); no GPU -> exit 3 before building,
#      unless --cpu-only
#   2. configure + build the kernels component only (all of it: kaas-self-check, kaas-info,
#      kaas-kernel-bench, the kernel tests) with every optional package hidden from CMake, as on a
#      bare node: GoogleTest and CLI11 come from .deps/ (filled from Debian's googletest and
#      libcli11-dev when they are installed; carry .deps/ to a node that has neither)
#   3. kaas-self-check cuda: every case of every kernel with every implementation against its
#      host reference
#   4. ctest -L cuda: the kernel tests (every case list, the bad-argument and failure checks,
#      queues, buffers, atomics) on the cuda backend
#   5. kaas-kernel-bench --backend cuda: EmTrkMichelId (batch 1, 256, 1024, 4096; fp32, bf16,
#      fp16) and kNN (uniform and clustered, N = 100k and 1M)
#   6. the same network in PyTorch on the same GPU (bench/peers/torch_emtrk.py: fp32, TF32,
#      bf16, cudnn.benchmark on), on kaas's weights and inputs
#   7. bench/gpu_results.py: bench/results/gpu-<device>.md and .json with the ratios
# --cpu-only runs steps 2-7 on the CPU backends (CUDA off) with small benchmark sizes: the
# script's logic on a machine without a GPU (the test command runs it so, with clang).
# --exclude-tests REGEX leaves the ctest tests it matches out of step 4 (ctest -E).
# --unity compiles in unity batches of 16 sources (the test command's configurations; a plain
# build, as on a GPU node, compiles each source alone).
# Exit status: 0 all checks passed, 1 a check failed, 2 usage or build error, 3 no GPU.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

cpu_only=0
build=build/gpu-check
results=bench/results
seconds=1
exclude_tests=""
unity=OFF
while (($#)); do
  case "$1" in
    --cpu-only) cpu_only=1 ;;
    --build-dir) build="$2"; shift ;;
    --results-dir) results="$2"; shift ;;
    --seconds) seconds="$2"; shift ;;
    --exclude-tests) exclude_tests="$2"; shift ;;
    --unity) unity=ON ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

start_all=$(date +%s)
work="$build/gpu-check-work"
steps_file="$work/steps.tsv"
step_start=0
step() {
  step_start=$(date +%s)
  printf '\n==== gpu_check: %s ====\n' "$1"
}
# record NAME STATUS DETAIL: one line per step for the results file.
record() {
  local took=$(($(date +%s) - step_start))
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$took" "$3" >> "$steps_file"
  printf -- '---- %s: %s (%d s) %s\n' "$1" "$2" "$took" "$3"
}

# 1. The device, before anything is built.
step "device"
device_json="{}"
if ((cpu_only == 0)); then
  if ! command -v nvidia-smi > /dev/null 2>&1; then
    echo "gpu_check: no NVIDIA GPU here: nvidia-smi is not on PATH. Run this on a GPU node, or" \
         "with --cpu-only to check the script on the CPU backends." >&2
    exit 3
  fi
  if ! smi=$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,compute_cap \
               --format=csv,noheader 2>&1) || [[ -z "$smi" ]]; then
    echo "gpu_check: no usable NVIDIA GPU: nvidia-smi says: $smi" >&2
    exit 3
  fi
  if ! command -v nvcc > /dev/null 2>&1; then
    echo "gpu_check: a GPU is here but nvcc is not (PATH, /usr/local/cuda/bin): cannot build" >&2
    exit 2
  fi
  echo "$smi"
  device_json=$(python3 -c 'import json, sys
f = [x.strip() for x in sys.argv[1].splitlines()[0].split(",")]
keys = ["name", "driver", "max_sm_clock", "max_memory_clock", "memory", "compute_capability"]
print(json.dumps(dict(zip(keys, f))))' "$smi")
fi
rm -rf "$work"
mkdir -p "$work" "$results"
: > "$steps_file"
if ((cpu_only == 0)); then
  record device ok "$(head -1 <<< "$smi")"
else
  record device skip "--cpu-only: the CPU backends stand in for the GPU"
fi

# 2. Configure and build the kernels component, every optional package hidden.
step "configure + build (kernels component)"
deps=.deps
if [[ ! -f "$deps/googletest/CMakeLists.txt" && -f /usr/src/googletest/CMakeLists.txt ]]; then
  mkdir -p "$deps" && cp -r /usr/src/googletest "$deps/googletest"
fi
if [[ ! -f "$deps/cli11/CLI/CLI.hpp" && -f /usr/include/CLI/CLI.hpp ]]; then
  mkdir -p "$deps/cli11" && cp -r /usr/include/CLI "$deps/cli11/CLI"
fi
hidden=()
for package in Protobuf ONNX gRPC Boost OpenSSL ZLIB PNG nlohmann_json prometheus-cpp Eigen3 TBB \
               benchmark GTest CLI11; do
  hidden+=("-DCMAKE_DISABLE_FIND_PACKAGE_$package=ON")
done
gpu_args=(-DKAAS_ENABLE_HIP=OFF)
if ((cpu_only)); then
  gpu_args+=(-DKAAS_ENABLE_CUDA=OFF)
else
  gpu_args+=(-DKAAS_ENABLE_CUDA=ON -DKAAS_CUDA_ARCHITECTURES=native)
fi
generator=()
command -v ninja > /dev/null 2>&1 && generator=(-G Ninja)
# -Werror where the compilers are the ones CI knows (--cpu-only); a GPU node's may warn anew.
werror=OFF
((cpu_only)) && werror=ON
if ! cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DKAAS_WERROR=$werror \
       "${gpu_args[@]}" "${hidden[@]}" -DKAAS_BUILD_MODELS=OFF \
       -DKAAS_GTEST_SOURCE_DIR="$KAAS_ROOT/$deps/googletest" \
       -DKAAS_CLI11_INCLUDE_DIR="$KAAS_ROOT/$deps/cli11" \
       -DCMAKE_UNITY_BUILD=$unity -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
       > "$work/configure.log" 2>&1 ||
   ! cmake --build "$build" -j "$jobs" > "$work/build.log" 2>&1; then
  tail -40 "$work/configure.log" "$work/build.log" 2> /dev/null
  record build FAIL "see $work/configure.log and $work/build.log"
  exit 2
fi
grep "kaas component\|kaas tests\|kaas backends\|CLI11" "$work/configure.log" || true
built=$(cd "$build" && ls tools/kaas-* bench/kaas-* tests/test_* 2> /dev/null | xargs -n1 basename | tr '\n' ' ')
record build ok "$built"

failed=0
backend=cuda
((cpu_only)) && backend=openmp

# 3. Every case of every kernel, every implementation, against the host references.
step "kaas-self-check $backend (every case of every kernel)"
# --cpu-only: openmp alone; the kernel tests of step 4 run every case list on serial, openmp and
# gpu_emu anyway, so a second self-check backend would repeat them.
if "$build/tools/kaas-self-check" "$backend" > "$work/self_check.txt" 2>&1; then
  record self-check ok "$(tail -1 "$work/self_check.txt")"
else
  grep "FAIL\|skip" "$work/self_check.txt" | head -20 || true
  record self-check FAIL "$(tail -1 "$work/self_check.txt")"
  failed=1
fi

# 4. The kernel tests on the backend.
step "kernel tests (ctest)"
labels=cuda
((cpu_only)) && labels="cpu|gpu_emu"
if [[ ! -x "$build/tests/test_kernels" ]]; then
  record tests skip "GoogleTest sources missing (.deps/googletest): copy /usr/src/googletest there"
elif ctest --test-dir "$build" -L "$labels" ${exclude_tests:+-E "$exclude_tests"} -j "$jobs" \
       --output-on-failure > "$work/ctest.txt" 2>&1; then
  record tests ok "$(grep -E 'tests passed' "$work/ctest.txt" | tail -1)"
else
  tail -30 "$work/ctest.txt"
  record tests FAIL "$(grep -E 'tests passed' "$work/ctest.txt" | tail -1)"
  failed=1
fi

# 5. The kernel-level benchmark.
step "kaas-kernel-bench --backend $backend"
bench_args=(--backend "$backend" --seconds "$seconds" --tsv "$work/kaas.tsv"
            --save-weights "$work/weights")
# On the CPU the largest batches and the 1M-point kNN take minutes; the logic needs none of them.
((cpu_only)) && bench_args+=(--batches 1,64 --precisions fp32,bf16 --knn-points 20000)
if [[ ! -x "$build/bench/kaas-kernel-bench" ]]; then
  record bench skip "CLI11 headers missing (.deps/cli11): copy /usr/include/CLI there"
elif "$build/bench/kaas-kernel-bench" "${bench_args[@]}" 2>&1 | tee "$work/kaas_bench.txt"; then
  record bench ok "$(wc -l < "$work/kaas.tsv") rows"
else
  record bench FAIL "see $work/kaas_bench.txt"
  failed=1
fi

# 6. PyTorch on the same device, on kaas's weights and inputs.
step "PyTorch peer"
torch_args=(--weights "$work/weights" --seconds "$seconds" --tsv "$work/torch.tsv")
((cpu_only)) && torch_args+=(--device cpu --batches 1,64 --precisions fp32)
if [[ ! -f "$work/weights/dense_kernel.npy" ]]; then
  record torch skip "no weights from kaas-kernel-bench"
elif ! python3 -c "import torch" > /dev/null 2>&1; then
  record torch skip "python3 has no torch"
elif python3 bench/peers/torch_emtrk.py "${torch_args[@]}" 2>&1 | tee "$work/torch.txt"; then
  record torch ok "$(($(wc -l < "$work/torch.tsv") - 1)) rows"
else
  record torch FAIL "see $work/torch.txt"
  failed=1
fi

# 7. The results file.
step "results"
total=$(($(date +%s) - start_all))
if python3 bench/gpu_results.py --steps "$steps_file" --kaas "$work/kaas.tsv" \
     --torch "$work/torch.tsv" --device-json "$device_json" --total-seconds "$total" \
     --build-dir "$build" --out-dir "$results" $( ((cpu_only)) && echo --cpu-only); then
  :
else
  echo "gpu_check: writing the results failed" >&2
  failed=1
fi
echo "gpu_check: $( ((failed)) && echo 'a check FAILED' || echo 'every check passed') in ${total} s"
exit "$failed"
