#!/usr/bin/env bash
# Times cuprum's SIMT examples (reduce, sgemm, transpose, histogram, scan) against their CUDA
# C++ peers in benches/peers/ on a GPU machine, and prints a markdown table of the results.
#
# Run from the repository root on the GPU machine, with the example binaries built beforehand
# (release) and packed as .gpu/bin/example-<name>. Needs nvcc (PATH, $NVCC or
# /usr/local/cuda/bin); the sgemm peer links cuBLAS when it can. Each peer and each example
# runs twice, alternately; the table keeps the better median of the two runs of each. The
# table also goes to $OUT/simt_peers.md, and all output to $OUT/simt_peers.log, when OUT is
# set. Exits non-zero if anything failed to build, run or check.
set -u
cd "$(dirname "$0")/.."

CASES="reduce sgemm transpose histogram scan"
BIN=.gpu/bin
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
TMP=$(mktemp -d /tmp/simt_peers.XXXXXX)
RESULTS=$TMP/results.txt
LOG=$TMP/log.txt
: >"$RESULTS"
: >"$LOG"
status=0
failures=""

note() { echo "$*" | tee -a "$LOG" >&2; }

# Build the peers.
for c in $CASES; do
  libs=""
  [ "$c" = sgemm ] && libs="-lcublas"
  if ! "$NVCC" -O3 -arch=sm_90 -o "$TMP/peer-$c" "benches/peers/$c.cu" $libs >"$TMP/nvcc-$c.txt" 2>&1; then
    if [ "$c" = sgemm ] && "$NVCC" -O3 -arch=sm_90 -DNO_CUBLAS -o "$TMP/peer-$c" "benches/peers/$c.cu" \
      >>"$TMP/nvcc-$c.txt" 2>&1; then
      note "note: the sgemm peer was built without cuBLAS (linking -lcublas failed)"
    else
      cat "$TMP/nvcc-$c.txt" | tee -a "$LOG" >&2
      note "FAILED: nvcc could not build benches/peers/$c.cu"
      failures="$failures build-peer-$c"
      status=1
    fi
  fi
done

# Runs "$2..." labelled "$1", keeping its stdout in $RESULTS and everything in $LOG.
run() {
  local label=$1
  shift
  note "== $label: $*"
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  echo "$out" | tee -a "$LOG" >&2
  echo "$out" >>"$RESULTS"
  if [ $rc -ne 0 ]; then
    note "FAILED: $label exited with status $rc"
    failures="$failures $(echo "$label" | tr ' ' '-')"
    status=1
  fi
}

for round in 1 2; do
  for c in $CASES; do
    if [ -x "$TMP/peer-$c" ]; then
      run "cuda_c++ $c (round $round)" "$TMP/peer-$c"
    fi
    if [ -x "$BIN/example-$c" ]; then
      CUPRUM_DEVICE=cuda run "cuprum $c (round $round)" "$BIN/example-$c"
    elif [ "$round" = 1 ]; then
      note "FAILED: $BIN/example-$c is missing (build the example and pack it first)"
      failures="$failures missing-example-$c"
      status=1
    fi
  done
done

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

# Result lines look like: "<who> <case> <size> median <ms> ms <throughput> <unit>", where
# <who> is cuprum, cuda_c++ or cublas.
table=$(awk -v gpu="${gpu:-unknown GPU}" '
  $4 == "median" && $6 == "ms" && ($1 == "cuprum" || $1 == "cuda_c++" || $1 == "cublas") {
    key = $2 " " $3
    if (!((key) in seen)) { seen[key] = 1; order[++n] = key }
    id = $1 SUBSEP key
    if (!(id in ms) || $5 + 0 < ms[id] + 0) { ms[id] = $5; tp[id] = $7 " " $8 }
  }
  function row(label, size, a, b) {
    ratio = (a in ms && b in ms && ms[a] > 0) ? sprintf("%.2f", ms[b] / ms[a]) : "-"
    printf "| %s | %s | %s | %s | %s | %s | %s |\n", label, size,
      (a in ms) ? ms[a] : "-", (b in ms) ? ms[b] : "-", ratio,
      (a in tp) ? tp[a] : "-", (b in tp) ? tp[b] : "-"
  }
  END {
    printf "cuprum SIMT examples vs CUDA C++ peers (nvcc -O3 -arch=sm_90) on %s; median of each run, better of two runs.\n", gpu
    printf "Ratio = peer ms / cuprum ms: 1 or more means cuprum is at least as fast.\n\n"
    print "| case | size | cuprum ms | CUDA C++ ms | ratio | cuprum throughput | CUDA C++ throughput |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) {
      split(order[i], parts, " ")
      row(parts[1], parts[2], "cuprum" SUBSEP order[i], "cuda_c++" SUBSEP order[i])
    }
    # cuBLAS as the ceiling: against the best cuprum sgemm kernel of the same size.
    for (i = 1; i <= n; i++) {
      split(order[i], parts, " ")
      c = "cublas" SUBSEP order[i]
      if (c in ms) {
        r = "cuprum" SUBSEP "sgemm_reg " parts[2]
        if (!(r in ms)) r = "cuprum" SUBSEP order[i]
        row("sgemm_reg vs cuBLAS", parts[2], r, c)
      }
    }
  }' "$RESULTS")

{
  echo "$table"
  if [ -n "$failures" ]; then
    echo
    echo "Failures:$failures (see the log)"
  fi
} >"$TMP/table.md"
cat "$TMP/table.md"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$TMP/table.md" "$OUT/simt_peers.md"
  cp "$LOG" "$OUT/simt_peers.log"
fi
exit $status
