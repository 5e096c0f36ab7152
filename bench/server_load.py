#!/usr/bin/env python3
"""Served EmTrkMichelId throughput and latency: kaas-server over loopback gRPC and HTTP against
in-process kaas (kaas-infer) and, when it can be installed, KServe's Python model server with
onnxruntime on the same model.onnx (bench/peers/kserve_onnx_server.py).

For each protocol, batch size (patches per request) and concurrency (client threads spread over a
few processes, Python's GIL would otherwise be the bottleneck; with --loadgen also C++ gRPC
clients, bench/grpc_loadgen.cc, which cost the shared CPU less), requests are sent back to back
for --duration seconds; reported: patches/s, requests/s, p50 and p99 latency. kaas-server runs
the model twice: with dynamic batching (emtrkmichelid) and without (emtrk_nobatch).

Usage: server_load.py --server BIN --make-repository BIN --infer BIN [--kserve-python PY]
                      [--duration S] [--out results.md]
"""
import argparse
import json
import multiprocessing as mp
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "server"))
from server_fixture import KaasServer  # noqa: E402

OUTPUTS = ["em_trk_none_netout/Softmax", "michel_netout/Sigmoid"]


def client_process(protocol, url, model, batch, threads, duration, results):
    import threading

    if protocol == "grpc":
        import tritonclient.grpc as tc
    else:
        import tritonclient.http as tc
    patches = np.random.default_rng(os.getpid()).uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32)
    latencies, errors = [], []
    lock = threading.Lock()
    stop_at = time.perf_counter() + duration

    def run():
        client = tc.InferenceServerClient(url)
        inp = tc.InferInput("main_input", [batch, 48, 48, 1], "FP32")
        inp.set_data_from_numpy(patches)
        outs = [tc.InferRequestedOutput(n) for n in OUTPUTS]
        mine = []
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            try:
                client.infer(model, [inp], outputs=outs)
            except Exception as e:  # noqa: BLE001 - counted and reported
                with lock:
                    errors.append(str(e)[:200])
                continue
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    results.put((latencies, errors))


def load(protocol, url, model, batch, concurrency, duration):
    processes = min(concurrency, 4)
    results = mp.Queue()
    procs = []
    for p in range(processes):
        threads = concurrency // processes + (1 if p < concurrency % processes else 0)
        procs.append(mp.Process(target=client_process, args=(protocol, url, model, batch, threads, duration, results)))
    start = time.perf_counter()
    for p in procs:
        p.start()
    latencies, errors = [], []
    for _ in procs:
        lat, err = results.get()
        latencies += lat
        errors += err
    for p in procs:
        p.join()
    wall = time.perf_counter() - start - 0.0
    lat = np.array(latencies) * 1e3
    n = len(latencies)
    return {"protocol": protocol, "model": model, "batch": batch, "concurrency": concurrency,
            "requests": n, "errors": len(errors), "first_error": errors[0] if errors else "",
            "patches_per_s": n * batch / duration, "requests_per_s": n / duration,
            "p50_ms": float(np.percentile(lat, 50)) if n else None,
            "p99_ms": float(np.percentile(lat, 99)) if n else None, "wall_s": wall}


def in_process(infer_bin, model_file, batch, tmp):
    x = np.random.default_rng(3).uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32)
    np.save(tmp / "x.npy", x)
    repeat = max(3, min(200, 2000 // batch))
    out = subprocess.run([infer_bin, "--model", str(model_file), "--backend", "openmp", "--input",
                          f"main_input={tmp / 'x.npy'}", "--batch", "1024", "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True).stdout
    median_ms = float(re.search(r"median ([0-9.]+) ms", out).group(1))
    return {"protocol": "in-process", "model": "kaas-infer", "batch": batch, "concurrency": 1,
            "patches_per_s": batch / (median_ms / 1e3), "p50_ms": median_ms}


def start_kserve(python, model_file, tmp):
    log = open(tmp / "kserve.log", "w")
    script = pathlib.Path(__file__).resolve().parent / "peers" / "kserve_onnx_server.py"
    proc = subprocess.Popen([python, str(script), "--model-file", str(model_file), "--http-port", "0"],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline:
        text = (tmp / "kserve.log").read_text()
        m = re.search(r"kserve-peer listening http=(\d+)", text)
        if m:
            url = f"127.0.0.1:{m.group(1)}"
            while time.time() < deadline:  # the line comes before uvicorn listens
                try:
                    import urllib.request
                    with urllib.request.urlopen(f"http://{url}/v2/health/ready", timeout=2) as r:
                        if r.status == 200:
                            return proc, url
                except OSError:
                    time.sleep(0.2)
            break
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the KServe peer did not start:\n" + (tmp / "kserve.log").read_text()[-2000:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--infer", required=True)
    parser.add_argument("--kserve-python", default="")
    parser.add_argument("--loadgen", default="", help="kaas-loadgen: C++ gRPC client rows")
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--batches", default="1,16,256")
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-server-load-"))
    repo = tmp / "repo"
    subprocess.run([args.make_repository, "--repository", str(repo)], check=True, stdout=subprocess.DEVNULL)
    shutil.copytree(repo / "emtrkmichelid", repo / "emtrk_nobatch")
    cfg = (repo / "emtrk_nobatch" / "config.pbtxt").read_text()
    cfg = re.sub(r"dynamic_batching \{[^}]*\}\n", "", cfg).replace('name: "emtrkmichelid"', 'name: "emtrk_nobatch"')
    (repo / "emtrk_nobatch" / "config.pbtxt").write_text(cfg)
    model_file = repo / "emtrkmichelid" / "1" / "model.onnx"
    rows = [in_process(args.infer, model_file, b, tmp) for b in batches]
    for r in rows:
        print(json.dumps(r), flush=True)
    server = KaasServer(args.server, repo)
    try:
        for protocol, url in (("grpc", server.grpc_url), ("http", server.http_url)):
            for model in ("emtrkmichelid", "emtrk_nobatch"):
                for batch in batches:
                    for c in concurrencies:
                        r = load(protocol, url, model, batch, c, args.duration)
                        rows.append(r)
                        print(json.dumps(r), flush=True)
        if args.loadgen:
            for model in ("emtrkmichelid", "emtrk_nobatch"):
                for batch in batches:
                    for c in concurrencies:
                        out = subprocess.run([args.loadgen, "--url", server.grpc_url, "--model", model,
                                              "--batch", str(batch), "--clients", str(c),
                                              "--seconds", str(args.duration)],
                                             capture_output=True, text=True)
                        r = json.loads(out.stdout)
                        rows.append(r)
                        print(json.dumps(r), flush=True)
    finally:
        server.stop()
    if args.kserve_python:
        proc, url = start_kserve(args.kserve_python, model_file, tmp)
        try:
            for batch in batches:
                for c in concurrencies:
                    r = load("http", url, "emtrkmichelid", batch, c, args.duration)
                    r["protocol"] = "kserve-http"
                    rows.append(r)
                    print(json.dumps(r), flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    mp.set_start_method("fork")
    main()
