#!/usr/bin/env python3
"""PyTorch peer of crates/cuprum-iter/examples/iter_bench.rs: the GB/s of `a + b` and
`a.sum()` (and `torch.dot(a, b)`) on 2^28 float32 elements, timed like the cuprum example.

Each operation runs 5 times untimed, then 50 times with a pair of torch.cuda.Event around
each run; all runs are queued before any is waited for, so the host's own overhead overlaps
the previous run, and the median of the 50 device-side times is reported. Bytes counted per
element: 12 for `a + b` (two reads, one write, the output allocated by the caching
allocator, as cuprum's `materialize` allocates), 4 for `a.sum()`, 8 for `torch.dot(a, b)`.
Each prints a line for people and a JSON record (`{"record": "result", "case": "vecadd"|"sum"|
"dot", "impl": "torch", ...}`, as benches/report.py reads).

Usage: python3 benches/peers/iter_torch.py [--n 268435456]
"""

import argparse
import json
import statistics
import sys

import torch

WARMUP = 5
REPS = 50


def median_ms(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    marks = []
    for _ in range(REPS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        del out
        marks.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in marks)


def report(what, case, n, bytes_per_elem, flops_per_elem, ms):
    gbs = bytes_per_elem * n / (ms * 1e6)
    print(f"torch {what} n={n} median {ms:.4f} ms {gbs:.1f} GB/s")
    print(json.dumps({"record": "result", "case": case, "impl": "torch", "size": f"n={n}",
                      "bytes": bytes_per_elem * n, "flops": flops_per_elem * n, "ms": ms}),
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 28)
    n = parser.parse_args().n
    if not torch.cuda.is_available():
        print("FAILED: PyTorch sees no CUDA device", file=sys.stderr)
        return 1
    idx = torch.arange(n, device="cuda", dtype=torch.int64)
    a = ((idx % 1024).to(torch.float32)) * 0.25
    b = (idx % 777).to(torch.float32)
    del idx
    c = a + b
    if not torch.equal(c, (a.double() + b.double()).float()):
        print("FAILED: a + b", file=sys.stderr)
        return 1
    del c
    want = a.double().sum().item()
    got = a.sum().item()
    if abs(got - want) > 1e-5 * abs(want):
        print(f"FAILED: a.sum() = {got}, f64 {want}", file=sys.stderr)
        return 1
    print(f"PASSED: a + b and a.sum() of {n} float32 on {torch.cuda.get_device_name()}")
    report("a + b", "vecadd", n, 12, 1, median_ms(lambda: a + b))
    report("a.sum()", "sum", n, 4, 1, median_ms(lambda: a.sum()))
    report("torch.dot(a, b)", "dot", n, 8, 2, median_ms(lambda: torch.dot(a, b)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
