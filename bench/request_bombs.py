#!/usr/bin/env python3
"""Requests built to exhaust one kaas-server's memory (issue 47): REST bodies in gzip and in
deflate that inflate to 1.25 GiB and a gRPC message with gzip compression that inflates to
~1.06 GiB, each sent to EmTrkMichelId of the default repository; and a 3 MB kNN request for
262,144 points x 16 neighbours with its outputs as JSON (~101 MB of text). Per bomb: the status, the seconds until the
answer and the server's peak RSS growth (VmHWM before and after, /proc). Prints one JSON line
per bomb and a Markdown table.

Usage: request_bombs.py --server BIN --make-repository BIN [--extra-args "..."]
"""
import argparse
import gzip
import http.client
import json
import os
import pathlib
import shlex
import sys
import tempfile
import time
import zlib

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "server"))
from server_fixture import KaasServer, write_repository  # noqa: E402

EMTRK = "emtrkmichelid"


def peak_rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """The server's utime + stime (/proc/PID/stat): its work on a bomb, whatever the client spent
    building and compressing it (tritonclient gzips a 1 GiB gRPC message for ~4 s)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reset_peak(pid):
    """Resets VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    pathlib.Path(f"/proc/{pid}/clear_refs").write_text("5")


def rest_bomb(server, encoding, inflated_bytes):
    # A JSON request whose one input's data is a very long run of zeros.
    head = b'{"inputs":[{"name":"main_input","shape":[1,48,48,1],"datatype":"FP32","data":['
    body = head + b"0," * ((inflated_bytes - len(head)) // 2) + b"0]}]}"
    if encoding == "gzip":
        packed = gzip.compress(body, compresslevel=9)
    else:
        packed = zlib.compress(body, 9)
    del body
    connection = http.client.HTTPConnection(*server.http_url.split(":"), timeout=600)
    start = time.monotonic()
    connection.request("POST", f"/v2/models/{EMTRK}/infer", packed,
                       {"Content-Type": "application/json", "Content-Encoding": encoding})
    response = connection.getresponse()
    text = response.read()[:200].decode(errors="replace")
    return response.status, time.monotonic() - start, text, len(packed)


def grpc_bomb(server, count):
    client = grpcclient.InferenceServerClient(server.grpc_url)
    zeros = np.zeros((count, 48, 48, 1), np.float32)
    i = grpcclient.InferInput("main_input", list(zeros.shape), "FP32")
    i.set_data_from_numpy(zeros)
    start = time.monotonic()
    try:
        client.infer(EMTRK, [i], compression_algorithm="gzip", client_timeout=600)
        status, text = "OK", ""
    except InferenceServerException as e:
        status, text = str(e.status()), e.message()[:200]
    return status, time.monotonic() - start, text, zeros.nbytes


def json_reply_bomb(server, points):
    client = httpclient.InferenceServerClient(server.http_url, network_timeout=600)
    inputs = [httpclient.InferInput("points", [points, 3], "FP32"),
              httpclient.InferInput("row_splits", [2], "INT64")]
    inputs[0].set_data_from_numpy(np.random.default_rng(1).uniform(0, 100, (points, 3)).astype(np.float32))
    inputs[1].set_data_from_numpy(np.array([0, points], dtype=np.int64))
    outputs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("indices", "distances")]
    start = time.monotonic()
    try:
        client.infer("knn", inputs, outputs=outputs)
        status, text = "200", ""
    except InferenceServerException as e:
        status, text = str(e.status()), e.message()[:200]
    return status, time.monotonic() - start, text, points * 12


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--extra-args", default="")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kaas-bombs-") as tmp:
        repo = pathlib.Path(tmp) / "repo"
        write_repository(args.make_repository, repo)
        server = KaasServer(args.server, repo, shlex.split(args.extra_args))
        pid = server.process.pid
        try:
            bombs = [("REST gzip", lambda: rest_bomb(server, "gzip", 1250 << 20)),
                     ("REST deflate", lambda: rest_bomb(server, "deflate", 1250 << 20)),
                     ("gRPC gzip", lambda: grpc_bomb(server, 115_000)),
                     ("REST kNN reply as JSON", lambda: json_reply_bomb(server, 262_144))]
            for name, send in bombs:
                reset_peak(pid)
                before, cpu_before = peak_rss_kib(pid), cpu_seconds(pid)
                status, seconds, text, size = send()
                growth_mb = (peak_rss_kib(pid) - before) / 1024
                row = {"bomb": name, "status": status, "seconds": round(seconds, 3),
                       "server_cpu_s": round(cpu_seconds(pid) - cpu_before, 2),
                       "peak_rss_growth_mb": round(growth_mb, 1), "sent_or_inflated_bytes": size,
                       "message": text}
                print(json.dumps(row), flush=True)
                rows.append(row)
        finally:
            server.stop()
    print("\n| bomb | status | answered after (client) | server CPU | server peak RSS growth | message |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['bomb']} | {r['status']} | {r['seconds']:.2f} s | {r['server_cpu_s']:.2f} s | "
              f"{r['peak_rss_growth_mb']:.1f} MB | "
              f"{r['message'][:90]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
