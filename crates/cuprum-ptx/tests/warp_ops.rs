//! The PTX of the warp matrix statements (`mma.sync` in its three shapes, `ldmatrix` in every
//! count with and without `.trans`), `cp.async` with its commit and waits, and device
//! `printf` with every argument type: written for both targets, assembled with ptxas, and
//! checked for the instructions and declarations they must contain.

mod common;

use common::{K, one, write_and_assemble};
use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;

/// `words` consecutive `u32` loads from slice `buf` starting at element `first` (values
/// ptxas cannot fold).
fn load_words(k: &mut K, buf: u32, first: u64, words: u64) -> Vec<Value> {
    (first..first + words)
        .map(|i| {
            let idx = k.u64(i);
            let a = k.elem_addr(buf, idx, S::U32);
            k.load(AddressSpace::Global, S::U32, a)
        })
        .collect()
}

#[test]
fn mma_every_shape() {
    let mut k = K::new("mma_all");
    let buf = k.slice("buf", S::U32, SliceAccess::ReadWrite);
    let w = load_words(&mut k, buf, 0, 10);
    let mut c: Vec<Value> = w[6..]
        .iter()
        .map(|&v| {
            k.op(Op::Bitcast {
                value: v,
                to: S::F32,
            })
        })
        .collect();
    for shape in MmaShape::ALL {
        let d =
            k.b.mma(
                shape,
                [w[0], w[1], w[2], w[3]],
                [w[4], w[5]],
                [c[0], c[1], c[2], c[3]],
            )
            .unwrap();
        c = d.to_vec();
    }
    for (i, &v) in c.iter().enumerate() {
        let idx = k.u64(20 + i as u64);
        let a = k.elem_addr(buf, idx, S::F32);
        k.store(AddressSpace::Global, a, v);
    }
    let ptx = write_and_assemble(&one(k.finish()));
    for ins in [
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f",
    ] {
        assert!(ptx.contains(ins), "missing {ins}\n{ptx}");
    }
}

#[test]
fn ldmatrix_every_count_and_cp_async() {
    let mut k = K::new("ldm_cp");
    let buf = k.slice("buf", S::U32, SliceAccess::ReadWrite);
    let src = k.slice("src", S::U8, SliceAccess::ReadOnly);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U16,
        len: 1024,
    });
    let lane = k.special(Special::LaneId);
    let sixteen = k.u32(16);
    let off = k.bin(BinaryOp::Mul, lane, sixteen);
    let base = k.op(Op::SharedAddr(tile));
    let row = k.bin(BinaryOp::Add, base, off);
    let lane64 = k.cast(lane, S::U64);
    let sixteen64 = k.u64(16);
    let goff = k.bin(BinaryOp::Mul, lane64, sixteen64);
    let gsrc = k.elem_addr(src, goff, S::U8);
    for (cache, size) in [
        (CpAsyncCache::Ca, 4),
        (CpAsyncCache::Ca, 8),
        (CpAsyncCache::Ca, 16),
        (CpAsyncCache::Cg, 16),
    ] {
        k.b.cp_async(cache, size, row, gsrc, None).unwrap();
        k.b.push(Stmt::CpAsyncCommit);
    }
    k.b.push(Stmt::CpAsyncWaitGroup { pending: 2 });
    k.b.push(Stmt::CpAsyncWaitAll);
    k.b.push(Stmt::Barrier);
    let mut n = 0u64;
    for count in [1, 2, 4] {
        for trans in [false, true] {
            for v in k.b.ldmatrix(count, trans, row).unwrap() {
                let idx = k.u64(n);
                n += 1;
                let a = k.elem_addr(buf, idx, S::U32);
                k.store(AddressSpace::Global, a, v);
            }
        }
    }
    let ptx = write_and_assemble(&one(k.finish()));
    for ins in [
        "cp.async.ca.shared.global [%r",
        "], 4;",
        "], 8;",
        "cp.async.cg.shared.global [%r",
        "cp.async.commit_group;",
        "cp.async.wait_group 2;",
        "cp.async.wait_all;",
        "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r",
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r",
    ] {
        assert!(ptx.contains(ins), "missing {ins}\n{ptx}");
    }
}

/// A kernel printing one value of every type, inside an `if` and a loop too.
fn printing_kernel(name: &str) -> Kernel {
    let mut k = K::new(name);
    let buf = k.slice("buf", S::U8, SliceAccess::ReadOnly);
    let mut args = Vec::new();
    let mut fmt = String::from("all:");
    for (i, ty) in ScalarType::ALL.into_iter().enumerate() {
        let idx = k.u64(8 * i as u64);
        let a = k.elem_addr(buf, idx, S::U8);
        args.push(k.load(AddressSpace::Global, ty, a));
        fmt += match ty {
            S::I64 => " %lld",
            S::U64 => " %llx",
            _ if ty.is_float() || ty == S::Tf32 => " %g",
            S::I8 | S::I16 | S::I32 => " %+5d",
            _ => " %u",
        };
    }
    fmt += " 100%%\n";
    k.b.print(fmt, args.clone()).unwrap();
    k.b.print("no arguments, quotes \" and \\ and \t tab\n", vec![])
        .unwrap();
    let tid = k.special(Special::ThreadIdx(Dim::X));
    let two = k.u32(2);
    let odd = k.bin(BinaryOp::Rem, tid, two);
    let zero = k.u32(0);
    let is_odd = k.cmp(CmpOp::Ne, odd, zero);
    let f = args[11];
    k.if_(is_odd, |k| {
        k.b.print("odd %u: %.3e\n", vec![tid, f]).unwrap();
    });
    let i = k.b.var("i", S::U32);
    k.write(i, zero);
    k.loop_(|k| {
        let iv = k.read(i);
        let three = k.u32(3);
        let done = k.cmp(CmpOp::Ge, iv, three);
        k.if_(done, |k| k.b.push(Stmt::Break));
        let wide = k.cast(iv, S::I64);
        k.b.print("loop %d %ld\n", vec![iv, wide]).unwrap();
        let one = k.u32(1);
        let next = k.bin(BinaryOp::Add, iv, one);
        k.write(i, next);
    });
    k.finish()
}

#[test]
fn printf_every_argument_type() {
    let module = Module {
        kernels: vec![printing_kernel("print_a"), printing_kernel("print_b")],
    };
    let ptx = write_and_assemble(&module);
    assert_eq!(
        ptx.matches(".extern .func (.param .b32 func_retval0) vprintf")
            .count(),
        1,
        "{ptx}"
    );
    // "all:" = 97 108 108 58; each kernel has its own strings.
    for s in [
        "$fmt_print_a_0[",
        "$fmt_print_b_3[",
        "] = {97, 108, 108, 58, 32, ",
    ] {
        assert!(ptx.contains(s), "missing {s}\n{ptx}");
    }
    // 14 arguments: 4-byte words for the small ones, 8-byte for i64/u64/floats, aligned.
    assert!(
        ptx.contains("\t.local .align 8 .b8 $printf_args[88];"),
        "{ptx}"
    );
    for ins in [
        "st.local.u32 [$printf_args+0], %r",
        "st.local.f64 [$printf_args+48], %fd",
        "st.local.u64 [$printf_args+16], %rd",
        "cvta.global.u64 %rd",
        "cvta.local.u64 %rd",
        "mov.u64 %rd",
        "call.uni (retval0), vprintf, (param0, param1);",
    ] {
        assert!(ptx.contains(ins), "missing {ins}\n{ptx}");
    }
}

#[test]
fn modules_without_print_declare_no_vprintf() {
    let mut k = K::new("quiet");
    k.b.push(Stmt::CpAsyncWaitAll);
    let ptx = write_and_assemble(&one(k.finish()));
    assert!(!ptx.contains("vprintf"), "{ptx}");
    assert!(!ptx.contains("$printf_args"), "{ptx}");
}

#[test]
fn invalid_statements_are_rejected() {
    let mut k = K::new("bad_print");
    let x = k.u32(1);
    k.b.push(Stmt::Print {
        format: "%s".into(),
        args: vec![x],
    });
    let err = cuprum_ptx::write_module(&one(k.finish()), cuprum_ptx::Target::Sm90).unwrap_err();
    assert!(err.to_string().contains("`%s`"), "{err}");
}
