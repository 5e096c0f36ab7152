#!/usr/bin/env python3
"""Scale-out throughput: EmTrkMichelId batch-256 calls from kaas-client-load (8 clients, answers
not checked) to one kaas-server pinned to one core, then to two, each pinned to its own core,
reached through kaas::client's own balancing (the address list) and through haproxy
(deploy/haproxy/kaas.cfg). One run per point.

Usage: scale_out.py --server BIN --make-repository BIN --client-load BIN [--seconds 10] [--out F]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "server"))
from balancer_fixture import Haproxy, wait_for  # noqa: E402
from server_fixture import pin_to_cpu, write_repository  # noqa: E402
from test_failover import Fleet  # noqa: E402


def load(client_load, repo, servers, seconds, clients=8, batch=256):
    out = subprocess.run([client_load, "--servers", servers, "--repository", str(repo), "--clients", str(clients),
                          "--batch", str(batch), "--seconds", str(seconds), "--no-check"],
                         check=True, capture_output=True, text=True).stdout.splitlines()[-1]
    return json.loads(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--make-repository", required=True)
    p.add_argument("--client-load", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--out", default="")
    a = p.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-scale-out-"))
    repo = tmp / "repo"
    write_repository(a.make_repository, repo)
    fleet = Fleet(a.server, repo, 2)
    for i, s in enumerate(fleet.servers):
        pin_to_cpu(s.process.pid, i)
    lb = Haproxy(tmp)
    rows = []
    try:
        for i in (0, 1):
            http, grpc, _ = fleet.ports[i]
            lb.add(i + 1, http, grpc)
        wait_for(lambda: lb.servers_up() >= 2)
        points = [("1 server", fleet.addresses([0])), ("2 servers, client-side balancing", fleet.addresses()),
                  ("2 servers, haproxy", lb.address)]
        for name, servers in points:
            r = load(a.client_load, repo, servers, a.seconds)
            r["point"] = name
            print(json.dumps(r), flush=True)
            rows.append(r)
    finally:
        lb.stop()
        fleet.stop()
    base = rows[0]["patches_per_s"]
    result = {"rows": rows, "client_side_vs_one": rows[1]["patches_per_s"] / base,
              "haproxy_vs_one": rows[2]["patches_per_s"] / base}
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
