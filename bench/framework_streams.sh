#!/usr/bin/env bash
# kaas-framework, direct module: the tbb backend against openmp at 1, 2, 4 and 8 streams in an
# arena of 2 threads, rounds interleaved (bench/results/framework-cpu.md).
# Usage: bench/framework_streams.sh [BUILD_DIR (build/release)] [ROUNDS (3)] [EVENTS (24)]
set -euo pipefail
build=${1:-build/release}
rounds=${2:-3}
events=${3:-24}
repository=$(mktemp -d)
trap 'rm -rf "$repository"' EXIT
"$build/tools/kaas-make-repository" --repository "$repository" > /dev/null
export OMP_WAIT_POLICY=passive
for round in $(seq "$rounds"); do
  for backend in tbb openmp; do
    for streams in 1 2 4 8; do
      "$build/examples/framework/kaas-framework" --repository "$repository" --modules direct \
        --events "$events" --streams "$streams" --threads 2 --backend "$backend" --quiet |
        tail -1 | sed "s/^/round $round: /"
    done
  done
done
