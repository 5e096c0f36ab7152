#!/usr/bin/env bash
# Summarises the ptxas resource reports (<object>.ptxas.txt, written by nvcc_report.sh) of a
# build tree: registers, spill stores/loads and shared memory per kernel and architecture.
set -euo pipefail
build="${1:?usage: ptxas_summary.sh BUILD_DIR}"
mapfile -t reports < <(find "$build" -name '*.ptxas.txt' | sort)
if ((${#reports[@]} == 0)); then
  echo "ptxas: no reports (CUDA backend off)"
  exit 0
fi
out="$build/ptxas-summary.txt"
awk '
  /Compiling entry function/ {
    match($0, /for .sm_[0-9]+./); arch = substr($0, RSTART + 5, RLENGTH - 6)
    name = $0; sub(/.*function ./, "", name); sub(/. for .*/, "", name)
    # kernel functor name from the mangled kernel_entry<Functor,...>
    if (match(name, /[0-9]+[A-Z][A-Za-z0-9]+Kernel/)) { k = substr(name, RSTART, RLENGTH); sub(/^[0-9]+/, "", k) } else k = name
    if (match(name, /Kernel(I[fil])/)) k = k "<" substr(name, RSTART + 7, 1) ">"
    # 16-bit storage types (bf16 / fp16 template arguments), in order
    types = ""; rest = name
    while (match(rest, /4(bf16|fp16)/)) { types = types (types == "" ? "" : ",") substr(rest, RSTART + 1, 4); rest = substr(rest, RSTART + RLENGTH) }
    if (types != "") k = k "<" types ">"
    if (match(name, /(Sum|Max)Op/)) k = k "<" substr(name, RSTART, RLENGTH) ">"
  }
  /bytes stack frame/ { split($0, f, /[ ,]+/); for (i in f) { if (f[i] == "spill" && f[i+1] == "stores") ss = f[i-2]; if (f[i] == "spill" && f[i+1] == "loads") sl = f[i-2] } }
  /Used [0-9]+ registers/ {
    match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15)
    smem = 0; if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH - 11)
    printf "%-28s %-6s regs %3d  spill stores %3d B  spill loads %3d B  static smem %d B\n", k, arch, regs, ss + 0, sl + 0, smem
    ss = 0; sl = 0
  }' "${reports[@]}" | sort -u > "$out"
echo "ptxas resource usage (${#reports[@]} objects; full reports: $build/**/*.ptxas.txt):"
cat "$out"
spills=$(awk '$7 + 0 > 0 || $11 + 0 > 0' "$out" | wc -l)
echo "kernels with spills: $spills"
