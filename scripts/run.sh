#!/usr/bin/env bash
# The run command, the main job: installs what is missing, builds kaas (Release: the CPU
# backends, and each GPU backend whose compiler is present and whose GPU is here), self-checks
# every kernel on every available backend (a table; exit status 1 on any failure), trains EmTrkMichelId on toy events once (scripts/train_toy_model.sh;
# cached in the build tree), generates the default model repository with the trained weights,
# starts kaas-server on loopback in the background, runs the reconstruction demo kaas-reco in
# `both` mode (every event in process and through the server, checked bit for bit) sending
# images and sending patches, prints the comparison table, the truth-matched efficiencies and
# the Michel tag at the working point chosen on the validation events, writes event displays and
# the benchmark plots, and stops the server.
#
# Arguments go to `kaas-info --self-check`. Environment:
#   KAAS_RUN_EVENTS   toy events (default 3, ~50k hits each)
#   KAAS_RECO_ARGS    more kaas-reco flags, e.g. "--wires 480 --ticks 3000" for smaller events
#   KAAS_BUILD_DIR    an already configured build tree to use instead of build/release (CI)
#   KAAS_MODEL        trained (default) or generated (the deterministic random weights, no
#                     training and no PyPI download)
#   KAAS_TRAIN_SMOKE  1: a one-epoch model on 2 small events instead (the test command's run)
#   KAAS_RUN_GPU_BACKENDS  auto (default): build CUDA only with an NVIDIA GPU visible to
#                     nvidia-smi and HIP only with a ROCm device (/dev/kfd); all: build every
#                     backend whose compiler is present. Ignored with KAAS_BUILD_DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

bash scripts/install_deps.sh --run-only
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
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAAS_BUILD_TESTS=OFF \
    -DKAAS_BUILD_BENCH=OFF "${gpu_flags[@]}" > /dev/null
fi
# The training's Python environment downloads while the build compiles.
venv_pid=""
if [[ "${KAAS_MODEL:-trained}" == trained ]]; then
  venv_log="$(mktemp -t kaas-train-venv.XXXXXX)"
  bash scripts/train_venv.sh "$build" > "$venv_log" 2>&1 &
  venv_pid=$!
  trap 'kill "$venv_pid" 2> /dev/null || true; rm -f "$venv_log"' EXIT
fi
cmake --build "$build" -j "$jobs" --target kaas-info kaas-make-repository kaas-server kaas-reco \
  kaas-toy-patches kaas-make-emtrk-model
"$build/tools/kaas-info" --self-check "$@"

# EmTrkMichelId trained on toy events (held out: kaas-reco's events use another seed).
weight_args=()
reco_args=()
trained=""
case "${KAAS_MODEL:-trained}" in
  trained)
    wait "$venv_pid" ||
      { cat "$venv_log"; echo "run.sh: the training environment was not installed" >&2; exit 1; }
    cat "$venv_log"
    rm -f "$venv_log"
    bash scripts/train_toy_model.sh "$build"
    trained="$build/trained"
    [[ "${KAAS_TRAIN_SMOKE:-0}" == "1" ]] && trained="$build/trained-smoke"
    weight_args=(--emtrk-weights "$trained/weights")
    # The Michel tag's working point, chosen on the training's validation events.
    reco_args=(--working-point "$trained/working_point.json")
    ;;
  generated) ;;
  *) echo "run.sh: KAAS_MODEL must be trained or generated, not '$KAAS_MODEL'" >&2; exit 2 ;;
esac

# The default model repository kaas-server serves: emtrkmichelid, michel_from_image, knn.
models="$build/model_repository"
"$build/tools/kaas-make-repository" --repository "$models" "${weight_args[@]}"

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

# shellcheck disable=SC2086  # KAAS_RECO_ARGS is a list of flags
"$build/examples/lartpc/kaas-reco" --mode both --send image,patches \
  --events "${KAAS_RUN_EVENTS:-3}" --server "127.0.0.1:$grpc_port" --repository "$models" \
  --display "$build/displays" "${reco_args[@]}" ${KAAS_RECO_ARGS:-}

if [[ -n "$trained" ]]; then
  echo "training report: $trained/report.json, $trained/loss.png, $trained/confusion.png"
  if "$build/train-venv/bin/python" bench/plot.py --out "$build/plots" > /dev/null; then
    echo "benchmark plots (bench/results/*.json): $build/plots/*.png"
  fi
fi
