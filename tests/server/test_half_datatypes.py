#!/usr/bin/env python3
"""FP16 and BF16 on the wire: models whose config.pbtxt declares FP16 / BF16 inputs and outputs
for the FP32 tensors of the underlying model, served by kaas-server and called with the real
tritonclient over HTTP (binary data) and gRPC (raw contents). Their results must equal the FP32
model's results on the same (16-bit) inputs, rounded to nearest even: expectations computed here
with numpy float16 and, for bf16, with integer bit manipulation. JSON data and typed gRPC
contents for 16-bit tensors, wrong byte sizes, FP32 sent for a declared FP16 input and a config
declaring FP16 for an INT64 tensor are clear errors, and the server keeps serving.

Usage: test_half_datatypes.py --server BIN --make-repository BIN
"""
import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import urllib.error
import urllib.request

import grpc
import ml_dtypes
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from server_fixture import KaasServer, check, expect_error, failures, write_repository  # noqa: E402

EMTRK = "emtrkmichelid"
FP32 = "emtrk_fp32"  # the FP32 reference: the same model file planned for the same max batch
SOFTMAX, SIGMOID = "em_trk_none_netout/Softmax", "michel_netout/Sigmoid"

EMTRK_FP32 = """name: "emtrk_fp32"
platform: "onnxruntime_onnx"
max_batch_size: 64
instance_group [ { count: 1 } ]
"""
EMTRK_FP16 = """name: "emtrk_fp16"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "main_input" data_type: TYPE_FP16 format: FORMAT_NHWC dims: [ 48, 48, 1 ] } ]
output [ { name: "em_trk_none_netout/Softmax" data_type: TYPE_FP16 dims: [ 3 ] } ]
instance_group [ { count: 1 } ]
"""
EMTRK_BF16 = """name: "emtrk_bf16"
platform: "onnxruntime_onnx"
max_batch_size: 64
input [ { name: "main_input" data_type: TYPE_BF16 dims: [ 48, 48, 1 ] } ]
output [
  { name: "em_trk_none_netout/Softmax" data_type: TYPE_BF16 dims: [ 3 ] },
  { name: "michel_netout/Sigmoid" data_type: TYPE_BF16 dims: [ 1 ] }
]
instance_group [ { count: 1 } ]
"""
KNN_FP16 = """name: "knn_fp16"
backend: "kaas"
max_batch_size: 0
parameters { key: "kaas_model" value { string_value: "knn" } }
parameters { key: "k" value { string_value: "16" } }
parameters { key: "method" value { string_value: "auto" } }
input [ { name: "points" data_type: TYPE_FP16 dims: [ -1, -1 ] } ]
output [ { name: "distances" data_type: TYPE_FP16 dims: [ -1, 16 ] } ]
"""
KNN_BAD = """name: "knn_bad"
backend: "kaas"
max_batch_size: 0
parameters { key: "kaas_model" value { string_value: "knn" } }
input [ { name: "row_splits" data_type: TYPE_FP16 dims: [ -1 ] } ]
"""


def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (finite values), by integer arithmetic."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_float(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_models(repo):
    for name, text in (("emtrk_fp32", EMTRK_FP32), ("emtrk_fp16", EMTRK_FP16), ("emtrk_bf16", EMTRK_BF16)):
        (repo / name / "1").mkdir(parents=True)
        os.link(repo / EMTRK / "1" / "model.onnx", repo / name / "1" / "model.onnx")
        (repo / name / "config.pbtxt").write_text(text)
    for name, text in (("knn_fp16", KNN_FP16), ("knn_bad", KNN_BAD)):
        (repo / name / "1").mkdir(parents=True)
        (repo / name / "config.pbtxt").write_text(text)


def infer(client, module, model, inputs, outputs, **kwargs):
    """inputs: [(name, datatype, array)]; returns {output: array}."""
    ins = []
    for name, datatype, array in inputs:
        i = module.InferInput(name, list(array.shape), datatype)
        i.set_data_from_numpy(array)
        ins.append(i)
    outs = [module.InferRequestedOutput(n, **kwargs) for n in outputs]
    result = client.infer(model, ins, outputs=outs)
    return {n: result.as_numpy(n) for n in outputs}, result


def raw_http(url, path, body, headers=None):
    request = urllib.request.Request(f"http://{url}{path}", data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def binary_request(url, model, name, datatype, shape, payload, declared_size=None, outputs=None):
    params = {"binary_data_size": len(payload) if declared_size is None else declared_size}
    request = {"inputs": [{"name": name, "datatype": datatype, "shape": shape, "parameters": params}]}
    if outputs:
        request["outputs"] = outputs
    header = json.dumps(request).encode()
    return raw_http(url, f"/v2/models/{model}/infer", header + payload,
                    {"Inference-Header-Content-Length": str(len(header))})


def run(server):
    h = httpclient.InferenceServerClient(server.http_url)
    g = grpcclient.InferenceServerClient(server.grpc_url)
    rng = np.random.default_rng(16)
    x = rng.uniform(0, 1, size=(5, 48, 48, 1)).astype(np.float32)

    # Metadata and config carry the declared types; undeclared tensors stay FP32.
    for module, client in (("http", h), ("grpc", g)):
        meta = client.get_model_metadata("emtrk_fp16")
        if module == "grpc":
            ins = {t.name: t.datatype for t in meta.inputs}
            outs = {t.name: t.datatype for t in meta.outputs}
        else:
            ins = {t["name"]: t["datatype"] for t in meta["inputs"]}
            outs = {t["name"]: t["datatype"] for t in meta["outputs"]}
        check(ins == {"main_input": "FP16"} and outs == {SOFTMAX: "FP16", SIGMOID: "FP32"},
              f"{module} metadata of emtrk_fp16: {ins} {outs}")
    config = h.get_model_config("emtrk_bf16")
    check([i["data_type"] for i in config["input"]] == ["TYPE_BF16"]
          and [o["data_type"] for o in config["output"]] == ["TYPE_BF16", "TYPE_BF16"],
          "emtrk_bf16 config: TYPE_BF16 input and outputs")

    # FP16: the FP32 model on the same fp16 inputs, its outputs rounded with numpy.
    x16 = x.astype(np.float16)
    ref, _ = infer(g, grpcclient, FP32, [("main_input", "FP32", x16.astype(np.float32))], [SOFTMAX, SIGMOID])
    for module, client in (("http", h), ("grpc", g)):
        got, result = infer(client, httpclient if module == "http" else grpcclient, "emtrk_fp16",
                            [("main_input", "FP16", x16)], [SOFTMAX, SIGMOID])
        want = ref[SOFTMAX].astype(np.float16)
        check(got[SOFTMAX].dtype == np.float16 and got[SOFTMAX].shape == (5, 3)
              and np.array_equal(got[SOFTMAX].view(np.uint16), want.view(np.uint16)),
              f"{module} emtrk_fp16 softmax == fp32 model's, rounded to fp16 "
              f"(max |diff| {np.abs(got[SOFTMAX].astype(np.float32) - want.astype(np.float32)).max()})")
        check(got[SIGMOID].dtype == np.float32 and np.array_equal(got[SIGMOID], ref[SIGMOID]),
              f"{module} emtrk_fp16 undeclared sigmoid output stays FP32, equal to the fp32 model's")
        out = result.get_output(SOFTMAX)
        check((out["datatype"] if module == "http" else out.datatype) == "FP16", f"{module} output datatype FP16")

    # BF16: inputs rounded to bf16 by bit manipulation, sent as ml_dtypes.bfloat16 (tritonclient's
    # BF16 array type); outputs compared bit for bit with the fp32 model's, rounded likewise.
    xb_bits = bf16_to_float(bf16_bits(x))  # float32 values exactly representable in bf16
    xb_bits = bf16_bits(xb_bits)
    xb = xb_bits.view(ml_dtypes.bfloat16).reshape(x.shape)
    ref, _ = infer(g, grpcclient, FP32, [("main_input", "FP32", bf16_to_float(xb_bits).reshape(x.shape))],
                   [SOFTMAX, SIGMOID])
    for module, client in (("http", h), ("grpc", g)):
        got, _ = infer(client, httpclient if module == "http" else grpcclient, "emtrk_bf16",
                       [("main_input", "BF16", xb)], [SOFTMAX, SIGMOID])
        for name in (SOFTMAX, SIGMOID):
            bits = np.ascontiguousarray(got[name]).view(np.uint16)
            want = bf16_bits(ref[name])
            check(got[name].dtype == ml_dtypes.bfloat16 and np.array_equal(bits, want),
                  f"{module} emtrk_bf16 {name} == fp32 model's, rounded to bf16 "
                  f"({int((bits != want).sum())} of {bits.size} differ)")

    # knn with FP16 points and distances (INT64 row_splits and INT32 indices unchanged).
    points = rng.normal(size=(40, 3)).astype(np.float16)
    splits = np.array([0, 17, 40], np.int64)
    ref, _ = infer(g, grpcclient, "knn", [("points", "FP32", points.astype(np.float32)),
                                          ("row_splits", "INT64", splits)], ["indices", "distances"])
    for module, client in (("http", h), ("grpc", g)):
        got, _ = infer(client, httpclient if module == "http" else grpcclient, "knn_fp16",
                       [("points", "FP16", points), ("row_splits", "INT64", splits)], ["indices", "distances"])
        want = ref["distances"].astype(np.float16)
        check(got["distances"].dtype == np.float16
              and np.array_equal(got["distances"].view(np.uint16), want.view(np.uint16))
              and got["indices"].dtype == np.int32 and np.array_equal(got["indices"], ref["indices"]),
              f"{module} knn_fp16: indices equal, distances == fp32 model's rounded to fp16")

    # A config declaring FP16 for an INT64 model tensor: the model fails to load, with a reason
    # naming model, tensor, declared and actual type.
    index = {m["name"]: m for m in h.get_model_repository_index()}
    reason = index.get("knn_bad", {}).get("reason", "")
    check(index.get("knn_bad", {}).get("state") == "UNAVAILABLE" and "knn_bad" in reason
          and "row_splits" in reason and "TYPE_FP16" in reason and "TYPE_INT64" in reason,
          f"knn_bad (row_splits declared TYPE_FP16) does not load: '{reason}'")

    # Errors: 400 / INVALID_ARGUMENT with a clear message; then a good request still works.
    def good():
        got, _ = infer(h, httpclient, "emtrk_fp16", [("main_input", "FP16", x16[:1])], [SOFTMAX])
        return got[SOFTMAX].shape == (1, 3)

    url = server.http_url
    one = x16[:1]
    http_cases = [
        ("HTTP FP16 binary one byte short",
         lambda: binary_request(url, "emtrk_fp16", "main_input", "FP16", [1, 48, 48, 1], one.tobytes()[:-1]),
         b"4607 bytes of data"),
        ("HTTP FP16 binary with FP32's size",
         lambda: binary_request(url, "emtrk_fp16", "main_input", "FP16", [1, 48, 48, 1],
                                one.astype(np.float32).tobytes()),
         b"needs 4608"),
        ("HTTP BF16 binary_data_size beyond the body",
         lambda: binary_request(url, "emtrk_bf16", "main_input", "BF16", [1, 48, 48, 1], xb[:1].tobytes(),
                                declared_size=4610),
         b"truncated body"),
        ("HTTP FP32 sent for a declared FP16 input",
         lambda: binary_request(url, "emtrk_fp16", "main_input", "FP32", [1, 48, 48, 1],
                                one.astype(np.float32).tobytes(),
                                outputs=[{"name": SOFTMAX, "parameters": {"binary_data": True}}]),
         b"input 'main_input' datatype"),
        ("HTTP FP16 output asked as JSON",
         lambda: binary_request(url, "emtrk_fp16", "main_input", "FP16", [1, 48, 48, 1], one.tobytes(),
                                outputs=[{"name": SOFTMAX, "parameters": {"binary_data": False}}]),
         b"sending FP16 data via JSON is not supported"),
        ("HTTP BF16 outputs asked as JSON (no outputs named, binary_data_output unset)",
         lambda: binary_request(url, "emtrk_bf16", "main_input", "BF16", [1, 48, 48, 1], xb[:1].tobytes()),
         b"sending BF16 data via JSON is not supported"),
        ("HTTP FP16 input as JSON data",
         lambda: raw_http(url, "/v2/models/emtrk_fp16/infer", json.dumps(
             {"inputs": [{"name": "main_input", "datatype": "FP16", "shape": [1, 48, 48, 1],
                          "data": one.astype(np.float32).ravel().tolist()}]}).encode()),
         b"receiving FP16 data via JSON is not supported"),
        ("HTTP BF16 input as JSON data",
         lambda: raw_http(url, "/v2/models/emtrk_bf16/infer", json.dumps(
             {"inputs": [{"name": "main_input", "datatype": "BF16", "shape": [1, 2], "data": [1.0, 2.0]}]}).encode()),
         b"receiving BF16 data via JSON is not supported"),
    ]
    for what, call, fragment in http_cases:
        status, body = call()
        check(status == 400 and fragment in body, f"{what}: {status} {body[:150]!r}")
        check(good(), f"after {what}: a good request succeeds")

    # tritonclient's own JSON path (binary_data=False) for an FP16 input: the server refuses it.
    def json_input():
        i = httpclient.InferInput("main_input", [1, 48, 48, 1], "FP16")
        i.set_data_from_numpy(one, binary_data=False)
        return h.infer("emtrk_fp16", [i], outputs=[httpclient.InferRequestedOutput(SOFTMAX)])

    expect_error("tritonclient HTTP FP16 input with binary_data=False", json_input,
                 "receiving FP16 data via JSON is not supported", ["400"])

    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc_url))

    def grpc_call(request):
        try:
            stub.ModelInfer(request)
            return None, ""
        except grpc.RpcError as e:
            return e.code(), e.details()

    typed = service_pb2.ModelInferRequest(model_name="emtrk_fp16")
    t = typed.inputs.add(name="main_input", datatype="FP16", shape=[1, 2])
    t.contents.fp32_contents.extend([1.0, 2.0])
    short = service_pb2.ModelInferRequest(model_name="emtrk_fp16")
    short.inputs.add(name="main_input", datatype="FP16", shape=[1, 48, 48, 1])
    short.raw_input_contents.append(one.tobytes()[:-2])
    bf_long = service_pb2.ModelInferRequest(model_name="emtrk_bf16")
    bf_long.inputs.add(name="main_input", datatype="BF16", shape=[1, 48, 48, 1])
    bf_long.raw_input_contents.append(xb[:1].tobytes() + b"\0\0")
    for what, request, fragment in (("gRPC FP16 in typed contents", typed, "raw_input_contents"),
                                    ("gRPC FP16 raw one element short", short, "4606 bytes of data"),
                                    ("gRPC BF16 raw one element long", bf_long, "4610 bytes of data")):
        code, details = grpc_call(request)
        check(code == grpc.StatusCode.INVALID_ARGUMENT and fragment in details, f"{what}: {code} '{details[:150]}'")
        check(good(), f"after {what}: a good request succeeds")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    args = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kaas-half-"))
    try:
        repo = tmp / "repo"
        write_repository(args.make_repository, repo)
        write_models(repo)
        server = KaasServer(args.server, repo)
        try:
            run(server)
        finally:
            check(server.stop() == 0, "server stops with 0")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
