#!/usr/bin/env bash
# The run command, the main job: installs what is missing, builds kaas (Release: the CPU
# backends, and each GPU backend whose compiler is present and whose GPU is here), self-checks
# every kernel on every available backend (a table; exit status 1 on any failure), builds the
# default model repository from the trained toy model kept as data (data/emtrk-toy: its digests
# are checked first), starts kaas-server on loopback in the background and runs the
# reconstruction demo kaas-reco in `both` mode (every event in process and through the server,
# checked bit for bit): plane images + hits on every event, with the truth-matched figures, the
# Michel tag at the working point chosen on the validation events, the per-hit Michel
# efficiency at the DUNE paper's false-positive rates and its ROC curve, event displays; then
# 48x48 patches on one event, compared with the image path's scores. Prints each phase's time.
# Training is its own command: scripts/train_toy_model.sh.
#
# Arguments go to `kaas-info --self-check`. Environment:
#   KAAS_RUN_EVENTS   toy events through the image path (default 3, ~50k hits each)
#   KAAS_RECO_ARGS    more kaas-reco flags, e.g. "--wires 480 --ticks 3000" for smaller events
#   KAAS_BUILD_DIR    an already configured build tree to use instead of build/release (CI)
#   KAAS_MODEL        trained (default: data/emtrk-toy), generated (the deterministic random
#                     weights), or a directory of trained weights (*.npy, FP32 or FP16) with
#                     its working_point.json, e.g. build/dev/trained from train_toy_model.sh
#   KAAS_RUN_GPU_BACKENDS  auto (default): build CUDA only with an NVIDIA GPU visible to
#                     nvidia-smi and HIP only with a ROCm device (/dev/kfd); all: build every
#                     backend whose compiler is present. Ignored with KAAS_BUILD_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

# Each phase's wall time, printed at the end.
phase_name=""
phase_start=$SECONDS
phases=()
phase() {
  if [[ -n "$phase_name" ]]; then phases+=("$(printf '%5d s  %s' $((SECONDS - phase_start)) "$phase_name")"); fi
  phase_name="$1"
  phase_start=$SECONDS
}
print_phases() {
  phase ""
  printf '\nrun.sh phases (wall):\n'
  printf '%s\n' "${phases[@]}"
  printf '%5d s  total\n' "$SECONDS"
}

phase "Debian packages (install_deps.sh --run-only)"
bash scripts/install_deps.sh --run-only
phase "configure and build"
build="${KAAS_BUILD_DIR:-build/release}"
if [[ -z "${KAAS_BUILD_DIR:-}" ]]; then
  # A GPU backend without its GPU would only be compiled, never run here, and nvcc and hipcc take
  # as long as the whole CPU build (CI compiles and tests their code either way). -U lets CMake
  # turn a backend on again from its compiler's presence.
  gpu_flags=(-UKAAS_ENABLE_CUDA -UKAAS_ENABLE_HIP)
  case "${KAAS_RUN_GPU_BACKENDS:-auto}" in
    auto)
      if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
        gpu_flags[0]=-DKAAS_ENABLE_CUDA=OFF
        echo "run.sh: no NVIDIA GPU visible to nvidia-smi: the CUDA backend is not built" \
          "(KAAS_RUN_GPU_BACKENDS=all builds it)"
      fi
      if [[ ! -e /dev/kfd ]]; then
        gpu_flags[1]=-DKAAS_ENABLE_HIP=OFF
        echo "run.sh: no ROCm device (/dev/kfd): the HIP backend is not built" \
          "(KAAS_RUN_GPU_BACKENDS=all builds it)"
      fi
      ;;
    all) ;;
    *)
      echo "run.sh: KAAS_RUN_GPU_BACKENDS must be auto or all, not '$KAAS_RUN_GPU_BACKENDS'" >&2
      exit 2
      ;;
  esac
  # A unity build (16 sources per translation unit, as the test command's g++ builds): about a
  # third less compile time. No tests, benchmarks or fuzz replay tools, and no emulated GPU (a
  # backend for tests); everything `cmake --install` installs is built.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAAS_BUILD_TESTS=OFF \
    -DKAAS_BUILD_BENCH=OFF -DKAAS_ENABLE_GPU_EMU=OFF -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "${gpu_flags[@]}" > /dev/null
fi
# Everything the tree has (tests and benchmarks are off in build/release), so that
# `cmake --install` works from it.
cmake --build "$build" -j "$jobs"
phase "self-check of every kernel"
"$build/tools/kaas-info" --self-check "$@"

# EmTrkMichelId trained on toy events, kept as data (held out: kaas-reco's events use
# another seed than the training's).
phase "the trained model: digests, repository"
weight_args=()
reco_args=()
case "${KAAS_MODEL:-trained}" in
  trained)
    trained=data/emtrk-toy
    (cd "$trained" && sha256sum --check --quiet weights.sha256) ||
      { echo "run.sh: $trained/weights do not match weights.sha256 (see $trained/manifest.json)" >&2; exit 1; }
    echo "run.sh: trained model $trained verified ($(wc -l < "$trained/weights.sha256") files, sha256)"
    ;;
  generated) trained="" ;;
  *)
    trained="$KAAS_MODEL"
    [[ -d "$trained/weights" ]] || { echo "run.sh: KAAS_MODEL must be trained, generated or a trained model directory with weights/, not '$KAAS_MODEL'" >&2; exit 2; }
    ;;
esac
if [[ -n "$trained" ]]; then
  weight_args=(--emtrk-weights "$trained/weights")
  # The Michel tag's working point, chosen on the training's validation events.
  [[ -f "$trained/working_point.json" ]] && reco_args=(--working-point "$trained/working_point.json")
fi

# The default model repository kaas-server serves: emtrkmichelid, michel_from_image, knn.
models="$build/model_repository"
"$build/tools/kaas-make-repository" --repository "$models" "${weight_args[@]}"

phase "kaas-server start"
log="$(mktemp -t kaas-server.XXXXXX)"
"$build/server_adapter/kaas-server" --model-repository "$models" --host 127.0.0.1 \
  --http-port 0 --grpc-port 0 --metrics-port 0 > "$log" 2>&1 &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2> /dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" || true
  fi
  rm -f "$log"
}
trap stop_server EXIT
for _ in $(seq 1 600); do
  grep -q "kaas-server: listening" "$log" && break
  if ! kill -0 "$server_pid" 2> /dev/null; then
    cat "$log"
    echo "run.sh: kaas-server did not start" >&2
    exit 1
  fi
  sleep 0.2
done
grep "kaas-server: " "$log"
grpc_port="$(sed -n 's/.*kaas-server: listening host=[^ ]* http=[0-9]* grpc=\([0-9]*\).*/\1/p' "$log")"
[[ -n "$grpc_port" ]] || { echo "run.sh: kaas-server did not report its ports" >&2; exit 1; }

phase "kaas-reco: images + hits, every event, direct and remote"
# shellcheck disable=SC2086  # KAAS_RECO_ARGS is a list of flags
"$build/examples/lartpc/kaas-reco" --mode both --send image \
  --events "${KAAS_RUN_EVENTS:-3}" --server "127.0.0.1:$grpc_port" --repository "$models" \
  --display "$build/displays" --roc "$build/michel_roc.svg" "${reco_args[@]}" ${KAAS_RECO_ARGS:-}

# The patch path (what the original EmTrkMichelId pipeline sends: a 48x48 patch per hit, ~30x
# the bytes) on the first event, beside the image path's scores of the same event.
phase "kaas-reco: patches, one event, direct and remote"
# shellcheck disable=SC2086
"$build/examples/lartpc/kaas-reco" --mode both --send image,patches --events 1 --quiet \
  --server "127.0.0.1:$grpc_port" --repository "$models" "${reco_args[@]}" ${KAAS_RECO_ARGS:-} |
  sed -n '/^| path/,/^direct vs remote/p'
print_phases
