#!/usr/bin/env python3
"""EmTrkMichelId on kaas (kaas-infer) against onnxruntime on the same model.onnx and patches.

Both generated graph styles (Keras NHWC with Transpose before Flatten, PyTorch NCHW), fused and
unfused plans, on one kaas backend. Passes when every probability agrees to <= 1e-5 absolute.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

TOLERANCE = 1e-5


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kaas-infer", required=True)
    parser.add_argument("--make-model", required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--patches", type=int, default=37)
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        rng = np.random.default_rng(2026)
        # ADC-like patches in the scaled range, with exact zeros as outside the plane.
        nhwc = rng.uniform(-5.0, 15.0, size=(args.patches, 48, 48, 1)).astype(np.float32)
        nhwc[:, :, :5, :] = 0.0
        for style in ("keras", "pytorch"):
            subprocess.run([args.make_model, "--repository", str(tmp / "repo"), "--name", style,
                            "--style", style], check=True, stdout=subprocess.DEVNULL)
            model = tmp / "repo" / style / "1" / "model.onnx"
            x = nhwc if style == "keras" else np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
            np.save(tmp / f"{style}.npy", x)
            session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
            expected = session.run(None, {"main_input": x})
            names = [o.name for o in session.get_outputs()]
            for plan in ("require", "off"):
                out_dir = tmp / f"{style}_{plan}"
                subprocess.run([args.kaas_infer, "--model", str(model), "--backend", args.backend,
                                "--input", f"main_input={tmp / (style + '.npy')}", "--output-dir",
                                str(out_dir), "--batch", "16", "--fused", plan], check=True,
                               stdout=subprocess.DEVNULL)
                for name, want in zip(names, expected):
                    got = np.load(out_dir / (name.replace("/", "_") + ".npy"))
                    err = float(np.abs(got - want).max()) if got.shape == want.shape else np.inf
                    ok = err <= TOLERANCE
                    failures += not ok
                    print(f"{args.backend} {style:7s} fused={plan:7s} {name:28s} shape "
                          f"{got.shape} max |kaas - onnxruntime| = {err:.2e} "
                          f"{'ok' if ok else 'FAIL'}")
    print(f"onnxruntime {ort.__version__}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
