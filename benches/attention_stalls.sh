#!/usr/bin/env bash
# Where attention's warps spend their time, ours against SDPA's (the kernel PyTorch picks:
# cuDNN's or FlashAttention's), from ncu's per-instruction stall sampling of one launch of
# each at base clocks, in one device call: per kernel, its duration, the stall reasons, the
# instructions warps wait at most, and what a warp issues per step of its key loop
# (`benches/ncu_stalls.py --loop`). The peer's loop is the yardstick for ours: how many
# instructions a step it needs, and what its warps wait for.
#
#   device:  bash benches/attention_stalls.sh [BINARY]   (a tile_bench binary; default
#            .gpu/bin/example-tile_bench, as gpu-pack lays it out; `ab/tile_bench-NAME` as
#            benches/attention_ab.sh's)
#
# Environment: TILES (our tile shape, default 128x128), CASE (tile_attention, the default, or
# tile_attention_causal). The reports and CSVs stay in $OUT (default /tmp/attention_stalls).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/attention_stalls}
mkdir -p "$out"
bin=${1:-.gpu/bin/example-tile_bench}
case=${CASE:-tile_attention}
kernel=attention
[ "$case" = tile_attention_causal ] && kernel=attention_causal
sections="--section WarpStateStats --section SourceCounters"
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
CUPRUM_DEVICE=cuda TILE_BENCH_ONLY=attention TILE_BENCH_ATTENTION_TILES=${TILES:-128x128} \
  timeout 150 ncu --clock-control base -k "regex:^$kernel\$" --launch-skip 6 --launch-count 1 \
  $sections --metrics gpu__time_duration.sum -o "$out/cuprum" "$bin" >"$out/cuprum.log" 2>&1
echo "cuprum ncu rc=$?"
timeout 150 ncu --clock-control base -k 'regex:flash|fmha|sdpa' --launch-skip 5 --launch-count 1 \
  $sections --metrics gpu__time_duration.sum -o "$out/sdpa" \
  python3 benches/peers/tile_peers.py --only "$case" >"$out/sdpa.log" 2>&1
echo "sdpa ncu rc=$?"
for who in cuprum sdpa; do
  [ -f "$out/$who.ncu-rep" ] || { echo "=== $who: no report (see $out/$who.log)"; continue; }
  ncu -i "$out/$who.ncu-rep" --page source --print-source sass --csv >"$out/$who.csv" 2>/dev/null
  ncu -i "$out/$who.ncu-rep" --page details --csv >"$out/$who.details.csv" 2>/dev/null
  echo "=== $who"
  python3 - "$out/$who.details.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r.get("Metric Name") in ("Duration", "gpu__time_duration.sum"):
        print(r["Kernel Name"][:100], "|", r["Metric Name"], r["Metric Value"], r["Metric Unit"])
        break
PY
  python3 benches/ncu_stalls.py "$out/$who.csv" --top 12 --loop
done
