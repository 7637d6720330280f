#!/usr/bin/env bash
# The tile track's GPU check in one short device call, for sessions whose device time is
# scarce: the tile, Hopper and collective test binaries, the GEMM cases with cuBLAS and the
# attention cases with PyTorch's SDPA and Triton, peers in the same run.
#
#   here:           bash benches/tile_focus.sh pack   (gpu-pack, then two archives, each
#                   under the carry limit with the tracked tree: .gpu/tiles.tar.xz, every
#                   binary `run` and `profile` use, and .gpu/final.tar.xz, what `final` uses)
#   on the device:  bash benches/tile_focus.sh run    (carry .gpu/tiles.tar.xz and
#                   .gpu/run.sh; OUT gets the logs)
#                   bash benches/tile_focus.sh final  (carry .gpu/final.tar.xz and .gpu/run.sh:
#                   on a Hopper GPU, H100 or H200, benches/run_all.sh for BENCHMARKS.md
#                   (about 300 s) and the tensor-core tests and cuTile examples; elsewhere
#                   those tests and the first launch of a process; with H200_ONLY set,
#                   nothing but exit 3 on another GPU than an H200)
#                   bash benches/tile_focus.sh profile (ncu on attention and the GEMM, and
#                   the first launch of a fresh process)
#
# Comparing attention kernels built from different commits: benches/attention_ab.sh.
#
# Environment for `run`: TILE_TESTS (a regex of test binaries), ATTENTION_TILES (default
# 64x64,128x64,128x128). NCCL for the collective tests is PyTorch's copy when there is one.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
pack)
  set -e
  ../shared/tools/gpu-pack
  keep='^(test-(mma|ops|tile_.*|cuprum_tile_examples|wgmma.*|tma.*|mbarrier.*|simt_hopper|simt_cluster|cluster|simt_constant_division|collective|multi_device|gpu_semantics|interop_cudarc|external|ptx_import|launch)(-[a-z_]+-[0-9a-f]+)?|example-(cutile_[a-z_]+|tile_[a-z_]+|startup|hopper_gemm|oxide_cluster))$'
  # `final`: benches/run_all.sh's examples, the tensor-core tests and cuTile Rust's examples
  # that multiply.
  final='^(example-(bench_vecadd|reduce|sgemm|transpose|histogram|scan|nbody|bench_simt|iter_bench|compile_latency|startup|hopper_gemm|tile_bench|cutile_(flash_attention|flash_attention_causal|gemm|gemm_static|async_gemm|async_mlp|batch_matmul|persistent_gemm|book_examples|cuda_graphs|cuda_graphs_deviceop))|test-(mma|tile_mma|tile_kernels|cuprum_tile_examples|wgmma)(-[a-z_]+-[0-9a-f]+)?)$'
  rm -rf .gpu/final && mkdir -p .gpu/final/bin
  (cd .gpu/bin && ls | grep -E "$final" | xargs -r -I{} cp {} ../final/bin/)
  (cd .gpu/bin && ls | grep -Ev "$keep" | xargs -r rm -f)
  XZ_OPT="-9 -T0" tar -cJf .gpu/final.tar.xz -C .gpu/final bin
  XZ_OPT="-9 -T0" tar -cJf .gpu/tiles.tar.xz -C .gpu bin
  rm -rf .gpu/bin .gpu/final .gpu/bench.tar.xz
  du -h .gpu/tiles.tar.xz .gpu/final.tar.xz
  ;;
final)
  # One call for a session's last check: on a Hopper GPU the whole suite for BENCHMARKS.md
  # (benches/run_all.sh, its files under $OUT; the report names the GPU, and every ratio is
  # to a peer of the same run) and the tensor-core tests; on another GPU those tests and the
  # first launch of a fresh process.
  OUT=${OUT:-/tmp/tile_focus}
  mkdir -p "$OUT"
  tar -xJf .gpu/final.tar.xz -C .gpu
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
  echo "$gpu"
  if [ -n "${H200_ONLY:-}" ] && ! echo "$gpu" | grep -q H200; then
    # A call made only for the H200's benchmarks: nothing to do on another GPU.
    exit 3
  fi
  tests="(test-(mma|tile_mma|tile_kernels|cuprum_tile_examples|wgmma)|example-cutile_)"
  if echo "$gpu" | grep -q -E 'H100|H200'; then
    OUT=$OUT timeout 450 bash benches/run_all.sh >"$OUT/run_all.txt" 2>&1; echo "run_all rc=$?"
    tail -n 40 "$OUT/run_all.txt"
    CUPRUM_DEVICE=cuda timeout 130 bash .gpu/run.sh "$tests" 2>&1 | tail -n 30
  else
    CUPRUM_DEVICE=cuda timeout 200 bash .gpu/run.sh "$tests" 2>&1 | tail -n 30
    echo "=== startup"
    CUPRUM_DEVICE=cuda timeout 120 .gpu/bin/example-startup --procs 5 2>&1 | tail -n 12
  fi
  ;;
run)
  OUT=${OUT:-/tmp/tile_focus}
  mkdir -p "$OUT"
  tar -xJf .gpu/tiles.tar.xz -C .gpu
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  export CUPRUM_DEVICE=cuda
  nccl=$(find $(python3 -c "import site; print(' '.join(site.getsitepackages()))") -name 'libnccl.so.2' 2>/dev/null | head -n 1)
  [ -n "$nccl" ] && export LD_LIBRARY_PATH="$(dirname "$nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" NCCL_NVLS_ENABLE=0
  echo "nccl: ${nccl:-none}"
  timeout 200 bash .gpu/run.sh "(test-(${TILE_TESTS:-mma|ops|tile_|cuprum_tile_examples|wgmma|tma|mbarrier|simt_hopper|simt_cluster|cluster|simt_constant_division|collective|multi_device|gpu_semantics})|example-oxide_cluster)" 2>&1 | tail -n 80
  echo "=== gemm"
  TILE_BENCH_ONLY=gemm timeout 80 .gpu/bin/example-tile_bench >"$OUT/gemm.txt" 2>&1; echo "rc=$?"
  grep -v '^{"record"' "$OUT/gemm.txt" | tail -n 30
  timeout 60 python3 benches/peers/tile_peers.py --only tile_gemm >"$OUT/gemm_peers.txt" 2>&1; echo "rc=$?"
  grep '^{"record"' "$OUT/gemm_peers.txt" | cut -c1-160
  echo "=== attention"
  TILE_BENCH_ONLY=attention TILE_BENCH_ATTENTION_TILES=${ATTENTION_TILES:-64x64,128x64,128x128} \
    timeout 80 .gpu/bin/example-tile_bench >"$OUT/attention.txt" 2>&1; echo "rc=$?"
  grep -v '^{"record"' "$OUT/attention.txt" | tail -n 12
  for case in tile_attention tile_attention_causal; do
    timeout 60 python3 benches/peers/tile_peers.py --only $case >"$OUT/$case.txt" 2>&1; echo "rc=$?"
    grep '^{"record"' "$OUT/$case.txt" | cut -c1-160
  done
  ;;
profile)
  # ncu on one launch of the attention kernel (64x64 tiles, or ATTENTION_TILES) and of the
  # GEMM at the benchmark sizes, and the first launch of a fresh process (startup).
  OUT=${OUT:-/tmp/tile_focus}
  mkdir -p "$OUT"
  [ -d .gpu/bin ] || tar -xJf .gpu/tiles.tar.xz -C .gpu
  export CUPRUM_DEVICE=cuda
  sections="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  echo "=== ncu attention"
  TILE_BENCH_ONLY=attention TILE_BENCH_ATTENTION_TILES=${ATTENTION_TILES:-64x64} timeout 150 \
    ncu --clock-control none -k regex:attention --launch-skip 2 --launch-count 1 $sections \
    .gpu/bin/example-tile_bench >"$OUT/ncu_attention.txt" 2>&1; echo "rc=$?"
  grep -vE '^\{"record"|^==PROF==' "$OUT/ncu_attention.txt" | grep -E 'attention|Duration|Throughput|Registers|Occupancy|Warp Cycles|Issued|Eligible|No Eligible|Stall|Block Limit|Pipe|Executed Ipc|L2 Hit|Shared Memory' | head -n 60
  echo "=== ncu gemm"
  TILE_BENCH_ONLY=gemm timeout 150 \
    ncu --clock-control none -k regex:gemm --launch-skip 2 --launch-count 1 $sections \
    .gpu/bin/example-tile_bench >"$OUT/ncu_gemm.txt" 2>&1; echo "rc=$?"
  grep -vE '^\{"record"|^==PROF==' "$OUT/ncu_gemm.txt" | grep -E 'gemm|Duration|Throughput|Registers|Occupancy|Warp Cycles|Issued|Eligible|No Eligible|Stall|Block Limit|Pipe|Executed Ipc|L2 Hit|Shared Memory' | head -n 60
  echo "=== startup"
  timeout 120 .gpu/bin/example-startup --procs 5 2>&1 | tail -n 20
  ;;
*)
  echo "usage: bash benches/tile_focus.sh pack|run|profile|final" >&2
  exit 2
  ;;
esac
