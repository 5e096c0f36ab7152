#!/usr/bin/env bash
# Installs the Debian 12 packages kaas needs that are missing (apt-get, as root or via sudo).
# Usage: scripts/install_deps.sh [--run-only]
#   --run-only: what the run command builds (no test, clang or sanitizer tooling), and the HIP
#               toolchain only where a ROCm device is (/dev/kfd) or KAAS_RUN_GPU_BACKENDS=all:
#               hipcc and its LLVM are minutes of apt-get for a backend that cannot run here
set -euo pipefail

packages=(cmake ninja-build g++ ccache libcli11-dev libonnx-dev libprotobuf-dev
          protobuf-compiler libopenblas-openmp-dev pkg-config
          # the tbb backend (CMSSW and art schedule with oneTBB)
          libtbb-dev
          # kaas-server: gRPC, REST, JSON, Prometheus text format
          libgrpc++-dev protobuf-compiler-grpc libboost-dev libssl-dev zlib1g-dev nlohmann-json3-dev
          prometheus-cpp-dev
          # kaas-reco --display (PNG, cairo figures with DejaVu text); the toy model's training
          # venv (scripts/train_toy_model.sh)
          libpng-dev libcairo2-dev fonts-dejavu-core python3-venv python3-pip)
if [[ "${1:-}" != "--run-only" || -e /dev/kfd || "${KAAS_RUN_GPU_BACKENDS:-auto}" == all ]]; then
  packages+=(hipcc libamdhip64-dev)
fi
if [[ "${1:-}" != "--run-only" ]]; then
  packages+=(clang libomp-dev libclang-rt-14-dev googletest libgtest-dev libgmock-dev
             libbenchmark-dev clang-format libeigen3-dev libdnnl-dev libonnx-testdata)
  # kNN: nanoflann peer (bench), scikit-learn / FAISS cross-check and peer (/usr/bin/python3)
  packages+=(libnanoflann-dev python3-numpy python3-sklearn python3-faiss)
  # Balancers in front of several kaas-servers, Prometheus for the autoscaling query
  # (tests/server/test_balancers.py, test_autoscaling.py, deploy/)
  packages+=(haproxy nginx-light prometheus)
  # The test command's background builds (renice is in bsdutils, essential; pgrep here)
  packages+=(procps)
  # PyPI test tools (onnxruntime) go into a virtual environment: scripts/python_env.sh
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
