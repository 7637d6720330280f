//! Whole kernels of the shapes front ends produce: each is written for both targets, checked
//! for its structure, and assembled with ptxas (when available).

mod common;

use common::{K, one, write_and_assemble};
use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;
use cuprum_ptx::{MachineParam, PtxError, Target, machine_params, write_module};

fn vecadd() -> Kernel {
    let mut k = K::new("vecadd");
    let a = k.slice("a", S::F32, SliceAccess::ReadOnly);
    let b = k.slice("b", S::F32, SliceAccess::ReadOnly);
    let c = k.slice("c", S::F32, SliceAccess::Disjoint);
    let i = k.global_index();
    let len = k.op(Op::SliceLen(c));
    let inb = k.cmp(CmpOp::Lt, i, len);
    k.if_(inb, |k| {
        let pa = k.elem_addr(a, i, S::F32);
        let pb = k.elem_addr(b, i, S::F32);
        let pc = k.elem_addr(c, i, S::F32);
        let x = k.load(AddressSpace::Global, S::F32, pa);
        let y = k.load(AddressSpace::Global, S::F32, pb);
        let s = k.bin(BinaryOp::Add, x, y);
        k.store(AddressSpace::Global, pc, s);
    });
    k.finish()
}

#[test]
fn vecadd_structure_and_read_only_loads() {
    let ptx = write_and_assemble(&one(vecadd()));
    assert!(ptx.contains(".param .u64 vecadd_param_0"));
    assert!(ptx.contains(".param .u64 vecadd_param_5"));
    assert!(!ptx.contains("vecadd_param_6"));
    // Loads from `&[f32]` use the read-only path; the store does not.
    assert_eq!(ptx.matches("ld.global.nc.f32").count(), 2, "{ptx}");
    assert!(ptx.contains("st.global.f32"));
    assert!(ptx.contains("add.rn.f32"));
    assert!(ptx.contains("mov.u32 %r") && ptx.contains("%ctaid.x"));
    assert!(!ptx.contains(".maxntid"));
}

#[test]
fn saxpy_with_launch_bounds() {
    let mut k = K::new("saxpy");
    k.b.set_launch_bounds(Some(LaunchBounds {
        max_threads: 128,
        min_blocks_per_sm: Some(4),
    }));
    let alpha = k.scalar("alpha", S::F32);
    let x = k.slice("x", S::F32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::F32, SliceAccess::Disjoint);
    let i = k.global_index();
    let len = k.op(Op::SliceLen(y));
    let inb = k.cmp(CmpOp::Lt, i, len);
    k.if_(inb, |k| {
        let px = k.elem_addr(x, i, S::F32);
        let py = k.elem_addr(y, i, S::F32);
        let xv = k.load(AddressSpace::Global, S::F32, px);
        let yv = k.load(AddressSpace::Global, S::F32, py);
        let m = k.bin(BinaryOp::Mul, alpha, xv);
        let s = k.bin(BinaryOp::Add, m, yv);
        k.store(AddressSpace::Global, py, s);
    });
    let kernel = k.finish();
    assert_eq!(
        machine_params(&kernel),
        vec![
            MachineParam {
                name: "saxpy_param_0".into(),
                size_bytes: 4
            },
            MachineParam {
                name: "saxpy_param_1".into(),
                size_bytes: 8
            },
            MachineParam {
                name: "saxpy_param_2".into(),
                size_bytes: 8
            },
            MachineParam {
                name: "saxpy_param_3".into(),
                size_bytes: 8
            },
            MachineParam {
                name: "saxpy_param_4".into(),
                size_bytes: 8
            },
        ]
    );
    let ptx = write_and_assemble(&one(kernel));
    assert!(ptx.contains(".maxntid 128, 1, 1\n"));
    assert!(ptx.contains(".minnctapersm 4\n"));
    assert!(ptx.contains(".param .f32 saxpy_param_0"));
    assert!(ptx.contains("ld.param.f32"));
    // Multiply then add stays two roundings: never an fma.
    assert!(ptx.contains("mul.rn.f32") && !ptx.contains("fma"));
    assert_eq!(ptx.matches("ld.global.nc.f32").count(), 1);
}

#[test]
fn loop_with_break_continue_and_return() {
    let mut k = K::new("looping");
    let n = k.scalar("n", S::U32);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let j = k.b.var("j", S::U32);
    let acc = k.b.var("acc", S::U32);
    let zero = k.u32(0);
    k.write(j, zero);
    k.write(acc, zero);
    let tid = k.special(Special::ThreadIdx(Dim::X));
    let big = k.u32(1000);
    let early = k.cmp(CmpOp::Gt, tid, big);
    k.if_(early, |k| k.b.push(Stmt::Return));
    k.loop_(|k| {
        let jv = k.read(j);
        let done = k.cmp(CmpOp::Ge, jv, n);
        k.if_(done, |k| k.b.push(Stmt::Break));
        let one = k.u32(1);
        let next = k.bin(BinaryOp::Add, jv, one);
        k.write(j, next);
        let three = k.u32(3);
        let r = k.bin(BinaryOp::Rem, jv, three);
        let skip = k.cmp(CmpOp::Eq, r, zero);
        k.if_(skip, |k| k.b.push(Stmt::Continue));
        // A nested loop that breaks out at once.
        k.loop_(|k| k.b.push(Stmt::Break));
        let a = k.read(acc);
        let s = k.bin(BinaryOp::Add, a, jv);
        k.write(acc, s);
    });
    let t64 = k.cast(tid, S::U64);
    let p = k.elem_addr(out, t64, S::U32);
    let a = k.read(acc);
    k.store(AddressSpace::Global, p, a);
    let ptx = write_and_assemble(&one(k.finish()));
    assert!(ptx.contains("ret;"));
    assert!(ptx.matches("bra $L__").count() >= 4, "{ptx}");
}

#[test]
fn shared_memory_barrier_and_dynamic_shared() {
    let mut k = K::new("shared");
    let out = k.slice("out", S::F32, SliceAccess::Disjoint);
    let s0 = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::F32,
        len: 256,
    });
    let s1 = k.b.shared_array(ArrayDecl {
        name: "flags".into(),
        elem: S::U8,
        len: 3,
    });
    let tid = k.special(Special::ThreadIdx(Dim::X));
    let four = k.u32(4);
    let off = k.bin(BinaryOp::Mul, tid, four);
    let base = k.op(Op::SharedAddr(s0));
    let addr = k.bin(BinaryOp::Add, base, off);
    let f = k.cast(tid, S::F32);
    k.store(AddressSpace::Shared, addr, f);
    let fl = k.op(Op::SharedAddr(s1));
    let t = k.c(Constant::bool(true));
    k.store(AddressSpace::Shared, fl, t);
    k.b.push(Stmt::Barrier);
    let mask = k.u32(255);
    let one_v = k.u32(1);
    let nb = k.bin(BinaryOp::Add, tid, one_v);
    let nb = k.bin(BinaryOp::And, nb, mask);
    let noff = k.bin(BinaryOp::Mul, nb, four);
    let naddr = k.bin(BinaryOp::Add, base, noff);
    let v = k.load(AddressSpace::Shared, S::F32, naddr);
    let flag = k.load(AddressSpace::Shared, S::Bool, fl);
    let dynb = k.op(Op::DynSharedAddr);
    let daddr = k.bin(BinaryOp::Add, dynb, off);
    k.store(AddressSpace::Shared, daddr, v);
    k.b.push(Stmt::Barrier);
    let w = k.load(AddressSpace::Shared, S::F32, daddr);
    let zero = k.c(Constant::f32(0.0));
    let r = k.op(Op::Select {
        cond: flag,
        if_true: w,
        if_false: zero,
    });
    let t64 = k.cast(tid, S::U64);
    let p = k.elem_addr(out, t64, S::F32);
    k.store(AddressSpace::Global, p, r);
    let ptx = write_and_assemble(&one(k.finish()));
    // 1024 bytes of floats, then 3 bytes at offset 1024, rounded up to 16.
    assert!(ptx.contains(".shared .align 16 .b8 $smem[1040];"), "{ptx}");
    assert!(ptx.contains("add.u32 %r") && ptx.contains(", 1024;"));
    assert!(ptx.contains(".extern .shared .align 16 .b8 $cuprum_dsmem[];"));
    assert!(ptx.contains("bar.sync 0;"));
    assert!(ptx.contains("ld.shared.f32"));
    assert!(ptx.contains("ld.shared.u8"));
    assert!(ptx.contains("st.shared.u8"));
}

/// Dynamic shared memory that must start 1024-aligned (TMA's 128-byte swizzle) is declared
/// 16-byte aligned, which the driver's linker keeps, and rounded up in the kernel, into the
/// padding the launch adds (`Kernel::dyn_shared_padding`).
#[test]
fn dynamic_shared_memory_aligned_above_16_bytes_rounds_its_start_up() {
    let mut k = K::new("aligned_dynamic");
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    k.b.align_dyn_shared(1024);
    let base = k.op(Op::DynSharedAddr);
    let tid = k.special(Special::ThreadIdx(Dim::X));
    let four = k.u32(4);
    let off = k.bin(BinaryOp::Mul, tid, four);
    let addr = k.bin(BinaryOp::Add, base, off);
    k.store(AddressSpace::Shared, addr, tid);
    let t64 = k.cast(tid, S::U64);
    let p = k.elem_addr(out, t64, S::U32);
    k.store(AddressSpace::Global, p, base);
    let kernel = k.finish();
    assert_eq!(kernel.dyn_shared_padding(), 1008);
    let ptx = write_and_assemble(&one(kernel));
    assert!(
        ptx.contains(".extern .shared .align 16 .b8 $cuprum_dsmem[];"),
        "{ptx}"
    );
    assert!(!ptx.contains(".align 1024"), "{ptx}");
    assert!(
        ptx.contains(", 1008;") && ptx.contains(", 0xFFFFFC00;"),
        "{ptx}"
    );
}

#[test]
fn local_arrays() {
    let mut k = K::new("locals");
    let out = k.slice("out", S::I32, SliceAccess::Disjoint);
    let l0 = k.b.local_array(ArrayDecl {
        name: "a".into(),
        elem: S::I32,
        len: 8,
    });
    let l1 = k.b.local_array(ArrayDecl {
        name: "b".into(),
        elem: S::F64,
        len: 2,
    });
    let tid = k.special(Special::ThreadIdx(Dim::X));
    let seven = k.u32(7);
    let idx = k.bin(BinaryOp::And, tid, seven);
    let four = k.u32(4);
    let off = k.bin(BinaryOp::Mul, idx, four);
    let base = k.op(Op::LocalAddr(l0));
    let addr = k.bin(BinaryOp::Add, base, off);
    let v = k.cast(tid, S::I32);
    k.store(AddressSpace::Local, addr, v);
    let b1 = k.op(Op::LocalAddr(l1));
    let d = k.cast(tid, S::F64);
    k.store(AddressSpace::Local, b1, d);
    let back = k.load(AddressSpace::Local, S::I32, addr);
    let dd = k.load(AddressSpace::Local, S::F64, b1);
    let di = k.cast(dd, S::I32);
    let s = k.bin(BinaryOp::Add, back, di);
    let t64 = k.cast(tid, S::U64);
    let p = k.elem_addr(out, t64, S::I32);
    k.store(AddressSpace::Global, p, s);
    let ptx = write_and_assemble(&one(k.finish()));
    assert!(ptx.contains(".local .align 16 .b8 $lmem[48];"), "{ptx}");
    assert!(ptx.contains("ld.local.s32") && ptx.contains("st.local.f64"));
}

#[test]
fn traps_fences_and_every_special_register() {
    let mut k = K::new("misc");
    let out = k.slice("out", S::U32, SliceAccess::ReadWrite);
    let mut acc = k.u32(0);
    for s in [
        Special::ThreadIdx(Dim::X),
        Special::ThreadIdx(Dim::Y),
        Special::ThreadIdx(Dim::Z),
        Special::BlockDim(Dim::X),
        Special::BlockDim(Dim::Y),
        Special::BlockDim(Dim::Z),
        Special::BlockIdx(Dim::X),
        Special::BlockIdx(Dim::Y),
        Special::BlockIdx(Dim::Z),
        Special::GridDim(Dim::X),
        Special::GridDim(Dim::Y),
        Special::GridDim(Dim::Z),
        Special::LaneId,
    ] {
        let v = k.special(s);
        acc = k.bin(BinaryOp::Xor, acc, v);
    }
    let i = k.global_index();
    let len = k.op(Op::SliceLen(out));
    let oob = k.cmp(CmpOp::Ge, i, len);
    k.if_(oob, |k| {
        k.b.push(Stmt::Trap(TrapKind::BoundsCheck {
            index: i,
            len,
            site: "out[i]".into(),
        }))
    });
    let zero = k.u32(0);
    let z = k.cmp(CmpOp::Eq, acc, zero);
    k.if_else(
        z,
        |k| {
            k.b.push(Stmt::Trap(TrapKind::DivideByZero {
                site: "a / b".into(),
            }))
        },
        |k| {
            k.b.push(Stmt::Trap(TrapKind::Assert {
                message: "never".into(),
            }))
        },
    );
    for scope in [Scope::Block, Scope::Device, Scope::System] {
        k.b.push(Stmt::Fence { scope });
    }
    let p = k.elem_addr(out, i, S::U32);
    k.store(AddressSpace::Global, p, acc);
    let ptx = write_and_assemble(&one(k.finish()));
    for s in [
        "%tid.z",
        "%ntid.y",
        "%ctaid.z",
        "%nctaid.x",
        "%laneid",
        "trap;",
    ] {
        assert!(ptx.contains(s), "{s}\n{ptx}");
    }
    for s in ["fence.sc.cta;", "fence.sc.gpu;", "fence.sc.sys;"] {
        assert!(ptx.contains(s), "{s}");
    }
}

#[test]
fn several_kernels_in_one_module() {
    let mut m = one(vecadd());
    let mut k = K::new("empty");
    k.b.set_launch_bounds(Some(LaunchBounds {
        max_threads: 1024,
        min_blocks_per_sm: None,
    }));
    m.kernels.push(k.finish());
    let ptx = write_and_assemble(&m);
    assert!(ptx.contains(".visible .entry empty()"));
    assert!(ptx.contains(".maxntid 1024, 1, 1") && !ptx.contains(".minnctapersm"));
}

#[test]
fn a_declared_block_is_reqntid() {
    let mut k = K::new("shaped");
    k.b.set_launch_bounds(Some(LaunchBounds {
        max_threads: 256,
        min_blocks_per_sm: Some(2),
    }));
    k.b.set_block(Some((32, 8, 1)));
    let ptx = write_and_assemble(&one(k.finish()));
    assert!(ptx.contains(".reqntid 32, 8, 1"), "{ptx}");
    assert!(ptx.contains(".minnctapersm 2"), "{ptx}");
    assert!(!ptx.contains(".maxntid"), "{ptx}");
}

#[test]
fn invalid_ir_is_rejected() {
    let mut k = vecadd();
    k.name = "not valid".into();
    match write_module(&one(k), Target::Sm80) {
        Err(PtxError::Invalid(e)) => assert!(e.message.contains("identifier")),
        other => panic!("{other:?}"),
    }
    let m = Module {
        kernels: vec![vecadd(), vecadd()],
    };
    assert!(matches!(
        write_module(&m, Target::Sm90),
        Err(PtxError::Invalid(_))
    ));
}

#[test]
fn f64_transcendentals_are_pure_arithmetic() {
    for u in [
        UnaryOp::Exp,
        UnaryOp::Exp2,
        UnaryOp::Ln,
        UnaryOp::Log2,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Tanh,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::ExpM1,
        UnaryOp::Ln1p,
    ] {
        let mut k = K::new("f64fn");
        let x = k.scalar("x", S::F64);
        k.op(Op::Unary(u, x));
        let ptx = write_module(&one(k.finish()), Target::Sm90).unwrap();
        assert!(ptx.contains("fma.rn.f64"), "{u:?}");
        assert!(!ptx.contains("approx"), "{u:?}");
        // Only the functions that read a table declare it.
        let trig = matches!(u, UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan);
        assert_eq!(ptx.contains("$cuprum_two_over_pi_64"), trig, "{u:?}");
        assert_eq!(ptx.contains("$cuprum_atan_hi"), u == UnaryOp::Atan, "{u:?}");
    }
}

#[test]
fn targets() {
    assert_eq!(Target::Sm80.name(), "sm_80");
    assert_eq!(Target::Sm90.name(), "sm_90");
    assert_eq!(Target::from_compute_capability(9, 0), Some(Target::Sm90));
    assert_eq!(Target::from_compute_capability(10, 0), Some(Target::Sm90));
    assert_eq!(Target::from_compute_capability(8, 6), Some(Target::Sm80));
    assert_eq!(Target::from_compute_capability(8, 0), Some(Target::Sm80));
    assert_eq!(Target::from_compute_capability(7, 5), None);
}

#[test]
fn output_is_deterministic() {
    let m = one(vecadd());
    assert_eq!(
        write_module(&m, Target::Sm80).unwrap(),
        write_module(&m, Target::Sm80).unwrap()
    );
}

#[test]
fn writing_a_small_kernel_is_fast() {
    let m = one(vecadd());
    let n = 200;
    let start = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(write_module(&m, Target::Sm90).unwrap());
    }
    let per = start.elapsed() / n;
    eprintln!("write_module(vecadd): {per:?} per call");
    // Well under a millisecond in release builds; generous here for debug builds on busy CI.
    assert!(per.as_micros() < 2000, "{per:?}");
}

#[test]
#[ignore = "prints the PTX of a few kernels; run with --ignored --nocapture"]
fn show() {
    println!("{}", write_module(&one(vecadd()), Target::Sm90).unwrap());
}

#[test]
fn trig_table_is_declared_once_per_module() {
    let trig = |name: &str, u: UnaryOp, ty: ScalarType| {
        let mut k = K::new(name);
        let x = k.scalar("x", ty);
        let out = k.slice("out", ty, SliceAccess::Disjoint);
        let r = k.op(Op::Unary(u, x));
        let zero = k.u64(0);
        let p = k.elem_addr(out, zero, ty);
        k.store(AddressSpace::Global, p, r);
        k.finish()
    };
    let m = Module {
        kernels: vec![
            trig("s", UnaryOp::Sin, S::F32),
            trig("c", UnaryOp::Cos, S::BF16),
            vecadd(),
        ],
    };
    let ptx = write_and_assemble(&m);
    assert_eq!(
        ptx.matches(".const .align 4 .b32 $cuprum_two_over_pi[8]")
            .count(),
        1
    );
    assert_eq!(ptx.matches("ld.const.u32").count(), 8);
    assert!(!write_and_assemble(&one(vecadd())).contains(".const"));
}

#[test]
fn float_to_int_casts_map_nan_to_zero() {
    let mut k = K::new("nan_cast");
    let x = k.scalar("x", S::F64);
    let out = k.slice("out", S::I64, SliceAccess::Disjoint);
    let r = k.cast(x, S::I64);
    let zero = k.u64(0);
    let p = k.elem_addr(out, zero, S::I64);
    k.store(AddressSpace::Global, p, r);
    let ptx = write_and_assemble(&one(k.finish()));
    assert!(ptx.contains("cvt.rzi.s64.f64"));
    assert!(ptx.contains("setp.num.f64"));
}

/// `out[i]` = `f16(x[i])` in the low half and `f16(y[i])` in the high half, packed as the IR
/// spells it (bits zero-extended, the high one shifted left by 16, or-ed); with `floats`
/// false, two `u16` loads packed the same way.
fn packed_pair(floats: bool) -> Kernel {
    let mut k = K::new("packed_pair");
    let elem = if floats { S::F32 } else { S::U16 };
    let x = k.slice("x", elem, SliceAccess::ReadOnly);
    let y = k.slice("y", elem, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let i = k.global_index();
    let len = k.op(Op::SliceLen(out));
    let inb = k.cmp(CmpOp::Lt, i, len);
    k.if_(inb, |k| {
        let half_bits = |k: &mut K, slice: u32| {
            let at = k.elem_addr(slice, i, elem);
            let v = k.load(AddressSpace::Global, elem, at);
            let bits = if floats {
                let h = k.cast(v, S::F16);
                k.op(Op::Bitcast {
                    value: h,
                    to: S::U16,
                })
            } else {
                v
            };
            k.cast(bits, S::U32)
        };
        let lo = half_bits(k, x);
        let hi = half_bits(k, y);
        let sixteen = k.u32(16);
        let hi = k.bin(BinaryOp::Shl, hi, sixteen);
        let word = k.bin(BinaryOp::Or, lo, hi);
        let at = k.elem_addr(out, i, S::U32);
        k.store(AddressSpace::Global, at, word);
    });
    k.finish()
}

#[test]
fn two_halves_packed_into_a_word_are_one_vector_move() {
    // Two f16 conversions packed: `mov.b32 d, {lo, hi}`, which ptxas makes one
    // `F2FP.PACK_AB`, instead of widening, shifting and or-ing.
    let ptx = write_and_assemble(&one(packed_pair(true)));
    assert_eq!(ptx.matches("cvt.rn.f16.f32").count(), 2, "{ptx}");
    let pack = ptx
        .lines()
        .find(|l| l.contains("mov.b32") && l.contains('{'))
        .unwrap_or_else(|| panic!("no vector move: {ptx}"));
    assert!(pack.contains("%h") && pack.contains("%r"), "{pack}");
    assert!(!ptx.contains("or.b32"), "{ptx}");
    // Integer halves keep the shift and the or: the pattern is the float one only.
    let ints = write_and_assemble(&one(packed_pair(false)));
    assert!(
        ints.contains("shl.b32") && ints.contains("or.b32"),
        "{ints}"
    );
}
