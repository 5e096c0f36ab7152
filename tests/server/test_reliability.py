#!/usr/bin/env python3
"""Regression tests for the defects an outside tester found in kaas-server (issue 13): each attack
gets a 4xx with a clear message, nothing crashes, and the server answers the next request
correctly. Raw sockets for what clients would never send.

Usage: test_reliability.py --server BIN --make-repository BIN
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import pathlib
import socket
import sys
import time
import zlib

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.grpc import service_pb2, service_pb2_grpc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import KaasServer, check, failures, scratch_directory, write_repository  # noqa: E402


def raw(server, request, timeout=30):
    """Sends raw bytes, returns (status, headers text, body bytes) of the first response."""
    with socket.create_connection((server.host, server.http_port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        headers = head.decode("latin-1")
        length = 0
        for line in headers.split("\r\n")[1:]:
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    status = int(headers.split(" ", 2)[1]) if headers.startswith("HTTP/") else 0
    return status, headers, body


def truncated(server, head, body_part):
    """Sends a request whose body stops early and keeps the connection open: after the server's
    read timeout the reply must be a 400, not an inference on a partial body."""
    with socket.create_connection((server.host, server.http_port), timeout=60) as s:
        s.sendall(head + body_part)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head_text, _, body = data.partition(b"\r\n\r\n")
    status = int(head_text.split(b" ", 2)[1]) if head_text.startswith(b"HTTP/") else 0
    return status, head_text.decode("latin-1"), body


def post(server, path, body, headers=()):
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{h}\r\n" for h in headers) + "Connection: close\r\n\r\n"
    return raw(server, head.encode() + body)


def get(server, path_bytes):
    return raw(server, b"GET " + path_bytes + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")


def knn_body(points, splits, parameters=None, ids=None):
    body = {"inputs": [
        {"name": "points", "shape": list(points.shape), "datatype": "FP32", "data": points.ravel().tolist()},
        {"name": "row_splits", "shape": [len(splits)], "datatype": "INT64", "data": list(map(int, splits))}]}
    if parameters is not None:
        body["parameters"] = parameters
    if ids is not None:
        body["id"] = ids
    return json.dumps(body).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    args = parser.parse_args()
    tmp = scratch_directory("kaas-reliability-")
    repo = tmp / "repo"
    write_repository(args.make_repository, repo)
    # Broken entries: a version directory beyond int64, a config.pbtxt that is a directory.
    (repo / "huge_version" / "99999999999999999999").mkdir(parents=True)
    (repo / "huge_version" / "config.pbtxt").write_text(
        'backend: "kaas"\nparameters { key: "kaas_model" value { string_value: "knn" } }\n')
    (repo / "config_dir" / "1").mkdir(parents=True)
    (repo / "config_dir" / "config.pbtxt").mkdir()
    # A short body timeout: the truncated-body cases are answered after 2 s, not 60 s.
    server = KaasServer(args.server, repo, extra_args=["--http-body-timeout", "2", "--http-header-timeout", "3"])
    try:
        run(server)
    finally:
        code = server.stop()
        check(code == 0, f"kaas-server exited with {code} after the battery (no crash)")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


def run(server):
    rng = np.random.default_rng(5)
    points = rng.uniform(0, 1, size=(20, 3)).astype(np.float32)
    splits = np.array([0, 20], dtype=np.int64)
    good_body = knn_body(points, splits)
    # 6. below: the incomplete bodies are answered only after the server's 2 s body timeout, so
    # they are sent now and wait on connections of their own while checks 1-4 run.
    head = f"POST /v2/models/knn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {len(good_body) + 100}\r\n\r\n"
    chunked_head = b"POST /v2/models/knn/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    first_chunk = f"{len(good_body):x}\r\n".encode() + good_body + b"\r\n"
    waiting = concurrent.futures.ThreadPoolExecutor(2)
    short_body = waiting.submit(truncated, server, head.encode(), good_body)
    no_last_chunk = waiting.submit(truncated, server, chunked_head, first_chunk)
    waiting.shutdown(wait=False)
    status, _, body = post(server, "/v2/models/knn/infer", good_body)
    reference = json.loads(body)["outputs"] if status == 200 else None
    check(status == 200, "a good kNN request over REST")

    def still_serving(what):
        s, _, b = post(server, "/v2/models/knn/infer", good_body)
        check(s == 200 and json.loads(b)["outputs"] == reference, f"after {what}: the next request is answered correctly")

    def expect(what, result, statuses, fragment=b""):
        status, headers, body = result
        ok = status in statuses and fragment in body and len(body) < 100_000
        check(ok, f"{what}: {status} {body[:110]!r}")
        still_serving(what)

    # 1. Deep nesting in data, id and parameters (~200 KB bodies).
    deep = "[" * 100_000 + "]" * 100_000
    for where, text in (("data", '{"inputs":[{"name":"points","shape":[1,3],"datatype":"FP32","data":%s}]}' % deep),
                        ("id", '{"id":%s,"inputs":[]}' % deep),
                        ("parameters", '{"parameters":{"x":%s},"inputs":[]}' % deep)):
        expect(f"{where} nested 100,000 arrays deep", post(server, "/v2/models/knn/infer", text.encode()), {400},
               b"nested deeper")
    # 2. Invalid UTF-8 in the path, the body and the binary header length.
    expect("GET /%FF", get(server, b"/%FF"), {400, 404})
    expect("GET /v2/models/%C3%28/ready", get(server, b"/v2/models/%C3%28/ready"), {400, 404})
    expect("GET with raw 0xff bytes in the path", get(server, b"/v2/models/\xff\xfe/ready"), {400, 404})
    expect("body starting \\xff\\xfe", post(server, "/v2/models/knn/infer", b"\xff\xfe{}"), {400}, b"malformed JSON")
    expect("non-numeric Inference-Header-Content-Length",
           post(server, "/v2/models/knn/infer", good_body, ["Inference-Header-Content-Length: 1\xff2"]), {400},
           b"Inference-Header-Content-Length")
    # 4. Range on POST /infer is ignored (RFC 9110: Range is defined for GET only): one plain result.
    for what, header in (("Range: bytes=0-10,5-20", "Range: bytes=0-10,5-20"),
                         ("200 ranges of 0-", "Range: bytes=" + ",".join(["0-"] * 200))):
        s, h, b = post(server, "/v2/models/knn/infer", good_body, [header])
        plain = s == 200 and "multipart" not in h and json.loads(b)["outputs"] == reference
        check(plain, f"{what} on POST infer: {s}, {len(b)} bytes, the plain result")
    # 6. Incomplete bodies (sent at the start) are not executed.
    expect("a whole request body, 100 bytes short of its Content-Length", short_body.result(),
           {400}, b"incomplete request body")
    expect("chunked body without its last chunk", no_last_chunk.result(), {400}, b"incomplete request body")
    # 7. All models' statistics.
    status, _, body = get(server, b"/v2/models/stats")
    names = sorted(m["name"] for m in json.loads(body).get("model_stats", [])) if status == 200 else []
    check(status == 200 and names == ["emtrkmichelid", "knn", "michel_from_image"],
          f"GET /v2/models/stats: {status}, models {names}")
    # 8. timeout = INT64_MAX means no timeout (REST and gRPC).
    s, _, b = post(server, "/v2/models/knn/infer", knn_body(points, splits, {"timeout": 2**63 - 1}))
    check(s == 200 and json.loads(b)["outputs"] == reference, f"REST timeout INT64_MAX: {s} (served, not expired)")
    g = grpcclient.InferenceServerClient(server.grpc_url)
    # tritonclient reserves "timeout"; the raw stub sends it as Triton's int64 parameter.
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc_url))
    request = service_pb2.ModelInferRequest(model_name="knn")
    request.parameters["timeout"].int64_param = 2**63 - 1
    for name, array, dtype in (("points", points, "FP32"), ("row_splits", splits, "INT64")):
        t = request.inputs.add(name=name, datatype=dtype, shape=list(array.shape))
        request.raw_input_contents.append(array.tobytes())
    reply = stub.ModelInfer(request, timeout=30)
    check([o.name for o in reply.outputs] == ["indices", "distances"], "gRPC timeout INT64_MAX: served, not expired")
    expect("timeout as a string", post(server, "/v2/models/knn/infer", knn_body(points, splits, {"timeout": "5"})),
           {400}, b"timeout")
    # Minor: integer ranges, binary_data_size, encodings, versions, broken entries.
    body = json.dumps({"inputs": [
        {"name": "points", "shape": [1, 3], "datatype": "FP32", "data": [0, 0, 0]},
        {"name": "row_splits", "shape": [2], "datatype": "INT64", "data": [0, 2**64 - 1]}]}).encode()
    expect("INT64 value 2^64-1", post(server, "/v2/models/knn/infer", body), {400}, b"int64 range")
    wires = {"inputs": [
        {"name": "image", "shape": [4, 4], "datatype": "FP32", "data": [0] * 16},
        {"name": "hit_wire", "shape": [1], "datatype": "INT32", "data": [2**32 + 5]},
        {"name": "hit_tick", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
    expect("INT32 value 2^32+5", post(server, "/v2/models/michel_from_image/infer", json.dumps(wires).encode()),
           {400}, b"INT32")
    header = json.dumps({"inputs": [
        {"name": "points", "shape": [1, 3], "datatype": "FP32", "parameters": {"binary_data_size": 1.5}},
        {"name": "row_splits", "shape": [2], "datatype": "INT64", "data": [0, 1]}]}).encode()
    expect("binary_data_size 1.5", post(server, "/v2/models/knn/infer", header + b"\0" * 12,
                                        [f"Inference-Header-Content-Length: {len(header)}"]), {400}, b"binary_data_size")
    expect("Content-Encoding: br", post(server, "/v2/models/knn/infer", good_body, ["Content-Encoding: br"]), {415},
           b"Content-Encoding")
    status, _, _ = get(server, b"/v2/models/knn/versions/01")
    check(status == 200, f"version '01' is version 1: {status}")
    check(g.get_model_metadata("knn", model_version="-1").name == "knn", "gRPC version '-1' is the default version")
    s, _, b = get(server, b"/v2/models/knn/versions/2")
    check(s == 404, f"version 2 of knn: {s}")
    index = {m.name: m for m in g.get_model_repository_index().models}
    reason = index["huge_version"].reason if "huge_version" in index else ""
    check("out of range" in reason and "stoll" not in reason, f"version directory beyond int64: '{reason[:100]}'")
    reason = index["config_dir"].reason if "config_dir" in index else ""
    check("not a regular file" in reason, f"config.pbtxt that is a directory: '{reason[:100]}'")
    compressed_messages(server, stub)  # the plain (uncompressed) stub of the checks above
    still_serving("compressed gRPC messages and bombs")
    huge_message(server)
    still_serving("a 512 MB gRPC message")
    transport(server, good_body, reference, expect)
    still_serving("the whole battery")


def rss_mib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def refused(call):
    """(status code, details) of a call expected to fail; (None, "") when it was answered."""
    try:
        call()
    except grpc.RpcError as e:
        return e.code(), e.details() or ""
    return None, ""


def bomb_peak_mib(server, send):
    """The server's peak RSS growth while `send` runs (the peak is reset to the current RSS first:
    "5" to /proc/PID/clear_refs), and what `send` returned."""
    pathlib.Path(f"/proc/{server.process.pid}/clear_refs").write_text("5")
    peak = peak_rss_mib(server.process.pid)
    result = send()
    return peak_rss_mib(server.process.pid) - peak, result


def infer_bomb(model, inputs):
    """A ModelInferRequest of zeros, serialized: (name, datatype, shape, bytes) per input."""
    bomb = service_pb2.ModelInferRequest(model_name=model)
    for name, datatype, shape, raw in inputs:
        bomb.inputs.add(name=name, datatype=datatype, shape=shape)
        bomb.raw_input_contents.append(raw)
    return bomb.SerializeToString()


def compressed_messages(server, plain_stub):
    """gRPC messages sent with gzip: served as plain ones; one that inflates past what its method
    can use (an inference request past the largest its model accepts: knn 65 MiB, EmTrkMichelId
    10 MiB; a control message past 1 MiB, a health check past 1 KiB) is RESOURCE_EXHAUSTED once
    inflation passes the bound, not after inflating whole (256 MiB here): the server's peak RSS
    grows by less than the bomb."""
    # 1,000 points on a few grid places: a request gzip shrinks (gRPC sends a message
    # uncompressed when compressing would not make it smaller).
    points = (np.arange(3000, dtype=np.float32).reshape(1000, 3) % 4)
    knn_request = service_pb2.ModelInferRequest(model_name="knn")
    knn_request.inputs.add(name="points", datatype="FP32", shape=[1000, 3])
    knn_request.inputs.add(name="row_splits", datatype="INT64", shape=[2])
    knn_request.raw_input_contents.extend([points.tobytes(), np.array([0, 1000], dtype=np.int64).tobytes()])
    expected = plain_stub.ModelInfer(knn_request, timeout=30).raw_output_contents
    # ThreadSanitizer's shadow memory is several times what the program touches.
    tsan = os.environ.get("KAAS_TEST_SANITIZER") == "thread"
    with grpc.insecure_channel(server.grpc_url, compression=grpc.Compression.Gzip) as channel:
        gzip_stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        reply = gzip_stub.ModelInfer(knn_request, timeout=30)
        check(reply.raw_output_contents == expected and len(expected) == 2,
              "a gzip ModelInfer (1,000 points): the uncompressed request's outputs")
        index = gzip_stub.RepositoryIndex(service_pb2.RepositoryIndexRequest(repository_name="a" * 4000), timeout=30)
        check("knn" in [m.name for m in index.models], "a gzip RepositoryIndex request (4 KB): answered")
        model_infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        n = (256 << 20) // 12
        knn_bomb = infer_bomb("knn", [("points", "FP32", [n, 3], bytes(n * 12)),
                                      ("row_splits", "INT64", [2], np.array([0, n], dtype=np.int64).tobytes())])
        grown, (code, details) = bomb_peak_mib(server, lambda: refused(lambda: model_infer(knn_bomb, timeout=120)))
        del knn_bomb
        check(code == grpc.StatusCode.RESOURCE_EXHAUSTED and "after decompression" in details,
              f"a gzip ModelInfer inflating to 256 MiB: {code} '{details[:160]}'")
        check(tsan or grown < 160, f"peak RSS grew {grown:.0f} MiB for the 256 MiB bomb (inflation stops at 65 MiB)")
        # To EmTrkMichelId (max batch 1024 of 48 x 48 floats, 9.4 MB): its own bound, once the
        # model's name has inflated.
        rows = (256 << 20) // (48 * 48 * 4)
        emtrk_bomb = infer_bomb("emtrkmichelid", [("main_input", "FP32", [rows, 48, 48, 1], bytes(rows * 48 * 48 * 4))])
        grown, (code, details) = bomb_peak_mib(server, lambda: refused(lambda: model_infer(emtrk_bomb, timeout=120)))
        del emtrk_bomb
        check(code == grpc.StatusCode.RESOURCE_EXHAUSTED and "model emtrkmichelid" in details and (tsan or grown < 40),
              f"a gzip ModelInfer to emtrkmichelid inflating to 256 MiB: {code} '{details[:160]}', "
              f"peak RSS +{grown:.0f} MiB")
        code, details = refused(lambda: gzip_stub.RepositoryIndex(
            service_pb2.RepositoryIndexRequest(repository_name="\0" * (8 << 20)), timeout=30))
        check(code == grpc.StatusCode.RESOURCE_EXHAUSTED and "control message" in details,
              f"a gzip RepositoryIndex inflating to 8 MiB: {code} '{details[:160]}'")
        health = health_pb2_grpc.HealthStub(channel)
        status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=30).status
        check(status == health_pb2.HealthCheckResponse.SERVING, f"grpc.health.v1 Check over gzip: {status}")
        code, details = refused(lambda: health.Check(health_pb2.HealthCheckRequest(service="\0" * (8 << 20)),
                                                     timeout=30))
        check(code == grpc.StatusCode.RESOURCE_EXHAUSTED and "health check request" in details,
              f"a gzip health Check inflating to 8 MiB: {code} '{details[:160]}'")


def huge_message(server):
    """A 512 MB gRPC request, over --max-request-bytes (64 MiB): RESOURCE_EXHAUSTED from gRPC
    before any handler, and the server's RSS comes back to where it was (the heap is trimmed
    once its arenas hold that much free memory) instead of keeping the pages."""
    before = rss_mib(server.process.pid)
    n = 512 * 1024 * 1024 // 12
    request = service_pb2.ModelInferRequest(model_name="knn")
    request.inputs.add(name="points", datatype="FP32", shape=[n, 3])
    request.inputs.add(name="row_splits", datatype="INT64", shape=[3])
    request.raw_input_contents.append(bytes(n * 12))
    request.raw_input_contents.append(np.array([0, 5, 4], dtype=np.int64).tobytes())
    # The same ModelInferRequest, serialized once here and sent as bytes: serializing 512 MB
    # inside the generated stub's call took seconds longer.
    message = request.SerializeToString()
    del request
    code = None
    with grpc.insecure_channel(server.grpc_url) as channel:
        model_infer = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        try:
            model_infer(message, timeout=300)
        except grpc.RpcError as e:
            code = e.code()
    del message
    check(code == grpc.StatusCode.RESOURCE_EXHAUSTED, f"512 MB gRPC request over --max-request-bytes: {code}")
    if os.environ.get("KAAS_TEST_SANITIZER") == "thread":
        print("skip  RSS after the 512 MB message (ThreadSanitizer's allocator keeps its pages)")
        return
    after = rss_mib(server.process.pid)
    for _ in range(50):  # the trimmer runs once a second
        if after <= before + 64:
            break
        time.sleep(0.2)
        after = rss_mib(server.process.pid)
    check(after <= before + 64, f"RSS after the 512 MB message: {before:.0f} -> {after:.0f} MiB (bound +64)")


def read_responses(sock, count, timeout=30):
    """Reads `count` HTTP responses (Content-Length framed) from one connection."""
    sock.settimeout(timeout)
    data, responses = b"", []
    while len(responses) < count:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return responses
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n")[1:]:
            if line.lower().startswith("content-length:"):
                length = int(line.split(":", 1)[1])
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return responses
            rest += chunk
        responses.append((int(head.split(b" ", 2)[1]), rest[:length]))
        data = rest[length:]
    return responses


def transport(server, good_body, reference, expect):
    """The event-driven front end: pipelining, slow and idle clients, limits, compressed bodies."""
    # 5. Pipelining: three requests in one write, three answers in order.
    infer = (f"POST /v2/models/knn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: {len(good_body)}\r\n\r\n"
             .encode() + good_body)
    batch = (b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n" + infer +
             b"GET /v2/models/knn/ready HTTP/1.1\r\nHost: x\r\n\r\n")
    with socket.create_connection((server.host, server.http_port)) as s:
        s.sendall(batch)
        answers = read_responses(s, 3)
    ok = ([a[0] for a in answers] == [200, 200, 200] and b"live" in answers[0][1]
          and json.loads(answers[1][1])["outputs"] == reference and b"ready" in answers[2][1])
    check(ok, f"3 pipelined requests in one write: {[a[0] for a in answers]}, in order")
    # 3. Slow and idle clients hold no worker: with 64 slow-header and 1000 idle connections open
    # (more than the 16 worker threads), REST requests are answered at once.
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    idle = [socket.create_connection((server.host, server.http_port)) for _ in range(min(1000, hard - 200))]
    slow = []
    for _ in range(64):
        c = socket.create_connection((server.host, server.http_port))
        c.sendall(b"POST /v2/models/knn/infer HTTP/1.1\r\nHost: x\r\n")
        slow.append(c)
    answered = 0
    started = time.time()
    for i in range(20):
        if i % 5 == 0:
            for c in slow:  # one more header line on each slow connection now and then
                try:
                    c.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass
        status, _, body = post(server, "/v2/models/knn/infer", good_body)
        answered += status == 200 and json.loads(body)["outputs"] == reference
    elapsed = time.time() - started
    check(answered == 20, f"with {len(idle)} idle and 64 slow connections open: {answered}/20 REST requests "
          f"answered correctly ({elapsed:.1f} s)")
    # The slow clients get 408 once the header timeout (3 s here) has passed since their first byte
    # (each read below waits for its answer).
    statuses = []
    for c in slow:
        c.settimeout(10)
        try:
            statuses.append(int(c.recv(4096).split(b" ", 2)[1]))
        except (OSError, IndexError, ValueError):
            statuses.append(0)
        c.close()
    check(statuses.count(408) == 64, f"64 slow headers answered 408 after the header timeout: {statuses.count(408)}")
    for c in idle:
        c.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    # Limits and compressed bodies.
    expect("a 100 KB header line", post(server, "/v2/models/knn/infer", good_body, ["X-Big: " + "a" * 100_000]),
           {431}, b"header larger")
    packed = gzip.compress(good_body)
    s_, _, b_ = post(server, "/v2/models/knn/infer", packed, ["Content-Encoding: gzip"])
    check(s_ == 200 and json.loads(b_)["outputs"] == reference, f"a gzip body: {s_}")
    bad_crc = packed[:-8] + bytes([packed[-8] ^ 0xFF]) + packed[-7:]
    expect("a gzip body with a wrong CRC", post(server, "/v2/models/knn/infer", bad_crc, ["Content-Encoding: gzip"]),
           {400}, b"gzip")
    expect("a gzip body without its CRC trailer",
           post(server, "/v2/models/knn/infer", packed[:-8], ["Content-Encoding: gzip"]), {400}, b"truncated")
    expect("a deflate body with bytes after its end",
           post(server, "/v2/models/knn/infer", zlib.compress(good_body) + b"xx", ["Content-Encoding: deflate"]),
           {400}, b"after the end")
    expect("PUT on the infer endpoint", raw(server, b"PUT /v2/models/knn/infer HTTP/1.1\r\nHost: x\r\n"
                                                   b"Content-Length: 0\r\nConnection: close\r\n\r\n"),
           {405}, b"not allowed")
    expect("a malformed request line", raw(server, b"GET\x01 / HTTP/1.1\r\n\r\n"), {400}, b"malformed HTTP")


if __name__ == "__main__":
    sys.exit(main())
