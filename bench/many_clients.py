#!/usr/bin/env python3
"""Many small clients (issue 47): kaas-server against Triton with the kaas backend at 64
concurrent batch-1 clients (kaas-loadgen, C++ gRPC), the same model file, every server up at
once and measured in interleaved rounds (A B C A B C ...), because this VM's speed moves by
tens of percent between runs. Reported per server: each round's patches/s, the median, and the
median of the per-round ratios to Triton with their spread.

Usage: many_clients.py --server BIN --make-repository BIN --loadgen BIN --backend-dir DIR
                       [--kaas-variants "openmp;tbb"] [--rounds 5] [--seconds 8] [--clients 64]
"""
import argparse
import json
import os
import pathlib
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "server"))
from server_fixture import KaasServer, TritonServer  # noqa: E402


def load(loadgen, url, clients, seconds):
    out = subprocess.run([loadgen, "--url", url, "--model", "emtrkmichelid", "--batch", "1",
                          "--clients", str(clients), "--seconds", str(seconds), "--shared-memory", "none"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--backend-dir", required=True)
    parser.add_argument("--kaas-variants", default="openmp;tbb",
                        help="kaas-server variants, ';'-separated: VAR=value environment words, a "
                             "backend name, then extra flags (e.g. 'OMP_WAIT_POLICY=passive openmp')")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-many-clients-"))
    for target in ("kaas", "triton"):
        subprocess.run([args.make_repository, "--repository", str(tmp / target), "--for", target],
                       check=True, stdout=subprocess.DEVNULL)
    servers = {}
    try:
        for variant in args.kaas_variants.split(";"):
            words = shlex.split(variant)
            env = dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))
            backend, *flags = [w for w in words if not ("=" in w and not w.startswith("-"))]
            saved = dict(os.environ)
            os.environ.update(env)  # the server process inherits it
            try:
                servers[f"kaas-server {variant}"] = KaasServer(args.server, tmp / "kaas", flags, backend=backend)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        servers["triton+kaas"] = TritonServer(tmp / "triton", args.backend_dir,
                                              [f"--backend-config=kaas,threads={args.threads}"])
        rates = {name: [] for name in servers}
        for round_index in range(args.rounds):
            for name, server in servers.items():
                r = load(args.loadgen, server.grpc_url, args.clients, args.seconds)
                rates[name].append(r["patches_per_s"])
                print(json.dumps({"round": round_index, "server": name, "patches_per_s": r["patches_per_s"],
                                  "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"]}), flush=True)
    finally:
        for server in servers.values():
            server.stop()
    triton = rates["triton+kaas"]
    print(f"\n{args.clients} batch-1 clients, {args.rounds} interleaved rounds of {args.seconds} s, "
          f"threads {args.threads}\n")
    print("| server | patches/s per round | median | median of round ratios to Triton (min-max) |")
    print("|---|---|---:|---|")
    for name, values in rates.items():
        ratios = [v / t for v, t in zip(values, triton)]
        print(f"| {name} | {', '.join(f'{v:,.0f}' for v in values)} | {statistics.median(values):,.0f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
