#!/usr/bin/env python3
"""kaas-server protocol details beyond the Triton client calls: grpc.health.v1 Health, server
reflection, typed (non-raw) gRPC tensor contents, TLS with a self-signed certificate (gRPC and
HTTPS), explicit model control, and a load test: 64 concurrent clients x N requests with no
failure and every result checked, the 64 clients' streams all running at once.

Usage: test_protocol.py --server BIN --make-repository BIN [--load-requests N]
"""
import argparse
import concurrent.futures
import pathlib
import subprocess
import sys
import threading
import time

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import KaasServer, check, failures, scratch_directory, write_repository  # noqa: E402

def knn_reference(points, splits, k):
    idx = np.full((len(points), k), -1, np.int32)
    for e in range(len(splits) - 1):
        lo, hi = splits[e], splits[e + 1]
        p = points[lo:hi]
        d = ((p[:, None, :] - p[None, :, :]) ** 2).sum(-1, dtype=np.float32)
        for q in range(hi - lo):
            order = sorted(range(hi - lo), key=lambda j: (j != q, d[q, j], j))[:k]
            idx[lo + q, :len(order)] = np.array(order) + lo
    return idx


def health_and_reflection(server):
    channel = grpc.insecure_channel(server.grpc_url)
    status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
    check(status.status == health_pb2.HealthCheckResponse.SERVING, "grpc.health.v1 Check: SERVING")
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    services = [s.name for r in replies for s in r.list_services_response.service]
    check("inference.GRPCInferenceService" in services, f"reflection lists {services}")


def typed_contents(server):
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc_url))
    request = service_pb2.ModelInferRequest(model_name="knn", id="typed-1")
    points = request.inputs.add(name="points", datatype="FP32", shape=[4, 2])
    points.contents.fp32_contents.extend([0, 0, 1, 0, 0, 2, 5, 5])
    splits = request.inputs.add(name="row_splits", datatype="INT64", shape=[2])
    splits.contents.int64_contents.extend([0, 4])
    request.outputs.add(name="indices")
    response = stub.ModelInfer(request)
    indices = np.frombuffer(response.raw_output_contents[0], np.int32).reshape(4, 16)
    check(response.id == "typed-1" and len(response.outputs) == 1 and response.outputs[0].name == "indices"
          and list(response.outputs[0].shape) == [4, 16] and response.outputs[0].datatype == "INT32",
          "typed contents: id echoed, requested-output subset, datatype and shape set")
    check(list(indices[0, :4]) == [0, 1, 2, 3] and list(indices[3, :4]) == [3, 2, 1, 0],
          f"typed contents: knn rows {list(indices[0, :4])} {list(indices[3, :4])}")
    # Raw bytes that do not match the shape.
    raw = service_pb2.ModelInferRequest(model_name="knn")
    raw.inputs.add(name="points", datatype="FP32", shape=[4, 2])
    raw.inputs.add(name="row_splits", datatype="INT64", shape=[2])
    raw.raw_input_contents.extend([np.zeros(7, np.float32).tobytes(), np.array([0, 4], np.int64).tobytes()])
    try:
        stub.ModelInfer(raw)
        check(False, "raw contents of the wrong byte size rejected")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "28 bytes" in e.details() and "needs 32" in e.details(),
              f"raw contents of the wrong byte size: {e.code()} {e.details()}")
    bad = service_pb2.ModelInferRequest(model_name="knn")
    p = bad.inputs.add(name="points", datatype="FP32", shape=[4, 2])
    p.contents.fp32_contents.extend([0, 0, 1])
    s = bad.inputs.add(name="row_splits", datatype="INT64", shape=[2])
    s.contents.int64_contents.extend([0, 4])
    try:
        stub.ModelInfer(bad)
        check(False, "typed contents with too few values rejected")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "3 values" in e.details(),
              f"typed contents with too few values: {e.code()} {e.details()}")


def load(server, requests_per_client):
    """64 clients (a channel each) send their requests back to back, each answer compared with the
    reference for its own input (the inputs differ by client and request, so an answer routed to
    the wrong call shows). What the count must give is that the 64 streams overlap: every client
    still sending when the last one starts. Checked from their first and last call times, with the
    most calls open at once."""
    rng = np.random.default_rng(11)
    spans = [None] * 64
    in_flight = [0, 0]  # now, most
    lock = threading.Lock()

    def client_work(c):
        client = grpcclient.InferenceServerClient(server.grpc_url)
        wrong = 0
        first = time.monotonic()
        for r in range(requests_per_client):
            n = 3 + (c + r) % 9
            points = rng.uniform(0, 1, size=(n, 2)).astype(np.float32) if r % 50 == 0 else \
                np.arange(2 * n, dtype=np.float32).reshape(n, 2) * (1 + c)
            splits = np.array([0, n], np.int64)
            ins = [grpcclient.InferInput("points", [n, 2], "FP32"), grpcclient.InferInput("row_splits", [2], "INT64")]
            ins[0].set_data_from_numpy(points)
            ins[1].set_data_from_numpy(splits)
            with lock:
                in_flight[0] += 1
                in_flight[1] = max(in_flight)
            try:
                got = client.infer("knn", ins).as_numpy("indices")
            finally:
                with lock:
                    in_flight[0] -= 1
            wrong += not np.array_equal(got, knn_reference(points, splits, 16))
        spans[c] = (first, time.monotonic())
        return wrong

    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        wrong = sum(pool.map(client_work, range(64)))
    stats = grpcclient.InferenceServerClient(server.grpc_url).get_inference_statistics("knn").model_stats[0]
    total = 64 * requests_per_client
    check(wrong == 0 and stats.inference_stats.fail.count == 0 and stats.inference_stats.success.count >= total,
          f"load: 64 clients x {requests_per_client} requests, {wrong} wrong, "
          f"{stats.inference_stats.fail.count} failed, {stats.inference_stats.success.count} succeeded")
    last_start, first_end = max(s[0] for s in spans), min(s[1] for s in spans)
    check(last_start < first_end,
          f"load: the 64 clients ran at once for {first_end - last_start:.2f} s (the last began "
          f"{last_start - min(s[0] for s in spans):.2f} s in, the first ended after "
          f"{first_end - min(s[0] for s in spans):.2f} s); up to {in_flight[1]} calls sent and not yet "
          "answered at once")


def tls(args, repo, tmp):
    key, cert = tmp / "key.pem", tmp / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = KaasServer(args.server, repo, ["--tls-cert", str(cert), "--tls-key", str(key)])
    try:
        g = grpcclient.InferenceServerClient(f"localhost:{server.grpc_port}", ssl=True,
                                             root_certificates=str(cert))
        check(g.is_server_ready(), "TLS: gRPC with the self-signed certificate")
        h = httpclient.InferenceServerClient(f"localhost:{server.http_port}", ssl=True,
                                             ssl_options={"ca_certs": str(cert)})
        check(h.is_server_ready() and h.get_model_metadata("knn")["name"] == "knn", "TLS: HTTPS metadata")
        plain = grpcclient.InferenceServerClient(f"localhost:{server.grpc_port}")
        try:
            plain.is_server_live()
            check(False, "TLS: a plaintext client is refused")
        except Exception:  # noqa: BLE001 - any transport failure is the expected outcome
            check(True, "TLS: a plaintext client is refused")
    finally:
        check(server.stop() == 0, "TLS server stops with 0")


def explicit_control(args, repo):
    server = KaasServer(args.server, repo, ["--model-control-mode", "explicit"])
    try:
        g = grpcclient.InferenceServerClient(server.grpc_url)
        index = {m.name: m.state for m in g.get_model_repository_index().models}
        check(index.get("knn") == "UNAVAILABLE" and not g.is_model_ready("knn"), f"explicit: nothing loaded {index}")
        g.load_model("knn")
        check(g.is_model_ready("knn"), "explicit: knn loaded")
        g.unload_model("knn")
        check(not g.is_model_ready("knn"), "explicit: knn unloaded")
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--load-requests", type=int, default=250)
    args = parser.parse_args()
    tmp = scratch_directory("kaas-protocol-")
    repo = tmp / "repo"
    write_repository(args.make_repository, repo)
    server = KaasServer(args.server, repo, ["--grpc-reflection=true"])
    try:
        health_and_reflection(server)
        typed_contents(server)
        load(server, args.load_requests)
    finally:
        check(server.stop() == 0, "server stops with 0")
    tls(args, repo, tmp)
    explicit_control(args, repo)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
