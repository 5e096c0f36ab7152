#!/usr/bin/env python3
"""REST front end before/after: batch-1 EmTrkMichelId over REST (binary tensor extension, one
keep-alive connection, requests back to back) on an idle server and with 64 slow + 1000 idle
connections held open (bench/hostile_connections.py), plus throughput with 16 concurrent
tritonclient HTTP clients on the idle server. Run for each kaas-server binary given (e.g. the
cpp-httplib build of an older commit and the current Beast one).

Usage: rest_latency.py --server LABEL=BIN [--server LABEL=BIN ...] --make-repository BIN
                       [--requests N] [--duration S] [--out bench/results/rest-frontend-cpu]
"""
import argparse
import http.client
import json
import pathlib
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "server"))
sys.path.insert(0, str(HERE))
from hostile_connections import HostileConnections  # noqa: E402
from server_fixture import KaasServer, write_repository  # noqa: E402
from server_load import load  # noqa: E402

MODEL = "emtrkmichelid"


def binary_request():
    patch = np.random.default_rng(3).uniform(-5, 15, size=(1, 48, 48, 1)).astype(np.float32).tobytes()
    header = json.dumps({"inputs": [{"name": "main_input", "shape": [1, 48, 48, 1], "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(patch)}}],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + patch, len(header)


def sequential(host, port, requests, limit_s):
    """p50/p99 of back-to-back requests on one keep-alive connection; failures counted (10 s
    timeout each), at most `limit_s` seconds in all."""
    body, header_length = binary_request()
    headers = {"Inference-Header-Content-Length": str(header_length), "Content-Type": "application/octet-stream"}
    latencies, failures = [], 0
    connection = http.client.HTTPConnection(host, port, timeout=10)
    stop_at = time.perf_counter() + limit_s
    while len(latencies) + failures < requests and time.perf_counter() < stop_at:
        t0 = time.perf_counter()
        try:
            connection.request("POST", f"/v2/models/{MODEL}/infer", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                failures += 1
                continue
        except OSError:
            failures += 1
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=10)
            continue
        latencies.append(time.perf_counter() - t0)
    lat = np.array(latencies) * 1e3
    return {"requests": len(latencies), "failures": failures,
            "p50_ms": float(np.percentile(lat, 50)) if len(lat) else None,
            "p99_ms": float(np.percentile(lat, 99)) if len(lat) else None}


def measure(label, binary, repository, args):
    server = KaasServer(binary, repository)
    rows = []
    try:
        sequential(server.host, server.http_port, 50, 30)  # warm-up
        row = sequential(server.host, server.http_port, args.requests, 60)
        rows.append({"server": label, "scenario": "idle server", "clients": 1, **row})
        tput = load("http", server.http_url, MODEL, 1, 16, args.duration)
        rows.append({"server": label, "scenario": "idle server", "clients": 16, "requests": tput["requests"],
                     "failures": tput["errors"], "p50_ms": tput["p50_ms"], "p99_ms": tput["p99_ms"],
                     "requests_per_s": tput["requests_per_s"]})
        hostile = HostileConnections(server.host, server.http_port)
        try:
            time.sleep(1)
            row = sequential(server.host, server.http_port, args.requests, 60)
            rows.append({"server": label, "scenario": "64 slow + 1000 idle connections", "clients": 1, **row})
        finally:
            hostile.close()
    finally:
        server.stop()
    return rows


def markdown(rows, machine):
    lines = [f"REST batch-1 EmTrkMichelId (binary tensor extension), {machine}; "
             "`python3 bench/rest_latency.py` (one run).", "",
             "| server | scenario | clients | requests | failures | p50 ms | p99 ms | req/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        rps = r.get("requests_per_s")
        lines.append(f"| {r['server']} | {r['scenario']} | {r['clients']} | {r['requests']} | {r['failures']} | "
                     f"{fmt(r['p50_ms'])} | {fmt(r['p99_ms'])} | {'-' if rps is None else f'{rps:.0f}'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", action="append", required=True, help="LABEL=kaas-server binary")
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--machine", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    repository = pathlib.Path(tempfile.mkdtemp(prefix="kaas-rest-bench-")) / "repo"
    write_repository(args.make_repository, repository)
    rows = []
    for spec in args.server:
        label, binary = spec.split("=", 1)
        rows += measure(label, binary, repository, args)
    text = markdown(rows, args.machine or "this machine")
    print(text)
    if args.out:
        pathlib.Path(args.out + ".json").write_text(json.dumps(rows, indent=1) + "\n")
        pathlib.Path(args.out + ".md").write_text(text)


if __name__ == "__main__":
    main()
