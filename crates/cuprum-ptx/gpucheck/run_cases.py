"""Runs the PTX cases written by `tests/gpu_semantics.rs` (`export`) on a GPU with CuPy.

usage: python3 run_cases.py <cases dir> <output dir>

Each case is `<name>.ptx` (one entry called <name>, machine parameters: input base, input
length, output base, output length), `<name>.in` (input bytes) and a line `<name> <threads>` in
`cases.txt`. The output buffer (8 bytes per thread) is poisoned with 0xAB before the launch.
Writes `results.bin` (all outputs, concatenated) and `index.txt` (`<name> <offset> <length>
ok`, or `<name> 0 0 error <message>`).
"""
import os
import sys

import cupy as cp
import numpy as np


def main(cases_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    index = []
    offset = 0
    with open(os.path.join(out_dir, "results.bin"), "wb") as results:
        for line in open(os.path.join(cases_dir, "cases.txt")):
            name, threads = line.split()
            threads = int(threads)
            try:
                module = cp.RawModule(path=os.path.join(cases_dir, name + ".ptx"))
                kernel = module.get_function(name)
                data = np.fromfile(os.path.join(cases_dir, name + ".in"), dtype=np.uint8)
                inp = cp.asarray(data if data.size else np.zeros(16, np.uint8))
                out = cp.full(threads * 8, 0xAB, dtype=cp.uint8)
                block = min(threads, 256)
                grid = (threads + block - 1) // block
                kernel((grid,), (block,), (inp, np.uint64(data.size), out, np.uint64(out.size)))
                cp.cuda.runtime.deviceSynchronize()
                host = cp.asnumpy(out).tobytes()
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
