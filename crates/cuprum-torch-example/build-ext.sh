#!/usr/bin/env bash
# Builds the `cuprum_torch` Python extension in release and copies the importable module into
# DEST (default: the current directory) as `cuprum_torch.abi3.so`: CPython's stable ABI, so
# the one file imports on CPython 3.9 and later of the same platform (Linux x86_64 here; it
# needs a glibc at least as new as the building machine's). No Python is needed to build it.
#
#   crates/cuprum-torch-example/build-ext.sh /tmp/ext
#   PYTHONPATH=/tmp/ext python3 crates/cuprum-torch-example/check.py
set -euo pipefail
dest="${1:-.}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
# abi3 builds need no interpreter; say so, so that a missing or odd `python3` cannot matter.
PYO3_NO_PYTHON=1 cargo build --release --manifest-path "$root/Cargo.toml" -p cuprum-torch-example
mkdir -p "$dest"
cp "$target/release/libcuprum_torch.so" "$dest/cuprum_torch.abi3.so"
echo "built $dest/cuprum_torch.abi3.so"
