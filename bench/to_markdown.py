#!/usr/bin/env python3
"""Turns a kaas-bench JSON file (Google Benchmark format) into Markdown tables, one per
benchmark family (the name before the first '/'), with throughput and fraction of the
machine peaks measured in the same run."""
import collections
import json
import re
import sys


def throughput(b):
    if "hits/s" in b and "bytes_per_second" not in b:  # michel_from_image: a whole event
        return (f"{b['hits/s'] / 1e3:.1f} k hits/s, {b.get('hits/event', 0):.0f} hits/event", "")
    if "hits/s" in b:
        return (f"{b['hits/s'] / 1e6:.2f} M hits/s, {b['bytes_per_second'] / 1e9:.1f} GB/s",
                f"{b.get('frac_peak_bw', 0):.2f} of stream peak")
    if "FLOPs" in b:
        fraction = f"{b.get('frac_peak_flops', 0):.2f} of FMA peak"
        if "frac_peak_bf16" in b:  # reduced precision: also of the bf16 dot-product peak
            fraction += f", {b['frac_peak_bf16']:.2f} of bf16 peak"
        return f"{b['FLOPs'] / 1e9:.1f} GFLOP/s", fraction
    if "bytes_per_second" in b:
        return f"{b['bytes_per_second'] / 1e9:.1f} GB/s", f"{b.get('frac_peak_bw', 0):.2f} of stream peak"
    if "queries/s" in b:
        return f"{b['queries/s'] / 1e3:.1f} k queries/s", ""
    return "", ""


def emtrk_summary(rows) -> None:
    """EmTrkMichelId whole model: patches/s of kaas (openmp backend, fused and unfused plans) and
    the peers at each batch and thread count, with kaas-fused / peer ratios (> 1: kaas faster)."""
    table = collections.defaultdict(dict)  # (batch, threads) -> implementation -> benchmark
    for b in rows:
        m = re.match(r"emtrk/(.+)/(\d+)/threads:(\d+)", b["run_name"])
        if m:
            table[(int(m[2]), int(m[3]))][m[1]] = b

    def rate(b):
        if b is None or b.get("error_occurred"):
            return None
        return b.get("items_per_second")

    def fmt(x, spec):
        return "n/a" if x is None else format(x, spec)

    print("Summary: patches/s (kaas on the openmp backend); fused/oneDNN and fused/ORT are "
          "throughput ratios (> 1: kaas fused is faster); fraction of the FMA peak measured at "
          "start-up with all threads.\n")
    print("| batch | threads | kaas fused | kaas unfused | oneDNN | onnxruntime | fused/oneDNN "
          "| fused/ORT | kaas fused frac. peak | oneDNN frac. peak |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (batch, threads) in sorted(table, key=lambda k: (k[1], k[0])):
        impls = table[(batch, threads)]
        fused, unfused = impls.get("openmp/fused"), impls.get("openmp/unfused")
        onednn, ort = impls.get("peer_onednn"), impls.get("peer_onnxruntime")
        if fused is None:
            continue
        f, u, d, o = rate(fused), rate(unfused), rate(onednn), rate(ort)
        r_d = f / d if f and d else None
        r_o = f / o if f and o else None
        frac_f = None if f is None else fused.get("frac_peak_flops")
        frac_d = None if d is None else onednn.get("frac_peak_flops")
        print(f"| {batch} | {threads} | {fmt(f, '.0f')} | {fmt(u, '.0f')} | {fmt(d, '.0f')} | "
              f"{fmt(o, '.0f')} | {fmt(r_d, '.2f')} | {fmt(r_o, '.2f')} | {fmt(frac_f, '.2f')} | "
              f"{fmt(frac_d, '.2f')} |")
    print()
    precisions = [(batch, threads) for (batch, threads) in sorted(table, key=lambda k: (k[1], k[0]))
                  if "openmp/fused_bf16" in table[(batch, threads)]]
    if not precisions:
        return
    print("Reduced precision (openmp backend): patches/s of the fused plan in fp32, bf16 and fp16 "
          "beside oneDNN fp32 and bf16 and onnxruntime fp32; ratios are throughput ratios (> 1: "
          "the first is faster).\n")
    print("| batch | threads | kaas fp32 | kaas bf16 | kaas fp16 | oneDNN fp32 | oneDNN bf16 | "
          "onnxruntime | bf16/fp32 | bf16/oneDNN bf16 | fp16/oneDNN bf16 | fp32/oneDNN fp32 | "
          "fp32/ORT | kaas bf16 frac. bf16 peak |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for batch, threads in precisions:
        impls = table[(batch, threads)]
        f32, b16, f16 = (rate(impls.get("openmp/fused" + p)) for p in ("", "_bf16", "_fp16"))
        d32, d16 = rate(impls.get("peer_onednn")), rate(impls.get("peer_onednn_bf16"))
        o = rate(impls.get("peer_onnxruntime"))
        ratio = lambda a, b: a / b if a and b else None  # noqa: E731
        frac = impls["openmp/fused_bf16"].get("frac_peak_bf16")
        print(f"| {batch} | {threads} | {fmt(f32, '.0f')} | {fmt(b16, '.0f')} | {fmt(f16, '.0f')} | "
              f"{fmt(d32, '.0f')} | {fmt(d16, '.0f')} | {fmt(o, '.0f')} | "
              f"{fmt(ratio(b16, f32), '.2f')} | {fmt(ratio(b16, d16), '.2f')} | "
              f"{fmt(ratio(f16, d16), '.2f')} | {fmt(ratio(f32, d32), '.2f')} | "
              f"{fmt(ratio(f32, o), '.2f')} | {fmt(frac, '.2f')} |")
    print()


def knn_peers_summary(rows) -> None:
    """kNN beside its peers: one line per shape, the time of each implementation (build + query)
    and peer time / kaas time (> 1: kaas faster)."""
    order = ["kaas_openmp_auto", "nanoflann_kdtree", "pykdtree", "scipy_ckdtree",
             "sklearn_kd_tree", "sklearn_ball_tree", "faiss_flat"]
    trees = ["nanoflann_kdtree", "pykdtree", "scipy_ckdtree"]  # the issue-31 goal's peers
    shapes = collections.OrderedDict()  # shape -> implementation -> benchmark
    for b in rows:
        m = re.match(r"knn_peers/([^/]+)/(points:[^/]+/.+?)(/iterations.*|/real_time.*|/manual_time.*)?$",
                     b["run_name"])
        if m:
            shapes.setdefault(m[2], {})[m[1]] = b

    def ms(b):
        if b is None or b.get("error_occurred"):
            return None
        return b["real_time"]  # time_unit is ms for every knn_peers row

    print("| shape | points | " + " | ".join(order) + " | " +
          " | ".join(f"{p} / kaas" for p in order[1:]) + " | fastest tree peer / kaas |")
    print("|---|---:|" + "---:|" * (2 * len(order)))
    for shape, impls in shapes.items():
        kaas = ms(impls.get(order[0]))
        times = [ms(impls.get(i)) for i in order]
        any_row = next(b for b in impls.values() if not b.get("error_occurred"))
        cells = [f"{t:.3g} ms" if t is not None else "—" for t in times]
        ratios = [f"{t / kaas:.2f}×" if t is not None and kaas else "—" for t in times[1:]]
        tree_times = [t for i, t in zip(order, times) if i in trees and t is not None]
        best = f"**{min(tree_times) / kaas:.2f}×**" if tree_times and kaas else "—"
        print(f"| {shape} | {any_row.get('points', 0):.0f} | " + " | ".join(cells) + " | " +
              " | ".join(ratios) + f" | {best} |")
    print()
    print("Build / query split (ms; kaas: build = the same call with K = 1):\n")
    print("| shape | " + " | ".join(order) + " |")
    print("|---|" + "---:|" * len(order))
    for shape, impls in shapes.items():
        cells = []
        for i in order:
            b = impls.get(i)
            cells.append("—" if b is None or b.get("error_occurred")
                         else f"{b['build_ms']:.3g} / {b['query_ms']:.3g}")
        print(f"| {shape} | " + " | ".join(cells) + " |")
    print()


def main(path: str) -> None:
    with open(path) as f:
        data = json.load(f)
    ctx = data["context"]
    caches = ", ".join(f"{c['size'] // 1024} KiB L{c['level']}" for c in ctx["caches"])
    bf16_peak = ""
    if float(ctx.get("peak_bf16_GFLOPps", 0)) > 0:
        bf16_peak = f", bf16 dot product {float(ctx['peak_bf16_GFLOPps']):.1f} GFLOP/s"
    print(f"Machine: {ctx.get('host_name', '?')}, {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
          f"caches {caches}; peaks measured at start-up of this run: streaming update "
          f"{float(ctx['peak_stream_update_GBps']):.1f} GB/s, FMA {float(ctx['peak_fma_GFLOPps']):.1f} "
          f"GFLOP/s{bf16_peak}; date {ctx['date']}; load average {ctx.get('load_avg', '?')}.\n")
    families = collections.OrderedDict()
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        families.setdefault(b["run_name"].split("/")[0], []).append(b)
    for family, rows in families.items():
        print(f"### {family}\n")
        if family == "emtrk":
            emtrk_summary(rows)
        if family == "knn_peers":
            knn_peers_summary(rows)
        print("| benchmark | time | throughput | fraction | implementation |")
        print("|---|---:|---:|---:|---|")
        for b in rows:
            name = b["run_name"].replace("/real_time", "")
            if b.get("error_occurred"):
                print(f"| {name} | skipped | | | {b.get('error_message', '')} |")
                continue
            rate, frac = throughput(b)
            if family == "emtrk" and "items_per_second" in b:
                rate = f"{b['items_per_second']:.0f} patches/s, {rate}"
            unit = b.get("time_unit", "ns")
            print(f"| {name} | {b['real_time']:.3g} {unit} | {rate} | {frac} | {b.get('label', '')} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
