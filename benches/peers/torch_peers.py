#!/usr/bin/env python3
"""PyTorch (and, when importable, Triton) peers for the cuprum benchmark suite
(benches/run_all.sh): the same cases on the same sizes as the cuprum examples, each checked
once, then timed as the median of 50 runs bracketed by torch.cuda.Event after 5 warm-up runs.

Prints a line for people and a JSON record per case, read by benches/report.py:
    {"record": "result", "case": <name>, "impl": "torch"|"triton", "size": <desc>,
     "bytes": <n>, "flops": <n>, "ms": <median>}
plus the record of case "copy" (impl torch), a device-to-device copy of 2^28 f32 whose GB/s is
the ceiling the memory-bound cases are measured against. A case that fails prints FAILED on
stderr and the others still run; the exit status is 1 if any failed.

Usage: python3 benches/peers/torch_peers.py [--quick]   (--quick: small sizes, for a smoke test)
"""

import json
import os
import statistics
import sys
import traceback

import torch

WARMUP = 5
# BENCH_REPS: more runs, for a measurement under sustained load (benches/attention_clocks.sh).
REPS = int(os.environ.get("BENCH_REPS", "50"))
FAILED = []


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


def result(case, impl, size, bytes_, flops, ms):
    print(f"{impl} {case} {size} median {ms:.4f} ms {bytes_ / (ms * 1e6):.1f} GB/s "
          f"{flops / (ms * 1e6):.1f} GFLOP/s")
    print(json.dumps({"record": "result", "case": case, "impl": impl, "size": size,
                      "bytes": bytes_, "flops": flops, "ms": ms}), flush=True)


def case(fn):
    """Runs one case; a failure is reported and does not stop the others."""
    try:
        fn()
    except Exception:  # noqa: BLE001 - any failure of one case is reported, then we go on
        FAILED.append(fn.__name__)
        print(f"FAILED: {fn.__name__}", file=sys.stderr)
        traceback.print_exc()
    torch.cuda.empty_cache()


def check(ok, what):
    if not ok:
        raise AssertionError(what)


try:
    import triton
    import triton.language as tl

    @triton.jit
    def _add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def _softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)

    def triton_add(a, b, c):
        n = a.numel()
        _add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
        return c

    def triton_softmax(x, y):
        rows, cols = x.shape
        _softmax_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols), num_warps=8)
        return y

    HAVE_TRITON = True
except Exception:  # noqa: BLE001 - Triton is optional
    HAVE_TRITON = False


def main():
    quick = "--quick" in sys.argv
    if not torch.cuda.is_available():
        print("FAILED: PyTorch sees no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    n = 1 << (20 if quick else 28)
    n_reduce = 1 << (20 if quick else 26)
    rows, cols = (64, 4096) if quick else (8192, 4096)
    side = 1024 if quick else 8192
    mm = 512 if quick else 4096
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, triton: {HAVE_TRITON}")

    def copy():
        src = torch.rand(n, device="cuda")
        dst = torch.empty_like(src)
        dst.copy_(src)
        check(torch.equal(src, dst), "copy")
        result("copy", "torch", f"n={n}", 8 * n, 0, median_ms(lambda: dst.copy_(src)))

    def vecadd():
        idx = torch.arange(n, device="cuda", dtype=torch.int64)
        a = (idx % 1024).to(torch.float32) * 0.25
        b = (idx % 777).to(torch.float32)
        del idx
        c = a + b
        check(torch.equal(c, (a.double() + b.double()).float()), "a + b")
        result("vecadd", "torch", f"n={n}", 12 * n, n, median_ms(lambda: a + b))
        out = torch.empty_like(a)
        result("vecadd_out", "torch", f"n={n}", 12 * n, n, median_ms(lambda: torch.add(a, b, out=out)))
        if HAVE_TRITON:
            triton_add(a, b, out)
            check(torch.equal(out, c), "triton add")
            result("vecadd", "triton", f"n={n}", 12 * n, n, median_ms(lambda: triton_add(a, b, out)))
        # The iterator track's cases on the same data: sum and dot (zip-map-mul sum).
        want = a.double().sum().item()
        check(abs(a.sum().item() - want) <= 1e-5 * abs(want), "a.sum()")
        result("sum", "torch", f"n={n}", 4 * n, n, median_ms(lambda: a.sum()))
        want = torch.dot(a.double(), b.double()).item()
        check(abs(torch.dot(a, b).item() - want) <= 1e-5 * abs(want), "dot")
        result("dot", "torch", f"n={n}", 8 * n, 2 * n, median_ms(lambda: torch.dot(a, b)))

    def saxpy():
        idx = torch.arange(n, device="cuda", dtype=torch.int64)
        x = (idx % 1024).to(torch.float32) * 0.25
        y = (idx % 333).to(torch.float32)
        del idx
        want = 2.0 * x.double() + y.double()
        y.add_(x, alpha=2.0)
        check(torch.allclose(y.double(), want, rtol=1e-6), "saxpy")
        result("saxpy", "torch", f"n={n}", 12 * n, 2 * n, median_ms(lambda: y.add_(x, alpha=2.0)))

    def reduce():
        x = torch.rand(n_reduce, device="cuda")
        want = x.double().sum().item()
        check(abs(x.sum().item() - want) <= 1e-5 * want, "reduce sum")
        result("reduce", "torch", f"n={n_reduce}", 4 * n_reduce, n_reduce, median_ms(lambda: x.sum()))

    def softmax():
        x = torch.rand(rows, cols, device="cuda") * 16 - 8
        y = torch.softmax(x, dim=-1)
        check(torch.allclose(y.double(), torch.softmax(x.double(), dim=-1), rtol=1e-4, atol=1e-9), "softmax")
        e = rows * cols
        size = f"{rows}x{cols}"
        result("softmax_rows", "torch", size, 8 * e, 5 * e, median_ms(lambda: torch.softmax(x, dim=-1)))
        if HAVE_TRITON:
            out = torch.empty_like(x)
            triton_softmax(x, out)
            check(torch.allclose(out, y, rtol=1e-4, atol=1e-9), "triton softmax")
            result("softmax_rows", "triton", size, 8 * e, 5 * e, median_ms(lambda: triton_softmax(x, out)))

    def transpose():
        x = torch.rand(side, side, device="cuda")
        check(torch.equal(x.t().contiguous()[3], x[:, 3]), "transpose")
        e = side * side
        result("transpose", "torch", f"{side}x{side}", 8 * e, 0, median_ms(lambda: x.t().contiguous()))

    def sgemm():
        a = torch.rand(mm, mm, device="cuda") - 0.5
        b = torch.rand(mm, mm, device="cuda") - 0.5
        c = torch.mm(a, b)
        ref = torch.mm(a[:16].double(), b.double())
        check(torch.allclose(c[:16].double(), ref, rtol=1e-3, atol=1e-3), "sgemm")
        size = f"{mm}x{mm}x{mm}"
        result("sgemm", "torch", size, 12 * mm * mm, 2 * mm**3, median_ms(lambda: torch.mm(a, b)))

    def hgemm():
        # 4096^3 (bench_simt's size) and, unless quick, 8192^3 (hopper_gemm's second size).
        for g in (mm,) if quick else (mm, 2 * mm):
            a = (torch.rand(g, g, device="cuda") * 2 - 1).to(torch.bfloat16)
            b = (torch.rand(g, g, device="cuda") * 2 - 1).to(torch.bfloat16)
            c = torch.mm(a, b)
            ref = torch.mm(a[:16].double(), b.double())
            check(torch.allclose(c[:16].double(), ref, rtol=2e-2, atol=0.5), f"hgemm {g}")
            size = f"{g}x{g}x{g}"
            result("hgemm_mma", "torch", size, 2 * 3 * g * g, 2 * g**3, median_ms(lambda: torch.mm(a, b)))

    for fn in (copy, vecadd, saxpy, reduce, softmax, transpose, sgemm, hgemm):
        case(fn)
    if FAILED:
        print(f"FAILED: torch peers: {' '.join(FAILED)}", file=sys.stderr)
        return 1
    print("PASSED: torch peers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
