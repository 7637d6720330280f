#!/usr/bin/env bash
# Host time per launch and per graph node, cuprum and CUDA C++ in one run on a GPU machine:
# builds benches/peers/launch_overhead.cu (nvcc -O3 -arch=sm_90, -lcuda) and runs it, then
# the packed cuprum example (.gpu/bin/example-launch_overhead, gpu-pack's layout). Both print
# the same table rows and {"record":"launch_overhead",...} lines.
#
#   bash benches/run_launch_overhead.sh      (NVCC: default nvcc on PATH, else /usr/local/cuda)
set -eu
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
TMP=$(mktemp -d /tmp/launch_overhead.XXXXXX)
"$NVCC" -O3 -arch=sm_90 -o "$TMP/peer" benches/peers/launch_overhead.cu -lcuda
"$TMP/peer"
CUPRUM_DEVICE=cuda .gpu/bin/example-launch_overhead "$@"
rm -rf "$TMP"
