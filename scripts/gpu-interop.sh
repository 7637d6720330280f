#!/usr/bin/env bash
# Builds what the interop checks need on a GPU machine (which has no Rust toolchain) into
# .gpu-interop/ (in .gitignore): the runtime's `interop` and the facade's `interop_cudarc`
# test binaries (release) and the `cuprum_torch` Python extension, with a runner.
#
#   scripts/gpu-interop.sh
#   then, on the GPU machine, from the project root (carry: [".gpu-interop"]):
#   bash .gpu-interop/run.sh
#
# The runner runs both test binaries with CUPRUM_DEVICE=cuda (each test prints `skipped:` if
# it found no GPU, so look for it) and then crates/cuprum-torch-example/check.py against the
# packed extension with the machine's python3 and PyTorch.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
rm -rf .gpu-interop && mkdir -p .gpu-interop/bin
pick() {
  python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])'
}
{ cargo test --release -p cuprum-runtime --test interop --no-run --message-format=json | pick
  cargo test --release -p cuprum --test interop_cudarc --no-run --message-format=json | pick; } |
while read -r name exe; do
  cp "$exe" ".gpu-interop/bin/$name" && strip ".gpu-interop/bin/$name" 2>/dev/null || true
done
crates/cuprum-torch-example/build-ext.sh .gpu-interop/ext
strip .gpu-interop/ext/cuprum_torch.abi3.so 2>/dev/null || true
cat > .gpu-interop/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs the interop checks on the GPU; the log also goes to $OUT/interop.log when OUT is set.
cd "$(dirname "$0")/.."
export CUPRUM_DEVICE=${CUPRUM_DEVICE:-cuda}
status=0
{
  for b in .gpu-interop/bin/*; do
    echo "=== $b"
    timeout 300 "$b" --nocapture --test-threads=1 || status=1
  done
  echo "=== check.py"
  timeout 300 python3 crates/cuprum-torch-example/check.py .gpu-interop/ext || status=1
  echo "=== status $status"
} 2>&1 | tee "${OUT:-/tmp}/interop.log"
grep -q "=== status 0" "${OUT:-/tmp}/interop.log"
RUN
chmod +x .gpu-interop/run.sh
du -sh .gpu-interop
