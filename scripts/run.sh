#!/usr/bin/env bash
# The run command: installs what is missing, builds kaas (Release, every backend whose compiler
# is present), prints the compiled backends and their devices, and self-checks every kernel on
# every available backend against a host reference (a table; exit status 1 on any failure), then
# runs the default model: generates the EmTrkMichelId model repository entry and example patches
# and runs them with kaas-infer on the default backend, printing the plan and the timing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

bash scripts/install_deps.sh --run-only
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAAS_BUILD_TESTS=OFF \
  -DKAAS_BUILD_BENCH=OFF > /dev/null
cmake --build build/release -j "$jobs" --target kaas-info kaas-make-emtrk-model kaas-infer
./build/release/tools/kaas-info --self-check "$@"

models=build/release/model_repository
./build/release/tools/kaas-make-emtrk-model --repository "$models" --name emtrkmichelid \
  --example-patches build/release/example_patches.npy --example-count 256
./build/release/tools/kaas-infer --model "$models/emtrkmichelid/1/model.onnx" --describe \
  --input main_input=build/release/example_patches.npy --output-dir build/release/example_scores \
  --batch 256 --repeat 3
