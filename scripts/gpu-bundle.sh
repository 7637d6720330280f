#!/usr/bin/env bash
# After `gpu-pack`: drops byte-identical duplicates from .gpu/bin (cargo builds each example
# twice, for `test --no-run` and `build --examples`), adds what EXTRA names (files copied into
# .gpu/extra, e.g. binaries built from another commit for a before/after comparison), and
# compresses .gpu into .gpux/gpu.tar.xz, which fits the device tool's 64 MiB carry limit.
# On the GPU machine: `tar xJf .gpux/gpu.tar.xz && bash .gpu/run.sh` (carry: [".gpux"]).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qx '/.gpux/' .git/info/exclude 2>/dev/null || echo '/.gpux/' >> .git/info/exclude
declare -A seen
for f in $(ls .gpu/bin | awk '{ print length, $0 }' | sort -n | cut -d' ' -f2-); do
  sum=$(md5sum ".gpu/bin/$f" | cut -d' ' -f1)
  if [ -n "${seen[$sum]:-}" ]; then rm ".gpu/bin/$f"; else seen[$sum]=$f; fi
done
if [ -n "${EXTRA:-}" ]; then
  mkdir -p .gpu/extra
  for e in $EXTRA; do cp "$e" .gpu/extra/; strip ".gpu/extra/$(basename "$e")" 2>/dev/null || true; done
fi
mkdir -p .gpux
# -9e: its large window finds the code the binaries share (155 binaries: 62 MB at -6, 33 MB
# at -9e, about 3 minutes on two cores).
tar cf - .gpu | xz -T2 -9e > .gpux/gpu.tar.xz
echo "bundled $(ls .gpu/bin | wc -l) binaries: $(du -h .gpux/gpu.tar.xz | cut -f1) in .gpux/gpu.tar.xz"
