#!/usr/bin/env python3
"""Checks the `cuprum_torch` extension against PyTorch's own operations.

    python3 check.py [DIR]     # DIR holds cuprum_torch.abi3.so (else it is found on PYTHONPATH)

On CUDA when PyTorch sees a GPU, else on the CPU (cuprum's emulator, with copies in and out).
Every element of every result is compared with torch's, outputs are poisoned (NaN) first, a
given `out` must be written in place (zero-copy: the returned tensor shares its memory), the
kernels must be ordered on a non-default current stream (`with torch.cuda.stream(s)`), and
bad arguments must raise TypeError/ValueError with a message. Prints PASSED at the end, and a
small timing table on CUDA.
"""
import sys
import time

if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])

import torch  # noqa: E402
import cuprum_torch  # noqa: E402

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"torch {torch.__version__}, device {device}, cuprum backend {cuprum_torch.backend(device)}")


def same(name, got, want):
    if got.shape != want.shape:
        raise AssertionError(f"{name}: shape {tuple(got.shape)} != {tuple(want.shape)}")
    bad = (got != want).nonzero()
    if bad.numel():
        i = tuple(bad[0].tolist())
        raise AssertionError(
            f"{name}: {bad.shape[0]} of {got.numel()} elements differ; first at {i}: "
            f"{got[i].item()!r} != {want[i].item()!r}")


def poisoned_like(t):
    return torch.full_like(t, float("nan"))


def expect(exc, needle, fn):
    try:
        fn()
    except exc as e:
        if needle not in str(e):
            raise AssertionError(f"{exc.__name__} without {needle!r}: {e}")
        print(f"  ok: {exc.__name__}: {str(e)[:110]}")
        return
    raise AssertionError(f"expected {exc.__name__} mentioning {needle!r}")


# Correctness at several sizes and shapes, with and without `out`.
for shape in [(1,), (1000,), (33, 65), ((1 << 20) + 3,), (4, 0)]:
    x = torch.rand(shape, device=device)
    y = torch.rand(shape, device=device)
    same(f"add {shape}", cuprum_torch.add(x, y), x + y)
    out = poisoned_like(x)
    got = cuprum_torch.saxpy(1.5, x, y, out=out)
    if got.data_ptr() != out.data_ptr() and out.numel():
        raise AssertionError("saxpy did not return `out`")
    # torch's own saxpy rounds alpha*x then adds, as the kernel does (no fused multiply-add).
    same(f"saxpy {shape}", out, 1.5 * x + y)
    same(f"add(x, x) {shape}", cuprum_torch.add(x, x), x + x)
print("element-wise results match torch's")

# Ordering on PyTorch's current stream: torch work before and after the kernel on a
# non-default stream, without synchronizing in between.
if device == "cuda":
    s = torch.cuda.Stream()
    n = 1 << 24
    with torch.cuda.stream(s):
        for round in range(5):
            x = torch.rand(n, device=device)
            y = torch.rand(n, device=device) * 2
            x.mul_(3).add_(1)                      # queued on s, not finished yet
            out = poisoned_like(x)
            cuprum_torch.saxpy(0.5, x, y, out=out)  # must follow it on s
            z = out * 2                             # must follow the kernel on s
            same(f"stream round {round}", z, (0.5 * x + y) * 2)
    # An explicit stream argument (the handle), outside any `with`.
    x, y = torch.rand(n, device=device), torch.rand(n, device=device)
    out = poisoned_like(x)
    s2 = torch.cuda.Stream()
    s2.wait_stream(torch.cuda.current_stream())
    cuprum_torch.add(x, y, out=out, stream=s2.cuda_stream)
    torch.cuda.current_stream().wait_stream(s2)
    same("explicit stream", out, x + y)
    print("stream ordering holds on a non-default current stream")

# Typed errors.
x = torch.rand(64, device=device)
expect(TypeError, "element type", lambda: cuprum_torch.add(x.double(), x.double()))
expect(ValueError, "row-major", lambda: cuprum_torch.add(torch.rand(8, 8, device=device).t(),
                                                         torch.rand(8, 8, device=device)))
expect(ValueError, "shape", lambda: cuprum_torch.add(x, torch.rand(65, device=device)))
expect(ValueError, "in place", lambda: cuprum_torch.add(x, x.clone(), out=x))
expect(ValueError, "shape", lambda: cuprum_torch.add(x, x.clone(), out=torch.empty(65, device=device)))
if device == "cuda":
    expect(ValueError, "one device", lambda: cuprum_torch.add(x, x.cpu()))
    expect(ValueError, "multiple of 16", lambda: cuprum_torch.add(x[1:], x[1:].clone()))

# Timing (CUDA only): median of repeated calls, event-timed, vs torch's own ops.
if device == "cuda":
    def median_ms(fn, reps=50):
        for _ in range(5):
            fn()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        times.sort()
        return times[len(times) // 2]

    print(f"{'n':>10} {'op':>6} {'cuprum ms':>10} {'torch ms':>10}")
    for n in [1 << 16, 1 << 20, 1 << 24]:
        x, y = torch.rand(n, device=device), torch.rand(n, device=device)
        out = torch.empty_like(x)
        c = median_ms(lambda: cuprum_torch.add(x, y, out=out))
        t = median_ms(lambda: torch.add(x, y, out=out))
        print(f"{n:>10} {'add':>6} {c:>10.4f} {t:>10.4f}")
        c = median_ms(lambda: cuprum_torch.saxpy(2.0, x, y, out=out))
        t = median_ms(lambda: torch.add(y, x, alpha=2.0, out=out))
        print(f"{n:>10} {'saxpy':>6} {c:>10.4f} {t:>10.4f}")
    t0 = time.perf_counter()
    for _ in range(1000):
        cuprum_torch.add(x, y, out=out)
    torch.cuda.synchronize()
    print(f"host overhead per call: {(time.perf_counter() - t0) * 1e3:.1f} us (n = {n})")

print("PASSED")
