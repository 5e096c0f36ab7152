#!/usr/bin/env bash
# The KServe peer's own virtual environment (.venv-kserve: PyPI kserve + onnxruntime), kept apart
# from .venv because kserve pins its own grpcio / protobuf.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [[ ! -x .venv-kserve/bin/python ]]; then python3 -m venv .venv-kserve; fi
if ! .venv-kserve/bin/python -c "import kserve, onnxruntime" 2> /dev/null; then
  .venv-kserve/bin/pip install --quiet --disable-pip-version-check kserve onnxruntime
fi
echo ".venv-kserve: kserve $(.venv-kserve/bin/pip show kserve | sed -n 's/^Version: //p')"
