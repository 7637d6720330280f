#!/usr/bin/env bash
# compute-sanitizer over every packed GPU test binary and example: memcheck (out-of-bounds and
# misaligned accesses, leaks), racecheck (shared-memory hazards), synccheck (barrier misuse)
# and initcheck (reads of uninitialized global memory). Run on a GPU machine from the
# repository root after `gpu-pack` (binaries in .gpu/bin):
#
#   bash scripts/sanitize.sh [name-regex]
#
# Environment: JOBS (processes at once, default 8: they share the GPU), TOOLS (default all
# four), LAUNCHES (kernel launches checked per example process, default 64: benchmark examples
# launch the same kernels hundreds of times at full size; every launch of a test binary is
# checked), SPLIT_TESTS (a regex of test binaries whose tests run one process each, so that
# one slow binary under racecheck spreads over JOBS processes), SKIP_MORE (a regex of more binaries to leave out, e.g. benchmarks whose kernels
# other binaries also run), PER_RUN (seconds one run may take, default 900), SANITIZER (default compute-sanitizer on PATH, else /usr/local/cuda/bin), OUT (logs).
# Prints one line per binary and tool (ok; none: it passed without GPU work; TOOL: the
# tool's internal error was its only complaint; FAILED: a finding, a failed test, or a run
# cut off by PER_RUN) and a summary; exits 1 if any run FAILED. Examples run their small
# sizes (CUPRUM_EXAMPLE_SIZE=small).
#
# Left out, with the reason (listed in $OUT/sanitize/skipped.txt): binaries that never call the
# CUDA driver (the IR, front-end, optimizer and emulator tests), trybuild's compile-fail tests
# (they need cargo), and the binaries whose tests trap on purpose (a failed bounds check, a
# failed `assert!`, a division by zero, traps of the runtime and the iterator track), which
# the sanitizer rightly reports; those run in `.gpu/run.sh`. test-launch runs without its one
# test that makes the driver's JIT fail on purpose. A run whose only error is the tool's own
# "failed to track a kernel launch" is TOOL, not FAILED.
set -u
cd "$(dirname "$0")/.."
SAN=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
JOBS=${JOBS:-8}
TOOLS=${TOOLS:-memcheck racecheck synccheck initcheck}
LAUNCHES=${LAUNCHES:-64}
PER_RUN=${PER_RUN:-900}
OUT=${OUT:-/tmp/sanitize}
LOGS=$OUT/sanitize
mkdir -p "$LOGS"
export CUPRUM_DEVICE=cuda
# The benchmark examples run their small (emulator) sizes: the same kernels, partial tiles
# included, without 4096^3 GEMMs under a tool that slows each access a thousandfold.
export CUPRUM_EXAMPLE_SIZE=small
# Trap on purpose, or need cargo (trybuild).
SKIP='^test-(device_bounds_check|device_assert|device_divide|fault|trap|compile_fail)(-|$)'

jobs_file=$(mktemp)
for b in .gpu/bin/*; do
  name=$(basename "$b")
  [ -n "${1:-}" ] && [[ ! "$name" =~ $1 ]] && continue
  if [ -n "${SKIP_MORE:-}" ] && [[ "$name" =~ $SKIP_MORE ]]; then
    echo "skip $name (SKIP_MORE)" >>"$LOGS/skipped.txt"
    continue
  fi
  if [[ "$name" =~ $SKIP ]]; then
    echo "skip $name (traps on purpose, or needs cargo)" >>"$LOGS/skipped.txt"
    continue
  fi
  # Binaries that never load the CUDA driver (pure IR, front-end, optimizer and emulator tests)
  # have nothing to sanitize: the driver's entry points are not in them.
  if ! grep -qa cuLaunchKernel "$b"; then
    echo "skip $name (no GPU code)" >>"$LOGS/skipped.txt"
    continue
  fi
  for tool in $TOOLS; do
    if [ -n "${SPLIT_TESTS:-}" ] && [[ "$name" =~ $SPLIT_TESTS ]] && [[ "$name" =~ ^test- ]]; then
      "$b" --list --format terse 2>/dev/null | sed -n 's/: test$//p' |
        while read -r t; do echo "$tool $b $t"; done >>"$jobs_file"
    else
      echo "$tool $b" >>"$jobs_file"
    fi
  done
done

one() {  # tool binary [test]: runs it (or its one test) under the sanitizer, prints a verdict
  local tool=$1 bin=$2 test=${3:-} name log limit=()
  name=$(basename "$bin")
  log="$LOGS/$name.$tool.log"
  if [ -n "$test" ]; then
    log="$LOGS/$name.${test//[^A-Za-z0-9_]/_}.$tool.log"
  fi
  case "$name" in example-*) limit=(--launch-count "$LAUNCHES") ;; esac
  local args=()
  # This test makes the driver's JIT fail on purpose (an API error the sanitizer reports).
  [[ "$name" =~ ^test-launch(-|$) ]] && args=(--skip driver_jit_errors_carry_the_log)
  [ -n "$test" ] && args+=(--exact "$test") && name="$name::$test"
  timeout "$PER_RUN" "$SAN" --tool "$tool" --error-exitcode 99 --print-limit 50 "${limit[@]}" \
    "$bin" "${args[@]}" >"$log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
  # The tool's own lines that are not findings about the program.
  local findings
  findings=$(grep -E '^========= [A-Z]' "$log" |
    grep -cvE 'COMPUTE-SANITIZER|Internal Sanitizer Error|(ERROR|RACECHECK) SUMMARY' || true)
  if [ $rc -eq 124 ]; then
    printf 'FAILED  %-10s %-52s unfinished after PER_RUN=%s s\n' "$tool" "$name" "$PER_RUN"
  elif [ $rc -eq 0 ]; then
    printf 'ok      %-10s %-52s %s\n' "$tool" "$name" "$summary"
  elif grep -q 'terminated before first instrumented API call' "$log" && grep -q '^test result: ok' "$log"; then
    # It passed without touching the GPU (e.g. a test binary that runs only the emulator).
    printf 'none    %-10s %-52s (no GPU work)\n' "$tool" "$name"
  elif [ "$findings" = 0 ] && grep -q 'Internal Sanitizer Error' "$log" && ! grep -q 'test result: FAILED' "$log"; then
    # The tool lost track of a launch (seen with many processes at once) and counts that as
    # its only error: no finding about the program; rerun with fewer JOBS.
    printf 'TOOL    %-10s %-52s rc=%s (internal sanitizer error only)\n' "$tool" "$name" "$rc"
  else
    printf 'FAILED  %-10s %-52s rc=%s %s\n' "$tool" "$name" "$rc" "$summary"
  fi
}
export -f one
export SAN LAUNCHES LOGS PER_RUN

# Verdicts print as runs end (so a run cut short still shows what finished).
results=$(xargs -P "$JOBS" -L 1 bash -c 'one "$0" "$1" "${2:-}"' <"$jobs_file" | tee /dev/stderr)
fails=$(echo "$results" | grep -c '^FAILED' || true)
runs=$(echo "$results" | grep -c . || true)
echo "sanitize: $runs runs ($TOOLS), $fails failed; logs in $LOGS"
for f in $(echo "$results" | awk '/^FAILED/ {sub("::", ".", $3); gsub("[^A-Za-z0-9_.-]", "_", $3); print $3 "." $2}'); do
  echo "--- $f"
  grep -E "^=========" "$LOGS/$f.log" | head -40
  tail -5 "$LOGS/$f.log"
done
rm -f "$jobs_file"
[ "$fails" = 0 ]
