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
# ptxas -v prints "ptxas info : ..." lines and indented continuation lines ("    0 bytes stack
# frame, 0 bytes spill stores, 0 bytes spill loads") that carry the spill counts.
report_lines='^ptxas (info|warning)|^    [0-9]+ bytes stack frame'
if [[ -n "$object" ]] && grep -qE "$report_lines" "$log"; then
  grep -E "$report_lines" "$log" > "$object.ptxas.txt"
fi
grep -vE "$report_lines" "$log" >&2
exit $status
