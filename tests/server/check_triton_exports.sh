#!/usr/bin/env bash
# libtriton_kaas.so must export exactly Triton's entry points (a missing optional one is skipped
# silently by Triton and leaves the backend without its state) and must not NEED a
# libtritonserver (the PyPI wheel names its own differently; tritonserver provides the symbols).
set -euo pipefail
lib="$1"
expected="TRITONBACKEND_Finalize
TRITONBACKEND_Initialize
TRITONBACKEND_ModelFinalize
TRITONBACKEND_ModelInitialize
TRITONBACKEND_ModelInstanceExecute
TRITONBACKEND_ModelInstanceFinalize
TRITONBACKEND_ModelInstanceInitialize"
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
if [[ "$exported" != "$expected" ]]; then
  echo "FAIL: exported symbols of $lib differ from Triton's entry points:"
  diff <(echo "$expected") <(echo "$exported") || true
  exit 1
fi
echo "ok    exports exactly the 7 entry points"
if readelf -d "$lib" | grep NEEDED | grep -q tritonserver; then
  echo "FAIL: $lib NEEDs a libtritonserver"
  exit 1
fi
echo "ok    no libtritonserver dependency"
undefined=$(nm -D --undefined-only "$lib" | awk '{print $2}' | grep -c '^TRITON' || true)
echo "ok    $undefined TRITON* functions left for tritonserver to provide"
