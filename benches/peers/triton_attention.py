"""A Triton flash-attention forward (the algorithm of Triton's fused-attention tutorial:
one program per block of query rows and head, an online softmax in base 2 over key blocks,
both products on the tensor cores), written for this repository's tile_attention peer: f16
inputs and output, the sequence a multiple of every key block; `causal_attention` masks keys
that follow their query (the tutorial's two stages: the key blocks below the diagonal without
a mask, the diagonal block with one). Autotuned over the tutorial's kinds of configurations."""

import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BM": bm, "BN": bn}, num_warps=w, num_stages=s)
    for bm, bn, w, s in [
        (128, 64, 8, 3),
        (128, 128, 8, 3),
        (128, 64, 4, 3),
        (64, 64, 4, 4),
        (128, 32, 4, 4),
    ]
]


@triton.autotune(configs=CONFIGS, key=["seq", "D"])
@triton.jit
def _forward(Q, K, V, Out, scale_log2, seq, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    block = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    base = head * seq * D
    rows = block * BM + tl.arange(0, BM)
    dims = tl.arange(0, D)
    q = tl.load(Q + base + rows[:, None] * D + dims[None, :])
    m = tl.full([BM], float("-inf"), tl.float32)
    total = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, seq, BN):
        keys = start + tl.arange(0, BN)
        kt = tl.load(K + base + keys[None, :] * D + dims[:, None])
        s = tl.dot(q, kt) * scale_log2
        m_next = tl.maximum(m, tl.max(s, 1))
        p = tl.math.exp2(s - m_next[:, None])
        alpha = tl.math.exp2(m - m_next)
        total = total * alpha + tl.sum(p, 1)
        v = tl.load(V + base + keys[:, None] * D + dims[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m = m_next
    out = acc / total[:, None]
    tl.store(Out + base + rows[:, None] * D + dims[None, :], out.to(tl.float16))


def attention(q, k, v, out):
    """out = softmax(q kᵀ / sqrt(d)) v for contiguous f16 tensors of shape (b, h, s, d)."""
    b, h, seq, d = q.shape
    scale_log2 = 1.4426950408889634 / d ** 0.5

    def grid(meta):
        return (triton.cdiv(seq, meta["BM"]), b * h)

    _forward[grid](q, k, v, out, scale_log2, seq, D=d)
    return out


@triton.autotune(configs=CONFIGS, key=["seq", "D"])
@triton.jit
def _forward_causal(Q, K, V, Out, scale_log2, seq, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    block = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    base = head * seq * D
    rows = block * BM + tl.arange(0, BM)
    dims = tl.arange(0, D)
    q = tl.load(Q + base + rows[:, None] * D + dims[None, :])
    m = tl.full([BM], float("-inf"), tl.float32)
    total = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for stage in tl.static_range(2):
        if stage == 0:
            lo, hi = 0, block * BM
        else:
            lo, hi = block * BM, (block + 1) * BM
        for start in range(lo, hi, BN):
            keys = start + tl.arange(0, BN)
            kt = tl.load(K + base + keys[None, :] * D + dims[:, None])
            s = tl.dot(q, kt) * scale_log2
            if stage == 1:
                s = tl.where(rows[:, None] >= keys[None, :], s, float("-inf"))
            m_next = tl.maximum(m, tl.max(s, 1))
            p = tl.math.exp2(s - m_next[:, None])
            alpha = tl.math.exp2(m - m_next)
            total = total * alpha + tl.sum(p, 1)
            v = tl.load(V + base + keys[:, None] * D + dims[None, :])
            acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
            m = m_next
    out = acc / total[:, None]
    tl.store(Out + base + rows[:, None] * D + dims[None, :], out.to(tl.float16))


def causal_attention(q, k, v, out):
    """out = softmax(q kᵀ / sqrt(d) + causal mask) v for contiguous f16 tensors (b, h, s, d)."""
    b, h, seq, d = q.shape
    scale_log2 = 1.4426950408889634 / d ** 0.5

    def grid(meta):
        return (triton.cdiv(seq, meta["BM"]), b * h)

    _forward_causal[grid](q, k, v, out, scale_log2, seq, D=d)
    return out
