#!/usr/bin/env python3
"""The peer of the kaas-server benchmark: KServe's Python model server (PyPI kserve) serving
the same EmTrkMichelId model.onnx with onnxruntime over the v2 REST protocol."""
import argparse
import importlib.metadata
import socket

import kserve
import onnxruntime as ort
from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer


class OnnxModel(Model):
    def __init__(self, name, model_file, threads):
        super().__init__(name)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(model_file, options, providers=["CPUExecutionProvider"])
        self.ready = True

    async def predict(self, payload: InferRequest, headers=None, response_headers=None):
        x = payload.inputs[0].as_numpy()
        results = self.session.run(None, {payload.inputs[0].name: x})
        outputs = []
        for meta, value in zip(self.session.get_outputs(), results):
            out = InferOutput(name=meta.name, shape=list(value.shape), datatype="FP32")
            out.set_data_from_numpy(value, binary_data=True)
            outputs.append(out)
        return InferResponse(model_name=self.name, infer_outputs=outputs, response_id=payload.id or "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-file", required=True)
    parser.add_argument("--http-port", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    port = args.http_port
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    model = OnnxModel("emtrkmichelid", args.model_file, args.threads)
    version = importlib.metadata.version("kserve")
    print(f"kserve-peer listening http={port} (kserve {version}, onnxruntime {ort.__version__})",
          flush=True)
    ModelServer(http_port=port, enable_grpc=False, workers=1).start([model])


if __name__ == "__main__":
    main()
