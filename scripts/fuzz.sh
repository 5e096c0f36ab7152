#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (clang, ASan + UBSan) for a given time each.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (600)] [TARGET...]   (default: all five)
#   KAAS_FUZZ_PARALLEL=N  targets run N at a time (default 1)
# Each target starts from its seed corpus fuzz/corpus/<target>/ (the ONNX importer also from
# Debian's libonnx-testdata models) and works in build/fuzz/corpus/<target>/. A crash, leak or
# timeout is written to fuzz/regressions/<target>/ (the test command replays that directory);
# inputs that add coverage are merged back into fuzz/corpus/<target>/. The figures (executions,
# coverage, corpus, findings) go to build/fuzz/summary.txt.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

seconds=${1:-600}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(rest_infer grpc_infer model_config onnx_import npy); fi

cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DKAAS_FUZZ=ON -DKAAS_ENABLE_OPENMP=ON -DKAAS_ENABLE_CUDA=OFF -DKAAS_ENABLE_HIP=OFF \
  -DKAAS_BUILD_TESTS=OFF -DKAAS_BUILD_BENCH=OFF > build/fuzz-configure.log
cmake --build build/fuzz -j "$jobs" --target "${targets[@]/#/kaas-fuzz-}"

run_one() {
  local target=$1 work=build/fuzz/corpus/$1 log=build/fuzz/$1.log
  local extra=()
  mkdir -p "$work" "fuzz/regressions/$target"
  local before
  before=$(find "fuzz/regressions/$target" -type f ! -name .keep | wc -l)
  if [[ $target == onnx_import && -d /usr/share/libonnx-testdata/data/node ]]; then
    extra=(/usr/share/libonnx-testdata/data/node)
  fi
  # Leaks are findings too; -timeout: one input taking 10 s is a hang.
  "build/fuzz/fuzz/kaas-fuzz-$target" "$work" "fuzz/corpus/$target" "${extra[@]}" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
    -artifact_prefix="fuzz/regressions/$target/" -print_final_stats=1 > "$log" 2>&1 || true
  "build/fuzz/fuzz/kaas-fuzz-$target" -merge=1 "fuzz/corpus/$target" "$work" \
    > "build/fuzz/$target.merge.log" 2>&1 || true
  local execs cov ft corpus findings
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  corpus=$(find "fuzz/corpus/$target" -type f | wc -l)
  findings=$(($(find "fuzz/regressions/$target" -type f ! -name .keep | wc -l) - before))
  printf '%-13s %5ss  executions %-10s coverage(edges) %-6s features %-6s corpus %-5s new findings %s\n' \
    "$target" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "$findings" \
    | tee -a build/fuzz/summary.txt
}

: > build/fuzz/summary.txt
parallel=${KAAS_FUZZ_PARALLEL:-1}
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do sleep 1; done
  run_one "$target" &
done
wait
echo "fuzz: summary in build/fuzz/summary.txt; findings (if any) in fuzz/regressions/"
