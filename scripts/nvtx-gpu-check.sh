#!/usr/bin/env bash
# Checks on a GPU machine that Nsight Compute and Nsight Systems see cuprum's NVTX ranges
# (crates/cuprum-runtime/src/nvtx.rs): a range named by the kernel around each launch, one per
# copy (`copy HtoD 4 KiB`), and a tile launch's `tile <entry><<specialization>>` range. Run from
# the repository root after `gpu-pack` (prebuilt examples in .gpu/bin; no Rust toolchain needed):
#
#   bash scripts/nvtx-gpu-check.sh
#
# Uses example-vecadd (kernel `vecadd`, 4 KiB copies) and example-tile_add (tile entry `add`,
# B = 128) under ncu and nsys, and the NVTX test binaries (test-nvtx*) with their fake tool
# on the CUDA backend when the tool was carried in .gpu/extra (see the SKIP line). Prints one
# PASS/FAIL/SKIP line per check and exits 1 if any failed. Nsight Systems is optional (SKIP
# when no `nsys` is found). Environment: NCU, NSYS (the tools' paths), PROBE (the fake tool),
# OUT (where logs and reports go, default /tmp/nvtx-check). Takes about a minute.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/nvtx-check}
mkdir -p "$OUT"
export CUPRUM_DEVICE=cuda
unset CUPRUM_NVTX
BIN=.gpu/bin
fail=0

pass() { echo "PASS $1"; }
failed() {
  echo "FAIL $1"
  [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 30 "$2" | sed 's/^/    /'
  fail=1
}

find_tool() {  # $1: name; prints its path or nothing
  command -v "$1" 2>/dev/null && return
  for p in /usr/local/cuda/bin/"$1" /opt/nvidia/nsight-*/*/"$1" /opt/nvidia/nsight-*/*/bin/"$1" \
           /opt/nvidia/nsight-*/*/target-linux-x64/"$1" /usr/local/cuda/nsight-*/bin/"$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
}
NCU=${NCU:-$(find_tool ncu)}
NSYS=${NSYS:-$(find_tool nsys)}

for e in vecadd tile_add; do
  if [ ! -x "$BIN/example-$e" ]; then
    echo "FAIL $BIN/example-$e is missing: run gpu-pack first"
    exit 1
  fi
done

# --- Nsight Compute: profile only the kernels inside a push/pop range of a given name. ---
# Counts the kernels ncu profiled in log $1.
profiled() { grep -c '^==PROF== Profiling "' "$1" 2>/dev/null; }

ncu_run() {  # $1: log name, $2: NVTX include filter, $3: example; rest: env assignments
  local log="$OUT/$1.log" filter=$2 example=$3
  shift 3
  env "$@" timeout 120 "$NCU" --nvtx --nvtx-include "$filter" --print-nvtx-rename kernel \
    --metrics gpu__time_duration.sum "$BIN/example-$example" >"$log" 2>&1
  echo "$log"
}

if [ -z "$NCU" ]; then
  failed "ncu: not found (set NCU)"
else
  echo "ncu: $NCU ($("$NCU" --version 2>/dev/null | tail -n 1))"
  log=$(ncu_run ncu-vecadd 'vecadd/' vecadd)
  n=$(profiled "$log")
  if [ "${n:-0}" -ge 1 ] && grep -q PASSED "$log"; then
    pass "ncu --nvtx-include 'vecadd/': $n kernel(s) inside the range named by the kernel"
    grep -m 3 -E '^==PROF== Profiling|NVTX|<default domain>|<[0-9]+,' "$log" | sed 's/^/    /'
  else
    failed "ncu --nvtx-include 'vecadd/': no kernel profiled inside a range 'vecadd'" "$log"
  fi

  log=$(ncu_run ncu-control 'cuprum_no_such_range/' vecadd)
  if [ "$(profiled "$log")" = 0 ] && grep -q PASSED "$log"; then
    pass "ncu --nvtx-include of an absent range profiles nothing (the filter does filter)"
  else
    failed "ncu --nvtx-include 'cuprum_no_such_range/' profiled kernels, or the example failed" "$log"
  fi

  log=$(ncu_run ncu-off 'vecadd/' vecadd CUPRUM_NVTX=0)
  if [ "$(profiled "$log")" = 0 ] && grep -q PASSED "$log"; then
    pass "CUPRUM_NVTX=0: no ranges, the example still passes"
  else
    failed "CUPRUM_NVTX=0: kernels still inside a range 'vecadd', or the example failed" "$log"
  fi

  # The name as a literal filter, and, should ncu read one of its characters as syntax, as a
  # regular expression.
  for filter in 'tile add<B = 128>/' 'regex:tile add<B = 128>/'; do
    log=$(ncu_run ncu-tile "$filter" tile_add)
    n=$(profiled "$log")
    [ "${n:-0}" -ge 1 ] && break
  done
  if [ "${n:-0}" -ge 1 ] && grep -q PASSED "$log"; then
    pass "ncu --nvtx-include '$filter': $n kernel(s) inside the tile launch's range"
  else
    failed "ncu --nvtx-include 'tile add<B = 128>/': no kernel profiled inside the tile range" "$log"
  fi
fi

# --- Nsight Systems: the ranges on the timeline, and the kernels they enclose. ---
if [ -z "$NSYS" ]; then
  echo "SKIP nsys: not found (set NSYS to check the timeline too)"
else
  echo "nsys: $NSYS ($("$NSYS" --version 2>/dev/null | tail -n 1))"
  for e in vecadd tile_add; do
    rep="$OUT/nsys-$e"
    log="$OUT/nsys-$e.log"
    rm -f "$rep.nsys-rep" "$rep.sqlite"
    if ! timeout 120 "$NSYS" profile --trace=cuda,nvtx --sample=none --cpuctxsw=none \
        --force-overwrite=true -o "$rep" "$BIN/example-$e" >"$log" 2>&1; then
      failed "nsys profile example-$e" "$log"
      continue
    fi
    sums="$OUT/nsys-$e-nvtx.txt"
    : >"$sums"
    # The report's name changed across versions; the first that exists is used.
    for r in nvtx_sum nvtxsum nvtx_pushpop_sum; do
      if timeout 60 "$NSYS" stats --force-export=true --report "$r" "$rep.nsys-rep" >"$sums" 2>&1 \
          && grep -qiE 'range|name' "$sums" && ! grep -qi 'not a valid report\|unknown report' "$sums"; then
        break
      fi
    done
    if [ "$e" = vecadd ]; then
      want=("vecadd" "copy HtoD 4 KiB" "copy DtoH 4 KiB")
    else
      want=("tile add<B = 128>" "add" "copy HtoD 4 KiB")
    fi
    missing=()
    for w in "${want[@]}"; do
      # A whole column (a kernel's range `add` is not the `add` in `tile add<..>`); push/pop
      # ranges of the default domain may be listed with a leading ':'.
      grep -qE -- "(^|[[:space:]:,\"])$w([[:space:],\"]|\$)" "$sums" || missing+=("$w")
    done
    if [ ${#missing[@]} = 0 ]; then
      pass "nsys example-$e: NVTX ranges $(printf "'%s' " "${want[@]}")"
    else
      failed "nsys example-$e: ranges missing from the NVTX summary: $(printf "'%s' " "${missing[@]}")" "$sums"
    fi
    # The kernels each range encloses (NVTX projected onto the GPU), for the reader.
    timeout 60 "$NSYS" stats --report nvtx_kern_sum "$rep.nsys-rep" >"$OUT/nsys-$e-kern.txt" 2>&1 \
      && grep -E 'vecadd|add' "$OUT/nsys-$e-kern.txt" | head -n 5 | sed 's/^/    /'
  done
fi

# --- The NVTX tests' fake tool, on the CUDA backend: the exact ranges, in order. ---
PROBE=${PROBE:-.gpu/extra/libnvtx_probe.so}
if [ ! -f "$PROBE" ]; then
  echo "SKIP the NVTX tests on the GPU: no $PROBE (build it here with"
  echo "     rustc --edition 2024 --crate-type cdylib -o /tmp/libnvtx_probe.so crates/cuprum-testkit/nvtx_probe/probe.rs"
  echo "     and carry it: EXTRA=/tmp/libnvtx_probe.so bash scripts/gpu-bundle.sh)"
else
  found=0
  for b in "$BIN"/test-nvtx*; do
    [ -x "$b" ] || continue
    found=1
    log="$OUT/$(basename "$b").log"
    if CUPRUM_NVTX_PROBE="$(realpath "$PROBE")" timeout 120 "$b" >"$log" 2>&1 \
        && ! grep -q "skipped: the NVTX probe" "$log"; then
      pass "$(basename "$b") on the GPU through the fake tool ($(grep -m 1 'test result' "$log"))"
    else
      failed "$(basename "$b") on the GPU through the fake tool" "$log"
    fi
  done
  [ "$found" = 1 ] || failed "no test-nvtx* binaries in $BIN (gpu-pack packs them)"
fi

echo "logs and reports: $OUT"
if [ "$fail" = 0 ]; then echo "nvtx-gpu-check: all passed"; else echo "nvtx-gpu-check: FAILED"; fi
exit "$fail"
