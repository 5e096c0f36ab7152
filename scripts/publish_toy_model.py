#!/usr/bin/env python3
"""Turns a trained EmTrkMichelId (scripts/train_toy_model.sh's output) into the data artifact the
run command uses, data/emtrk-toy/: the weights in FP16 (weights/*.npy; the model built from them
is FP32 with exactly these values), weights.sha256, the Michel working point chosen on the
validation events with the FP16 model, its figures on the validation events and on held-out
events of a seed that neither training, validation nor any test uses, the ROC curve, and
manifest.json (the training command and key, the seeds, the code's and the event generator's
digests, the metrics, the files' sha256).

Usage: publish_toy_model.py --build BUILD --trained BUILD/trained [--out data/emtrk-toy]
(BUILD: a configured tree; kaas-make-repository and kaas-reco are built if missing.)
"""
import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The event generator: what makes the toy events and their truth (a change here changes what the
# model was trained on; tests/data/test_emtrk_toy.py compares this digest with the manifest's).
GENERATOR_FILES = [
    "examples/lartpc/toy_event.cc", "examples/lartpc/toy_event.h",
    "examples/lartpc/toy_physics.cc", "examples/lartpc/toy_physics.h",
    "examples/lartpc/signal_processing.cc", "examples/lartpc/signal_processing.h",
]
# The training code: the generator, the patch sampling and preprocessing, the trainer, the export.
TRAINING_FILES = GENERATOR_FILES + [
    "examples/lartpc/toy_patches_main.cc", "examples/lartpc/reco.cc", "kernels/patches.h",
    "kernels/patches.kern.cc", "scripts/train_toy_model.sh", "scripts/train_venv.sh",
    "scripts/train_toy_model.py", "models/emtrk_onnx_generator.cc", "tools/make_emtrk_model.cc",
]
TRAINING_SEED = 18  # train_toy_model.sh's events
HELD_OUT_SEED, HELD_OUT_EVENTS = 77, 5
FP16_MAX = 65504.0


def digest(files):
    """sha256 over the files' names and contents, in the listed order."""
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return h.hexdigest()


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def run(cmd, **kwargs):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def write_fp16(trained, out):
    weights = out / "weights"
    weights.mkdir(parents=True)
    worst = 0.0
    for f in sorted((trained / "weights").glob("*.npy")):
        w = np.load(f)
        if w.dtype != np.float32 or not np.all(np.isfinite(w)):
            sys.exit(f"publish_toy_model: {f}: expected finite FP32 weights")
        if np.max(np.abs(w)) >= FP16_MAX:
            sys.exit(f"publish_toy_model: {f}: a weight beyond FP16's range")
        h = w.astype(np.float16)
        scale = max(float(np.max(np.abs(w))), 1e-30)
        worst = max(worst, float(np.max(np.abs(h.astype(np.float32) - w))) / scale)
        np.save(weights / f.name, h)
    lines = [f"{sha256(p)}  weights/{p.name}\n" for p in sorted(weights.glob("*.npy"))]
    (out / "weights.sha256").write_text("".join(lines))
    return worst


def reco(build, repo, seed, first, events, extra, cwd=None):
    cmd = [build.resolve() / "examples/lartpc/kaas-reco", "--mode", "direct", "--send", "image",
           "--repository", repo, "--seed", seed, "--first-event", first, "--events", events,
           "--quiet"] + extra
    return run(cmd, capture_output=True, text=True, cwd=cwd).stdout


def validation_split(key):
    """(first, count) of the validation events, as train_toy_model.sh splits them: the last
    round(events x val-fraction) of its --events (both in its cache key)."""
    events = int(re.search(r"--events (\d+)", key).group(1))
    fraction = float(re.search(r"--val-fraction ([0-9.]+)", key).group(1))
    count = max(1, round(events * fraction)) if events > 1 else 0
    if count == 0:
        sys.exit("publish_toy_model: the training had no validation events")
    return events - count, count


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, type=pathlib.Path)
    p.add_argument("--trained", required=True, type=pathlib.Path)
    p.add_argument("--out", type=pathlib.Path, default=ROOT / "data" / "emtrk-toy")
    args = p.parse_args()
    report = json.loads((args.trained / "report.json").read_text())
    key = (args.trained / "key").read_text().strip()
    validation_first, validation_events = validation_split(key)
    run(["cmake", "--build", args.build, "--target", "kaas-make-repository", "kaas-reco"],
        stdout=subprocess.DEVNULL)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    rounding = write_fp16(args.trained, args.out)
    with tempfile.TemporaryDirectory(prefix="kaas-publish-") as tmp:
        repo = pathlib.Path(tmp) / "repo"
        run([args.build / "tools/kaas-make-repository", "--repository", repo, "--emtrk-weights",
             args.out / "weights"], stdout=subprocess.DEVNULL)
        point = args.out / "working_point.json"
        validation_json = pathlib.Path(tmp) / "validation.json"
        validation_log = reco(args.build, repo, TRAINING_SEED, validation_first, validation_events,
                              ["--choose-working-point", point, "--metrics-json", validation_json])
        held_json = pathlib.Path(tmp) / "held_out.json"
        # Run in the output folder: the log names the ROC file as it is kept, not where this ran.
        held_log = reco(args.build, repo, HELD_OUT_SEED, 0, HELD_OUT_EVENTS,
                        ["--working-point", point.resolve(), "--metrics-json", held_json,
                         "--roc", "michel_roc.svg"], cwd=args.out)
        validation = json.loads(validation_json.read_text())
        held_out = json.loads(held_json.read_text())
    (args.out / "validation.log").write_text(validation_log)
    (args.out / "held_out.log").write_text(held_log)
    history = [{k: h[k] for k in ("epoch", "steps", "train_loss", "loss", "accuracy",
                                  "michel_efficiency", "michel_purity") if k in h}
               for h in report["history"]]
    manifest = {
        "model": "EmTrkMichelId (models/emtrk_onnx_generator.h), trained on toy LArTPC events",
        "training_command": ("KAAS_TRAIN_EVENTS={n} KAAS_TRAIN_EPOCHS={e} KAAS_TRAIN_LR_DECAY={d} "
                             "KAAS_TRAIN_LR_FINAL={f} "
                             "KAAS_TRAIN_SECONDS=0 bash scripts/train_toy_model.sh build/dev && "
                             "build/dev/train-venv/bin/python scripts/publish_toy_model.py "
                             "--build build/dev --trained build/dev/trained").format(
                                 n=validation_first + validation_events, e=report["epochs_run"],
                                 d=report.get("lr_decay_per_epoch", 1.0),
                                 f=report.get("lr_final", 1.0)),
        "training_key": key,
        "training": {k: report[k] for k in ("patches", "seed", "batch", "optimizer", "michel_loss",
                                            "learning_rate", "epochs_run", "stopped_early",
                                            "train_seconds", "jax") if k in report}
                    | {"lr_decay_per_epoch": report.get("lr_decay_per_epoch", 1.0),
                       "lr_final": report.get("lr_final", 1.0),
                       "history": history},
        "event_seeds": {"training": TRAINING_SEED, "training_events": f"0..{validation_first - 1}",
                        "validation_events":
                            f"{validation_first}..{validation_first + validation_events - 1}",
                        "held_out": HELD_OUT_SEED, "held_out_events": HELD_OUT_EVENTS},
        "generator_files": GENERATOR_FILES,
        "generator_digest": digest(GENERATOR_FILES),
        "training_files": TRAINING_FILES,
        "code_digest": digest(TRAINING_FILES),
        "weights_dtype": "float16",
        "fp16_rounding_max_relative_to_tensor_max": rounding,
        "metrics": {"validation": validation, "held_out": held_out},
        "files": {str(p.relative_to(args.out)): sha256(p)
                  for p in sorted(args.out.rglob("*")) if p.is_file()},
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(p.stat().st_size for p in (args.out / "weights").glob("*.npy"))
    print(f"publish_toy_model: {args.out}: weights {size / 1e6:.1f} MB FP16; held out (seed "
          f"{HELD_OUT_SEED}, {HELD_OUT_EVENTS} events): {json.dumps(held_out)}")


if __name__ == "__main__":
    main()
