#!/usr/bin/env python3
"""PyTorch, torch.compile (Triton) and hand-written Triton peers for the tile track's
benchmarks (benches/run_all.sh): element-wise add of 2^28 f32, and row softmax, RMS norm and
layer norm of 16384x4096 f32, each checked once against float64, then timed as
torch_peers.py times (median of 50 event-timed runs after 5 warm-ups). Prints the same JSON
records (case names tile_add, tile_softmax, tile_rms_norm, tile_layer_norm, tile_gemm; impl
torch, torch_compile, triton or cublas: PyTorch's bf16, f16 and TF32 matmuls at 4096^3 and
8192^3; case names tile_gemm, tile_gemm_f16 and tile_gemm_tf32;
tile_attention: scaled_dot_product_attention in f16, batch 4, 32 heads, sequence 4096, head 128, and a Triton
flash-attention forward, triton_attention.py; tile_attention_causal: the same with
is_causal / a causal Triton kernel, counting half the flops) for benches/report.py.

Usage: python3 benches/peers/tile_peers.py [--quick] [--only CASE]   (--quick: small sizes, a smoke
test; --only: one case, e.g. tile_attention)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torch_peers import FAILED, HAVE_TRITON, case, check, median_ms, result  # noqa: E402

if HAVE_TRITON:
    from torch_peers import triton_add, triton_softmax  # noqa: E402


def compiled(fn):
    """fn through torch.compile (Inductor writes Triton), or None where that fails."""
    try:
        return torch.compile(fn)
    except Exception:  # noqa: BLE001 - torch.compile is optional
        return None


def main():
    quick = "--quick" in sys.argv
    if not torch.cuda.is_available():
        print("FAILED: PyTorch sees no CUDA device", file=sys.stderr)
        return 1
    n = 1 << (20 if quick else 28)
    rows, cols = (256, 4096) if quick else (16384, 4096)
    size = f"{rows}x{cols}"
    e = rows * cols
    eps = 1e-6

    def tile_add():
        a = torch.rand(n, device="cuda")
        b = torch.rand(n, device="cuda")
        c = a + b
        check(torch.equal(c[:1000], a[:1000] + b[:1000]), "add")
        result("tile_add", "torch", f"n={n}", 12 * n, n, median_ms(lambda: a + b))
        if HAVE_TRITON:
            out = torch.empty_like(a)
            triton_add(a, b, out)
            check(torch.equal(out, c), "triton add")
            result("tile_add", "triton", f"n={n}", 12 * n, n, median_ms(lambda: triton_add(a, b, out)))

    def tile_softmax():
        x = torch.rand(rows, cols, device="cuda") * 16 - 8
        y = torch.softmax(x, dim=-1)
        check(torch.allclose(y.double(), torch.softmax(x.double(), dim=-1), rtol=1e-4, atol=1e-9), "softmax")
        result("tile_softmax", "torch", size, 8 * e, 5 * e, median_ms(lambda: torch.softmax(x, dim=-1)))
        if HAVE_TRITON:
            out = torch.empty_like(x)
            triton_softmax(x, out)
            check(torch.allclose(out, y, rtol=1e-4, atol=1e-9), "triton softmax")
            result("tile_softmax", "triton", size, 8 * e, 5 * e, median_ms(lambda: triton_softmax(x, out)))

    def tile_rms_norm():
        x = torch.rand(rows, cols, device="cuda") * 4 - 2
        w = torch.rand(cols, device="cuda") + 0.5
        xd = x.double()
        ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()

        def eager():
            return F.rms_norm(x, (cols,), w, eps)

        check(torch.allclose(eager().double(), ref, rtol=1e-4, atol=1e-5), "rms_norm")
        result("tile_rms_norm", "torch", size, 8 * e + 4 * cols, 4 * e, median_ms(eager))
        fast = compiled(lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w)
        if fast is not None:
            check(torch.allclose(fast().double(), ref, rtol=1e-4, atol=1e-5), "compiled rms_norm")
            result("tile_rms_norm", "torch_compile", size, 8 * e + 4 * cols, 4 * e, median_ms(fast))

    def tile_layer_norm():
        x = torch.rand(rows, cols, device="cuda") * 4 - 2
        w = torch.rand(cols, device="cuda") + 0.5
        b = torch.rand(cols, device="cuda") - 0.5
        ref = F.layer_norm(x.double(), (cols,), w.double(), b.double(), eps)

        def eager():
            return F.layer_norm(x, (cols,), w, b, eps)

        check(torch.allclose(eager().double(), ref, rtol=1e-4, atol=1e-5), "layer_norm")
        result("tile_layer_norm", "torch", size, 8 * e + 8 * cols, 8 * e, median_ms(eager))
        fast = compiled(lambda: F.layer_norm(x, (cols,), w, b, eps))
        if fast is not None:
            check(torch.allclose(fast().double(), ref, rtol=1e-4, atol=1e-5), "compiled layer_norm")
            result("tile_layer_norm", "torch_compile", size, 8 * e + 8 * cols, 8 * e, median_ms(fast))

    def tile_gemm():
        for g in [512] if quick else [4096, 8192]:
            for name, dtype in (("tile_gemm", torch.bfloat16), ("tile_gemm_f16", torch.float16)):
                a = torch.rand(g, g, device="cuda", dtype=dtype) * 2 - 1
                b = torch.rand(g, g, device="cuda", dtype=dtype) * 2 - 1
                c = a @ b
                check(torch.allclose(c.double(), a.double() @ b.double(), rtol=1e-2, atol=1e-1), f"{dtype} matmul")
                result(name, "cublas", f"{g}x{g}x{g}", 6 * g * g, 2 * g ** 3, median_ms(lambda: a @ b))
            # f32 tensors multiplied on the tensor cores as TF32 (cuBLAS's TF32 GEMM).
            allowed = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                a = torch.rand(g, g, device="cuda", dtype=torch.float32) * 2 - 1
                b = torch.rand(g, g, device="cuda", dtype=torch.float32) * 2 - 1
                c = a @ b
                check(torch.allclose(c.double(), a.double() @ b.double(), rtol=1e-2, atol=1e-1), "tf32 matmul")
                result("tile_gemm_tf32", "cublas", f"{g}x{g}x{g}", 12 * g * g, 2 * g ** 3,
                       median_ms(lambda: a @ b))
            finally:
                torch.backends.cuda.matmul.allow_tf32 = allowed

    def tile_attention():
        b, h, sq, d = (1, 2, 128, 128) if quick else (4, 32, 4096, 128)
        q = torch.rand(b, h, sq, d, device="cuda", dtype=torch.float16) * 2 - 1
        k = torch.rand(b, h, sq, d, device="cuda", dtype=torch.float16) * 2 - 1
        v = torch.rand(b, h, sq, d, device="cuda", dtype=torch.float16) * 2 - 1
        o = F.scaled_dot_product_attention(q, k, v)
        ref = F.scaled_dot_product_attention(q[:1, :1].double(), k[:1, :1].double(), v[:1, :1].double())
        check(torch.allclose(o[:1, :1].double(), ref, rtol=1e-2, atol=4e-3), "sdpa")
        size = f"b{b}_h{h}_s{sq}_d{d}"
        result("tile_attention", "torch", size, 4 * b * h * sq * d * 2, 4 * b * h * sq * sq * d,
               median_ms(lambda: F.scaled_dot_product_attention(q, k, v)))
        if HAVE_TRITON:
            from triton_attention import attention  # noqa: E402

            out = torch.empty_like(q)
            attention(q, k, v, out)
            check(torch.allclose(out.float(), o.float(), rtol=1e-2, atol=4e-3), "triton attention")
            result("tile_attention", "triton", size, 4 * b * h * sq * d * 2, 4 * b * h * sq * sq * d,
                   median_ms(lambda: attention(q, k, v, out)))

    def tile_attention_causal():
        b, h, sq, d = (1, 2, 128, 128) if quick else (4, 32, 4096, 128)
        q = torch.rand(b, h, sq, d, device="cuda", dtype=torch.float16) * 2 - 1
        k = torch.rand(b, h, sq, d, device="cuda", dtype=torch.float16) * 2 - 1
        v = torch.rand(b, h, sq, d, device="cuda", dtype=torch.float16) * 2 - 1
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        ref = F.scaled_dot_product_attention(q[:1, :1].double(), k[:1, :1].double(), v[:1, :1].double(),
                                             is_causal=True)
        check(torch.allclose(o[:1, :1].double(), ref, rtol=1e-2, atol=4e-3), "causal sdpa")
        size = f"b{b}_h{h}_s{sq}_d{d}"
        # Half of the full product's flops, as FlashAttention counts causal attention.
        flops = 2 * b * h * sq * sq * d
        result("tile_attention_causal", "torch", size, 4 * b * h * sq * d * 2, flops,
               median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)))
        if HAVE_TRITON:
            from triton_attention import causal_attention  # noqa: E402

            out = torch.empty_like(q)
            causal_attention(q, k, v, out)
            check(torch.allclose(out.float(), o.float(), rtol=1e-2, atol=4e-3), "triton causal attention")
            result("tile_attention_causal", "triton", size, 4 * b * h * sq * d * 2, flops,
                   median_ms(lambda: causal_attention(q, k, v, out)))

    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    for fn in (tile_add, tile_softmax, tile_rms_norm, tile_layer_norm, tile_gemm, tile_attention,
               tile_attention_causal):
        if only is None or fn.__name__ == only:
            case(fn)
    if FAILED:
        print(f"FAILED: tile peers: {' '.join(FAILED)}", file=sys.stderr)
        return 1
    print("PASSED: tile peers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
