#!/usr/bin/env python3
"""kaas-server against the standard Triton clients (tritonclient from PyPI, grpc and http):
health, metadata, config, inference on every default model over gRPC and HTTP (binary and JSON,
batch 1 and batched), statistics, repository index, the SonicTriton call sequence, a bad-input
battery (each followed by a successful request), dynamic batching under concurrent clients and
SIGTERM while requests are in flight. Outputs must equal the in-process results bit for bit.

Usage: test_clients.py --server BIN --make-repository BIN --infer BIN
"""
import argparse
import concurrent.futures
import gzip
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import (KaasServer, check, expect_error, failures, scratch_directory, test_backend,  # noqa: E402
                            write_repository)

EMTRK = "emtrkmichelid"
SOFTMAX = "em_trk_none_netout/Softmax"
EMTRK_OUTPUTS = [SOFTMAX, "michel_netout/Sigmoid"]
def in_process(infer_bin, model, patches, tmp):
    """kaas-infer on the same model file, planned for the same max batch as the server."""
    np.save(tmp / "in.npy", patches)
    out = tmp / "ref"
    subprocess.run([infer_bin, "--model", str(model), "--backend", test_backend(), "--input",
                    f"main_input={tmp / 'in.npy'}", "--output-dir", str(out), "--batch", "1024"],
                   check=True, stdout=subprocess.DEVNULL)
    return [np.load(out / (name.replace("/", "_") + ".npy")) for name in EMTRK_OUTPUTS]


def grpc_infer(client, patches, **kwargs):
    inp = grpcclient.InferInput("main_input", list(patches.shape), "FP32")
    inp.set_data_from_numpy(patches)
    outs = [grpcclient.InferRequestedOutput(n) for n in EMTRK_OUTPUTS]
    result = client.infer(EMTRK, [inp], outputs=outs, **kwargs)
    return [result.as_numpy(n) for n in EMTRK_OUTPUTS]


def http_infer(client, patches, binary, compression=None):
    inp = httpclient.InferInput("main_input", list(patches.shape), "FP32")
    inp.set_data_from_numpy(patches, binary_data=binary)
    outs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in EMTRK_OUTPUTS]
    result = client.infer(EMTRK, [inp], outputs=outs, request_compression_algorithm=compression)
    return [result.as_numpy(n) for n in EMTRK_OUTPUTS]




def raw_http(url, path, body, headers=None):
    request = urllib.request.Request(f"http://{url}{path}", data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--infer", required=True)
    args = parser.parse_args()
    tmp = scratch_directory("kaas-server-test-")
    repo = tmp / "repo"
    write_repository(args.make_repository, repo)
    server = KaasServer(args.server, repo)
    try:
        run(server, repo, tmp, args)
    finally:
        code = server.stop()
        check(code == 0, f"SIGTERM: kaas-server exited with {code}")
        if code != 0:
            print(server.output()[-20000:])
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


def run(server, repo, tmp, args):
    g = grpcclient.InferenceServerClient(server.grpc_url)
    h = httpclient.InferenceServerClient(server.http_url, concurrency=8)
    check(g.is_server_live() and g.is_server_ready(), "gRPC live + ready")
    check(h.is_server_live() and h.is_server_ready(), "HTTP live + ready")
    meta = g.get_server_metadata()
    check("statistics" in meta.extensions and "binary_tensor_data" in meta.extensions,
          f"server metadata extensions {list(meta.extensions)}")
    mm = g.get_model_metadata(EMTRK)
    check(list(mm.inputs[0].shape) == [-1, 48, 48, 1], f"model metadata input shape {list(mm.inputs[0].shape)}")
    cfg = g.get_model_config(EMTRK).config
    check(cfg.max_batch_size == 1024 and cfg.HasField("dynamic_batching"), "model config max_batch_size + dynamic_batching")
    check(h.get_model_config(EMTRK)["max_batch_size"] == 1024, "HTTP model config")
    for name in ("emtrkmichelid", "knn", "michel_from_image"):
        check(g.is_model_ready(name) and h.is_model_ready(name), f"{name} ready")

    rng = np.random.default_rng(7)
    for batch in (1, 5):
        patches = rng.uniform(-5, 15, size=(batch, 48, 48, 1)).astype(np.float32)
        ref = in_process(args.infer, repo / EMTRK / "1" / "model.onnx", patches, tmp)
        for label, got in (("gRPC", grpc_infer(g, patches)),
                           ("HTTP binary", http_infer(h, patches, True)),
                           ("HTTP JSON", http_infer(h, patches, False)),
                           ("HTTP binary gzip body", http_infer(h, patches, True, "gzip")),
                           ("HTTP JSON deflate body", http_infer(h, patches, False, "deflate"))):
            same = all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(got, ref))
            check(same, f"{label} batch {batch}: outputs equal in-process bit for bit")

    # knn and michel_from_image over both protocols.
    points = rng.uniform(0, 1, size=(40, 3)).astype(np.float32)
    splits = np.array([0, 25, 40], dtype=np.int64)
    kin = [grpcclient.InferInput("points", [40, 3], "FP32"), grpcclient.InferInput("row_splits", [3], "INT64")]
    kin[0].set_data_from_numpy(points)
    kin[1].set_data_from_numpy(splits)
    kr = g.infer("knn", kin)
    idx = kr.as_numpy("indices")
    d2 = ((points[:25, None, :] - points[None, :25, :]) ** 2).sum(-1)
    check(idx.shape == (40, 16) and np.array_equal(idx[:25, 0], np.arange(25)) and
          set(idx[3, 1:16]) == set(np.argsort(d2[3])[1:16]), "knn over gRPC: self first, true neighbours")
    image = rng.uniform(-5, 15, size=(60, 200)).astype(np.float32)
    wires = np.array([3, 30, 59], dtype=np.int32)
    ticks = np.array([10.0, 600.0, 1190.0], dtype=np.float32)
    hin = [httpclient.InferInput("image", [60, 200], "FP32"), httpclient.InferInput("hit_wire", [3], "INT32"),
           httpclient.InferInput("hit_tick", [3], "FP32")]
    for i, a in zip(hin, (image, wires, ticks)):
        i.set_data_from_numpy(a)
    mr = h.infer("michel_from_image", hin)
    scores = mr.as_numpy("scores")
    check(scores.shape == (3, 4) and np.allclose(scores[:, :3].sum(1), 1, atol=1e-5),
          "michel_from_image over HTTP: [3, 4] scores, softmax rows sum to 1")

    # Statistics and repository index.
    st = g.get_inference_statistics(EMTRK).model_stats
    check(len(st) == 1 and st[0].inference_stats.success.count >= 6, f"statistics: {st[0].inference_stats.success.count} successes")
    index = {m.name: m.state for m in g.get_model_repository_index().models}
    check(index == {"emtrkmichelid": "READY", "knn": "READY", "michel_from_image": "READY"}, f"repository index {index}")

    # SonicTriton's sequence: RepositoryIndex -> ModelConfig -> ModelMetadata -> ModelInfer (gzip, deadline).
    g.get_model_repository_index()
    g.get_model_config(EMTRK)
    g.get_model_metadata(EMTRK)
    patches = rng.uniform(-5, 15, size=(3, 48, 48, 1)).astype(np.float32)
    got = grpc_infer(g, patches, compression_algorithm="gzip", client_timeout=30)
    check(got[0].shape == (3, 3), "SonicTriton sequence with gzip and a deadline")

    # Bad inputs: the right status and message, and the server keeps serving.
    def good():
        return grpc_infer(g, patches[:1])[0].shape == (1, 3)

    def bad_infer(name, datatype, shape, data):
        i = grpcclient.InferInput(name, shape, datatype)
        i.set_data_from_numpy(data)
        return lambda: g.infer(EMTRK, [i])

    cases = [
        ("wrong datatype", bad_infer("main_input", "INT32", [1, 48, 48, 1], np.zeros((1, 48, 48, 1), np.int32)), "datatype", ["INVALID_ARG"]),
        ("wrong shape", bad_infer("main_input", "FP32", [1, 47, 48, 1], np.zeros((1, 47, 48, 1), np.float32)), "shape", ["INVALID_ARG"]),
        ("unknown model", lambda: g.infer("nope", [grpcclient.InferInput("x", [1], "FP32").set_data_from_numpy(np.zeros(1, np.float32))]), "unknown model", ["NOT_FOUND"]),
        ("unknown version", lambda: g.get_model_metadata(EMTRK, model_version="7"), "no version", ["NOT_FOUND"]),
        ("path escape", lambda: g.get_model_metadata("../etc"), "not valid", ["INVALID_ARG"]),
        ("missing input", lambda: g.infer("knn", [kin[0]]), "missing", ["INVALID_ARG"]),
        ("duplicate input", lambda: g.infer("knn", [kin[0], kin[0], kin[1]]), "twice", ["INVALID_ARG"]),
        ("oversized batch", bad_infer("main_input", "FP32", [1025, 48, 48, 1], np.zeros((1025, 48, 48, 1), np.float32)), "batch size", ["INVALID_ARG"]),
        ("unknown output", lambda: g.infer(EMTRK, [bad_infer_input(patches[:1])], outputs=[grpcclient.InferRequestedOutput("nope")]), "no output", ["INVALID_ARG"]),
        ("gRPC output requested twice", lambda: g.infer(EMTRK, [bad_infer_input(patches[:1])],
                                                         outputs=[grpcclient.InferRequestedOutput(SOFTMAX),
                                                                  grpcclient.InferRequestedOutput(SOFTMAX)]),
         "requested more than once", ["INVALID_ARG"]),
    ]
    # Replies larger than --max-response-bytes (64 MiB) refused before the model runs: kNN of 1.5 M
    # points would answer 192 MB of indices and distances; 300 k points as JSON ~230 MB of text.
    def knn_inputs(module, n):
        many = [module.InferInput("points", [n, 3], "FP32"), module.InferInput("row_splits", [2], "INT64")]
        many[0].set_data_from_numpy(np.zeros((n, 3), np.float32))
        many[1].set_data_from_numpy(np.array([0, n], dtype=np.int64))
        return many
    cases.append(("gRPC reply over the limit", lambda: g.infer("knn", knn_inputs(grpcclient, 1_500_000)),
                  "--max-response-bytes", ["INVALID_ARG"]))
    h = httpclient.InferenceServerClient(server.http_url)
    cases.append(("HTTP JSON reply over the limit",
                  lambda: h.infer("knn", knn_inputs(httpclient, 300_000),
                                  outputs=[httpclient.InferRequestedOutput("indices", binary_data=False)]),
                  "(JSON as text)", ["400"]))
    # A queue timeout shorter than the batcher's delay: the request expires before it runs.
    cases.append(("queue timeout", lambda: g.infer(EMTRK, [bad_infer_input(patches[:1])], timeout=1),
                  "Request timeout expired", ["UNAVAILABLE"]))
    for what, call, fragment, codes in cases:
        expect_error(what, call, fragment, codes)
        check(good(), f"after {what}: a good request succeeds")
    # HTTP-only malformed bodies.
    status, body = raw_http(server.http_url, f"/v2/models/{EMTRK}/infer", b"{not json")
    check(status == 400 and b"malformed JSON" in body, f"HTTP malformed JSON: {status} {body[:80]!r}")
    header = b'{"inputs":[{"name":"main_input","shape":[1,48,48,1],"datatype":"FP32","parameters":{"binary_data_size":9216}}]}'
    status, body = raw_http(server.http_url, f"/v2/models/{EMTRK}/infer", header + b"\0" * 100,
                            {"Inference-Header-Content-Length": str(len(header))})
    check(status == 400 and b"truncated" in body, f"HTTP truncated binary body: {status} {body[:100]!r}")
    bomb = gzip.compress(b"\0" * (1100 << 20))  # 1.1 GB of zeros in ~1 MB
    status, body = raw_http(server.http_url, f"/v2/models/{EMTRK}/infer", bomb, {"Content-Encoding": "gzip"})
    check(status in (400, 413) and b"larger than" in body, f"HTTP gzip bomb: {status} {body[:80]!r}")
    twice = (b'{"inputs":[{"name":"main_input","shape":[1,48,48,1],"datatype":"FP32","data":[' +
             b",".join([b"0"] * 2304) + b']}],"outputs":[{"name":"' + SOFTMAX.encode() + b'"},{"name":"' +
             SOFTMAX.encode() + b'"}]}')
    status, body = raw_http(server.http_url, f"/v2/models/{EMTRK}/infer", twice)
    check(status == 400 and b"requested more than once" in body, f"HTTP output requested twice: {status} {body[:100]!r}")
    status, body = raw_http(server.http_url, "/v2/models/nope/infer", b"{}")
    check(status == 404 and b"unknown model" in body, f"HTTP unknown model: {status}")
    check(good(), "after the HTTP battery: a good request succeeds")

    # Dynamic batching: 32 concurrent batch-1 clients are executed in batches > 1.
    before = g.get_inference_statistics(EMTRK).model_stats[0]
    one = patches[:1]
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        results = list(pool.map(lambda _: grpc_infer(grpcclient.InferenceServerClient(server.grpc_url), one), range(256)))
    after = g.get_inference_statistics(EMTRK).model_stats[0]
    executions = after.execution_count - before.execution_count
    inferences = after.inference_count - before.inference_count
    same = all(np.array_equal(r[0], results[0][0]) for r in results)
    check(inferences == 256 and executions < 256, f"dynamic batching: 256 batch-1 requests in {executions} executions")
    check(same, "dynamic batching: every batch-1 result identical")
    check(any(b.batch_size > 1 for b in after.batch_stats), "batch statistics show batches > 1")

    # Metrics.
    with urllib.request.urlopen(f"http://{server.host}:{server.metrics_port}/metrics", timeout=30) as r:
        text = r.read().decode()
    check(f'nv_inference_exec_count{{model="{EMTRK}",version="1"}}' in text and "nv_inference_queue_duration_us" in text,
          "metrics: Triton names and labels")

    # SIGTERM under load: every accepted request gets its answer.
    clients = [grpcclient.InferenceServerClient(server.grpc_url) for _ in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(grpc_infer, clients[i % 8], patches) for i in range(64)]
        # Signal only once requests are flowing: on a slow machine the signal could otherwise
        # arrive before the first request and the check below would test nothing.
        concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
        server.process.send_signal(15)
        answered = refused = 0
        for f in futures:
            try:
                check_shape = f.result()[0].shape == (3, 3)
                answered += check_shape
            except InferenceServerException:
                refused += 1
        check(answered + refused == 64 and answered > 0, f"SIGTERM under load: {answered} answered, {refused} refused cleanly")
        # A second signal would end it at once: let this shutdown finish by itself.
        server.process.wait(timeout=60)


def bad_infer_input(p):
    i = grpcclient.InferInput("main_input", list(p.shape), "FP32")
    i.set_data_from_numpy(p)
    return i


if __name__ == "__main__":
    sys.exit(main())
