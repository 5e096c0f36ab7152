#!/usr/bin/env python3
"""Deadlines and cancellation reach kaas-server's scheduler: requests queued behind long
executions whose gRPC deadline passes (1 ms and 50 ms), whose REST `timeout` parameter expires,
or whose gRPC call is cancelled are dropped before they run. The model's own statistics prove it
(inference and execution counts grow by the long requests only; every dropped request that
reached the server is a failure, also in nv_inference_request_failure), and --log-verbose 1 logs
each drop with its reason.

Usage: test_deadlines.py --server BIN --make-repository BIN
"""
import argparse
import concurrent.futures
import pathlib
import re
import sys
import time
import urllib.request

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import KaasServer, check, failures, scratch_directory, write_repository  # noqa: E402

EMTRK = "emtrkmichelid"
LONG_BATCH = 1024  # the model's max batch: one execution each, nothing joins it
LONG_REQUESTS = 3


def statistics(client):
    s = client.get_inference_statistics(EMTRK).model_stats[0]
    return s.inference_count, s.execution_count, s.inference_stats.fail.count


def metric(server, name):
    with urllib.request.urlopen(f"http://{server.host}:{server.metrics_port}/metrics", timeout=30) as r:
        text = r.read().decode()
    match = re.search(name + r'\{[^}]*model="emtrkmichelid"[^}]*\} (\d+)', text)
    return int(match.group(1)) if match else -1


def failure_metric(server):
    return metric(server, "nv_inference_request_failure")


def patches(rng, batch):
    return rng.uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32)


def behind_long_executions(server, rng, what, send_small, expected_failures):
    """LONG_REQUESTS executions of LONG_BATCH patches, then `send_small` while they run; returns
    after everything is answered and checks that only the long requests were executed."""
    client = grpcclient.InferenceServerClient(server.grpc_url)
    before = statistics(client)
    metric_before = failure_metric(server)
    long_input = patches(rng, LONG_BATCH)

    def long_request():
        i = grpcclient.InferInput("main_input", list(long_input.shape), "FP32")
        i.set_data_from_numpy(long_input)
        return grpcclient.InferenceServerClient(server.grpc_url).infer(EMTRK, [i])

    with concurrent.futures.ThreadPoolExecutor(LONG_REQUESTS) as pool:
        longs = [pool.submit(long_request) for _ in range(LONG_REQUESTS)]
        # Only once the server holds two long requests (one running, one queued at least) do the
        # others come: they wait behind a whole execution of 1024 patches.
        waited = time.time() + 60
        while metric(server, "nv_inference_pending_request_count") < 2 and time.time() < waited:
            time.sleep(0.005)
        outcomes = send_small()
        long_ok = all(f.result().as_numpy("michel_netout/Sigmoid").shape == (LONG_BATCH, 1) for f in longs)
    deadline = time.time() + 10
    while time.time() < deadline:  # a dropped request is counted when a worker reaches it
        after = statistics(client)
        if after[2] - before[2] >= expected_failures[0]:
            break
        time.sleep(0.05)
    inferences, executions, fails = (a - b for a, b in zip(after, before))
    check(long_ok and inferences == LONG_REQUESTS * LONG_BATCH and executions == LONG_REQUESTS,
          f"{what}: {outcomes}; executed {executions} requests / {inferences} patches: only the long ones")
    low, high = expected_failures
    check(low <= fails <= high and failure_metric(server) - metric_before == fails,
          f"{what}: {fails} dropped requests counted as failures (statistics and nv_inference_request_failure)")


def grpc_deadline(server, rng, seconds, count):
    def send():
        client = grpcclient.InferenceServerClient(server.grpc_url)
        x = patches(rng, 1)
        i = grpcclient.InferInput("main_input", [1, 48, 48, 1], "FP32")
        i.set_data_from_numpy(x)
        done = concurrent.futures.ThreadPoolExecutor(count)

        def one():
            try:
                client.infer(EMTRK, [i], client_timeout=seconds)
                return "OK"
            except InferenceServerException as e:
                return str(e.status())
        answers = list(done.map(lambda _: one(), range(count)))
        done.shutdown()
        return f"{count} concurrent batch-1 requests with a {seconds * 1e3:g} ms deadline answered {sorted(set(answers))}"
    return send


def rest_timeout(server, rng, count):
    def send():
        client = httpclient.InferenceServerClient(server.http_url, concurrency=count)
        x = patches(rng, 1)
        i = httpclient.InferInput("main_input", [1, 48, 48, 1], "FP32")
        i.set_data_from_numpy(x)
        pending = [client.async_infer(EMTRK, [i], timeout=1000) for _ in range(count)]
        messages = []
        for p in pending:
            try:
                p.get_result()
                messages.append("OK")
            except InferenceServerException as e:
                messages.append(e.message().split(": ")[-1])
        client.close()
        return f"{count} REST requests with timeout 1000 us answered {sorted(set(messages))}"
    return send


def grpc_cancel(server, rng, count):
    def send():
        channel = grpc.insecure_channel(server.grpc_url)
        stub = grpcclient.service_pb2_grpc.GRPCInferenceServiceStub(channel)
        request = grpcclient.service_pb2.ModelInferRequest(model_name=EMTRK)
        request.inputs.add(name="main_input", datatype="FP32", shape=[1, 48, 48, 1])
        request.raw_input_contents.append(patches(rng, 1).tobytes())
        calls = [stub.ModelInfer.future(request) for _ in range(count)]
        time.sleep(0.05)  # they reached the server and wait in the queue
        cancelled = sum(call.cancel() for call in calls)
        channel.close()
        return f"{count} gRPC calls cancelled while queued ({cancelled} cancel() accepted)"
    return send


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    args = parser.parse_args()
    tmp = scratch_directory("kaas-deadline-test-")
    write_repository(args.make_repository, tmp / "repo")
    rng = np.random.default_rng(3)
    server = KaasServer(args.server, tmp / "repo", ["--log-verbose", "1"])
    try:
        # 1 ms: the request may expire before it reaches the server; it is never executed.
        behind_long_executions(server, rng, "gRPC deadline 1 ms", grpc_deadline(server, rng, 0.001, 8), (0, 8))
        behind_long_executions(server, rng, "gRPC deadline 50 ms", grpc_deadline(server, rng, 0.05, 8), (8, 8))
        behind_long_executions(server, rng, "REST timeout parameter", rest_timeout(server, rng, 8), (8, 8))
        behind_long_executions(server, rng, "gRPC cancel", grpc_cancel(server, rng, 8), (8, 8))
        log = server.output()
        check(log.count("deadline exceeded before execution") >= 8 and "Request timeout expired" in log and
              "the client went away before execution" in log,
              "--log-verbose 1: every kind of drop is logged with its reason")
        client = grpcclient.InferenceServerClient(server.grpc_url)
        x = patches(rng, 2)
        i = grpcclient.InferInput("main_input", [2, 48, 48, 1], "FP32")
        i.set_data_from_numpy(x)
        check(client.infer(EMTRK, [i], client_timeout=30).as_numpy("michel_netout/Sigmoid").shape == (2, 1),
              "a request with a generous deadline is answered afterwards")
    finally:
        code = server.stop()
        check(code == 0, f"SIGTERM: kaas-server exited with {code}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
