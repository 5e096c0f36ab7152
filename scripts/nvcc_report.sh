#!/usr/bin/env bash
# CMAKE_CUDA_COMPILER_LAUNCHER: runs nvcc (through ccache when present), keeps ptxas's resource
# report (registers, spills, shared memory; from -Xptxas=-v) in <object>.ptxas.txt beside the
# object, and forwards every other line of the compiler's output.
set -u
object=""
previous=""
for arg in "$@"; do
  [[ "$previous" == "-o" ]] && object="$arg"
  previous="$arg"
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if command -v ccache > /dev/null 2>&1 && [[ -z "${KAAS_NO_CCACHE:-}" ]]; then
  ccache "$@" 2> "$log"
else
  "$@" 2> "$log"
fi
status=$?
if [[ -n "$object" ]] && grep -q "^ptxas info" "$log"; then
  grep -E "^ptxas (info|warning)" "$log" > "$object.ptxas.txt"
fi
grep -v "^ptxas info" "$log" >&2
exit $status
