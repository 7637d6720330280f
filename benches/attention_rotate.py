#!/usr/bin/env python3
"""FlashAttention-3's in-warpgroup overlap, tried by hand on the lowering's attention PTX.

    python3 benches/attention_rotate.py [--fence=membar|acq_rel|none] DUMPED.ptx OVERRIDE_DIR/DUMPED.ptx

takes the non-causal `attention` kernel of `tile_bench` as the lowering writes it
(`CUPRUM_PTX_DUMP`; blocks of one warpgroup, 64x64 tiles, or two, 128x64) and rewrites its
key loop so that the product `p v` of step j is issued in step j + 1, after that step's
`q k^T` and before its softmax, and waited for only where the output is rescaled:

    step j:  wait k_j; issue s_j = q k_j^T; [j > 0: issue o += p_{j-1} v_{j-1}]
             wait for s_j (wgmma.wait_group 1); row max, exponentials, row sums
             wait for o (wait_group 0); [release v_{j-1}'s buffer]; o *= alpha_j;
             p_j = f16(exp); wait v_j; pack p_j
    after:   issue and wait o += p_last v_last

so the tensor cores multiply `p v` while the same warpgroup computes its exponentials.
ptxas schedules a `wgmma.wait_group` as early as its operands allow, which is before the
exponentials (none of them reads the product), so a fence (`--fence`, `membar.cta` by
default; `MEMBAR.SC.CTA` in the SASS) stands before the second wait to keep it after them:
without it the SASS waits for `p v` right after the row maxima. Each
output element sees the same operations in the same order as before (bit for bit the
interpreter's). The rewritten file goes into a folder that `CUPRUM_PTX_OVERRIDE` names,
under the dumped name. The patterns matched are those of the lowering of 2026-12-06 (register
numbers of the loop's carried output `%f3..%f66`/`%f515..`, the loop label `$L__5`, the ring's
refill block); a later lowering may need the patterns updated. Not for the causal kernel (two
loops).

Measured (H100, 2026-12-06, `tile_bench` at batch 4, 32 heads, sequence 4096, head 128, the
plain kernel in the same call): slower, 64x64 2.63-2.64 ms against 2.20, 128x64 2.83-2.84
against 2.68 (see the README's attention paragraph for what is not separated yet).
"""
import re, sys
args = [a for a in sys.argv[1:] if not a.startswith('--fence=')]
fences = {'membar': '\tmembar.cta;', 'acq_rel': '\tfence.acq_rel.cta;', 'none': ''}
fence = next((a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('--fence=')), 'membar')
FENCE = fences[fence]
sys.argv[1:] = args
src = open(sys.argv[1]).read().split('\n')
L = lambda n: src[n-1]
def find(pat, start=1, end=None):
    end = end or len(src)
    for n in range(start, end+1):
        if re.search(pat, L(n)): return n
    raise SystemExit(f"not found: {pat}")
preds = int(re.search(r'%p<(\d+)>', '\n'.join(src)).group(1))
F = f'%p{preds}'
loop = find(r'^\$L__5:')
exit_ = find(r'^\$L__6:')
acc_copy = [n for n in range(loop, loop+200) if re.match(r'\s*mov\.f32 %f([3-9]|[1-5][0-9]|6[0-6]), %f5[0-9][0-9];', L(n))]
assert len(acc_copy) == 64, len(acc_copy)
two_wg = any('mbarrier.arrive.shared' in l for l in src)
refill = []
if not two_wg:
    rs = find(r'and\.pred %p18, %p11, %p17;', loop)
    re_ = find(r'^\$L__9:', rs)
    refill = list(range(rs, re_+1))
qk_fence = find(r'wgmma\.fence', loop)
qk_wait = find(r'wgmma\.wait_group\.sync\.aligned 0;', qk_fence)
scale_acc = find(r'mul\.rn\.f32 %f\d+, %f3, %f\d+;', qk_wait)
pv_fence = find(r'wgmma\.fence', scale_acc)
pv_commit = find(r'wgmma\.commit_group', pv_fence)
pv_wait = pv_commit + 1
assert 'wait_group' in L(pv_wait)
release = []
if two_wg:
    # the V slot's release after the PV: moved to where the deferred PV is waited for
    rel_end = find(r'^\$L__16:', pv_wait)
    release = list(range(pv_wait + 1, rel_end + 1))
    assert 'mbarrier.arrive.shared' in ''.join(L(n) for n in release)
pv = [L(n) for n in range(pv_fence, pv_commit+1)]
moved_release = []
if release:
    moved_release = [f'\t@{F} bra $LROT3;'] + [L(n).replace('%r370, %r7', '%r371, %r7') for n in release] + ['$LROT3:']
out = []
for n in range(1, len(src)+1):
    line = L(n)
    if '.reg .pred' in line:
        line = line.replace(f'%p<{preds}>', f'%p<{preds+1}>')
    if n == loop:
        out.append(f'\tsetp.eq.u32 {F}, 0, 0;')
    if n in acc_copy or n in refill or n in release:
        continue
    if n == qk_wait:
        out += [f'\t@{F} bra $LROT0;'] + pv + ['\twgmma.wait_group.sync.aligned 1;', '\tbra.uni $LROT1;', '$LROT0:', '\twgmma.wait_group.sync.aligned 0;', '$LROT1:']
        continue
    if n == scale_acc:
        out += [FENCE] * bool(FENCE) + ['\twgmma.wait_group.sync.aligned 0;'] + moved_release + [L(k) for k in acc_copy] + [L(k) for k in refill]
    if pv_fence <= n <= pv_wait:
        if n == pv_wait:
            out.append(f'\tsetp.ne.u32 {F}, 0, 0;')
        continue
    out.append(line)
    if n == exit_:
        out += [f'\t@{F} bra $LROT2;'] + pv + ['\twgmma.wait_group.sync.aligned 0;', '$LROT2:']
open(sys.argv[2], 'w').write('\n'.join(out))
print(sys.argv[1], "two_wg", two_wg, "loop", loop, "qk wait", qk_wait, "scale", scale_acc, "pv", pv_fence, pv_commit, "release", release[:1], release[-1:])
