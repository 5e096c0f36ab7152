#!/usr/bin/env python3
"""Plots the benchmark results in bench/results/ as PNGs (matplotlib):

  emtrk_throughput.png    EmTrkMichelId patches/s vs batch per backend and plan, with the peers
                          (oneDNN, onnxruntime) on the same axes (emtrk-cpu.json)
  conv2d_throughput.png   the conv layer alone, patches/s vs batch (conv2d-cpu.json)
  dense_throughput.png    the 92928 x 128 dense layer, rows/s vs batch (dense-cpu.json)
  knn_time_vs_n.png       exact kNN time vs points per event, D = 3 and 4, K = 16, kaas and its
                          peers (knn-peers-cpu.json)
  served_throughput.png   kaas-server patches/s vs concurrent clients per protocol and batch
                          (server-cpu.json)

A plot whose results file is missing or malformed is skipped with a note. Needs matplotlib (the
run command's training venv has it). Usage:
  bench/plot.py [--results bench/results] [--out DIR]
"""
import argparse
import json
import os
import re
import sys
from collections import defaultdict

TIME_TO_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load_benchmarks(path):
    """Google Benchmark JSON -> {run_name: seconds per iteration} (the median of repetitions
    where there are aggregates, else the mean of the iterations)."""
    with open(path) as f:
        rows = json.load(f)["benchmarks"]
    medians, samples = {}, defaultdict(list)
    for r in rows:
        if "error_occurred" in r and r["error_occurred"]:
            continue
        seconds = r["real_time"] * TIME_TO_S[r.get("time_unit", "ns")]
        if r.get("run_type") == "aggregate":
            if r.get("aggregate_name") == "median":
                medians[r["run_name"]] = seconds
        else:
            samples[r["run_name"]].append(seconds)
    result = {name: sum(v) / len(v) for name, v in samples.items()}
    result.update(medians)
    return result


def field(name, key):
    m = re.search(rf"(?:^|/){key}:?([0-9]+)(?:/|$)", name)
    return int(m.group(1)) if m else None


def new_axes(title, xlabel, ylabel, logx=True, logy=True):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def save(fig, ax, out, name, written):
    import matplotlib.pyplot as plt
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.append(path)


def plot_series(series, title, xlabel, ylabel, out, name, written, dashed=("peer",)):
    """series: {label: [(x, y)]}; labels containing one of `dashed` (the peers) are dashed."""
    fig, ax = new_axes(title, xlabel, ylabel)
    for label in sorted(series):
        points = sorted(series[label])
        is_peer = any(p in label for p in dashed)
        ax.plot([p[0] for p in points], [p[1] for p in points], "--" if is_peer else "-",
                marker="s" if is_peer else "o", label=label)
    save(fig, ax, out, name, written)


def emtrk(results, out, written):
    series = defaultdict(list)
    for name, seconds in load_benchmarks(os.path.join(results, "emtrk-cpu.json")).items():
        parts = name.split("/")
        if parts[0] != "emtrk":
            continue
        batch, threads = int(parts[-3]), field(name, "threads")
        label = "/".join(parts[1:-3]) + f" ({threads} thread{'s' if threads > 1 else ''})"
        series[label.replace("peer_", "peer ")].append((batch, batch / seconds))
    plot_series(series, "EmTrkMichelId on the CPU (fp32)", "batch (patches per call)",
                "patches / s", out, "emtrk_throughput.png", written)


def conv2d(results, out, written):
    series = defaultdict(list)
    for name, seconds in load_benchmarks(os.path.join(results, "conv2d-cpu.json")).items():
        batch = field(name, "batch")
        label = "/".join(name.split("/")[1:3]).replace("peer_onednn/batch:" + str(batch), "peer onednn")
        series[label].append((batch, batch / seconds))
    plot_series(series, "conv 48 x 5 x 5 on 48 x 48 patches", "batch (patches per call)",
                "patches / s", out, "conv2d_throughput.png", written)


def dense(results, out, written):
    series = defaultdict(list)
    for name, seconds in load_benchmarks(os.path.join(results, "dense-cpu.json")).items():
        parts = name.split("/")
        batch = int(parts[3])
        series["/".join(parts[1:3]).replace("peer/", "peer ")].append((batch, batch / seconds))
    plot_series(series, "dense 92928 -> 128 (fp32)", "batch (rows per call)", "rows / s", out,
                "dense_throughput.png", written)


def knn(results, out, written):
    import matplotlib.pyplot as plt
    times = load_benchmarks(os.path.join(results, "knn-peers-cpu.json"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, d in zip(axes, (3, 4)):
        series = defaultdict(list)
        for name, seconds in times.items():
            parts = name.split("/")
            if (parts[0] != "knn_peers" or "points:uniform" not in name or field(name, "d") != d
                    or field(name, "k") != 16 or field(name, "events") != 1):
                continue
            series[parts[1]].append((field(name, "n"), seconds * 1e3))
        for label in sorted(series):
            points = sorted(series[label])
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    "-o" if label.startswith("kaas") else "--s", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"exact kNN, uniform points, D = {d}, K = 16")
        ax.set_xlabel("points in the event (every point a query)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("ms (build + query)")
    fig.tight_layout()
    path = os.path.join(out, "knn_time_vs_n.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.append(path)


def served(results, out, written):
    with open(os.path.join(results, "server-cpu.json")) as f:
        rows = json.load(f)
    series = defaultdict(list)
    for r in rows:
        if r.get("model") != "emtrkmichelid" or "concurrency" not in r or r.get("errors"):
            continue
        series[f"{r['protocol']}, batch {r['batch']}"].append(
            (r["concurrency"], r["patches_per_s"]))
    plot_series(series, "kaas-server, EmTrkMichelId (dynamic batching)", "concurrent clients",
                "patches / s", out, "served_throughput.png", written, dashed=("http",))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--results", default=os.path.join(root, "results"))
    p.add_argument("--out", default=os.path.join(root, "results", "plots"))
    args = p.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    os.makedirs(args.out, exist_ok=True)
    written = []
    for plot in (emtrk, conv2d, dense, knn, served):
        try:
            plot(args.results, args.out, written)
        except FileNotFoundError as e:
            print(f"plot.py: skipping {plot.__name__}: {e.filename} is missing", file=sys.stderr)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            print(f"plot.py: skipping {plot.__name__}: unexpected results format ({e!r})",
                  file=sys.stderr)
    for path in written:
        print(f"plot.py: wrote {path}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
