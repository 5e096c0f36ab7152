#!/usr/bin/env bash
# The training's Python environment: JAX (CPU), matplotlib and tqdm from PyPI in
# BUILD_DIR/train-venv; does nothing when they are there at the pinned JAX version. Separate from
# scripts/train_toy_model.sh so the run command can install it while the build compiles.
#
# Usage: scripts/train_venv.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: scripts/train_venv.sh BUILD_DIR}"
jax_version=0.10.2  # part of the trained model's cache key (train_toy_model.sh reads it here)
[[ "${2:-}" == "--print-jax-version" ]] && { echo "$jax_version"; exit 0; }

venv="$build/train-venv"
if ! "$venv/bin/python" -c "import jax, matplotlib, tqdm, sys; sys.exit(jax.__version__ != '$jax_version')" 2> /dev/null; then
  echo "train_venv: installing jax $jax_version (CPU), matplotlib, tqdm into $venv"
  mkdir -p "$build"
  python3 -m venv "$venv"
  # --no-compile: no bytecode for the thousands of modules never imported (scipy's, matplotlib's);
  # Python compiles what it imports on first use. 21.9 -> 9.4 CPU-s, the first import +0.4 s.
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-compile "jax==$jax_version" \
    matplotlib tqdm
fi
