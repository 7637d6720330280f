//! Hopper's warpgroup statements in PTX: the text of each `wgmma` form, `setmaxnreg`, named
//! barriers and `stmatrix`; ptxas assembles them for `sm_90a`; the writer refuses the
//! sm_90a-only ones for `sm_90` and `sm_80`; and ptxas neither serializes an accumulating K
//! loop of `wgmma` (warning C7510) nor ignores a `setmaxnreg` under the kernel's register cap
//! (C7508).

mod common;

use common::*;
use cuprum_ir::wgmma::Descriptor;
use cuprum_ir::{
    AddressSpace, ArrayDecl, BinaryOp, CmpOp, Op, ScalarType as S, ScaleD, SliceAccess, Stmt,
    Swizzle, WgmmaA, WgmmaMma, WgmmaShape, WgmmaType,
};
use cuprum_ptx::{PtxError, Target, write_module};
use cuprum_testkit::ptxas;

/// How a test kernel issues its wgmma.
#[derive(Clone, Copy)]
struct Form {
    ty: WgmmaType,
    n: u32,
    a_regs: bool,
    scale_d: Option<bool>,
    negate: bool,
    trans: bool,
    /// K steps, in a loop when more than one.
    k_steps: u32,
}

const BASIC: Form = Form {
    ty: WgmmaType::Bf16,
    n: 64,
    a_regs: false,
    scale_d: Some(true),
    negate: false,
    trans: false,
    k_steps: 1,
};

/// A kernel of one warpgroup: zeroes its accumulator, fences, issues `k_steps` wgmma (in a
/// counted loop, the descriptors stepping through K), commits, waits and stores the
/// accumulator to `out`.
fn kernel(name: &str, f: Form) -> cuprum_ir::Module {
    let mut k = K::new(name);
    let out = k.slice("out", S::F32, SliceAccess::ReadWrite);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 8192,
    });
    let base = k.op(Op::SharedAddr(tile));
    let base = k.cast(base, S::U64);
    let desc_of = |k: &mut K, offset: u64| {
        let fixed = Descriptor {
            start: 0,
            leading_byte_offset: 16,
            stride_byte_offset: 1024,
            base_offset: 0,
            swizzle: Swizzle::B128,
        }
        .encode();
        let off = k.u64(offset);
        let at = k.bin(BinaryOp::Add, base, off);
        let four = k.u32(4);
        let field = k.bin(BinaryOp::Shr, at, four);
        let mask = k.u64(0x3FFF);
        let field = k.bin(BinaryOp::And, field, mask);
        let hi = k.u64(fixed);
        k.bin(BinaryOp::Or, field, hi)
    };
    let shape = WgmmaShape { ty: f.ty, n: f.n };
    let acc: Vec<_> = (0..shape.accumulators())
        .map(|i| k.b.var(format!("acc{i}"), S::F32))
        .collect();
    let zero = k.c(cuprum_ir::Constant::f32(0.0));
    for &v in &acc {
        k.b.push(Stmt::WriteVar {
            var: v,
            value: zero,
        });
    }
    let a_desc = desc_of(&mut k, 0);
    let b_desc = desc_of(&mut k, 8192);
    let a_regs = [0, 1, 2, 3].map(|i| {
        let addr = k.op(Op::SharedAddr(tile));
        let off = k.u32(4 * i);
        let at = k.bin(BinaryOp::Add, addr, off);
        k.load(AddressSpace::Shared, S::U32, at)
    });
    let pred = k.scalar("accumulate", S::Bool);
    let mma = |k: &mut K, a_desc, b_desc| {
        let m = WgmmaMma {
            shape,
            a: if f.a_regs {
                WgmmaA::Registers(a_regs)
            } else {
                WgmmaA::Descriptor(a_desc)
            },
            b: b_desc,
            scale_d: f.scale_d.map_or(ScaleD::Pred(pred), ScaleD::Const),
            negate_a: f.negate,
            negate_b: f.negate,
            trans_a: f.trans && !f.a_regs,
            trans_b: f.trans,
            acc: acc.clone(),
        };
        k.b.wgmma_mma(m).unwrap_or_else(|e| panic!("{e}"));
    };
    k.b.push(Stmt::WgmmaFence);
    if f.k_steps == 1 {
        mma(&mut k, a_desc, b_desc);
    } else {
        let i = k.b.var("k", S::U32);
        let z = k.u32(0);
        k.b.push(Stmt::WriteVar { var: i, value: z });
        k.loop_(|k| {
            let iv = k.op(Op::ReadVar(i));
            let steps = k.u32(f.k_steps);
            let done = k.cmp(CmpOp::Ge, iv, steps);
            k.if_(done, |k| k.b.push(Stmt::Break));
            // 32 bytes further along K per step: 2 in the descriptor's address field.
            let wide = k.cast(iv, S::U64);
            let two = k.u64(2);
            let step = k.bin(BinaryOp::Mul, wide, two);
            let a = k.bin(BinaryOp::Add, a_desc, step);
            let b = k.bin(BinaryOp::Add, b_desc, step);
            mma(k, a, b);
            let one = k.u32(1);
            let next = k.bin(BinaryOp::Add, iv, one);
            k.b.push(Stmt::WriteVar {
                var: i,
                value: next,
            });
        });
    }
    k.b.push(Stmt::WgmmaCommit);
    k.b.push(Stmt::WgmmaWait { pending: 0 });
    let tid = k.special(cuprum_ir::Special::ThreadIdx(cuprum_ir::Dim::X));
    let tid = k.cast(tid, S::U64);
    for (r, &v) in acc.iter().enumerate() {
        let stride = k.u64(u64::from(shape.accumulators()));
        let row = k.bin(BinaryOp::Mul, tid, stride);
        let rr = k.u64(r as u64);
        let idx = k.bin(BinaryOp::Add, row, rr);
        let at = k.elem_addr(out, idx, S::F32);
        let x = k.op(Op::ReadVar(v));
        k.store(AddressSpace::Global, at, x);
    }
    one(k.finish())
}

/// Writes `module` for sm_90a, assembles it, and returns the text and ptxas's messages
/// (`None` without ptxas).
fn sm90a(module: &cuprum_ir::Module) -> (String, Option<String>) {
    let ptx = write_module(module, Target::Sm90a).unwrap_or_else(|e| panic!("{e}"));
    assert!(ptx.contains(".target sm_90a\n"), "{ptx}");
    match ptxas::check_messages(&ptx, "sm_90a") {
        Ok(m) => (ptx, m),
        Err(e) => panic!("{e}\n--- PTX ---\n{}", cuprum_testkit::numbered(&ptx)),
    }
}

fn refused_on_portable_targets(module: &cuprum_ir::Module) {
    for target in TARGETS {
        match write_module(module, target) {
            Err(PtxError::Unsupported { what, .. }) => {
                assert!(what.contains("sm_90a"), "{what}")
            }
            other => panic!("{target:?}: {other:?}"),
        }
    }
}

#[test]
fn each_wgmma_form_is_written_and_assembles_for_sm_90a() {
    let cases = [
        (
            BASIC,
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f",
            ", 1, 1, 0, 0;",
        ),
        (
            Form {
                ty: WgmmaType::F16,
                n: 256,
                trans: true,
                negate: true,
                ..BASIC
            },
            "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%f",
            ", -1, -1, 1, 1;",
        ),
        (
            Form {
                ty: WgmmaType::Tf32,
                n: 8,
                scale_d: None,
                ..BASIC
            },
            "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f",
            ", 1, 1;",
        ),
        (
            Form {
                a_regs: true,
                n: 128,
                trans: true,
                scale_d: Some(false),
                ..BASIC
            },
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f",
            ", 1, 1, 1;",
        ),
        (
            Form {
                ty: WgmmaType::Tf32,
                a_regs: true,
                n: 16,
                ..BASIC
            },
            "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%f",
            ", 1, 1;",
        ),
    ];
    for (i, (form, head, tail)) in cases.into_iter().enumerate() {
        let module = kernel(&format!("wg{i}"), form);
        assert!(module.needs_arch_specific());
        let (ptx, _) = sm90a(&module);
        let line = ptx
            .lines()
            .find(|l| l.contains("wgmma.mma_async"))
            .unwrap_or_else(|| panic!("{ptx}"));
        assert!(line.trim_start().starts_with(head), "{line}");
        assert!(line.ends_with(tail), "{line}");
        // The accumulator list names N / 2 registers.
        let list = &line[line.find('{').unwrap_or(0)..=line.find('}').unwrap_or(0)];
        assert_eq!(list.matches("%f").count() as u32, form.n / 2, "{line}");
        for text in [
            "wgmma.fence.sync.aligned;",
            "wgmma.commit_group.sync.aligned;",
            "wgmma.wait_group.sync.aligned 0;",
        ] {
            assert!(ptx.contains(text), "{text}\n{ptx}");
        }
        refused_on_portable_targets(&module);
    }
}

/// The accumulator registers are the variables' own: nothing but the wgmma touches them
/// between the fence and the wait, so ptxas keeps the pipeline asynchronous. Fails if
/// ptxas prints C7510 ("wgmma ... serialized") or C7517 ("wgmma.wait_group is injected ...
/// to allow use of registers defined by GMMA", what the ptxas of CUDA 13 prints when the
/// accumulators are copied around the instruction, as an SSA-value design would: checked by
/// hand with the registers renamed through `mov`s around the `wgmma` of this loop).
#[test]
fn an_accumulating_k_loop_is_not_serialized() {
    for (ty, n) in [
        (WgmmaType::Bf16, 128),
        (WgmmaType::F16, 256),
        (WgmmaType::Tf32, 64),
    ] {
        let module = kernel(
            "k_loop",
            Form {
                ty,
                n,
                k_steps: 4,
                ..BASIC
            },
        );
        let (ptx, messages) = sm90a(&module);
        if let Some(m) = messages {
            assert!(
                !m.contains("C7510") && !m.contains("C7517") && !m.contains("serializ"),
                "ptxas serialized the wgmma pipeline:\n{m}\n--- PTX ---\n{}",
                cuprum_testkit::numbered(&ptx)
            );
        }
    }
}

fn setmaxnreg_kernel(cap: Option<u32>) -> cuprum_ir::Module {
    let mut k = K::new("regs");
    k.b.set_block(Some((256, 1, 1)));
    k.b.set_max_registers(cap);
    let tid = k.special(cuprum_ir::Special::ThreadIdx(cuprum_ir::Dim::X));
    let wg = k.u32(128);
    let producer = k.cmp(CmpOp::Lt, tid, wg);
    k.if_else(
        producer,
        |k| {
            k.b.push(Stmt::SetMaxNreg {
                increase: false,
                count: 40,
            })
        },
        |k| {
            k.b.push(Stmt::SetMaxNreg {
                increase: true,
                count: 232,
            })
        },
    );
    one(k.finish())
}

/// `setmaxnreg` under a `.maxnreg` cap: ptxas honours it (fails on C7508).
#[test]
fn setmaxnreg_under_a_register_cap_is_not_ignored() {
    let module = setmaxnreg_kernel(Some(168));
    let (ptx, messages) = sm90a(&module);
    assert!(ptx.contains(".maxnreg 168\n"), "{ptx}");
    assert!(ptx.contains("setmaxnreg.dec.sync.aligned.u32 40;"), "{ptx}");
    assert!(
        ptx.contains("setmaxnreg.inc.sync.aligned.u32 232;"),
        "{ptx}"
    );
    if let Some(m) = messages {
        assert!(
            !m.contains("C7508"),
            "ptxas ignored setmaxnreg:\n{m}\n--- PTX ---\n{}",
            cuprum_testkit::numbered(&ptx)
        );
    }
    refused_on_portable_targets(&module);
    // Without a cap the validator refuses the kernel (ptxas would ignore the instruction).
    let uncapped = setmaxnreg_kernel(None);
    match write_module(&uncapped, Target::Sm90a) {
        Err(PtxError::Invalid(e)) => assert!(e.message.contains("C7508"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn named_barriers_and_stmatrix() {
    let mut k = K::new("named");
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 1024,
    });
    let lane = k.special(cuprum_ir::Special::LaneId);
    let sixteen = k.u32(16);
    let off = k.bin(BinaryOp::Mul, lane, sixteen);
    let base = k.op(Op::SharedAddr(tile));
    let addr = k.bin(BinaryOp::Add, base, off);
    let v = [lane, lane, lane, lane];
    for (n, trans) in [(1, false), (2, true), (4, false), (4, true)] {
        k.b.push(Stmt::StMatrix {
            trans,
            addr,
            values: v[..n].to_vec(),
        });
    }
    k.b.push(Stmt::NamedBarrier {
        arrive: true,
        id: 1,
        threads: 256,
    });
    k.b.push(Stmt::NamedBarrier {
        arrive: false,
        id: 2,
        threads: 128,
    });
    let module = one(k.finish());
    assert!(!module.needs_arch_specific());
    let ptx = write_module(&module, Target::Sm90).unwrap_or_else(|e| panic!("{e}"));
    for text in [
        "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r",
        "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%r",
        "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r",
        "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%r",
        "bar.arrive 1, 256;",
        "bar.sync 2, 128;",
    ] {
        assert!(ptx.contains(text), "{text}\n{ptx}");
    }
    if let Err(e) = ptxas::check(&ptx, "sm_90") {
        panic!("{e}\n{}", cuprum_testkit::numbered(&ptx));
    }
    match write_module(&module, Target::Sm80) {
        Err(PtxError::Unsupported { what, .. }) => assert!(what.contains("stmatrix"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_validator_refuses_bad_wgmma_statements() {
    let mut k = K::new("bad");
    let acc: Vec<_> = (0..4).map(|i| k.b.var(format!("a{i}"), S::F32)).collect();
    let d = k.u64(0);
    let wrong_n = WgmmaMma {
        shape: WgmmaShape {
            ty: WgmmaType::Bf16,
            n: 12,
        },
        a: WgmmaA::Descriptor(d),
        b: d,
        scale_d: ScaleD::Const(true),
        negate_a: false,
        negate_b: false,
        trans_a: false,
        trans_b: false,
        acc: acc.clone(),
    };
    assert!(k.b.wgmma_mma(wrong_n.clone()).is_err());
    let wrong_count = WgmmaMma {
        shape: WgmmaShape {
            ty: WgmmaType::Bf16,
            n: 16,
        },
        acc: acc[..3].to_vec(),
        ..wrong_n.clone()
    };
    assert!(k.b.wgmma_mma(wrong_count).is_err());
    let tf32_trans = WgmmaMma {
        shape: WgmmaShape {
            ty: WgmmaType::Tf32,
            n: 8,
        },
        trans_b: true,
        ..wrong_n
    };
    assert!(k.b.wgmma_mma(tf32_trans).is_err());
}
