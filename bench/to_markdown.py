#!/usr/bin/env python3
"""Turns a kaas-bench JSON file (Google Benchmark format) into a Markdown table."""
import json
import sys


def main(path: str) -> None:
    with open(path) as f:
        data = json.load(f)
    ctx = data["context"]
    print(f"Machine: {ctx.get('host_name', '?')}, {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
          f"caches {', '.join(str(c['size'] // 1024) + ' KiB L' + str(c['level']) for c in ctx['caches'])}; "
          f"measured peaks: stream update {float(ctx['peak_stream_update_GBps']):.1f} GB/s, "
          f"FMA {float(ctx['peak_fma_GFLOPps']):.1f} GFLOP/s (date {ctx['date']}).\n")
    print("| benchmark | n | time (µs) | GB/s | fraction of stream peak |")
    print("|---|---:|---:|---:|---:|")
    for b in data["benchmarks"]:
        name, size = b["run_name"].split("/")[0:2], b["run_name"].split("/")[2]
        print(f"| {name[0]} / {name[1]} | {size} | {b['real_time']:.1f} | "
              f"{b['bytes_per_second'] / 1e9:.1f} | {b['frac_peak_bw']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
