#!/usr/bin/env bash
# Creates (or completes) the project's Python virtual environment .venv with the PyPI test and
# benchmark tools: onnxruntime (the EmTrkMichelId cross-check and peer), numpy, the Triton
# clients (tritonclient[grpc,http], the kaas-server tests) and the real Triton server
# (nvidia-pytriton 0.7.0 ships tritonserver 2.51.0: the kaas backend's tests and benchmark), and
# what the Python module's build and tests use (nanobind, scikit-build-core, pytest, scikit-learn);
# lizard measures the functions' lengths (tests/docs/test_function_length.py).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KAAS_ROOT"

requirements=(onnxruntime numpy "tritonclient[grpc,http]" grpcio-health-checking grpcio-reflection
              nvidia-pytriton==0.7.0 pytest scikit-learn nanobind scikit-build-core lizard)
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
if .venv/bin/python -c "import onnxruntime, numpy, tritonclient.grpc, tritonclient.http, grpc_health, grpc_reflection, pytest, sklearn, nanobind, scikit_build_core, lizard, importlib.util, sys; sys.exit(importlib.util.find_spec('pytriton') is None)" 2> /dev/null; then
  echo "python_env: .venv has ${requirements[*]}"
  exit 0
fi
# --no-compile: Python compiles the modules it imports on first use, not all of them now
# (scripts/train_venv.sh).
.venv/bin/pip install --quiet --disable-pip-version-check --no-compile "${requirements[@]}"
.venv/bin/python -c "import onnxruntime, numpy; print('python_env: onnxruntime', onnxruntime.__version__)"
