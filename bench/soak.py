#!/usr/bin/env python3
"""Soak: kaas-server on loopback under 128 clients (half REST, half gRPC, tritonclient) sending
kNN requests, every answer checked (the first against a NumPy brute-force kNN, the rest equal to
the first), while 64 slow and 1000 idle REST connections are held open. Reports failures,
p50/p99 per protocol and the server's RSS at start, after warm-up and at the end.

Usage: soak.py --server BIN --make-repository BIN [--requests 100000] [--out PREFIX]
"""
import argparse
import json
import multiprocessing as mp
import pathlib
import sys
import tempfile
import threading
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "server"))
sys.path.insert(0, str(HERE))
from hostile_connections import HostileConnections  # noqa: E402
from server_fixture import KaasServer, write_repository  # noqa: E402

CLIENTS, PROCESSES = 128, 8


def knn_reference(points, k):
    d = ((points[:, None, :] - points[None, :, :]) ** 2).sum(-1)
    return np.argsort(d, axis=1, kind="stable")[:, :k]


def client_process(protocol, url, threads, requests_each, seed, results):
    if protocol == "grpc":
        import tritonclient.grpc as tc
    else:
        import tritonclient.http as tc
    latencies, failures, lock = [], [], threading.Lock()

    def run(index):
        rng = np.random.default_rng(seed * 1000 + index)
        points = rng.uniform(0, 1, size=(32, 3)).astype(np.float32)
        client = tc.InferenceServerClient(url)
        inputs = [tc.InferInput("points", [32, 3], "FP32"), tc.InferInput("row_splits", [2], "INT64")]
        inputs[0].set_data_from_numpy(points)
        inputs[1].set_data_from_numpy(np.array([0, 32], dtype=np.int64))
        first, mine = None, []
        for _ in range(requests_each):
            t0 = time.perf_counter()
            try:
                indices = client.infer("knn", inputs).as_numpy("indices")
            except Exception as e:  # noqa: BLE001 - counted and reported
                with lock:
                    failures.append(f"{protocol}: {str(e)[:160]}")
                continue
            mine.append(time.perf_counter() - t0)
            if first is None:
                first = indices
                k = indices.shape[-1]
                expected = knn_reference(points.astype(np.float64), k)
                if not np.array_equal(np.sort(indices.reshape(32, k), 1), np.sort(expected, 1)):
                    with lock:
                        failures.append(f"{protocol}: kNN answer differs from the NumPy reference")
            elif not np.array_equal(indices, first):
                with lock:
                    failures.append(f"{protocol}: an answer differs from the first one")
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    results.put((protocol, latencies, failures))


def phase(server, requests_each):
    results = mp.Queue()
    procs = []
    for p in range(PROCESSES):
        protocol = "grpc" if p % 2 == 0 else "http"
        url = server.grpc_url if protocol == "grpc" else server.http_url
        procs.append(mp.Process(target=client_process,
                                args=(protocol, url, CLIENTS // PROCESSES, requests_each, p, results)))
    start = time.perf_counter()
    for p in procs:
        p.start()
    out = {"grpc": ([], []), "http": ([], [])}
    for _ in procs:
        protocol, lat, fail = results.get()
        out[protocol][0].extend(lat)
        out[protocol][1].extend(fail)
    for p in procs:
        p.join()
    return out, time.perf_counter() - start


def rss_mib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--machine", default="this machine")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    repository = pathlib.Path(tempfile.mkdtemp(prefix="kaas-soak-")) / "repo"
    write_repository(args.make_repository, repository)
    server = KaasServer(args.server, repository)
    pid = server.process.pid
    rss = {"start": rss_mib(pid)}
    hostile = HostileConnections(server.host, server.http_port)
    try:
        warm, _ = phase(server, 40)
        rss["after warm-up"] = rss_mib(pid)
        main_phase, wall = phase(server, -(-args.requests // CLIENTS))
        rss["end"] = rss_mib(pid)
        reopened = hostile.reopened
    finally:
        hostile.close()
        code = server.stop()
    rows = []
    for protocol, (lat, fail) in main_phase.items():
        lat_ms = np.array(lat) * 1e3
        rows.append({"protocol": protocol, "checked_requests": len(lat), "failures": len(fail),
                     "first_failure": fail[0] if fail else "", "p50_ms": float(np.percentile(lat_ms, 50)),
                     "p99_ms": float(np.percentile(lat_ms, 99))})
    warm_failures = sum(len(f) for _, f in warm.values())
    result = {"clients": CLIENTS, "wall_s": wall, "rows": rows, "rss_mib": rss, "warmup_failures": warm_failures,
              "hostile_reconnects": reopened, "server_exit": code,
              "rss_growth_after_warmup": (rss["end"] - rss["after warm-up"]) / rss["after warm-up"]}
    lines = [f"Soak, {args.machine}: `python3 bench/soak.py --requests {args.requests}` (one run); kaas-server "
             f"--backend openmp, kNN (32 points) from {CLIENTS} tritonclient clients (64 REST, 64 gRPC) in "
             f"{PROCESSES} processes, with 64 slow-header and 1000 idle REST connections held open "
             f"({reopened} reopened after server timeouts); {wall:.0f} s; server exit status {code}.", "",
             "| protocol | checked requests | failures | p50 ms | p99 ms |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['protocol']} | {r['checked_requests']} | {r['failures']} | {r['p50_ms']:.2f} | "
                     f"{r['p99_ms']:.2f} |")
    lines += ["", "| server RSS | MiB |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in rss.items()]
    lines += ["", f"RSS change from after warm-up to the end: {100 * result['rss_growth_after_warmup']:+.1f}%; "
              f"warm-up failures: {warm_failures}."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        pathlib.Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
        pathlib.Path(args.out + ".md").write_text(text)
    return 1 if code != 0 or any(r["failures"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
