#!/usr/bin/env bash
# The run command: installs what is missing, builds kaas (Release, every backend whose compiler
# is present), prints the compiled backends and their devices, and self-checks every kernel on
# every available backend against a host reference (a table; exit status 1 on any failure), then
# runs the default model: generates the default kaas-server model repository and example patches
# and runs EmTrkMichelId on them with kaas-infer on the default backend (plan and timing).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

bash scripts/install_deps.sh --run-only
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAAS_BUILD_TESTS=OFF \
  -DKAAS_BUILD_BENCH=OFF > /dev/null
cmake --build build/release -j "$jobs" --target kaas-info kaas-make-emtrk-model \
  kaas-make-repository kaas-infer kaas-server
./build/release/tools/kaas-info --self-check "$@"

# The default model repository kaas-server serves: emtrkmichelid, michel_from_image, knn.
models=build/release/model_repository
./build/release/tools/kaas-make-repository --repository "$models"
./build/release/tools/kaas-make-emtrk-model --repository build/release/examples --name emtrk \
  --example-patches build/release/example_patches.npy --example-count 256 > /dev/null
./build/release/tools/kaas-infer --model "$models/emtrkmichelid/1/model.onnx" --describe \
  --input main_input=build/release/example_patches.npy --output-dir build/release/example_scores \
  --batch 256 --repeat 3
