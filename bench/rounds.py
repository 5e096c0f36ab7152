#!/usr/bin/env python3
"""kaas-bench rows in interleaved rounds (A B C A B C ...), for a VM whose speed moves by 10-50 %
between minutes: each row runs in its own process per round, so a slow minute hits every row.

Usage:
  rounds.py --bench build/dev/bench/kaas-bench --tier avx2 --rounds 6 --min-time 1 \\
      --row kaas=emtrk/openmp/fused/256/threads:2 --row oneDNN=emtrk/peer_onednn/256/threads:2 \\
      --row onnxruntime=emtrk/peer_onnxruntime/256/threads:2 [--row old=FILTER@OTHER_BINARY] \\
      [--markdown OUT.md]

A row is LABEL=FILTER (a kaas-bench benchmark name, matched whole) or LABEL=FILTER@BINARY (another
kaas-bench, e.g. a build of the previous commit). The first row is the reference: for every other
row, the per-round ratio other time / reference time (> 1: the reference is faster), then the
median of those ratios and their range. --tier caps kaas (KAAS_MAX_CPU_ISA) and oneDNN
(ONEDNN_MAX_CPU_ISA) at that instruction-set tier; onnxruntime has no such switch and runs what
the CPU has (the table says so). The CPU model and flags are printed with the results.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ONEDNN_TIER = {"portable": "SSE41", "avx2": "AVX2", "avx512": "AVX512_CORE",
               "avx512_bf16": "AVX512_CORE_BF16"}


def cpu_description():
    text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.+)", text)
    family = re.search(r"CPU family:\s*(\d+)", text)
    number = re.search(r"^Model:\s*(\d+)", text, re.M)
    flags = re.search(r"Flags:\s*(.+)", text)
    # AMX named too: uncapped, oneDNN's bf16 rows run on its tiles, which kaas has no row for.
    wanted = ["avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni",
              "avx512_fp16", "amx_bf16"]
    have = [f for f in wanted if flags and f in flags.group(1).split()]
    cpus = re.search(r"^CPU\(s\):\s*(\d+)", text, re.M)
    kind = f" (family {family.group(1)} model {number.group(1)})" if family and number else ""
    return (f"{model.group(1).strip() if model else 'unknown CPU'}{kind}, "
            f"{cpus.group(1) if cpus else '?'} CPUs, flags {' '.join(have)}")


def run_row(binary, name, min_time, env):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [binary, f"--benchmark_filter=^{re.escape(name)}$",
                   f"--benchmark_min_time={min_time}", f"--benchmark_out={out.name}",
                   "--benchmark_out_format=json"]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        rows = [b for b in json.load(open(out.name))["benchmarks"] if b.get("run_type") != "aggregate"]
    if not rows:
        sys.exit(f"no benchmark named {name} in {binary}")
    row = rows[0]
    if row.get("error_occurred"):  # a peer whose package is missing: skipped, with its reason
        return None, row.get("error_message", "skipped")
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[row["time_unit"]]
    return row["real_time"] * scale, row.get("label", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", required=True, help="kaas-bench binary")
    parser.add_argument("--row", action="append", required=True, help="LABEL=FILTER[@BINARY]")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--tier", choices=sorted(ONEDNN_TIER), default=None)
    parser.add_argument("--markdown", default=None, help="append the table to this file")
    args = parser.parse_args()

    rows = []
    for spec in args.row:
        label, _, rest = spec.partition("=")
        name, _, binary = rest.partition("@")
        rows.append((label, name, binary or args.bench))
    env = dict(os.environ)
    env.setdefault("KAAS_BENCH_PYTHON", os.path.join(os.path.dirname(__file__), "..", ".venv",
                                                     "bin", "python"))
    if args.tier:
        env["KAAS_MAX_CPU_ISA"] = args.tier
        env["ONEDNN_MAX_CPU_ISA"] = ONEDNN_TIER[args.tier]

    times = {label: [] for label, _, _ in rows}
    labels = {}
    for round_index in range(args.rounds):
        for label, name, binary in rows:
            ms, text = run_row(binary, name, args.min_time, env)
            times[label].append(ms)
            labels[label] = text
        print(f"round {round_index + 1}: " +
              ", ".join(f"{label} {'skipped' if times[label][-1] is None else f'{times[label][-1]:.3f} ms'}"
                        for label, _, _ in rows), flush=True)

    reference = rows[0][0]
    lines = [f"CPU: {cpu_description()}; tier: {args.tier or 'all the CPU has'} "
             f"(KAAS_MAX_CPU_ISA{', ONEDNN_MAX_CPU_ISA' if args.tier else ''}; onnxruntime "
             f"uncapped); {args.rounds} interleaved rounds, min time {args.min_time} s per row",
             "", f"| row | benchmark | median ms | min ms | ratio to {reference} (median of rounds) "
             "| ratio range |", "|---|---|---:|---:|---:|---|"]
    for label, name, _ in rows:
        if None in times[label] or None in times[reference]:
            lines.append(f"| {label} | `{name}` | skipped: {labels[label][:120]} | | | |")
            continue
        ratios = [t / r for t, r in zip(times[label], times[reference])]
        ratio = "" if label == reference else f"{statistics.median(ratios):.2f}"
        spread = "" if label == reference else f"{min(ratios):.2f}-{max(ratios):.2f}"
        lines.append(f"| {label} | `{name}` | {statistics.median(times[label]):.3f} | "
                     f"{min(times[label]):.3f} | {ratio} | {spread} |")
    lines.append("")
    for label, _, _ in rows:
        if labels[label]:
            lines.append(f"- {label}: {labels[label][:400]}")
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    if args.markdown:
        with open(args.markdown, "a") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
