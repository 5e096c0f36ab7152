#!/usr/bin/env bash
# The run command: installs what is missing, builds kaas (Release, every backend whose compiler
# is present), prints the compiled backends and their devices, and self-checks every kernel on
# every available backend against a host reference (a table; exit status 1 on any failure).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

bash scripts/install_deps.sh --run-only
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAAS_BUILD_TESTS=OFF \
  -DKAAS_BUILD_BENCH=OFF > /dev/null
cmake --build build/release -j "$jobs" --target kaas-info
./build/release/tools/kaas-info --self-check "$@"
