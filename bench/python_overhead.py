#!/usr/bin/env python3
"""The Python module's overhead: kaas.knn against the same call timed in C++ by kaas-bench
(uniform points in [0, 1)^D, every point a query, one event), in one run.

  python_overhead.py --kaas-bench build/test-gcc/bench/kaas-bench [--out bench/results/python-overhead-cpu]
"""
import argparse
import json
import pathlib
import platform
import statistics
import subprocess
import time

import numpy as np

import kaas


def cxx_seconds(kaas_bench, method, backend, n, d, k):
    name = f"knn/{method}/{backend}/n:{n}/d:{d}/k:{k}/events:1/real_time"
    out = subprocess.run([kaas_bench, f"--benchmark_filter=^{name}$", "--benchmark_repetitions=5",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        raise SystemExit(f"kaas-bench has no benchmark {name}")
    return statistics.median(r["real_time"] for r in runs) / {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1}[runs[0]["time_unit"]]


def python_seconds(method, backend, n, d, k, repetitions=5):
    points = np.random.default_rng(7).uniform(0, 1, size=(n, d)).astype(np.float32)
    splits = np.array([0, n], np.int64)
    kaas.knn(points, splits, k, method=method, backend=backend)  # warm-up
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        kaas.knn(points, splits, k, method=method, backend=backend)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kaas-bench", required=True)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    rows = []
    for method, backend, n, d, k in [("binned", "openmp", 100_000, 4, 16), ("binned", "serial", 100_000, 4, 16),
                                     ("brute_force", "openmp", 10_000, 4, 16)]:
        cxx = cxx_seconds(args.kaas_bench, method, backend, n, d, k)
        py = python_seconds(method, backend, n, d, k)
        rows.append({"method": method, "backend": backend, "n": n, "d": d, "k": k,
                     "cxx_s": cxx, "python_s": py, "ratio": py / cxx})
    header = (f"kaas.knn (Python module) vs the same kernel call in C++ (kaas-bench), medians of 5, "
              f"{platform.processor() or platform.machine()}; `python3 bench/python_overhead.py` (one run).\n\n"
              "| method | backend | N | D | K | C++ ms | Python ms | Python / C++ |\n|---|---|---|---|---|---|---|---|\n")
    table = header + "".join(
        f"| {r['method']} | {r['backend']} | {r['n']} | {r['d']} | {r['k']} | {r['cxx_s'] * 1e3:.1f} | "
        f"{r['python_s'] * 1e3:.1f} | {r['ratio']:.3f} |\n" for r in rows)
    print(table)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
        args.out.with_suffix(".md").write_text(table)


if __name__ == "__main__":
    main()
