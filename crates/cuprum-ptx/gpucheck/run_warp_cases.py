"""Runs the cases written by `tests/gpu_warp.rs` (`export`) on a GPU with CuPy.

usage: python3 run_warp_cases.py <cases dir> <output dir>

`cases.txt` has a line `<name> <kind> <grid> <block> <out bytes>` per case; `<name>.ptx` has
one entry called <name> with machine parameters (input base, input length, output base,
output length) and `<name>.in` its input bytes. The output buffer is poisoned with 0xAB.
`data` cases append their output to `results.bin`; `print` cases also have their device
printf output (the process's C stdout while the kernel runs and synchronizes) written to
`<name>.txt`. `index.txt` gets `<name> <offset> <length> ok` or `<name> 0 0 error <message>`.
"""
import ctypes
import os
import sys

import cupy as cp
import numpy as np

LIBC = ctypes.CDLL(None)


def launch(kernel, grid, block, data, out_bytes):
    inp = cp.asarray(data if data.size else np.zeros(16, np.uint8))
    out = cp.full(out_bytes, 0xAB, dtype=cp.uint8)
    kernel((grid,), (block,), (inp, np.uint64(data.size), out, np.uint64(out.size)))
    cp.cuda.runtime.deviceSynchronize()
    return cp.asnumpy(out).tobytes()


def launch_capturing_stdout(path, *args):
    """Runs `launch` with the C-level stdout (where the driver writes device printf output)
    redirected to `path`."""
    sys.stdout.flush()
    LIBC.fflush(None)
    saved = os.dup(1)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    try:
        host = launch(*args)
        LIBC.fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(fd)
        os.close(saved)
    return host


def main(cases_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    index = []
    offset = 0
    with open(os.path.join(out_dir, "results.bin"), "wb") as results:
        for line in open(os.path.join(cases_dir, "cases.txt")):
            name, kind, grid, block, out_bytes = line.split()
            grid, block, out_bytes = int(grid), int(block), int(out_bytes)
            try:
                module = cp.RawModule(path=os.path.join(cases_dir, name + ".ptx"))
                kernel = module.get_function(name)
                data = np.fromfile(os.path.join(cases_dir, name + ".in"), dtype=np.uint8)
                if kind == "print":
                    path = os.path.join(out_dir, name + ".txt")
                    host = launch_capturing_stdout(path, kernel, grid, block, data, out_bytes)
                else:
                    host = launch(kernel, grid, block, data, out_bytes)
                results.write(host)
                index.append(f"{name} {offset} {len(host)} ok")
                offset += len(host)
            except Exception as e:  # report and go on with the next case
                msg = " ".join(str(e).split())
                index.append(f"{name} 0 0 error {msg}")
                print(name, "error:", msg, flush=True)
    with open(os.path.join(out_dir, "index.txt"), "w") as f:
        f.write("\n".join(index) + "\n")
    print(len(index), "cases run")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
