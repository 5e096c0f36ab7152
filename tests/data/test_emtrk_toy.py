#!/usr/bin/env python3
"""The trained toy model kept as data (data/emtrk-toy) is what its manifest says: every file's
sha256 as listed, FP16 weights of EmTrkMichelId's tensors within the size budget, and the event
generator's digest the one the model was trained with. A failure of the last means the toy
events changed since the training: retrain (the manifest's training_command) or say why not.

Usage: test_emtrk_toy.py [--data DIR]
"""
import argparse
import hashlib
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_WEIGHT_BYTES = 25_000_000
TENSORS = {  # EmTrkMichelId's initializers as the weights directory names them
    "conv2d_kernel": (48, 1, 5, 5), "conv2d_bias": (48,), "dense_kernel": (92928, 128),
    "dense_bias": (128,), "dense_1_kernel": (128, 32), "dense_1_bias": (32,),
    "em_trk_none_netout_kernel": (32, 3), "em_trk_none_netout_bias": (3,),
    "michel_netout_kernel": (32, 1), "michel_netout_bias": (1,),
}
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def digest(files):
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return h.hexdigest()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", type=pathlib.Path, default=ROOT / "data" / "emtrk-toy")
    data = p.parse_args().data
    manifest = json.loads((data / "manifest.json").read_text())
    for name, want in manifest["files"].items():
        got = hashlib.sha256((data / name).read_bytes()).hexdigest()
        check(got == want, f"{name}: sha256 {got[:16]}... as in manifest.json")
    listed = {}
    for line in (data / "weights.sha256").read_text().splitlines():
        sha, name = line.split("  ", 1)
        listed[name] = sha
    check(listed == {k: v for k, v in manifest["files"].items() if k.startswith("weights/")},
          f"weights.sha256 lists the manifest's {len(listed)} weight files")
    size = 0
    for name, shape in TENSORS.items():
        path = data / "weights" / f"{name}.npy"
        w = np.load(path)
        size += path.stat().st_size
        check(w.dtype == np.float16 and w.shape == shape and bool(np.all(np.isfinite(w))),
              f"{name}: finite float16 {shape} (found {w.dtype} {w.shape})")
    check(size <= MAX_WEIGHT_BYTES, f"weights {size / 1e6:.1f} MB <= {MAX_WEIGHT_BYTES / 1e6:.0f} MB")
    now = digest(manifest["generator_files"])
    check(now == manifest["generator_digest"],
          f"the event generator ({', '.join(manifest['generator_files'])}) is the one the model "
          f"was trained on: digest {now[:16]}... vs the manifest's "
          f"{manifest['generator_digest'][:16]}... (changed: retrain with the manifest's "
          "training_command, or say in the manifest why not)")
    for split in ("validation", "held_out"):
        m = manifest["metrics"][split]
        check({"track_em_accuracy", "michel_at_false_positive_rate", "michel_roc_area"} <= m.keys(),
              f"metrics on the {split} events: accuracy, Michel efficiency at the paper's "
              "false-positive rates, ROC area")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
