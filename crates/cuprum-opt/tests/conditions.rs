//! Conditions decided by dominating branches or by value ranges (redundant bounds checks),
//! and 64-bit index arithmetic narrowed to 32 bits: what goes, what stays, and that the
//! kernel still does exactly the same on the emulator (traps included).

mod common;

use common::{K, has, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

/// `y[i] = x[i] + x[i]`, each access bounds-checked as the front end does.
fn checked_twice() -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    k.bounds_check(x, i);
    let a = k.load(x, S::U32, i);
    k.bounds_check(x, i);
    let b = k.load(x, S::U32, i);
    let s = k.add(a, b);
    k.bounds_check(y, i);
    k.store(y, i, s);
    k.finish()
}

#[test]
fn a_repeated_bounds_check_goes() {
    let kernel = checked_twice();
    let p = passes(&["hoist", "cse", "conditions", "fold", "dce"]);
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64);
    // One check of x, one of y.
    assert_eq!(
        print_kernel(&opt).matches("trap").count(),
        2,
        "{}",
        print_kernel(&opt)
    );
    // Out of bounds, the first check still traps, with the same message.
    let short = same_outcome(&kernel, &p, T, 32, 50);
    assert_eq!(print_kernel(&short).matches("trap").count(), 2);
    assert!(common::run(&short, 0, T, 32, 50).is_err());
}

#[test]
fn a_branch_on_a_known_condition_is_decided() {
    // if t < 40 { if t < 40 { y[i] = 1 } else { y[i] = 2 } } else { y[i] = 3 }
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let forty = k.u32(40);
    let c = k.cmp(CmpOp::Lt, t, forty);
    k.if_else(
        c,
        |k| {
            k.if_else(
                c,
                |k| {
                    let v = k.u32(1);
                    k.store(y, i, v);
                },
                |k| {
                    let v = k.u32(2);
                    k.store(y, i, v);
                },
            );
        },
        |k| {
            let v = k.u32(3);
            k.store(y, i, v);
        },
    );
    let kernel = k.finish();
    let opt = same_behaviour(&kernel, &passes(&["conditions", "dce"]), T, 32, T as u64);
    assert_eq!(print_kernel(&opt).matches("if ").count(), 1);
    assert!(!has(&opt, "const 2u32"));
}

#[test]
fn ranges_decide_comparisons() {
    // (t & 15) < 16 always; t < 256 always under launch bounds of 256 threads; t < 100 not.
    let mut k = K::new("k");
    k.b.set_launch_bounds(Some(LaunchBounds {
        max_threads: 256,
        min_blocks_per_sm: None,
    }));
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let fifteen = k.u32(15);
    let m = k.bin(BinaryOp::And, t, fifteen);
    let sixteen = k.u32(16);
    let a = k.cmp(CmpOp::Lt, m, sixteen);
    let lim = k.u32(256);
    let b = k.cmp(CmpOp::Ge, t, lim);
    let hundred = k.u32(100);
    let c = k.cmp(CmpOp::Lt, t, hundred);
    for (cond, v) in [(a, 1u32), (b, 2), (c, 3)] {
        k.if_else(
            cond,
            |k| {
                let v = k.u32(v);
                k.store(y, i, v);
            },
            |_| {},
        );
    }
    let kernel = k.finish();
    let p = passes(&["conditions", "fold", "dce"]);
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("if ").count(), 1, "{text}");
    assert!(!text.contains("const 2u32"), "{text}");
}

#[test]
fn a_check_against_another_length_stays() {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    k.bounds_check(x, i);
    let a = k.load(x, S::U32, i);
    k.bounds_check(y, i);
    k.store(y, i, a);
    let kernel = k.finish();
    let p = passes(&["hoist", "cse", "conditions", "fold", "dce"]);
    let opt = same_outcome(&kernel, &p, T, 32, T as u64);
    assert_eq!(print_kernel(&opt).matches("trap").count(), 2);
}

#[test]
fn small_64_bit_index_arithmetic_is_done_in_32_bits() {
    // A shared-tile index in usize: (ty as u64 + 8) * 33 + tx as u64, checked and truncated.
    let mut k = K::new("k");
    let y = k.slice("y", S::U64, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let w = k.cast(t, S::U64);
    let eight = k.u64(8);
    let a = k.add(w, eight);
    let c33 = k.u64(33);
    let m = k.mul(a, c33);
    let s = k.add(m, w);
    let lim = k.u64(5000);
    let ok = k.cmp(CmpOp::Lt, s, lim);
    let narrow = k.cast(s, S::U32);
    let back = k.cast(narrow, S::U64);
    let zero = k.u64(0);
    let v = k.op(Op::Select {
        cond: ok,
        if_true: back,
        if_false: zero,
    });
    k.store(y, i, v);
    // Not narrowed: blockIdx.x * 2^20 may exceed 32 bits.
    let b = k.op(Op::Special(Special::BlockIdx(Dim::X)));
    let bw = k.cast(b, S::U64);
    let big = k.u64(1 << 20);
    let p = k.mul(bw, big);
    let y2 = k.add(i, p);
    let _ = y2;
    let kernel = k.finish();
    let ps = passes(&["narrow", "fold", "dce"]);
    let opt = same_behaviour(&kernel, &ps, T, 32, T as u64);
    let text = print_kernel(&opt);
    assert!(text.contains("u32 = Mul"), "{text}");
    assert!(!text.contains("const 33u64"), "{text}");
    assert!(
        text.contains("const 5000u32"),
        "the check compares in 32 bits: {text}"
    );
}

#[test]
fn large_64_bit_arithmetic_stays() {
    let mut k = K::new("k");
    let y = k.slice("y", S::U64, SliceAccess::Disjoint);
    let i = k.global_id();
    let b = k.op(Op::Special(Special::BlockIdx(Dim::X)));
    let bw = k.cast(b, S::U64);
    let big = k.u64(1 << 20);
    let p = k.mul(bw, big);
    let s = k.add(p, i);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_behaviour(
        &kernel,
        &passes(&["narrow", "fold", "dce"]),
        T,
        32,
        T as u64,
    );
    assert!(has(&opt, "u64 = Mul %"), "{}", print_kernel(&opt));
}

#[test]
fn a_declared_block_bounds_thread_indices() {
    // With blocks of exactly 32x1x1: t < 32 and t / 8 < 4 always, t < 20 not; t.y == 0.
    let mut k = K::new("k");
    k.b.set_block(Some((32, 1, 1)));
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let lim = k.u32(32);
    let a = k.cmp(CmpOp::Lt, t, lim);
    let eight = k.u32(8);
    let q = k.bin(BinaryOp::Div, t, eight);
    let four = k.u32(4);
    let b = k.cmp(CmpOp::Lt, q, four);
    let twenty = k.u32(20);
    let c = k.cmp(CmpOp::Lt, t, twenty);
    let ty = k.op(Op::Special(Special::ThreadIdx(Dim::Y)));
    let one = k.u32(1);
    let d = k.cmp(CmpOp::Lt, ty, one);
    for (cond, v) in [(a, 1u32), (b, 2), (c, 3), (d, 4)] {
        k.if_else(
            cond,
            |_| {},
            |k| {
                let v = k.u32(v);
                k.store(y, i, v);
            },
        );
    }
    let kernel = k.finish();
    let p = passes(&["conditions", "fold", "dce"]);
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("if ").count(), 1, "{text}");
    assert!(text.contains("const 3u32"), "{text}");
}

/// `if w > 0 { check(w as u64 - 1 < lim); y[i] = w - 1 }` with `w = t / 32`, blocks of at
/// most 1024 threads: the check is the shared-array check of `warp_sums[warp - 1]`.
fn minus_one_under_a_positive_test(lim: u64) -> Kernel {
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let thirty_two = k.u32(32);
    let w = k.bin(BinaryOp::Div, t, thirty_two);
    let zero = k.u32(0);
    let pos = k.cmp(CmpOp::Gt, w, zero);
    k.if_else(
        pos,
        |k| {
            let w64 = k.cast(w, S::U64);
            let one = k.u64(1);
            let d = k.bin(BinaryOp::Sub, w64, one);
            let lim = k.u64(lim);
            let ok = k.cmp(CmpOp::Lt, d, lim);
            k.if_else(
                ok,
                |_| {},
                |k| {
                    k.b.push(Stmt::Trap(TrapKind::BoundsCheck {
                        index: d,
                        len: lim,
                        site: "warp_sums[w - 1]".into(),
                    }))
                },
            );
            let d32 = k.cast(d, S::U32);
            k.store(y, i, d32);
        },
        |_| {},
    );
    k.finish()
}

#[test]
fn a_lower_bound_from_a_branch_keeps_a_decrement_from_wrapping() {
    let p = passes(&["conditions", "fold", "dce"]);
    // w <= 31 everywhere, w >= 1 inside the branch: w - 1 < 32 holds and its check goes.
    let opt = same_behaviour(&minus_one_under_a_positive_test(32), &p, 1024, 1024, 1024);
    let text = print_kernel(&opt);
    assert!(!text.contains("trap"), "{text}");
    // w - 1 < 30 is not decided (w = 31 fails it): the check stays and still traps.
    let kernel = minus_one_under_a_positive_test(30);
    let opt = same_outcome(&kernel, &p, 1024, 1024, 1024);
    assert!(print_kernel(&opt).contains("trap"));
    assert!(common::run(&opt, 0, 1024, 1024, 1024).is_err());
}
