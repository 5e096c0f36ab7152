#!/usr/bin/env python3
"""Turns a kaas-bench JSON file (Google Benchmark format) into Markdown tables, one per
benchmark family (the name before the first '/'), with throughput and fraction of the
machine peaks measured in the same run."""
import collections
import json
import sys


def throughput(b):
    if "hits/s" in b:
        return (f"{b['hits/s'] / 1e6:.2f} M hits/s, {b['bytes_per_second'] / 1e9:.1f} GB/s",
                f"{b.get('frac_peak_bw', 0):.2f} of stream peak")
    if "FLOPs" in b:
        return f"{b['FLOPs'] / 1e9:.1f} GFLOP/s", f"{b.get('frac_peak_flops', 0):.2f} of FMA peak"
    if "bytes_per_second" in b:
        return f"{b['bytes_per_second'] / 1e9:.1f} GB/s", f"{b.get('frac_peak_bw', 0):.2f} of stream peak"
    if "queries/s" in b:
        return f"{b['queries/s'] / 1e3:.1f} k queries/s", ""
    return "", ""


def main(path: str) -> None:
    with open(path) as f:
        data = json.load(f)
    ctx = data["context"]
    caches = ", ".join(f"{c['size'] // 1024} KiB L{c['level']}" for c in ctx["caches"])
    print(f"Machine: {ctx.get('host_name', '?')}, {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
          f"caches {caches}; peaks measured at start-up of this run: streaming update "
          f"{float(ctx['peak_stream_update_GBps']):.1f} GB/s, FMA {float(ctx['peak_fma_GFLOPps']):.1f} "
          f"GFLOP/s; date {ctx['date']}; load average {ctx.get('load_avg', '?')}.\n")
    families = collections.OrderedDict()
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        families.setdefault(b["run_name"].split("/")[0], []).append(b)
    for family, rows in families.items():
        print(f"### {family}\n")
        print("| benchmark | time | throughput | fraction | implementation |")
        print("|---|---:|---:|---:|---|")
        for b in rows:
            name = b["run_name"].replace("/real_time", "")
            rate, frac = throughput(b)
            unit = b.get("time_unit", "ns")
            print(f"| {name} | {b['real_time']:.3g} {unit} | {rate} | {frac} | {b.get('label', '')} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
