#!/usr/bin/env bash
# Attention's Hopper code without a GPU: what ptxas makes of `tile_bench`'s attention kernels
# (registers, warnings such as a serialized `wgmma`) and each loop's SASS by opcode, so that a
# change to the lowering is read in the SASS before device time is spent on it.
#
#   bash benches/attention_sass.sh [TILES] [DIR]     (TILES as TILE_BENCH_ATTENTION_TILES,
#                                                   default 64x64,128x128; DIR /tmp/attention_sass)
#
# It builds `tile_bench` in release, runs its small attention cases on the emulator with the
# kernels lowered as for an H100/H200 (CUPRUM_TILE_EMULATION=lowered) and their PTX dumped, then
# assembles each for sm_90a with ptxas and disassembles it with cuobjdump (both from the
# nvidia-cuda-nvcc package .ci/run installs). DIR keeps the PTX, cubins and `.sass` listings.
# The loop counts are static (every instruction once); `benches/ncu_stalls.py --loop` gives
# what a warp issues per step on the GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
tiles=${1:-64x64,128x128}
dir=${2:-/tmp/attention_sass}
# ptxas and cuobjdump: beside CUPRUM_PTXAS (what .ci/run exports) if set, else in the package.
tools=$(python3 - <<'PY'
import glob, os, site, sys
given = os.environ.get("CUPRUM_PTXAS")
if given and os.path.exists(os.path.join(os.path.dirname(given), "cuobjdump")):
    print(os.path.dirname(given)); sys.exit(0)
for r in site.getsitepackages() + [site.getusersitepackages()]:
    for p in glob.glob(os.path.join(r, "nvidia", "cu*", "bin", "ptxas")):
        if os.path.exists(os.path.join(os.path.dirname(p), "cuobjdump")):
            print(os.path.dirname(p)); sys.exit(0)
sys.exit("no ptxas and cuobjdump: python3 -m pip install nvidia-cuda-nvcc")
PY
)
cargo build --release -q -p cuprum --example tile_bench
rm -rf "$dir" && mkdir -p "$dir"
CUPRUM_TILE_EMULATION=lowered CUPRUM_CACHE=off CUPRUM_PTX_DUMP="$dir" TILE_BENCH_ONLY=attention \
  TILE_BENCH_ATTENTION_TILES="$tiles" target/release/examples/tile_bench | grep -E 'tiles|PASSED|FAILED'
for ptx in "$dir"/*.sm_90a.ptx; do
  [ -e "$ptx" ] || { echo "no sm_90a PTX was dumped (did the Hopper lowering take these tiles?)"; exit 1; }
  name=${ptx%.sm_90a.ptx}
  echo "== $(basename "$name")"
  "$tools/ptxas" -arch=sm_90a -v "$ptx" -o "$name.cubin" 2>&1 | grep -E 'registers|spill|C75' || true
  "$tools/cuobjdump" -sass "$name.cubin" > "$name.sass"
  python3 - "$name.sass" <<'PY'
import collections, re, sys
# Each instruction's address and text; a loop is a conditional backward branch over more than
# 256 bytes (a wait's spin loop is a few instructions; out-of-line code, as a division's slow
# path, returns to the loop by an unconditional one).
ins = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?);", line)
    if m:
        ins.append((int(m.group(1), 16), m.group(2).strip()))
for at, text in ins:
    m = re.match(r"@!?P\d+ BRA 0x([0-9a-f]+)", text)
    if not m or int(m.group(1), 16) >= at or at - int(m.group(1), 16) <= 0x100:
        continue
    start = int(m.group(1), 16)
    body = [t for a, t in ins if start <= a <= at]
    ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for t in body)
    print(f"  loop {start:#x}..{at:#x}: {len(body)} instructions;",
          " ".join(f"{k}:{v}" for k, v in ops.most_common(16)))
PY
done
