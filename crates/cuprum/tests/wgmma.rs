//! Hopper's `wgmma` (and named barriers) on whichever backend `CUPRUM_DEVICE` selects: the
//! emulator in CI, the H100/H200 through gpu-pack, where this file is the probe that pins the
//! operand layouts, the accumulator layout (which thread holds which (row, col)) and the
//! summation bit for bit.
//!
//! The kernels are built with the IR builder (the statements are the IR's; the device API's
//! spellings are the front end's business) and launched through the runtime. Each case fills
//! dynamic shared memory (1024-byte aligned) from an image the host lays out (operands placed
//! by this file's own transcription of the canonical layouts, swizzled with
//! `Swizzle::apply`), runs one warpgroup's `fence; mma_async; commit; wait 0`, and compares
//! every accumulator element (thread and register placed by this file's own transcription of
//! the PTX ISA's fragment table) with an `f64` reference: bit for bit on small integers,
//! whose products and sums are exact, and on general values within the `f32` accumulation
//! bound (`(K + 1) 2^-23` of the sum of magnitudes) and bit for bit against an `f64`
//! rendering of the summation `Stmt::Mma` documents (on a GPU: the probe of wgmma's
//! rounding). Outputs are
//! poisoned. On the emulator only: the planted bugs (an early accumulator read, an operand
//! overwritten before the wait, a missing fence, a warpgroup that is not converged, a named
//! barrier nothing completes).

mod common;

use std::sync::Arc;

use common::ctx;
use cuprum::__private::{KernelArg, LoadedModule};
use cuprum::{BackendKind, DeviceBuffer, Error, LaunchConfig};
use cuprum_emu::EmuError;
use cuprum_ir::ScalarType as S;
use cuprum_ir::wgmma::Descriptor;
use cuprum_ir::*;
use cuprum_testkit::poison::poisoned;
use half::{bf16, f16};
use rand::{Rng, rngs::StdRng};

/// A kernel under construction (a thin layer over the IR builder).
struct K {
    b: KernelBuilder,
}

impl K {
    fn new(name: &str) -> Self {
        Self {
            b: KernelBuilder::new(name),
        }
    }
    fn slice(&mut self, name: &str, elem: S, access: SliceAccess) -> u32 {
        self.b.param(name, ParamKind::Slice { elem, access })
    }
    fn op(&mut self, op: Op) -> Value {
        let text = format!("{op:?}");
        self.b.def(op).unwrap_or_else(|e| panic!("{text}: {e}"))
    }
    fn u32(&mut self, v: u32) -> Value {
        self.b.constant(Constant::u32(v))
    }
    fn u64(&mut self, v: u64) -> Value {
        self.b.constant(Constant::u64(v))
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.op(Op::Binary(BinaryOp::Add, a, b))
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.op(Op::Binary(BinaryOp::Mul, a, b))
    }
    fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.op(Op::Compare(op, a, b))
    }
    fn cast(&mut self, value: Value, to: S) -> Value {
        self.op(Op::Cast { value, to })
    }
    fn tid(&mut self) -> Value {
        self.op(Op::Special(Special::ThreadIdx(Dim::X)))
    }
    fn special(&mut self, s: Special) -> Value {
        self.op(Op::Special(s))
    }
    fn read(&mut self, var: Var) -> Value {
        self.op(Op::ReadVar(var))
    }
    fn var(&mut self, name: &str, ty: S, init: Value) -> Var {
        let v = self.b.var(name, ty);
        self.b.push(Stmt::WriteVar {
            var: v,
            value: init,
        });
        v
    }
    fn push(&mut self, s: Stmt) {
        self.b.push(s);
    }
    fn barrier(&mut self) {
        self.b.push(Stmt::Barrier);
    }
    /// The global address of element `i` (`U64`) of slice parameter `p` of `elem`s.
    fn at(&mut self, p: u32, i: Value, elem: S) -> Value {
        let base = self.op(Op::SliceBase(p));
        let size = self.u64(u64::from(elem.size_bytes()));
        let off = self.mul(i, size);
        self.add(base, off)
    }
    fn load(&mut self, p: u32, i: Value, elem: S) -> Value {
        let addr = self.at(p, i, elem);
        self.op(Op::Load {
            space: AddressSpace::Global,
            ty: elem,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }
    fn store(&mut self, p: u32, i: Value, elem: S, value: Value) {
        let addr = self.at(p, i, elem);
        self.b.push(Stmt::Store {
            space: AddressSpace::Global,
            addr,
            value,
        });
    }
    /// The shared address of word `i` (`U32`) of dynamic shared memory.
    fn word(&mut self, i: Value) -> Value {
        let base = self.op(Op::DynSharedAddr);
        let four = self.u32(4);
        let off = self.mul(i, four);
        self.add(base, off)
    }
    fn store_shared(&mut self, i: Value, value: Value) {
        let addr = self.word(i);
        self.b.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr,
            value,
        });
    }
    fn load_shared(&mut self, i: Value) -> Value {
        let addr = self.word(i);
        self.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }
    fn block(&mut self, f: impl FnOnce(&mut K)) -> Block {
        self.b.begin_block();
        f(self);
        self.b.end_block()
    }
    fn if_else(&mut self, cond: Value, then: impl FnOnce(&mut K), otherwise: impl FnOnce(&mut K)) {
        let then = self.block(then);
        let otherwise = self.block(otherwise);
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }
    fn if_(&mut self, cond: Value, then: impl FnOnce(&mut K)) {
        self.if_else(cond, then, |_| {});
    }
    fn finish(self) -> Kernel {
        let k = self.b.finish();
        if let Err(e) = validate_kernel(&k) {
            panic!("test kernel is invalid: {e}\n{}", print_kernel(&k));
        }
        k
    }
}

/// Loads `kernel` on the test context and launches one block of `threads` with `shared`
/// bytes of dynamic shared memory.
fn launch(kernel: Kernel, threads: u32, shared: u32, args: &[KernelArg]) -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = Module {
        kernels: vec![kernel],
    };
    let module = LoadedModule::load(ctx, Arc::new(module))?;
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared,
    };
    // SAFETY: every slice argument is a live buffer of the parameter's element type, and the
    // kernels stay inside the data the tests lay out for them.
    unsafe { module.launch(&stream, 0, &config, args) }?;
    stream.synchronize()
}

/// Bytes of the shared image (dynamic shared memory, under the 48 KiB every launch may use).
const IMAGE: u32 = 40 * 1024;
/// Where B starts in the image (A at 0); both multiples of 1024.
const B_AT: u32 = 8 * 1024;

#[derive(Clone, Copy, Debug)]
struct Case {
    ty: WgmmaType,
    n: u32,
    swizzle: Swizzle,
    a_regs: bool,
    trans_a: bool,
    trans_b: bool,
    accumulate: bool,
    negate_a: bool,
    negate_b: bool,
}

fn bits_of(ty: WgmmaType, x: f32) -> u32 {
    match ty {
        WgmmaType::F16 => u32::from(f16::from_f32(x).to_bits()),
        WgmmaType::Bf16 => u32::from(bf16::from_f32(x).to_bits()),
        WgmmaType::Tf32 => x.to_bits(),
    }
}

fn value_of(ty: WgmmaType, x: f32) -> f64 {
    match ty {
        WgmmaType::F16 => f64::from(f16::from_f32(x).to_f32()),
        WgmmaType::Bf16 => f64::from(bf16::from_f32(x).to_f32()),
        WgmmaType::Tf32 => f64::from(f32::from_bits(x.to_bits() & 0xFFFF_E000)),
    }
}

/// The canonical layout of an operand (`rows` = M or N, K-major unless `mn_major`): the byte
/// offset of element (mn, k) before the swizzle, and the descriptor's LBO and SBO.
struct Layout {
    swizzle: Swizzle,
    mn_major: bool,
    bytes: u32,
    k: u32,
    rows: u32,
}

impl Layout {
    /// (LBO, SBO) for a tile packed as `offset` lays it out.
    fn offsets(&self) -> (u32, u32) {
        let t = 16 / self.bytes;
        match (self.mn_major, self.swizzle.span_bytes()) {
            // Core matrices of 8 rows x 16 bytes; the K cores of 8 rows side by side.
            (false, None) => (128, 128 * (self.k / t)),
            // Rows of `sw` bytes, 8 to a block.
            (false, Some(sw)) => (16, 8 * sw),
            // Core matrices of 8 K-rows x 16 MN-bytes; MN cores side by side.
            (true, None) => (128 * (self.rows / t), 128),
            // Rows of `sw` MN-bytes, 8 K-rows to a block, K blocks side by side.
            (true, Some(sw)) => (8 * sw * (self.k / 8), 8 * sw),
        }
    }

    fn offset(&self, mn: u32, k: u32) -> u32 {
        let (t, b) = (16 / self.bytes, self.bytes);
        let (lbo, sbo) = self.offsets();
        match (self.mn_major, self.swizzle.span_bytes()) {
            (false, None) => {
                let core = (mn / 8) * sbo + (k / t) * lbo;
                core + (mn % 8) * 16 + (k % t) * b
            }
            (false, Some(sw)) => (mn / 8) * sbo + (mn % 8) * sw + k * b,
            (true, None) => {
                let core = (mn / t) * sbo + (k / 8) * lbo;
                core + (k % 8) * 16 + (mn % t) * b
            }
            (true, Some(sw)) => {
                let per_row = sw / b;
                (mn / per_row) * lbo + (k / 8) * sbo + (k % 8) * sw + (mn % per_row) * b
            }
        }
    }
}

/// The descriptor of an operand at `start` laid out as `l`.
fn descriptor(l: &Layout, start: u32) -> u64 {
    let (lbo, sbo) = l.offsets();
    Descriptor {
        start,
        leading_byte_offset: lbo,
        stride_byte_offset: sbo,
        base_offset: 0,
        swizzle: l.swizzle,
    }
    .encode()
}

/// Thread `t`'s accumulator register `i`: (row, col) of D (the ISA's table).
fn acc_pos(t: u32, i: u32) -> (u32, u32) {
    let (w, lane) = (t / 32, t % 32);
    let (g, q) = (lane / 4, lane % 4);
    let row = 16 * w + g + if i % 4 >= 2 { 8 } else { 0 };
    let col = 8 * (i / 4) + 2 * q + (i % 2);
    (row, col)
}

/// Thread `t`'s four A registers (A in registers), from the `mma.m16n8k16` / `m16n8k8` A
/// fragment tables, warp `w` holding rows `16 w ..`.
fn a_registers(ty: WgmmaType, a: &[f32], k: usize, t: u32) -> [u32; 4] {
    let (w, lane) = ((t / 32) as usize, (t % 32) as usize);
    let (g, q) = (lane / 4 + 16 * w, lane % 4);
    let at = |r: usize, c: usize| bits_of(ty, a[r * k + c]);
    if ty == WgmmaType::Tf32 {
        [at(g, q), at(g + 8, q), at(g, q + 4), at(g + 8, q + 4)]
    } else {
        let pair = |r: usize, c: usize| at(r, c) | at(r, c + 1) << 16;
        [
            pair(g, 2 * q),
            pair(g + 8, 2 * q),
            pair(g, 2 * q + 8),
            pair(g + 8, 2 * q + 8),
        ]
    }
}

/// The kernel: copy the image into dynamic shared memory, load the accumulators, run the
/// wgmma (`bug` plants a misuse), store the accumulators. The host's descriptors hold
/// offsets from the start of dynamic shared memory; the kernel adds its address.
#[derive(Clone, Copy, PartialEq)]
enum Bug {
    None,
    EarlyRead,
    OverwriteB,
    MissingFence,
    Diverged,
    /// No `fence.proxy.async` between writing the operands and the `wgmma` reading them.
    MissingProxyFence,
    /// Register A defined again (a loop's next iteration) while the `wgmma` reading it is in
    /// flight.
    RedefinedA,
}

fn kernel(c: &Case, bug: Bug) -> Kernel {
    let mut k = K::new("wg");
    k.b.align_dyn_shared(1024);
    let img = k.slice("img", S::U32, SliceAccess::ReadOnly);
    let regs = k.slice("regs", S::U32, SliceAccess::ReadOnly);
    let cin = k.slice("cin", S::F32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::F32, SliceAccess::ReadWrite);
    let descs = k.slice("descs", S::U64, SliceAccess::ReadOnly);
    let tid = k.tid();
    let tid64 = k.cast(tid, S::U64);
    for j in 0..IMAGE / 4 / 128 {
        let off = k.u64(u64::from(128 * j));
        let i = k.add(tid64, off);
        let w = k.load(img, i, S::U32);
        let i32_ = k.cast(i, S::U32);
        k.store_shared(i32_, w);
    }
    // wgmma reads shared memory through the async proxy: the generic writes are fenced for
    // it before the barrier (PTX ISA, wgmma's async proxy).
    if bug != Bug::MissingProxyFence {
        k.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
    }
    k.barrier();
    let nacc = c.n / 2;
    let na = k.u64(u64::from(nacc));
    let first = k.mul(tid64, na);
    let acc: Vec<Var> = (0..nacc)
        .map(|i| {
            let r = k.u64(u64::from(i));
            let idx = k.add(first, r);
            let init = k.load(cin, idx, S::F32);
            k.var(&format!("acc{i}"), S::F32, init)
        })
        .collect();
    // The descriptors' start address field counts 16-byte units of the shared window.
    let base = k.op(Op::DynSharedAddr);
    let base = k.cast(base, S::U64);
    let four = k.u32(4);
    let units = k.op(Op::Binary(BinaryOp::Shr, base, four));
    let (zero, one) = (k.u64(0), k.u64(1));
    let da = k.load(descs, zero, S::U64);
    let da = k.add(da, units);
    let db = k.load(descs, one, S::U64);
    let db = k.add(db, units);
    // The planted redefinition: the issue (A's registers loaded, fence, mma, commit) in a
    // loop of two rounds with no wait inside.
    let round = (bug == Bug::RedefinedA).then(|| {
        let zero = k.u32(0);
        let round = k.var("round", S::U32, zero);
        k.b.begin_block();
        round
    });
    let a = if c.a_regs {
        let four = k.u64(4);
        let at = k.mul(tid64, four);
        WgmmaA::Registers([0u64, 1, 2, 3].map(|r| {
            let off = k.u64(r);
            let i = k.add(at, off);
            k.load(regs, i, S::U32)
        }))
    } else {
        WgmmaA::Descriptor(da)
    };
    if bug != Bug::MissingFence {
        k.push(Stmt::WgmmaFence);
    }
    let m = WgmmaMma {
        shape: WgmmaShape { ty: c.ty, n: c.n },
        a,
        b: db,
        scale_d: ScaleD::Const(c.accumulate),
        negate_a: c.negate_a,
        negate_b: c.negate_b,
        trans_a: c.trans_a,
        trans_b: c.trans_b,
        acc: acc.clone(),
    };
    if bug == Bug::Diverged {
        let w0 = k.u32(32);
        let first = k.cmp(CmpOp::Lt, tid, w0);
        k.if_(first, |k| {
            k.b.wgmma_mma(m.clone()).unwrap_or_else(|e| panic!("{e}"));
        });
    } else {
        k.b.wgmma_mma(m).unwrap_or_else(|e| panic!("{e}"));
    }
    k.push(Stmt::WgmmaCommit);
    if let Some(round) = round {
        let r = k.read(round);
        let one = k.u32(1);
        let next = k.add(r, one);
        k.push(Stmt::WriteVar {
            var: round,
            value: next,
        });
        let two = k.u32(2);
        let done = k.cmp(CmpOp::Ge, next, two);
        k.if_(done, |k| k.push(Stmt::Break));
        let body = k.b.end_block();
        k.push(Stmt::Loop { body });
    }
    if bug == Bug::EarlyRead {
        let x = k.read(acc[0]);
        let i = k.u64(0);
        k.store(out, i, S::F32, x);
    }
    if bug == Bug::OverwriteB {
        let at = k.u32(B_AT / 4);
        let i = k.add(at, tid);
        let v = k.u32(0x4000_4000);
        k.store_shared(i, v);
    }
    k.push(Stmt::WgmmaWait { pending: 0 });
    for (i, &v) in acc.iter().enumerate() {
        let r = k.u64(i as u64);
        let idx = k.add(first, r);
        let x = k.read(v);
        k.store(out, idx, S::F32, x);
    }
    k.finish()
}

/// Runs `c` on `a` (64 x K), `b` (K x N) and `acc` (64 x N) values; returns D, row-major.
fn run(c: &Case, a: &[f32], b: &[f32], acc: &[f32], bug: Bug) -> cuprum::Result<Vec<f32>> {
    let (k, n) = (c.ty.k(), c.n);
    let bytes = c.ty.bytes();
    let la = Layout {
        swizzle: c.swizzle,
        mn_major: c.trans_a,
        bytes,
        k,
        rows: 64,
    };
    let lb = Layout {
        swizzle: c.swizzle,
        mn_major: c.trans_b,
        bytes,
        k,
        rows: n,
    };
    let mut image = vec![0u8; IMAGE as usize];
    let mut put = |addr: u32, bits: u32| {
        let at = addr as usize;
        image[at..at + bytes as usize].copy_from_slice(&bits.to_le_bytes()[..bytes as usize]);
    };
    // The image starts at a 1024-byte aligned shared address, so swizzling its offsets
    // swizzles the addresses.
    if !c.a_regs {
        for m in 0..64 {
            for kk in 0..k {
                let bits = bits_of(c.ty, a[(m * k + kk) as usize]);
                put(c.swizzle.apply(la.offset(m, kk)), bits);
            }
        }
    }
    for j in 0..n {
        for kk in 0..k {
            let bits = bits_of(c.ty, b[(kk * n + j) as usize]);
            put(c.swizzle.apply(B_AT + lb.offset(j, kk)), bits);
        }
    }
    let words: Vec<u32> = image
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let regs: Vec<u32> = (0..128)
        .flat_map(|t| a_registers(c.ty, a, k as usize, t))
        .collect();
    let nacc = n / 2;
    let mut cin = vec![0f32; (128 * nacc) as usize];
    for t in 0..128 {
        for i in 0..nacc {
            let (r, col) = acc_pos(t, i);
            cin[(t * nacc + i) as usize] = acc[(r * n + col) as usize];
        }
    }
    let stream = ctx().default_stream();
    let img = DeviceBuffer::from_host(&stream, &words)?;
    let regs = DeviceBuffer::from_host(&stream, &regs)?;
    let cin_d = DeviceBuffer::from_host(&stream, &cin)?;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(cin.len()))?;
    let descs = DeviceBuffer::from_host(&stream, &[descriptor(&la, 0), descriptor(&lb, B_AT)])?;
    let args = [
        KernelArg::slice(&img),
        KernelArg::slice(&regs),
        KernelArg::slice(&cin_d),
        KernelArg::slice_mut(&mut out),
        KernelArg::slice(&descs),
    ];
    launch(kernel(c, bug), 128, IMAGE, &args)?;
    let flat = out.to_host_vec(&stream)?;
    let mut d = vec![f32::NAN; (64 * n) as usize];
    for t in 0..128 {
        for i in 0..nacc {
            let (r, col) = acc_pos(t, i);
            d[(r * n + col) as usize] = flat[(t * nacc + i) as usize];
        }
    }
    Ok(d)
}

/// The `f64` reference of `c` on the rounded inputs.
fn reference(c: &Case, a: &[f32], b: &[f32], acc: &[f32]) -> Vec<f64> {
    let (k, n) = (c.ty.k() as usize, c.n as usize);
    let sa = if c.negate_a { -1.0 } else { 1.0 };
    let sb = if c.negate_b { -1.0 } else { 1.0 };
    (0..64 * n)
        .map(|e| {
            let (r, j) = (e / n, e % n);
            let mut s = if c.accumulate { f64::from(acc[e]) } else { 0.0 };
            for kk in 0..k {
                s += sa * value_of(c.ty, a[r * k + kk]) * sb * value_of(c.ty, b[kk * n + j]);
            }
            s
        })
        .collect()
}

/// The IR's definition of the tensor cores' sum (`Stmt::Mma`, which `Stmt::WgmmaMma`
/// shares), in `f64`, independently of the emulator's integer implementation: the addends
/// (C, when accumulating, and the K products) aligned on the largest exponent (a product on
/// the sum of its operands' exponents), truncated to 25 bits below it, summed exactly,
/// rounded toward zero to `f32`. Element `(r, j)`.
fn tensor_core_sum(c: &Case, a: &[f32], b: &[f32], acc: &[f32], r: usize, j: usize) -> f32 {
    let (k, n) = (c.ty.k() as usize, c.n as usize);
    let exp = |x: f64| ((x.to_bits() >> 52) & 0x7FF) as i32 - 1023;
    let mut addends = Vec::new();
    if c.accumulate {
        let x = f64::from(acc[r * n + j]);
        addends.push((x, (x != 0.0).then(|| exp(x))));
    }
    let sa = if c.negate_a { -1.0 } else { 1.0 };
    let sb = if c.negate_b { -1.0 } else { 1.0 };
    for kk in 0..k {
        let x = sa * value_of(c.ty, a[r * k + kk]);
        let y = sb * value_of(c.ty, b[kk * n + j]);
        addends.push((x * y, (x != 0.0 && y != 0.0).then(|| exp(x) + exp(y))));
    }
    let Some(big) = addends.iter().filter_map(|a| a.1).max() else {
        return 0.0;
    };
    let q = 2f64.powi(big - 25);
    let sum: f64 = addends.iter().map(|(x, _)| (x / q).trunc() * q).sum();
    let f = sum as f32;
    if f64::from(f).abs() > sum.abs() {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    }
}

fn small_ints(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-4i32..=4) as f32).collect()
}

fn cases() -> Vec<Case> {
    let base = Case {
        ty: WgmmaType::Bf16,
        n: 64,
        swizzle: Swizzle::B128,
        a_regs: false,
        trans_a: false,
        trans_b: false,
        accumulate: true,
        negate_a: false,
        negate_b: false,
    };
    let mut out = Vec::new();
    for ty in WgmmaType::ALL {
        for n in [8, 64, 128, 256] {
            for swizzle in Swizzle::ALL {
                out.push(Case {
                    ty,
                    n,
                    swizzle,
                    accumulate: n != 128,
                    ..base
                });
            }
        }
        out.push(Case {
            ty,
            n: 64,
            a_regs: true,
            ..base
        });
    }
    for swizzle in Swizzle::ALL {
        out.push(Case {
            ty: WgmmaType::F16,
            swizzle,
            trans_a: true,
            trans_b: true,
            ..base
        });
        out.push(Case {
            swizzle,
            a_regs: true,
            trans_b: true,
            negate_a: true,
            negate_b: swizzle == Swizzle::B64,
            ..base
        });
    }
    out
}

#[test]
fn exact_products_match_bit_for_bit() {
    let mut rng = cuprum_testkit::random::rng("wgmma_exact");
    let seed = "printed above";
    for c in cases() {
        let (k, n) = (c.ty.k() as usize, c.n as usize);
        let a = small_ints(&mut rng, 64 * k);
        let b = small_ints(&mut rng, k * n);
        let acc = small_ints(&mut rng, 64 * n);
        let got = run(&c, &a, &b, &acc, Bug::None).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let want = reference(&c, &a, &b, &acc);
        for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g.to_bits(),
                (w as f32).to_bits(),
                "{c:?} seed {seed}: D[{}][{}] = {g}, want {w}",
                e / n,
                e % n
            );
        }
    }
}

/// General inputs: within `(K + 1) * 2^-23` of the sum of magnitudes of the exact result
/// (the tensor cores truncate each addend and the sum, see `Stmt::Mma`), and equal to the
/// documented summation bit for bit.
#[test]
fn general_inputs_follow_the_documented_summation() {
    let mut rng = cuprum_testkit::random::rng("wgmma_general");
    let seed = "printed above";
    for ty in WgmmaType::ALL {
        let c = Case {
            ty,
            n: 128,
            swizzle: Swizzle::B128,
            a_regs: ty == WgmmaType::F16,
            trans_a: false,
            trans_b: ty == WgmmaType::F16,
            accumulate: true,
            negate_a: ty == WgmmaType::Bf16,
            negate_b: false,
        };
        let (k, n) = (ty.k() as usize, 128usize);
        let mut gen_ =
            |len| -> Vec<f32> { (0..len).map(|_| rng.random_range(-2.0..2.0)).collect() };
        let (a, b, acc) = (gen_(64 * k), gen_(k * n), gen_(64 * n));
        let got = run(&c, &a, &b, &acc, Bug::None).unwrap_or_else(|e| panic!("{e}"));
        let want = reference(&c, &a, &b, &acc);
        for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let (r, j) = (e / n, e % n);
            let mut mag = f64::from(acc[e]).abs();
            for kk in 0..k {
                mag += (value_of(ty, a[r * k + kk]) * value_of(ty, b[kk * n + j])).abs();
            }
            let bound = (k as f64 + 1.0) * 2f64.powi(-23) * mag;
            assert!(
                (f64::from(g) - w).abs() <= bound,
                "{ty:?} seed {seed}: D[{r}][{j}] = {g}, want {w} within {bound}"
            );
            // The summation itself, bit for bit: on a GPU this pins the tensor cores'
            // rounding for wgmma (measured for mma.sync; assumed the same here).
            let model = tensor_core_sum(&c, &a, &b, &acc, r, j);
            assert_eq!(
                g.to_bits(),
                model.to_bits(),
                "{ty:?} seed {seed}: D[{r}][{j}] = {g}, the documented summation gives {model}"
            );
        }
    }
}

/// Runs a planted bug on the emulator and returns its message; `None` on a GPU, where the
/// bug is undefined behaviour.
fn misuse(bug: Bug) -> Option<String> {
    if ctx().backend() != BackendKind::Emulator {
        eprintln!("planted-bug kernels only run on the emulator");
        return None;
    }
    let c = Case {
        ty: WgmmaType::Bf16,
        n: 16,
        swizzle: Swizzle::B128,
        a_regs: bug == Bug::RedefinedA,
        trans_a: false,
        trans_b: false,
        accumulate: true,
        negate_a: false,
        negate_b: false,
    };
    let z = vec![1.0f32; 64 * 256];
    match run(&c, &z, &z, &z, bug) {
        Err(Error::Emulator {
            source: e @ (EmuError::WgmmaMisuse { .. } | EmuError::MissingProxyFence { .. }),
            ..
        }) => Some(e.to_string()),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("no error reported"),
    }
}

#[test]
fn an_early_accumulator_read_is_reported() {
    let Some(m) = misuse(Bug::EarlyRead) else {
        return;
    };
    assert!(m.contains("early accumulator access"), "{m}");
}

#[test]
fn an_operand_overwritten_before_the_wait_is_reported() {
    let Some(m) = misuse(Bug::OverwriteB) else {
        return;
    };
    assert!(m.contains("overwritten operand"), "{m}");
}

#[test]
fn a_missing_fence_is_reported() {
    let Some(m) = misuse(Bug::MissingFence) else {
        return;
    };
    assert!(m.contains("missing `wgmma.fence`"), "{m}");
}

#[test]
fn operands_written_without_a_proxy_fence_are_reported() {
    let Some(m) = misuse(Bug::MissingProxyFence) else {
        return;
    };
    assert!(m.contains("no `fence.proxy.async`"), "{m}");
}

#[test]
fn register_a_redefined_before_the_wait_is_reported() {
    let Some(m) = misuse(Bug::RedefinedA) else {
        return;
    };
    assert!(m.contains("overwritten register A"), "{m}");
}

#[test]
fn a_diverged_warpgroup_is_reported() {
    let Some(m) = misuse(Bug::Diverged) else {
        return;
    };
    assert!(m.contains("all 128 threads"), "{m}");
}

/// Two producer warps fill shared memory and arrive on named barrier 1; two consumer warps
/// wait on it and read. Every value arrives, and (on the emulator) the race tracker sees the
/// order the barrier gives.
#[test]
fn named_barriers_order_a_producer_and_a_consumer() {
    // Warps 0-1 consume (they run first on the emulator, so a wait that did not wait would
    // read shared memory nothing wrote yet); warps 2-3 produce and only arrive.
    let mut k = K::new("named");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::ReadWrite);
    let tid = k.tid();
    let half = k.u32(64);
    let consumer = k.cmp(CmpOp::Lt, tid, half);
    k.if_else(
        consumer,
        |k| {
            k.push(Stmt::NamedBarrier {
                arrive: false,
                id: 1,
                threads: 128,
            });
            let v = k.load_shared(tid);
            let i = k.cast(tid, S::U64);
            k.store(out, i, S::U32, v);
        },
        |k| {
            let half = k.u32(64);
            let slot = k.op(Op::Binary(BinaryOp::Sub, tid, half));
            let i = k.cast(slot, S::U64);
            let v = k.load(x, i, S::U32);
            let seven = k.u32(7);
            let v = k.mul(v, seven);
            k.store_shared(slot, v);
            k.push(Stmt::NamedBarrier {
                arrive: true,
                id: 1,
                threads: 128,
            });
        },
    );
    let kernel = k.finish();
    let stream = ctx().default_stream();
    let input = cuprum_testkit::random::random_u32(64);
    let x = DeviceBuffer::from_host(&stream, &input).unwrap_or_else(|e| panic!("{e}"));
    let mut out =
        DeviceBuffer::from_host(&stream, &poisoned::<u32>(64)).unwrap_or_else(|e| panic!("{e}"));
    let args = [KernelArg::slice(&x), KernelArg::slice_mut(&mut out)];
    launch(kernel, 128, 256, &args).unwrap_or_else(|e| panic!("{e}"));
    let got = out.to_host_vec(&stream).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = input.iter().map(|v| v.wrapping_mul(7)).collect();
    assert_eq!(got, want);
}

#[test]
fn a_named_barrier_that_never_completes_is_a_deadlock() {
    if ctx().backend() != BackendKind::Emulator {
        eprintln!("planted-bug kernels only run on the emulator");
        return;
    }
    let mut k = K::new("stuck");
    let tid = k.tid();
    let thirty_two = k.u32(32);
    let first = k.cmp(CmpOp::Lt, tid, thirty_two);
    k.if_(first, |k| {
        k.push(Stmt::NamedBarrier {
            arrive: false,
            id: 3,
            threads: 96,
        })
    });
    match launch(k.finish(), 64, 0, &[]) {
        Err(Error::Emulator {
            source: e @ EmuError::NamedBarrierDeadlock { .. },
            ..
        }) => {
            let m = e.to_string();
            assert!(m.contains("named barrier 3 has 32 of its 96"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}

/// `stmatrix` places lane `l`'s register `m` at row `l / 4`, columns `2 (l % 4)` and
/// `+ 1` of matrix `m` (transposed: the same positions of the transpose), as the PTX ISA's
/// table says; rows are addressed by lanes `8 m .. 8 m + 8`.
#[test]
fn stmatrix_stores_the_fragment_layout() {
    for trans in [false, true] {
        let mut k = K::new("st");
        let out = k.slice("out", S::U32, SliceAccess::ReadWrite);
        let lane = k.special(Special::LaneId);
        // Matrix m's row r is 16 bytes at word 4 (8 m + r): lane l addresses row l.
        let four = k.u32(4);
        let w = k.mul(lane, four);
        let addr = k.word(w);
        let values: Vec<Value> = (0..4u32)
            .map(|m| {
                // Element values (m, lane, half) as 16 bits: 64 m + 2 lane + half.
                let base = k.u32(64 * m);
                let two = k.u32(2);
                let l2 = k.mul(lane, two);
                let lo = k.add(base, l2);
                let one = k.u32(1);
                let hi = k.add(lo, one);
                let sixteen = k.u32(16);
                let hi = k.op(Op::Binary(BinaryOp::Shl, hi, sixteen));
                k.op(Op::Binary(BinaryOp::Or, lo, hi))
            })
            .collect();
        k.push(Stmt::StMatrix {
            trans,
            addr,
            values,
        });
        k.barrier();
        let tid = k.tid();
        for j in 0..4 {
            let off = k.u32(32 * j);
            let i = k.add(tid, off);
            let v = k.load_shared(i);
            let i = k.cast(i, S::U64);
            k.store(out, i, S::U32, v);
        }
        let stream = ctx().default_stream();
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(128))
            .unwrap_or_else(|e| panic!("{e}"));
        launch(k.finish(), 32, 512, &[KernelArg::slice_mut(&mut out)])
            .unwrap_or_else(|e| panic!("{e}"));
        let words = out.to_host_vec(&stream).unwrap_or_else(|e| panic!("{e}"));
        let halves: Vec<u16> = words
            .iter()
            .flat_map(|w| [*w as u16, (w >> 16) as u16])
            .collect();
        for m in 0..4usize {
            for lane in 0..32usize {
                for half in 0..2usize {
                    let (r, c) = (lane / 4, 2 * (lane % 4) + half);
                    let (r, c) = if trans { (c, r) } else { (r, c) };
                    let want = (64 * m + 2 * lane + half) as u16;
                    assert_eq!(
                        halves[64 * m + 8 * r + c],
                        want,
                        "trans {trans}: matrix {m} ({r}, {c})"
                    );
                }
            }
        }
    }
}
