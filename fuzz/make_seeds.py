#!/usr/bin/env python3
"""Writes the hand-made seed inputs of fuzz/corpus/<target>/ (valid requests, configs and files of
each kind the parsers take, plus a few near misses). Inputs libFuzzer finds are merged into the
same directories by scripts/fuzz.sh.

Usage: .venv/bin/python fuzz/make_seeds.py --make-repository BIN
       (needs numpy, tritonclient and, for the ONNX seeds only, `pip install onnx`)
"""
import argparse
import io
import json
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np
from tritonclient.grpc import service_pb2

HERE = pathlib.Path(__file__).resolve().parent


def write(target, name, data):
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def rest_seeds():
    knn = {"id": "event-7", "inputs": [
        {"name": "points", "shape": [4, 3], "datatype": "FP32", "data": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]},
        {"name": "row_splits", "shape": [2], "datatype": "INT64", "data": [0, 4]}],
        "parameters": {"timeout": 1000000, "binary_data_output": True},
        "outputs": [{"name": "indices", "parameters": {"binary_data": False}}, {"name": "distances"}]}
    write("rest_infer", "json_knn", b"\0\0" + json.dumps(knn).encode())
    ints = {"inputs": [{"name": "hit_wire", "shape": [3], "datatype": "INT32", "data": [1, -2, 2147483647]},
                       {"name": "u8", "shape": [2], "datatype": "UINT8", "data": [0, 255]}]}
    write("rest_infer", "json_ints", b"\0\0" + json.dumps(ints).encode())
    points = np.arange(12, dtype=np.float32).tobytes()
    header = json.dumps({"inputs": [
        {"name": "points", "shape": [4, 3], "datatype": "FP32", "parameters": {"binary_data_size": len(points)}},
        {"name": "row_splits", "shape": [2], "datatype": "INT64", "data": [0, 4]}]}).encode()
    assert len(header) < 256
    write("rest_infer", "binary_knn", b"\1" + bytes([len(header)]) + header + points)
    write("rest_infer", "near_miss_depth", b"\0\0" + b'{"inputs":[{"data":' + b"[" * 40 + b"]" * 40 + b"}]}")


def grpc_seeds():
    q = service_pb2.ModelInferRequest(model_name="knn", id="7")
    q.parameters["timeout"].int64_param = 1000
    t = q.inputs.add(name="points", datatype="FP32", shape=[4, 3])
    q.raw_input_contents.append(np.arange(12, dtype=np.float32).tobytes())
    t = q.inputs.add(name="row_splits", datatype="INT64", shape=[2])
    q.raw_input_contents.append(np.array([0, 4], dtype=np.int64).tobytes())
    q.outputs.add(name="indices")
    write("grpc_infer", "raw_knn", q.SerializeToString())
    q = service_pb2.ModelInferRequest(model_name="michel_from_image")
    t = q.inputs.add(name="image", datatype="FP32", shape=[2, 2])
    t.contents.fp32_contents.extend([0.5, 1, 2, 3])
    t = q.inputs.add(name="hit_wire", datatype="INT32", shape=[1])
    t.contents.int_contents.append(1)
    t = q.inputs.add(name="counts", datatype="INT64", shape=[1])
    t.contents.int64_contents.append(3)
    t = q.inputs.add(name="mask", datatype="UINT8", shape=[2])
    t.contents.uint_contents.extend([0, 1])
    write("grpc_infer", "typed_contents", q.SerializeToString())


def half_seeds():
    """FP16 / BF16: binary REST and raw gRPC tensors, and the JSON / typed forms they refuse."""
    half = np.array([1, -2, 0.5, 65504], np.float16).tobytes()
    header = json.dumps({"inputs": [
        {"name": "p", "shape": [2, 2], "datatype": "FP16", "parameters": {"binary_data_size": len(half)}},
        {"name": "b", "shape": [2], "datatype": "BF16", "parameters": {"binary_data_size": 4}}],
        "parameters": {"binary_data_output": True}}).encode()
    assert len(header) < 256
    write("rest_infer", "binary_half", b"\1" + bytes([len(header)]) + header + half + b"\x80\x3f\x00\xc0")
    write("rest_infer", "json_fp16_refused", b"\0\0" + json.dumps(
        {"inputs": [{"name": "x", "shape": [2], "datatype": "FP16", "data": [1.0, 2.0]}]}).encode())
    q = service_pb2.ModelInferRequest(model_name="knn_half")
    q.inputs.add(name="points", datatype="FP16", shape=[2, 2])
    q.raw_input_contents.append(half)
    q.inputs.add(name="b", datatype="BF16", shape=[2])
    q.raw_input_contents.append(b"\x80\x3f\x00\xc0")
    write("grpc_infer", "raw_half", q.SerializeToString())
    q = service_pb2.ModelInferRequest(model_name="knn_half")
    q.inputs.add(name="points", datatype="FP16", shape=[2]).contents.fp32_contents.extend([1, 2])
    write("grpc_infer", "typed_fp16_refused", q.SerializeToString())
    buffer = io.BytesIO()
    np.save(buffer, np.array([[1, 2], [3, 4]], np.float16))
    write("npy", "f16_2d", buffer.getvalue())


def config_seeds(make_repository):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([make_repository, "--repository", tmp], check=True, stdout=subprocess.DEVNULL)
        for config in sorted(pathlib.Path(tmp).glob("*/config.pbtxt")):
            write("model_config", "pbtxt_" + config.parent.name, b"\0" + config.read_bytes())
    triton_json = {"name": "knn", "backend": "kaas", "max_batch_size": 0,
                   "parameters": {"kaas_model": {"string_value": "knn"}, "k": {"string_value": "4"}},
                   "instance_group": [{"count": 2, "kind": "KIND_CPU"}],
                   "dynamic_batching": {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": 100}}
    write("model_config", "json_knn", b"\1" + json.dumps(triton_json).encode())


def npy_seeds():
    for name, array in (("f32_2d", np.arange(6, dtype=np.float32).reshape(2, 3)),
                        ("i64_1d", np.array([0, 4, 9], dtype=np.int64)),
                        ("i32_scalar", np.array(7, dtype=np.int32)),
                        ("u8_3d", np.zeros((2, 1, 3), dtype=np.uint8))):
        buffer = io.BytesIO()
        np.save(buffer, array)
        write("npy", name, buffer.getvalue())
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ones((2, 2), dtype=np.float32), version=(2, 0))
    write("npy", "f32_v2", buffer.getvalue())


def onnx_seeds():
    """Small models of the ops the importer takes (the EmTrkMichelId file is 47 MB)."""
    from onnx import TensorProto, helper, numpy_helper

    def model(name, nodes, inputs, outputs, initializers, opset=13):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        write("onnx_import", name, m.SerializeToString())

    f = TensorProto.FLOAT
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.normal(size=(4, 1, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "b")
    d = numpy_helper.from_array(rng.normal(size=(64, 3)).astype(np.float32), "d")
    shape = numpy_helper.from_array(np.array([-1, 64], np.int64), "shape")
    model("conv_relu_dense_softmax",
          [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
           helper.make_node("Conv", ["xt", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
           helper.make_node("Relu", ["c"], ["r"]),
           helper.make_node("Reshape", ["r", "shape"], ["f"]),
           helper.make_node("MatMul", ["f", "d"], ["m"]),
           helper.make_node("Softmax", ["m"], ["y"], axis=-1)],
          [helper.make_tensor_value_info("x", f, ["N", 4, 4, 1])],
          [helper.make_tensor_value_info("y", f, ["N", 3])], [w, b, d, shape])
    g = numpy_helper.from_array(rng.normal(size=(8, 2)).astype(np.float32), "g")
    c = numpy_helper.from_array(np.ones(2, np.float32), "c")
    model("gemm_sigmoid_concat",
          [helper.make_node("Flatten", ["x"], ["fx"], axis=1),
           helper.make_node("Gemm", ["fx", "g", "c"], ["h"]),
           helper.make_node("Sigmoid", ["h"], ["s"]),
           helper.make_node("LeakyRelu", ["h"], ["l"], alpha=0.1),
           helper.make_node("Add", ["s", "l"], ["a"]),
           helper.make_node("Concat", ["a", "s"], ["y"], axis=1)],
          [helper.make_tensor_value_info("x", f, ["N", 2, 4])],
          [helper.make_tensor_value_info("y", f, ["N", 4])], [g, c], opset=11)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--make-repository", required=True)
    args = parser.parse_args()
    shutil.rmtree(HERE / "corpus", ignore_errors=True)
    rest_seeds()
    grpc_seeds()
    half_seeds()
    config_seeds(args.make_repository)
    onnx_seeds()
    npy_seeds()


if __name__ == "__main__":
    main()
