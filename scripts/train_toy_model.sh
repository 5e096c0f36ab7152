#!/usr/bin/env bash
# Trains EmTrkMichelId on toy events, once: the result is cached in the build tree and reused
# while its inputs (this script, the trainer, the toy event and patch code, the settings) are
# unchanged. Steps: a JAX (CPU) virtual environment in <build>/train-venv, training patches from
# kaas-toy-patches (events with seed 18; the run command's events use seed 1, so they are held
# out), scripts/train_toy_model.py, then kaas-make-emtrk-model --weights for the ONNX model.
#
# Usage: scripts/train_toy_model.sh BUILD_DIR   (a configured build tree)
# Writes <out>/weights/*.npy, <out>/emtrkmichelid/{config.pbtxt,1/model.onnx}, report.json,
# loss.png, confusion.png, train.log, working_point.json (the Michel threshold chosen on the
# validation events with kaas-reco --choose-working-point); prints "trained model: <out>" last. <out> is
# BUILD_DIR/trained, or BUILD_DIR/trained-smoke with KAAS_TRAIN_SMOKE=1.
# Environment:
#   KAAS_TRAIN_SMOKE=1   one epoch on 2 small events (seconds; the test command's version)
#   KAAS_TRAIN_EVENTS    training + validation events (default 33; the last 10 % validate)
#   KAAS_TRAIN_EPOCHS    epochs (default 1; data/emtrk-toy/manifest.json records its settings)
#   KAAS_TRAIN_LR_DECAY  learning-rate factor per epoch (default 1: constant)
#   KAAS_TRAIN_LR_FINAL  the learning rate's last step as a fraction of its first, reached
#                        smoothly per step (default 1: no decay within epochs)
#   KAAS_TRAIN_SECONDS   stop training after this long (default 1200, ~2.3x the measured epoch;
#                        a stop says so loudly: the model then differs from data/emtrk-toy's)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

build="${1:?usage: scripts/train_toy_model.sh BUILD_DIR}"
if [[ "${KAAS_TRAIN_SMOKE:-0}" == "1" ]]; then
  out="$build/trained-smoke"
  events=2
  val_fraction=0.5
  # 8 muons and 2 showers per plane: the validation event's ~7,000 hits (32,500 with the
  # generator's defaults) still hold every class; its inference was half of the smoke's CPU.
  geometry=(--wires 480 --ticks 3000 --tracks 8 --showers 2)
  patch_args=(--events "$events" --per-class 150 --near-michel 50 "${geometry[@]}")
  train_args=(--epochs 1 --max-seconds 120)
else
  out="$build/trained"
  events="${KAAS_TRAIN_EVENTS:-33}"
  val_fraction=0.1
  geometry=()
  # ~200k patches: every Michel hit, 2400 track and 1200 EM hits per event plus 800 EM hits
  # with few EM neighbours (delta rays, shower tips: the Michel look-alikes), 800 hits near
  # Michel electrons (the muon's end, where most Michel hits are missed); one pass over many
  # patches beat several over fewer (docs/toy-detector.md).
  patch_args=(--events "$events" --per-class 1200 --track-hits 2400 --sparse-em 800
              --near-michel 800)
  train_args=(--epochs "${KAAS_TRAIN_EPOCHS:-1}" --lr-decay "${KAAS_TRAIN_LR_DECAY:-1}"
              --lr-final "${KAAS_TRAIN_LR_FINAL:-1}"
              --max-seconds "${KAAS_TRAIN_SECONDS:-1200}")
fi
patch_args+=(--seed 18)
train_args+=(--val-fraction "$val_fraction")
# The validation events are the last ones (train_toy_model.py splits by event the same way).
validation_events=$(python3 -c "print(max(1, round($events * $val_fraction)) if $events > 1 else 0)")
jax_version="$(bash scripts/train_venv.sh "$build" --print-jax-version)"

key="$(cat scripts/train_toy_model.sh scripts/train_venv.sh scripts/train_toy_model.py examples/lartpc/toy_event.cc \
  examples/lartpc/toy_event.h examples/lartpc/toy_physics.cc examples/lartpc/toy_physics.h \
  examples/lartpc/signal_processing.cc examples/lartpc/signal_processing.h \
  examples/lartpc/toy_patches_main.cc examples/lartpc/reco.cc \
  examples/lartpc/metrics.h examples/lartpc/metrics.cc kernels/patches.h kernels/patches.kern.cc \
  models/emtrk_onnx_generator.cc models/npy.cc tools/make_emtrk_model.cc |
  sha256sum | cut -d' ' -f1) ${patch_args[*]} ${train_args[*]} jax $jax_version"
if [[ -f "$out/key" && "$(cat "$out/key")" == "$key" && -f "$out/emtrkmichelid/1/model.onnx" &&
      -d "$out/weights" && -f "$out/working_point.json" ]]; then
  echo "train_toy_model: reusing $out (trained $(date -r "$out/key" '+%F %T'); delete it to retrain)"
  echo "trained model: $out"
  exit 0
fi
start=$SECONDS
rm -rf "$out"
mkdir -p "$out"

bash scripts/train_venv.sh "$build"
venv="$build/train-venv"

cmake --build "$build" -j "$jobs" --target kaas-toy-patches kaas-make-emtrk-model kaas-infer kaas-reco \
  > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
"$build/examples/lartpc/kaas-toy-patches" --out "$out/data" "${patch_args[@]}"
# A live progress bar per epoch on a terminal; in a log (CI), a progress line every 15 s.
if [[ -t 2 ]]; then
  "$venv/bin/python" scripts/train_toy_model.py --data "$out/data" --out "$out" "${train_args[@]}" |
    tee "$out/train.log"
else
  "$venv/bin/python" scripts/train_toy_model.py --data "$out/data" --out "$out" "${train_args[@]}" \
    2>&1 | stdbuf -oL tr '\r' '\n' | tee "$out/train.log"
fi
"$build/tools/kaas-make-emtrk-model" --repository "$out" --name emtrkmichelid \
  --weights "$out/weights"
# The exported model, on kaas's fused plan, must give what the trained network gave.
"$build/tools/kaas-infer" --model "$out/emtrkmichelid/1/model.onnx" --fused require \
  --input main_input="$out/check/main_input.npy" --output-dir "$out/check/kaas" > /dev/null
"$venv/bin/python" - "$out/check" << 'EOF'
import sys
import numpy as np
d = sys.argv[1]
worst = 0.0
for kaas_name, jax_name in (("em_trk_none_netout_Softmax", "softmax"),
                            ("michel_netout_Sigmoid", "michel")):
    got, want = np.load(f"{d}/kaas/{kaas_name}.npy"), np.load(f"{d}/{jax_name}.npy")
    if got.shape != want.shape:
        sys.exit(f"train_toy_model: the exported model gives {kaas_name} {got.shape}, "
                 f"the trained network {want.shape}")
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(want))):
        sys.exit(f"train_toy_model: {kaas_name}: non-finite outputs (diverged training or a "
                 "broken export)")
    worst = max(worst, float(np.max(np.abs(got - want))))
print(f"train_toy_model: exported ONNX model on kaas vs the trained JAX network, {len(got)} "
      f"patches: max |difference| {worst:.2e}")
sys.exit(1 if worst > 1e-4 else 0)
EOF
# The Michel working point, chosen on the whole validation events (every hit, as kaas-reco sees
# them, not the class-balanced patch sample): the threshold maximizing efficiency x purity.
if ((validation_events > 0)); then
  "$build/examples/lartpc/kaas-reco" --mode direct --send patches --repository "$out" \
    --patch-model emtrkmichelid --seed 18 --first-event $((events - validation_events)) \
    --events "$validation_events" "${geometry[@]}" --quiet \
    --choose-working-point "$out/working_point.json" > "$out/validation.log" ||
    { cat "$out/validation.log"; exit 1; }
  grep -E "^Michel working point|^track/em hit accuracy|^Michel hits, eff" "$out/validation.log"
fi
# ~56 MB of patches per event (memory-mapped while training, so disk, not RAM, grows with the
# events); the key reproduces them.
rm -rf "$out/data"
echo "$key" > "$out/key"
echo "train_toy_model: done in $((SECONDS - start)) s (report: $out/report.json, $out/loss.png, $out/confusion.png)"
echo "trained model: $out"
