#!/usr/bin/env python3
"""kaas-server against the real Triton server with the kaas backend (libtriton_kaas.so), same
model file (the default repository's EmTrkMichelId, written for each server by
kaas-make-repository), same clients (kaas-loadgen, C++ gRPC), one run, plus in-process kaas
(kaas-infer) as the ceiling.

Points: batch 1, 16 and 256 with one client, batch 256 again with the input and outputs in
system shared memory (the client's own POSIX regions, registered once: same-node serving as
SonicTriton does it), and 64 concurrent batch-1 clients (both servers' dynamic batchers:
preferred batch 256, 500 us queue delay). Reported per point: patches/s, p50/p99 latency and the
server process's CPU time (utime + stime from /proc, over the run) per request.

Usage: triton_vs_kaas.py --server BIN --make-repository BIN --infer BIN --loadgen BIN
                         --backend-dir DIR [--duration S] [--threads N] [--out results.json]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "server"))
from server_fixture import KaasServer, TritonServer  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import server_load  # noqa: E402

# (patches per request, concurrent clients, where the tensors travel)
POINTS = [(1, 1, "grpc"), (16, 1, "grpc"), (256, 1, "grpc"), (256, 1, "system shm"), (1, 64, "grpc")]


def cpu_seconds(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def in_process(infer_bin, model_file, batch, tmp):
    """kaas-infer on the same model file (bench/server_load.py's in-process point)."""
    row = server_load.in_process(infer_bin, model_file, batch, tmp)
    return {"server": "in-process kaas", "batch": batch, "clients": 1,
            "patches_per_s": row["patches_per_s"], "p50_ms": row["p50_ms"]}


STAGES = ("success", "queue", "compute_input", "compute_infer", "compute_output")


def stage_totals(client):
    """Cumulative (count, ns) of the model's statistics stages, as the server reports them."""
    stats = client.get_inference_statistics("emtrkmichelid").model_stats[0]
    totals = {s: (getattr(stats.inference_stats, s).count, getattr(stats.inference_stats, s).ns) for s in STAGES}
    totals["executions"] = (stats.execution_count, 0)
    return totals


def measure(name, pid, url, loadgen, duration):
    import tritonclient.grpc as grpcclient

    stats_client = grpcclient.InferenceServerClient(url)
    rows = []
    for batch, clients, transport in POINTS:
        before = stage_totals(stats_client)
        cpu0 = cpu_seconds(pid)
        out = subprocess.run([loadgen, "--url", url, "--model", "emtrkmichelid", "--batch", str(batch),
                              "--clients", str(clients), "--seconds", str(duration),
                              "--shared-memory", "system" if transport == "system shm" else "none"],
                             check=True, capture_output=True, text=True).stdout
        cpu1 = cpu_seconds(pid)
        after = stage_totals(stats_client)
        r = json.loads(out)
        r.update({"server": name, "batch": batch, "clients": clients, "transport": transport,
                  "server_cpu_ms_per_request": (cpu1 - cpu0) * 1e3 / max(r["requests"], 1)})
        # Where a request's time goes inside the server (its own statistics, mean per request).
        requests = max(after["success"][0] - before["success"][0], 1)
        for stage in STAGES:
            r[f"{stage}_ms"] = (after[stage][1] - before[stage][1]) / requests / 1e6
        r["executions"] = after["executions"][0] - before["executions"][0]
        print(json.dumps(r), flush=True)
        rows.append(r)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--infer", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--backend-dir", required=True)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-triton-bench-"))
    for target in ("kaas", "triton"):
        subprocess.run([args.make_repository, "--repository", str(tmp / target), "--for", target],
                       check=True, stdout=subprocess.DEVNULL)
    model_file = tmp / "kaas" / "emtrkmichelid" / "1" / "model.onnx"
    same_file = model_file.read_bytes() == (tmp / "triton" / "emtrkmichelid" / "1" / "model.onnx").read_bytes()
    rows = [in_process(args.infer, model_file, b, tmp) for b in (1, 16, 256)]
    for r in rows:
        print(json.dumps(r), flush=True)
    kaas = KaasServer(args.server, tmp / "kaas", ["--allow-client-shm=true"])  # the shm point
    try:
        rows += measure("kaas-server", kaas.process.pid, kaas.grpc_url, args.loadgen, args.duration)
    finally:
        kaas.stop()
    triton = TritonServer(tmp / "triton", args.backend_dir, [f"--backend-config=kaas,threads={args.threads}"])
    try:
        rows += measure("triton+kaas", triton.process.pid, triton.grpc_url, args.loadgen, args.duration)
    finally:
        triton.stop()
    result = {"model_file_identical": same_file, "duration_s": args.duration, "threads": args.threads,
              "rows": rows}
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
        pathlib.Path(args.out).with_suffix(".md").write_text(markdown(result, " ".join(sys.argv)))


def markdown(result, command):
    """The comparison table: each server point beside the other server and in-process kaas."""
    rows = result["rows"]
    ceiling = {r["batch"]: r["patches_per_s"] for r in rows if r["server"] == "in-process kaas"}
    served = {(r["server"], r["batch"], r["clients"], r.get("transport", "grpc")): r
              for r in rows if "clients" in r and r["server"] != "in-process kaas"}
    lines = [f"Command: `{command}`", "",
             f"One run, {result['duration_s']} s per point, kaas-loadgen (C++ gRPC) clients, the same model file "
             f"for both servers ({'identical bytes' if result['model_file_identical'] else 'FILES DIFFER'}), "
             f"OpenMP threads {result['threads']}; server CPU = utime + stime of the server process over the "
             "point / requests; stages = the server's own statistics, mean ms per request.", "",
             "| batch x clients | tensors via | server | patches/s | p50 ms | p99 ms | server CPU ms/request | "
             "executions | queue / infer / input+output ms | vs in-process | kaas-server / Triton |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for batch, clients, transport in POINTS:
        for name in ("kaas-server", "triton+kaas"):
            r = served.get((name, batch, clients, transport))
            if not r:
                continue
            other = served.get(("triton+kaas", batch, clients, transport))
            ratio = f"{r['patches_per_s'] / other['patches_per_s']:.2f}" if name == "kaas-server" and other else ""
            vs = f"{r['patches_per_s'] / ceiling[batch]:.2f}" if clients == 1 and batch in ceiling else ""
            lines.append(f"| {batch} x {clients} | {transport} | {name} | {r['patches_per_s']:,.0f} | {r['p50_ms']:.2f} | "
                         f"{r['p99_ms']:.2f} | {r['server_cpu_ms_per_request']:.2f} | {r['executions']} | "
                         f"{r['queue_ms']:.2f} / {r['compute_infer_ms']:.2f} / "
                         f"{r['compute_input_ms'] + r['compute_output_ms']:.2f} | {vs} | {ratio} |")
    for name in ("kaas-server", "triton+kaas"):
        g, m = served.get((name, 256, 1, "grpc")), served.get((name, 256, 1, "system shm"))
        if g and m:
            lines.append(f"\n{name}, batch 256, system shared memory / gRPC bytes: p50 latency "
                         f"{m['p50_ms'] / g['p50_ms']:.2f}x, server CPU per request "
                         f"{m['server_cpu_ms_per_request'] / g['server_cpu_ms_per_request']:.2f}x, time outside "
                         f"the model (p50 - infer stage) {m['p50_ms'] - m['compute_infer_ms']:.2f} vs "
                         f"{g['p50_ms'] - g['compute_infer_ms']:.2f} ms")
    lines += ["", "In-process kaas (kaas-infer, openmp, median): " +
              ", ".join(f"batch {b}: {p:,.0f} patches/s" for b, p in sorted(ceiling.items())), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
