#!/usr/bin/env python3
"""EmTrkMichelId on kaas (kaas-infer) against onnxruntime on the same model.onnx and patches.

Both generated graph styles (Keras NHWC with Transpose before Flatten, PyTorch NCHW), fused and
unfused plans, and the fused plan's sparse execution (--sparse sparse) on zero-suppressed patches
(random pixels charged at 0, 1, 10, 50 and 100 %, all-zero patches, charge on the border only,
a band of charge), on one kaas backend. Passes when every probability agrees to <= 1e-5
absolute, and the sparse execution gives every patch the dense plan's class.
"""
import argparse
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

TOLERANCE = 1e-5


def zero_suppressed(rng):
    """Patches as production signal processing leaves them: exact zeros outside the charge."""
    patches = []
    for occupancy in (0.0, 0.01, 0.1, 0.5, 1.0):
        charged = rng.random((4, 48, 48, 1)) < occupancy
        patches.append(np.where(charged, rng.uniform(0.5, 15.0, (4, 48, 48, 1)), 0.0))
    border = np.zeros((2, 48, 48, 1))
    border[:, 0, :, 0] = 3.0
    border[:, :, 47, 0] = 7.5
    patches.append(border)
    band = np.zeros((3, 48, 48, 1))
    for i in range(48):
        band[:, i, max(0, i - 2):i + 2, 0] = rng.uniform(1.0, 15.0)
    patches.append(band)
    return np.concatenate(patches).astype(np.float32)


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
        sparse = zero_suppressed(rng)
        for style in ("keras", "pytorch"):
            subprocess.run([args.make_model, "--repository", str(tmp / "repo"), "--name", style,
                            "--style", style], check=True, stdout=subprocess.DEVNULL)
            model = tmp / "repo" / style / "1" / "model.onnx"
            x = nhwc if style == "keras" else np.ascontiguousarray(nhwc.transpose(0, 3, 1, 2))
            np.save(tmp / f"{style}.npy", x)
            xs = sparse if style == "keras" else np.ascontiguousarray(sparse.transpose(0, 3, 1, 2))
            np.save(tmp / f"{style}_sparse.npy", xs)
            session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            runs = [("require", "dense", style, session.run(None, {"main_input": x})),
                    ("off", "dense", style, None),
                    ("require", "sparse", style + "_sparse",
                     session.run(None, {"main_input": xs}))]
            runs[1] = ("off", "dense", style, runs[0][3])
            classes = {}
            for plan, execution, data, expected in runs:
                out_dir = tmp / f"{data}_{plan}_{execution}"
                subprocess.run([args.kaas_infer, "--model", str(model), "--backend", args.backend,
                                "--input", f"main_input={tmp / (data + '.npy')}", "--output-dir",
                                str(out_dir), "--batch", "16", "--fused", plan, "--sparse",
                                execution], check=True, stdout=subprocess.DEVNULL)
                for name, want in zip(names, expected):
                    got = np.load(out_dir / (name.replace("/", "_") + ".npy"))
                    err = float(np.abs(got - want).max()) if got.shape == want.shape else np.inf
                    ok = err <= TOLERANCE
                    failures += not ok
                    print(f"{args.backend} {data:14s} fused={plan:7s} {execution:6s} {name:28s} "
                          f"shape {got.shape} max |kaas - onnxruntime| = {err:.2e} "
                          f"{'ok' if ok else 'FAIL'}")
                    if execution == "sparse" and got.shape[-1] == 3:
                        same = bool((got.argmax(1) == want.argmax(1)).all())
                        failures += not same
                        print(f"{args.backend} {data:14s} sparse: every patch's class as "
                              f"onnxruntime's: {'ok' if same else 'FAIL'}")
    print(f"onnxruntime {ort.__version__}: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
