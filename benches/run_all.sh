#!/usr/bin/env bash
# The whole benchmark suite in one run on a GPU machine: builds the CUDA C++ peers
# (benches/peers/*.cu, nvcc -O3 -arch=sm_90, cuBLAS where it links), runs them, the packed cuprum
# examples (bench_vecadd reduce sgemm transpose histogram scan nbody bench_simt hopper_gemm (at 4096^3
# and 8192^3) iter_bench tile_bench, and
# compile_latency: the compile and start-up latency of every case's kernels, startup: a fresh
# process's first launch of tile kernels, cold and warm) and the
# PyTorch/Triton peers (benches/peers/torch_peers.py, and tile_peers.py for the tile track), all into one log; then benches/report.py
# turns the log into the markdown tables (printed), $OUT/bench.csv, $OUT/latency.csv,
# $OUT/bench.png and $OUT/BENCHMARKS.md (copy that to the repository root to update it).
#
# Run from anywhere in the repository, with the examples built in release mode and packed as
# .gpu/bin/example-<name> (gpu-pack's layout). Environment: OUT (default /tmp/bench_out),
# NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc), PYTHON (default python3),
# ROUNDS (default 1: how many times each program runs; the report keeps the faster median),
# ATTENTION_ROUNDS (default 3: attention's extra rounds, below).
# A case that fails to build, run or check is listed under Failures; the rest still run. Exits
# 1 if anything failed, after writing everything.
set -u
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/bench_out}
mkdir -p "$OUT"
BIN=.gpu/bin
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
PYTHON=${PYTHON:-python3}
ROUNDS=${ROUNDS:-1}
TMP=$(mktemp -d /tmp/bench_all.XXXXXX)
LOG=$OUT/bench.log
: >"$LOG"
status=0

log() { echo "$*" | tee -a "$LOG" >&2; }
fail() { log "RUNFAIL $1 $2"; status=1; }

# Build the CUDA C++ peers; sgemm and bench_simt link cuBLAS, or fall back to -DNO_CUBLAS.
PEERS="vecadd reduce sgemm transpose histogram scan nbody bench_simt"
for p in $PEERS; do
  src=benches/peers/$p.cu
  if "$NVCC" -O3 -arch=sm_90 -o "$TMP/peer-$p" "$src" -lcublas >"$TMP/nvcc-$p.txt" 2>&1; then
    :
  elif "$NVCC" -O3 -arch=sm_90 -DNO_CUBLAS -o "$TMP/peer-$p" "$src" >>"$TMP/nvcc-$p.txt" 2>&1; then
    log "note: the $p peer was built without cuBLAS (-lcublas did not link)"
  else
    tail -n 30 "$TMP/nvcc-$p.txt" | tee -a "$LOG" >&2
    fail "build-peer-$p" nvcc
  fi
done

# Runs "$2..." labelled "$1" with a time limit, all output into the log.
run() {
  local label=$1
  shift
  log "=== $label: $*"
  timeout 900 "$@" >"$TMP/one.txt" 2>&1
  local rc=$?
  cat "$TMP/one.txt" >>"$LOG"
  grep -E '^(\{"record"|PASSED|FAILED)|median' "$TMP/one.txt" >&2
  [ $rc -eq 0 ] || fail "$label" "$rc"
}

EXAMPLES="bench_vecadd reduce sgemm transpose histogram scan nbody bench_simt hopper_gemm iter_bench tile_bench compile_latency startup"
for round in $(seq 1 "$ROUNDS"); do
  for p in $PEERS; do
    [ -x "$TMP/peer-$p" ] && run "cuda_c++-$p-r$round" "$TMP/peer-$p"
  done
  for e in $EXAMPLES; do
    if [ -x "$BIN/example-$e" ]; then
      CUPRUM_DEVICE=cuda run "cuprum-$e-r$round" "$BIN/example-$e"
    elif [ "$round" = 1 ]; then
      fail "missing-$BIN/example-$e" 127
    fi
  done
  # The Hopper GEMM also at 8192^3 (its peer there: PyTorch's bf16 matmul in torch_peers.py).
  if [ -x "$BIN/example-hopper_gemm" ]; then
    CUPRUM_DEVICE=cuda run "cuprum-hopper_gemm_8192-r$round" "$BIN/example-hopper_gemm" --size 8192
  fi
  if "$PYTHON" -c "import torch" 2>/dev/null; then
    run "torch_peers-r$round" "$PYTHON" benches/peers/torch_peers.py
    run "tile_peers-r$round" "$PYTHON" benches/peers/tile_peers.py
  elif [ "$round" = 1 ]; then
    fail "torch_peers(no-torch)" 127
  fi
done

# Attention again, each side in a process of its own after the same idle pause, in alternating
# rounds (ATTENTION_ROUNDS, default 3), as benches/attention_ab.sh times it: these GPUs run
# under a power cap, a kernel timed right after minutes of other work clocks lower, and above,
# each side's attention follows different work in its process (tile_bench's 26 GEMM timings,
# tile_peers.py's 6). The report keeps each side's fastest median, these rounds' or the above.
if [ -x "$BIN/example-tile_bench" ] && "$PYTHON" -c "import torch" 2>/dev/null; then
  for r in $(seq 1 "${ATTENTION_ROUNDS:-3}"); do
    sleep 3
    CUPRUM_DEVICE=cuda TILE_BENCH_ONLY=attention run "cuprum-attention-r$r" "$BIN/example-tile_bench"
    for c in tile_attention tile_attention_causal; do
      sleep 3
      run "attention_peers-$c-r$r" "$PYTHON" benches/peers/tile_peers.py --only "$c"
    done
  done
fi

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
"$PYTHON" benches/report.py "$LOG" --out "$OUT" --gpu "${gpu:-unknown GPU}" \
  --driver "${driver:-unknown}" | tee "$OUT/table.md" || status=1
rm -rf "$TMP"
exit $status
