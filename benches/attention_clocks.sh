#!/usr/bin/env bash
# Attention under sustained load: each kernel timed over BENCH_REPS runs (default 2000,
# seconds of work) while nvidia-smi samples the SM clock, the power draw and the throttle
# reasons; prints per kernel the median time and the mean clock and power over the samples
# taken while the GPU was busy.
#
# Why: in 2026-12 on the H100s lent, our 64x64 attention kernel was 0.84 of SDPA's time at
# locked base clocks (ncu) but 0.66-0.72 at real clocks. Most of that turned out to be the
# compile cache's cubin, whose `wgmma`s ptxas had serialized (see cuprum-runtime's cache
# docs); should a real-clock gap remain, power is the next suspect: the 64-row blocks read
# every key and value tile from L2 once per 64 query rows (L2 throughput 76% against
# cuDNN's 43%), and a power-capped GPU lowers its clock. The 50 runs a benchmark times are
# too short for nvidia-smi to see; this keeps each kernel busy long enough.
#
#   device:  bash benches/attention_clocks.sh    (after gpu-pack: carry .gpu; or with
#            TILE_BENCH=path of a stripped tile_bench, e.g. ab/tile_bench-NAME)
#
# `tile_bench` times the plain and the causal kernel in one process, so its samples mix
# the two; SDPA runs each alone.
set -u
cd "$(dirname "$0")/.."
export CUPRUM_DEVICE=cuda TILE_BENCH_ONLY=attention BENCH_REPS=${BENCH_REPS:-2000}
bench=${TILE_BENCH:-.gpu/bin/example-tile_bench}
[ -x "$bench" ] || { echo "no tile_bench at $bench (set TILE_BENCH)" >&2; exit 2; }
samples=$(mktemp)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader

# `measure TAG COMMAND...`: runs the command while sampling after an idle pause, then
# prints TAG, the command's median lines and the busy samples' means.
measure() {
  local tag=$1
  shift
  sleep 5
  nvidia-smi --query-gpu=utilization.gpu,clocks.sm,power.draw,clocks_event_reasons.active \
    --format=csv,noheader,nounits -lms 100 >"$samples" &
  local sampler=$!
  local out
  out=$(timeout 300 "$@" 2>&1 | grep -E 'median|FAILED')
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  echo "$tag: $(echo "$out" | grep -oE '[a-z_]+ [^ ]* tiles [0-9x]+ median [0-9.]+ ms|sdpa median [0-9.]+ ms|FAILED.*' | tr '\n' ';')"
  awk -F', ' '$1 + 0 >= 90 {n++; c += $2; p += $3; if ($4 != "0x0000000000000000") t++}
    END {if (n) printf "  busy samples %d: mean SM clock %.0f MHz, mean power %.0f W, throttled in %d\n", n, c / n, p / n, t
         else print "  no busy samples"}' "$samples"
}

# SDPA alone, plain or causal, at the benchmark's size (tile_peers.py would also time
# Triton within the same samples).
sdpa() {
  python3 - "$1" <<'PY'
import os, statistics, sys
import torch
import torch.nn.functional as F

causal = sys.argv[1] == "causal"
q, k, v = (torch.randn(4, 32, 4096, 128, device="cuda", dtype=torch.float16) for _ in range(3))
run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
for _ in range(5):
    run()
marks = []
for _ in range(int(os.environ["BENCH_REPS"])):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    run()
    e.record()
    marks.append((s, e))
torch.cuda.synchronize()
print(f"sdpa median {statistics.median(a.elapsed_time(b) for a, b in marks):.4f} ms")
PY
}

for tiles in 64x64 128x128; do
  measure "cuprum attention $tiles" env TILE_BENCH_ATTENTION_TILES=$tiles "$bench"
done
measure "sdpa attention" sdpa plain
measure "sdpa causal" sdpa causal
rm -f "$samples"
