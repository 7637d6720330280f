//! Every operation on every type it accepts, every cast and bitcast, every atomic, shuffle and
//! vote: written for both targets and assembled with ptxas (when available).

mod common;

use common::{K, one, write_and_assemble};
use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;

/// A kernel over one byte buffer, with a fresh address per operand or result.
struct Bytes {
    k: K,
    buf: u32,
    next: u64,
}

impl Bytes {
    fn new(name: &str) -> Self {
        let mut k = K::new(name);
        let buf = k.slice("buf", S::U8, SliceAccess::ReadWrite);
        Self { k, buf, next: 0 }
    }
    fn addr(&mut self) -> Value {
        self.next += 8;
        let i = self.k.u64(self.next);
        self.k.elem_addr(self.buf, i, S::U8)
    }
    /// A value of type `ty` that ptxas cannot constant-fold.
    fn input(&mut self, ty: ScalarType) -> Value {
        let a = self.addr();
        self.k.load(AddressSpace::Global, ty, a)
    }
    fn output(&mut self, v: Value) {
        let a = self.addr();
        self.k.store(AddressSpace::Global, a, v);
    }
    fn finish(self) -> Kernel {
        self.k.finish()
    }
}

const CMP: [CmpOp; 6] = [
    CmpOp::Eq,
    CmpOp::Ne,
    CmpOp::Lt,
    CmpOp::Le,
    CmpOp::Gt,
    CmpOp::Ge,
];

fn unary_applies(u: UnaryOp, ty: ScalarType) -> bool {
    ty.has_arithmetic()
        && match u {
            UnaryOp::Not => !ty.is_float(),
            UnaryOp::Neg => ty != S::Bool,
            UnaryOp::CountOnes | UnaryOp::LeadingZeros | UnaryOp::TrailingZeros => ty.is_int(),
            _ => ty.is_float(),
        }
}

fn binary_applies(b: BinaryOp, ty: ScalarType) -> bool {
    let logical = matches!(b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
    match ty {
        S::Bool => logical,
        S::Tf32 => false,
        t if t.is_float() => {
            !logical && !matches!(b, BinaryOp::Shl | BinaryOp::Shr | BinaryOp::MulHigh)
        }
        t => !b.is_float_only() && (b != BinaryOp::MulHigh || t.bits() >= 32),
    }
}

fn ops_on(ty: ScalarType) -> Kernel {
    let mut k = Bytes::new(&format!("ops_{}", ty.rust_name()));
    let (a, b, c) = (k.input(ty), k.input(ty), k.input(ty));
    let amount = k.input(S::U32);
    let cond = k.input(S::Bool);
    for u in UnaryOp::ALL
        .iter()
        .copied()
        .filter(|u| unary_applies(*u, ty))
    {
        let r = k.k.op(Op::Unary(u, a));
        k.output(r);
    }
    for op in BinaryOp::ALL
        .iter()
        .copied()
        .filter(|op| binary_applies(*op, ty))
    {
        let rhs = if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
            amount
        } else {
            b
        };
        let r = k.k.bin(op, a, rhs);
        k.output(r);
    }
    if ty.is_float() {
        let r = k.k.op(Op::Ternary(TernaryOp::MulAdd, a, b, c));
        k.output(r);
    }
    for op in CMP.into_iter().filter(|_| ty.has_arithmetic()) {
        let r = k.k.cmp(op, a, b);
        k.output(r);
    }
    let r = k.k.op(Op::Select {
        cond,
        if_true: a,
        if_false: b,
    });
    k.output(r);
    // Constants of the type, including extreme bit patterns.
    for bits in [0u64, 1, u64::MAX, 1 << (ty.bits() - 1)] {
        let v = k.k.c(Constant::new(ty, bits));
        k.output(v);
    }
    k.finish()
}

#[test]
fn every_op_on_every_type() {
    let module = Module {
        kernels: ScalarType::ALL.into_iter().map(ops_on).collect(),
    };
    let ptx = write_and_assemble(&module);
    // Shift amounts are reduced modulo the width.
    assert!(ptx.contains("and.b32 %r") && ptx.contains(", 7;") && ptx.contains(", 63;"));
    // Narrow integers are re-normalised after wrapping arithmetic.
    assert!(ptx.contains("cvt.s32.s8") && ptx.contains("cvt.s32.s16"));
    assert!(ptx.contains("setp.neu.f32") && ptx.contains("setp.neu.f64"));
    assert!(ptx.contains("div.rn.f64") && ptx.contains("sqrt.rn.f32"));
    assert!(ptx.contains("cvt.rn.bf16.f32") && ptx.contains("cvt.rn.f16.f32"));
    assert!(ptx.contains("mov.f32 %f") && ptx.contains("0f3F800000"));
}

/// Each kernel separately too, so a failure names its type.
#[test]
fn ops_per_type() {
    for ty in ScalarType::ALL {
        write_and_assemble(&one(ops_on(ty)));
    }
}

#[test]
fn every_cast_and_bitcast() {
    let mut k = Bytes::new("casts");
    for from in ScalarType::ALL {
        let v = k.input(from);
        for to in ScalarType::ALL {
            if to == S::Bool && from != S::Bool {
                continue;
            }
            let r = k.k.cast(v, to);
            k.output(r);
            let bitcast_ok = from != S::Bool
                && to != S::Bool
                && from.size_bytes() == to.size_bytes()
                && (to != S::Tf32 || from == S::Tf32);
            if bitcast_ok {
                let r = k.k.op(Op::Bitcast { value: v, to });
                k.output(r);
            }
        }
    }
    let ptx = write_and_assemble(&one(k.finish()));
    assert!(ptx.contains("cvt.rzi.s64.f64") && ptx.contains("cvt.rzi.u32.f32"));
    assert!(
        ptx.contains("cvt.rz.f32.f64"),
        "round to odd on the way to halves"
    );
    assert!(ptx.contains("selp.f32 %f") && ptx.contains("0f3F800000, 0f00000000"));
}

#[test]
fn every_atomic() {
    let mut k = Bytes::new("atomics");
    let sh = k.k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: S::U64,
        len: 4,
    });
    let shared = k.k.op(Op::SharedAddr(sh));
    let ops = AtomicOp::ALL;
    let scopes = [Scope::Block, Scope::Device, Scope::System];
    for (n, ty) in [S::I32, S::U32, S::I64, S::U64, S::F32, S::F64]
        .into_iter()
        .enumerate()
    {
        let value = k.input(ty);
        let compare = k.input(ty);
        for op in ops {
            if !op.applies_to(ty) {
                continue;
            }
            for space in [AddressSpace::Global, AddressSpace::Shared] {
                let addr = if space == AddressSpace::Global {
                    k.addr()
                } else {
                    shared
                };
                let r = k.k.op(Op::Atomic {
                    op,
                    space,
                    scope: scopes[n % 3],
                    order: cuprum_ir::MemOrder::Relaxed,
                    addr,
                    value,
                    compare: (op == AtomicOp::CompareExchange).then_some(compare),
                });
                k.output(r);
            }
        }
    }
    let ptx = write_and_assemble(&one(k.finish()));
    for s in [
        "atom.relaxed.cta.global.add.u32",
        "atom.relaxed.gpu.shared.min.u32",
        "atom.relaxed.sys.global.max.s64",
        "atom.relaxed.cta.global.cas.b64",
        "atom.relaxed.gpu.global.add.f32",
        "atom.relaxed.sys.shared.add.f64",
        "atom.relaxed.cta.global.exch.b32",
        "neg.s64",
    ] {
        assert!(ptx.contains(s), "{s}\n{ptx}");
    }
}

#[test]
fn every_shuffle_and_vote() {
    let mut k = Bytes::new("warp");
    let lane = k.input(S::U32);
    let pred = k.input(S::Bool);
    let modes = [
        ShuffleMode::Idx,
        ShuffleMode::Up,
        ShuffleMode::Down,
        ShuffleMode::Xor,
    ];
    let votes = [VoteMode::All, VoteMode::Any, VoteMode::Ballot];
    let inputs: Vec<Value> = ScalarType::ALL.iter().map(|&t| k.input(t)).collect();
    // At the top level (full mask) ...
    for &v in &inputs {
        for mode in modes {
            let r = k.k.op(Op::Shuffle {
                mode,
                value: v,
                lane,
            });
            k.output(r);
        }
    }
    for mode in votes {
        let r = k.k.op(Op::Vote { mode, pred });
        k.output(r);
    }
    // ... and where lanes may have diverged (the exact mask of the branch, by ballot).
    let mut kk = std::mem::replace(&mut k.k, K::new("unused"));
    kk.if_(pred, |kk| {
        k.k = std::mem::replace(kk, K::new("unused"));
        for &v in &inputs[9..] {
            let r = k.k.op(Op::Shuffle {
                mode: ShuffleMode::Down,
                value: v,
                lane,
            });
            k.output(r);
        }
        for mode in votes {
            let r = k.k.op(Op::Vote { mode, pred });
            k.output(r);
        }
        *kk = std::mem::replace(&mut k.k, K::new("unused"));
    });
    k.k = kk;
    let ptx = write_and_assemble(&one(k.finish()));
    for s in [
        "shfl.sync.idx.b32",
        "shfl.sync.up.b32",
        "shfl.sync.down.b32",
        "shfl.sync.bfly.b32",
        "0x1f, 0xffffffff;",
        "0x0, 0xffffffff;",
        "vote.sync.all.pred",
        "vote.sync.any.pred",
        "vote.sync.ballot.b32",
    ] {
        assert!(ptx.contains(s), "{s}\n{ptx}");
    }
    // `activemask` names only the lanes that happen to have reconverged; inside the branch the
    // mask is the ballot of its condition.
    assert!(!ptx.contains("activemask"), "{ptx}");
    assert!(
        ptx.lines()
            .any(|l| l.contains("shfl.sync.down.b32") && !l.contains("0xffffffff")),
        "no shuffle with the branch's mask\n{ptx}"
    );
}

#[test]
fn every_vector_access() {
    let mut k = K::new("vectors");
    let ro = k.slice("ro", S::U8, SliceAccess::ReadOnly);
    let rw = k.slice("rw", S::U8, SliceAccess::ReadWrite);
    let sh = k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: S::U64,
        len: 8,
    });
    let lo = k.b.local_array(ArrayDecl {
        name: "l".into(),
        elem: S::U64,
        len: 8,
    });
    let shared = k.op(Op::SharedAddr(sh));
    let local = k.op(Op::LocalAddr(lo));
    let mut expected = Vec::new();
    let mut at = 0u64;
    for &ty in ScalarType::ALL.iter().filter(|&&t| t != S::Bool) {
        for lanes in [2usize, 4] {
            if ty.size_bytes() as usize * lanes > 16 {
                continue;
            }
            at += 16;
            let i = k.u64(at);
            let src = k.elem_addr(ro, i, S::U8);
            let d =
                k.b.vector_load(AddressSpace::Global, ty, src, lanes)
                    .unwrap();
            let dst = k.elem_addr(rw, i, S::U8);
            k.b.vector_store(AddressSpace::Global, dst, d.clone())
                .unwrap();
            // Through shared and local memory and back (the same bits).
            k.b.vector_store(AddressSpace::Shared, shared, d.clone())
                .unwrap();
            let s =
                k.b.vector_load(AddressSpace::Shared, ty, shared, lanes)
                    .unwrap();
            k.b.vector_store(AddressSpace::Local, local, s).unwrap();
            let l =
                k.b.vector_load(AddressSpace::Local, ty, local, lanes)
                    .unwrap();
            k.b.vector_store(AddressSpace::Global, dst, l).unwrap();
            expected.push(format!("ld.global.nc.v{lanes}.{}", mem_name(ty)));
        }
    }
    let ptx = write_and_assemble(&one(k.finish()));
    for s in expected.iter().map(String::as_str).chain([
        "st.global.v4.u32",
        "ld.shared.v2.f64",
        "st.local.v4.b16",
        "ld.local.v4.u8",
    ]) {
        assert!(ptx.contains(s), "{s}\n{ptx}");
    }
}

/// The PTX memory type name of `ty` for loads.
fn mem_name(ty: ScalarType) -> &'static str {
    match ty {
        S::Bool | S::U8 => "u8",
        S::I8 => "s8",
        S::I16 => "s16",
        S::U16 => "u16",
        S::I32 => "s32",
        S::U32 => "u32",
        S::I64 => "s64",
        S::U64 => "u64",
        S::F16 | S::BF16 => "b16",
        S::F32 | S::Tf32 => "f32",
        S::F64 => "f64",
    }
}

#[test]
fn the_async_proxy_fence_needs_sm_90() {
    // Both state spaces: the shared-memory form is what tile kernels and TMA programs emit
    // (cheaper on an H200), the all-spaces form what `fence_proxy_async()` promises.
    for (space, text) in [
        (cuprum_ir::ProxyFenceSpace::All, "\tfence.proxy.async;\n"),
        (
            cuprum_ir::ProxyFenceSpace::SharedCta,
            "\tfence.proxy.async.shared::cta;\n",
        ),
    ] {
        let mut k = K::new("proxy_fence");
        k.b.push(Stmt::FenceProxyAsync { space });
        let module = one(k.finish());
        let ptx = match cuprum_ptx::write_module(&module, cuprum_ptx::Target::Sm90) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert!(ptx.contains(text), "{space:?}: {ptx}");
        if let Err(e) = cuprum_testkit::ptxas::check(&ptx, cuprum_ptx::Target::Sm90.name()) {
            panic!("{e}\n{ptx}");
        }
        match cuprum_ptx::write_module(&module, cuprum_ptx::Target::Sm80) {
            Err(cuprum_ptx::PtxError::Unsupported { kernel, what }) => {
                assert_eq!(kernel, "proxy_fence");
                assert!(what.contains("compute capability 9.0"), "{what}");
            }
            other => panic!("sm_80 accepted fence.proxy.async: {other:?}"),
        }
    }
}

#[test]
fn eviction_hints_become_l1_priorities_with_an_l2_policy() {
    let mut k = K::new("evictions");
    let ro = k.slice("ro", S::F32, SliceAccess::ReadOnly);
    let rw = k.slice("rw", S::F32, SliceAccess::ReadWrite);
    let zero = k.u64(0);
    let src = k.elem_addr(ro, zero, S::F32);
    let kept =
        k.b.vector_load_evicting(AddressSpace::Global, S::F32, src, 4, Eviction::Last)
            .unwrap();
    let eight = k.u64(8);
    let at = k.elem_addr(rw, eight, S::F32);
    let dropped = k.op(Op::Load {
        space: AddressSpace::Global,
        ty: S::F32,
        addr: at,
        eviction: Eviction::First,
    });
    let plain = k.op(Op::Load {
        space: AddressSpace::Global,
        ty: S::F32,
        addr: src,
        eviction: Eviction::Normal,
    });
    let s =
        k.b.def(Op::Binary(BinaryOp::Add, kept[3], dropped))
            .unwrap();
    let s = k.b.def(Op::Binary(BinaryOp::Add, s, plain)).unwrap();
    k.store(AddressSpace::Global, at, s);
    let ptx = write_and_assemble(&one(k.finish()));
    for line in [
        "createpolicy.fractional.L2::evict_last.b64 %rd",
        "ld.global.nc.L1::evict_last.L2::cache_hint.v4.f32 {",
        "createpolicy.fractional.L2::evict_first.b64 %rd",
        // A read-write slice: no `.nc`, the hint all the same.
        "ld.global.L1::evict_first.L2::cache_hint.f32 %f",
    ] {
        assert!(ptx.contains(line), "{line}\n{ptx}");
    }
    // The plain load has neither.
    assert_eq!(ptx.matches("cache_hint").count(), 2, "{ptx}");
    assert_eq!(ptx.matches("ld.global.nc.f32").count(), 1, "{ptx}");
}
