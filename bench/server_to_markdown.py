#!/usr/bin/env python3
"""Tables and goal ratios from bench/server_load.py's JSON output."""
import json
import sys


def main(path):
    rows = json.load(open(path))
    inproc = {r["batch"]: r for r in rows if r["protocol"] == "in-process"}
    print("In-process (kaas-infer, openmp, same model file, planned for max batch 1024):\n")
    print("| batch | patches/s | median ms per batch |\n|---:|---:|---:|")
    for b, r in sorted(inproc.items()):
        print(f"| {b} | {r['patches_per_s']:.0f} | {r['p50_ms']:.2f} |")
    print()
    groups = {}
    for r in rows:
        if r["protocol"] == "in-process":
            continue
        groups.setdefault((r["protocol"], r["model"]), []).append(r)
    for (protocol, model), rs in groups.items():
        label = {"emtrkmichelid": "dynamic batching", "emtrk_nobatch": "no dynamic batching"}.get(model, model)
        client = "C++ clients (kaas-loadgen)" if protocol == "grpc-c++" else "Python tritonclient"
        title = ("KServe Python server + onnxruntime (peer), HTTP, Python tritonclient" if protocol == "kserve-http"
                 else f"kaas-server {protocol.replace('-c++', '')}, {label}, {client}")
        print(f"### {title}\n")
        print("| batch | clients | patches/s | requests/s | p50 ms | p99 ms | errors |\n|---:|---:|---:|---:|---:|---:|---:|")
        for r in rs:
            p50 = f"{r['p50_ms']:.1f}" if r["p50_ms"] is not None else "-"
            p99 = f"{r['p99_ms']:.1f}" if r["p99_ms"] is not None else "-"
            print(f"| {r['batch']} | {r['concurrency']} | {r['patches_per_s']:.0f} | {r['requests_per_s']:.1f} | {p50} | {p99} | {r['errors']} |")
        print()

    def best(protocol, model, batch, concurrency=None):
        c = [r["patches_per_s"] for r in rows if r["protocol"] == protocol and r["model"] == model
             and r["batch"] == batch and (concurrency is None or r["concurrency"] == concurrency)]
        return max(c) if c else None

    print("### Goals\n")
    if 256 in inproc:
        for protocol in ("grpc", "http", "grpc-c++"):
            served = best(protocol, "emtrkmichelid", 256)
            if served:
                print(f"- batch 256, {protocol}: best served {served:.0f} patches/s = "
                      f"{served / inproc[256]['patches_per_s']:.2f} of in-process {inproc[256]['patches_per_s']:.0f} (goal >= 0.90)")
    for protocol in ("grpc", "http", "grpc-c++"):
        b1 = best(protocol, "emtrkmichelid", 1, 64)
        b256 = best(protocol, "emtrkmichelid", 256)
        if b1 and b256:
            print(f"- 64 batch-1 clients, {protocol}, dynamic batching: {b1:.0f} patches/s = {b1 / b256:.2f} of the "
                  f"batch-256 throughput {b256:.0f} (goal >= 0.70)")
    for batch in (1, 16, 256):
        peer = best("kserve-http", "emtrkmichelid", batch)
        for protocol in ("grpc", "http"):
            mine = best(protocol, "emtrkmichelid", batch)
            if peer and mine:
                print(f"- batch {batch}, best over client counts: kaas {protocol} {mine:.0f} vs KServe peer {peer:.0f} "
                      f"patches/s = {mine / peer:.2f}x (goal >= 3x)")


if __name__ == "__main__":
    main(sys.argv[1])
