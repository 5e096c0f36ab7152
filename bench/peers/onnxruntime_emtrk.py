#!/usr/bin/env python3
"""Peer for bench_emtrk: the EmTrkMichelId model file in onnxruntime's CPU execution provider.

Usage: onnxruntime_emtrk.py MODEL.onnx BATCH THREADS MIN_TIME [PATCHES.npy]
Session: intra_op_num_threads = THREADS, inter_op_num_threads = 1, ORT_SEQUENTIAL, all graph
optimisations. Input: PATCHES.npy ([BATCH, 48, 48, 1], the patches kaas runs) or BATCH patches
uniform in [-5, 15]. Two warm-up runs,
then timed runs (session.run of both outputs, host arrays in and out) until MIN_TIME seconds and
at least 3 runs have passed.
Prints two lines: the per-run wall times in seconds separated by spaces, then a description
(onnxruntime version and provider). Exits with status 2 and a message when onnxruntime cannot be
imported.
"""
import sys
import time


def main():
    model, batch, threads, min_time = sys.argv[1:5]
    batch, threads, min_time = int(batch), int(threads), float(min_time)
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"cannot import onnxruntime/numpy with {sys.executable} ({e}); set KAAS_BENCH_PYTHON "
              "to a Python that has them")
        sys.exit(2)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(12345 + batch)
    patches = rng.uniform(-5.0, 15.0, size=(batch, 48, 48, 1)).astype(np.float32)
    if len(sys.argv) > 5 and sys.argv[5]:
        patches = np.load(sys.argv[5]).astype(np.float32)
    feed = {"main_input": patches}
    for _ in range(2):
        session.run(None, feed)
    seconds = []
    start = time.perf_counter()
    while len(seconds) < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        session.run(None, feed)
        seconds.append(time.perf_counter() - t0)
    print(" ".join(f"{t:.9f}" for t in seconds))
    print(f"onnxruntime {ort.__version__} {session.get_providers()[0]}, "
          f"intra_op {threads}, {len(seconds)} runs")


if __name__ == "__main__":
    main()
