#!/usr/bin/env bash
# Attention A/B in one device call: `tile_bench` binaries built from different commits, and
# PyTorch's SDPA, in alternating rounds with the same idle gap before every run, then each
# kernel once at locked base clocks under ncu.
#
# Why the gap and the rounds: on the H100s lent in 2026-12 one binary's causal attention
# took 1.12 ms in one launch sequence and 1.40 ms in the next on the same warm machine,
# while SDPA (a fresh Python process each time, so always after an idle pause) stayed within
# 3%; these GPUs run under a power cap, and a kernel timed right after other heavy ones
# clocks lower. Ratios are medians of runs that all start the same way.
#
#   here:    strip -o ab/tile_bench-NAME target/release/examples/tile_bench   (per variant;
#            `ab/` is not ignored, so a device call carries it)
#   device:  bash benches/attention_ab.sh    (ROUNDS=3, TILES=64x64, GAP=2 seconds, NCU=1)
#
# Mind the compile cache: a binary's first process runs the JIT's code, later ones the
# cached cubin, and before 2026-12-06 (c0dea4a) that cubin had attention's `wgmma`s
# serialized (about 15% slower); with binaries that old, set CUPRUM_CACHE=off (every process
# then runs the JIT's code) or give each run a fresh CUPRUM_CACHE_DIR.
#
# Prints a line per run, then a table: per variant, case and tile shape (`case@BMxBN`) the
# median over the rounds and its ratio to SDPA's median; with NCU=1, each kernel's duration
# at base clocks (the first shape of TILES only).
set -u
cd "$(dirname "$0")/.."
export CUPRUM_DEVICE=cuda TILE_BENCH_ONLY=attention TILE_BENCH_ATTENTION_TILES=${TILES:-64x64}
rounds=${ROUNDS:-3}
gap=${GAP:-2}
log=$(mktemp)
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
variants=$(ls ab/tile_bench-* 2>/dev/null | sed 's|ab/tile_bench-||')
[ -n "$variants" ] || { echo "no ab/tile_bench-* binaries" >&2; exit 2; }
for r in $(seq 1 "$rounds"); do
  for v in $variants; do
    sleep "$gap"
    timeout 90 "ab/tile_bench-$v" 2>&1 | grep -E 'median|FAILED' |
      awk -v v="$v" '/FAILED/ {print "FAILED", v, $0; next} {print v, $2 "@" $5, $7}' | tee -a "$log"
  done
  for c in tile_attention tile_attention_causal; do
    sleep "$gap"
    timeout 90 python3 benches/peers/tile_peers.py --only "$c" 2>&1 |
      grep '"impl": "torch"' | grep -o '"ms": [0-9.]*' | awk -v c="$c" '{print "sdpa", c, $2}' |
      tee -a "$log"
  done
done
python3 - "$log" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) == 3 and parts[0] != "FAILED":
        runs[(parts[0], parts[1])].append(float(parts[2]))
sdpa = {c: statistics.median(v) for (who, c), v in runs.items() if who == "sdpa"}
print("| variant | case | median ms | runs | SDPA ms | ratio to SDPA |")
print("|---|---|---:|---:|---:|---:|")
for (who, case), v in sorted(runs.items()):
    m = statistics.median(v)
    peer = sdpa.get(case.split("@")[0])
    ratio = f"{peer / m:.2f}" if peer and who != "sdpa" else "-"
    print(f"| {who} | {case} | {m:.3f} | {len(v)} | {peer or 0:.3f} | {ratio} |")
EOF
if [ "${NCU:-1}" = 1 ]; then
  echo "ncu, base clocks (gpu__time_duration):"
  for v in $variants; do
    for k in attention attention_causal; do
      ncu --clock-control base -k regex:"^$k\$" --launch-skip 10 --launch-count 1 \
        --metrics gpu__time_duration.sum,launch__registers_per_thread "ab/tile_bench-$v" 2>&1 |
        awk -v tag="$v $k" '/gpu__time_duration.sum/ {d=$NF" "$(NF-1)} /registers_per_thread/ {r=$NF} END {print tag, d, r " registers"}'
    done
  done
  for c in tile_attention tile_attention_causal; do
    ncu --clock-control base -k regex:'flash|fmha|sdpa' --launch-skip 10 --launch-count 1 \
      --metrics gpu__time_duration.sum python3 benches/peers/tile_peers.py --only "$c" 2>&1 |
      awk -v tag="sdpa $c" '/gpu__time_duration.sum/ {d=$NF" "$(NF-1)} END {print tag, d}'
  done
fi
rm -f "$log"
