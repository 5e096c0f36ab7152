# Shared by the scripts: where the CUDA toolkit lives and the generator to use.
# nvcc comes with the CUDA toolkit (not a Debian package); look in the usual place.
if ! command -v nvcc > /dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi
KAAS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KAAS_ROOT
jobs=$(nproc)
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
