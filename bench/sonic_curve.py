#!/usr/bin/env python3
"""The SONIC capacity model (tools/sonic_capacity.py) against a measured curve: one kaas-server
pinned to one core (--threads 1), 1..K clients (kaas-client-load on the other core) each doing
--work-ms of other work per event (simulated by sleeping: each client behaves as one with a core
of its own) and one EmTrkMichelId call of --batch patches; time per event against clients.

Predicted saturation point: t_ideal / t_GPU with t_GPU = the server's own time per request at one
client (ModelStatistics: success duration / count) and t_ideal = the time per event at one client.
Measured: t_ideal / (time per event / clients) at the largest K, where the server is saturated and
serves one request per t_GPU,effective.

Usage: sonic_curve.py --server BIN --make-repository BIN --client-load BIN [--work-ms 300]
                      [--batch 256] [--max-clients 9] [--seconds 6] [--out results.json]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "server"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
from server_fixture import KaasServer, pin_to_cpu, write_repository  # noqa: E402
import sonic_capacity  # noqa: E402


def server_seconds(server):
    """(requests, seconds) the server has spent on the model's successful requests."""
    import tritonclient.grpc as grpcclient

    stats = grpcclient.InferenceServerClient(server.grpc_url).get_inference_statistics("emtrkmichelid")
    s = stats.model_stats[0].inference_stats.success
    return s.count, s.ns / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--make-repository", required=True)
    p.add_argument("--client-load", required=True)
    p.add_argument("--work-ms", type=float, default=300)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--max-clients", type=int, default=9)
    p.add_argument("--seconds", type=float, default=6)
    p.add_argument("--out", default="")
    a = p.parse_args()
    repo = pathlib.Path(tempfile.mkdtemp(prefix="kaas-sonic-curve-")) / "repo"
    write_repository(a.make_repository, repo)
    server = KaasServer(a.server, repo, extra_args=["--threads", "1"])
    pin_to_cpu(server.process.pid, 0)
    rows = []
    try:
        for clients in range(1, a.max_clients + 1):
            before = server_seconds(server)
            out = subprocess.run(["taskset", "-c", "1", a.client_load, "--servers", server.grpc_url,
                                  "--repository", str(repo), "--clients", str(clients), "--batch", str(a.batch),
                                  "--seconds", str(a.seconds), "--work-ms", str(a.work_ms), "--no-check"],
                                 check=True, capture_output=True, text=True).stdout.splitlines()[-1]
            after = server_seconds(server)
            r = json.loads(out)
            row = {"clients": clients, "event_ms": r["event_ms"], "calls": r["calls"], "failures": r["failures"],
                   "server_ms_per_request": (after[1] - before[1]) * 1e3 / max(after[0] - before[0], 1)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        server.stop()
    one = rows[0]
    t_gpu = one["server_ms_per_request"] / 1e3
    m = sonic_capacity.model(cpu_s=a.work_ms / 1e3, preprocess_s=0.0, bandwidth_s=0.0,
                             travel_s=one["event_ms"] / 1e3 - a.work_ms / 1e3 - t_gpu, server_s=t_gpu)
    last = rows[-1]
    measured = m["t_ideal_s"] / (last["event_ms"] / 1e3 / last["clients"])
    for row in rows:
        row["model_ms"] = sonic_capacity.t_sonic(m, row["clients"]) * 1e3
    result = {"work_ms": a.work_ms, "batch": a.batch, "seconds": a.seconds, "model": m, "rows": rows,
              "predicted_saturation": m["saturation_ratio"], "measured_saturation": measured,
              "ratio": m["saturation_ratio"] / measured}
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
