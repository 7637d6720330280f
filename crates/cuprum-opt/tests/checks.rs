//! Variable reads forwarded to the value in hand, and bounds checks gathered ahead of the
//! loads they guard (and out of branches): what moves, what stays, and that the kernel still
//! does exactly the same on the emulator, traps included.

mod common;

use common::{K, passes, same_behaviour, same_outcome};
use cuprum_ir::*;

use ScalarType as S;

const T: u32 = 96;

/// Where in the printed kernel `needle` first appears (panics if it does not).
fn at(kernel: &Kernel, needle: &str) -> usize {
    let text = print_kernel(kernel);
    match text.find(needle) {
        Some(i) => i,
        None => panic!("`{needle}` not in\n{text}"),
    }
}

/// `y[i] = x[i] + x[i + 1] + x[i + 2]`, every access checked just before it, as the front
/// end emits it.
fn three_loads() -> Kernel {
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    k.bounds_check(x, i);
    let a = k.load(x, S::U32, i);
    let one = k.u64(1);
    let i1 = k.add(i, one);
    k.bounds_check(x, i1);
    let b = k.load(x, S::U32, i1);
    let s = k.add(a, b);
    let two = k.u64(2);
    let i2 = k.add(i, two);
    k.bounds_check(x, i2);
    let c = k.load(x, S::U32, i2);
    let s = k.add(s, c);
    k.bounds_check(y, i);
    k.store(y, i, s);
    k.finish()
}

#[test]
fn checks_move_ahead_of_the_loads() {
    let kernel = three_loads();
    let p = passes(&["checks", "dce"]);
    // More threads than elements: the checks of the last threads fail, in the same order.
    for len in [T as u64 + 2, T as u64 + 1, T as u64, 40] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64 + 2);
    let text = print_kernel(&opt);
    // All four checks come before the first load, in their order.
    let first_load = at(&opt, "load.Global");
    assert_eq!(text[..first_load].matches("trap").count(), 4, "{text}");
    assert!(at(&opt, "slice_len y") > at(&opt, "Add %5, %12"), "{text}");
}

#[test]
fn a_check_passes_a_global_store_but_not_an_unchecked_load() {
    // x[i] is loaded without a check (its index is not known in bounds): a later check must
    // not move above it, since the load may fault first. The check of y moves above the
    // store to z: when it fails the launch traps, and what a trapping launch leaves in
    // global memory is unspecified (the emulator compares only the error then).
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::ReadOnly);
    let z = k.slice("z", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let a = k.load(x, S::U32, i);
    k.bounds_check(z, i);
    k.store(z, i, a);
    k.bounds_check(y, i);
    let b = k.load(y, S::U32, i);
    k.bounds_check(z, i);
    k.store(z, i, b);
    let kernel = k.finish();
    let p = passes(&["checks"]);
    for len in [T as u64, 50] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = common::optimized(&kernel, &p);
    let text = print_kernel(&opt);
    // The checks stay after the unchecked load of x; all three come before the first store.
    assert!(at(&opt, "trap") > at(&opt, "load.Global"), "{text}");
    let store = at(&opt, "store.Global");
    assert_eq!(text[..store].matches("trap").count(), 3, "{text}");
}

#[test]
fn a_check_does_not_pass_an_atomic() {
    // `atomic_add(z[0], 1); check(y, i); y[i] = 2`: the atomic's effect is seen by other
    // threads during the launch, the check stays after it.
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let z = k.slice("z", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let zero = k.u64(0);
    let addr = k.elem_addr(z, S::U32, zero);
    let one = k.u32(1);
    k.op(Op::Atomic {
        op: AtomicOp::Add,
        space: AddressSpace::Global,
        scope: Scope::Device,
        order: cuprum_ir::MemOrder::Relaxed,
        addr,
        value: one,
        compare: None,
    });
    k.bounds_check(y, i);
    let two = k.u32(2);
    k.store(y, i, two);
    let kernel = k.finish();
    let p = passes(&["checks"]);
    for len in [T as u64, 50] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = common::optimized(&kernel, &p);
    let text = print_kernel(&opt);
    assert!(at(&opt, "trap") > at(&opt, "atomic"), "{text}");
}

#[test]
fn branches_of_accesses_keep_only_the_accesses() {
    // Four times `if t < 20 + j { check(y, i + jT); y[i + jT] = tile[(t + j) % 32] }`, a transpose's
    // output loop: the checks go to the top and the address arithmetic out of the branches,
    // which keep their shared load and global store only (ptxas predicates them).
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: T + 4,
    });
    let i = k.global_id();
    let t = k.tid();
    let base = k.op(Op::SharedAddr(tile));
    let four = k.u32(4);
    let bytes = k.mul(t, four);
    let addr = k.add(base, bytes);
    k.b.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr,
        value: t,
    });
    k.b.push(Stmt::Barrier);
    for j in 0..4u32 {
        let lim = k.u32(20 + j);
        let c = k.cmp(CmpOp::Lt, t, lim);
        k.if_else(
            c,
            |k| {
                let off = k.u64(u64::from(j * T));
                let idx = k.add(i, off);
                k.bounds_check(y, idx);
                // tile[(t + j) & 31], written by the block (of 32 threads) before the barrier.
                let sj = k.u32(j);
                let st = k.add(t, sj);
                let mask = k.u32(31);
                let st = k.op(Op::Binary(BinaryOp::And, st, mask));
                let four = k.u32(4);
                let bytes = k.mul(st, four);
                let addr = k.add(base, bytes);
                let v = k.op(Op::Load {
                    space: AddressSpace::Shared,
                    ty: S::U32,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                });
                k.store(y, idx, v);
            },
            |_| {},
        );
    }
    let kernel = k.finish();
    let p = passes(&["checks", "dce"]);
    for len in [4 * T as u64, 3 * T as u64 + 10, T as u64, 50] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = same_behaviour(&kernel, &p, T, 32, 4 * T as u64);
    let text = print_kernel(&opt);
    let first_load = at(&opt, "load.Shared");
    assert_eq!(text[..first_load].matches("trap").count(), 4, "{text}");
    // Each branch holds just its two accesses.
    for part in text.split("if ").skip(1) {
        if part.contains("load.Shared") {
            let body = &part[..part.find('}').unwrap()];
            // `%c {`, the load, the store.
            assert_eq!(body.matches('\n').count(), 3, "{text}");
        }
    }
}

#[test]
fn checks_leave_a_branch_as_conditions_on_it() {
    // if t < 40 { y[i] = x[i] } else { y[i] = x[2i] }: the checks go before the `if`, the
    // branches keep only their loads and stores.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let t = k.tid();
    let forty = k.u32(40);
    let c = k.cmp(CmpOp::Lt, t, forty);
    k.if_else(
        c,
        |k| {
            k.bounds_check(x, i);
            let v = k.load(x, S::U32, i);
            k.bounds_check(y, i);
            k.store(y, i, v);
        },
        |k| {
            let two = k.u64(2);
            let j = k.mul(i, two);
            k.bounds_check(x, j);
            let v = k.load(x, S::U32, j);
            k.bounds_check(y, i);
            k.store(y, i, v);
        },
    );
    let kernel = k.finish();
    let p = passes(&["checks", "dce"]);
    // Short slices make the checks of either branch fail on some lanes only.
    for len in [T as u64 * 2, T as u64, 70, 30] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64 * 2);
    let text = print_kernel(&opt);
    assert!(
        text.rfind("trap").unwrap_or(0) < at(&opt, "load.Global"),
        "{text}"
    );
    assert_eq!(text.matches("trap").count(), 4, "{text}");
}

#[test]
fn a_possibly_faulting_division_stays_in_its_branch() {
    // if d != 0 { check(i / d < len); y[i] = i / d }: the division may not run where d is
    // zero, so the check on its result stays in the branch. (Each thread stores its own
    // element: threads sharing one would be a race the emulator reports.)
    let mut k = K::new("k");
    let y = k.slice("y", S::U64, SliceAccess::Disjoint);
    let d = k.scalar("d", S::U64);
    let i = k.global_id();
    let zero = k.u64(0);
    let c = k.cmp(CmpOp::Ne, d, zero);
    k.if_else(
        c,
        |k| {
            let q = k.bin(BinaryOp::Div, i, d);
            k.bounds_check(y, q);
            k.store(y, i, q);
        },
        |_| {},
    );
    let kernel = k.finish();
    let p = passes(&["checks"]);
    same_outcome(&kernel, &p, T, 32, T as u64);
    let opt = common::optimized(&kernel, &p);
    assert_eq!(print_kernel(&opt), print_kernel(&kernel));
}

#[test]
fn repeated_reads_of_a_variable_are_one_value() {
    // $v = i; loop { a = $v; if a < n {} else break; y[$v] = 1; $v = $v + stride }: the
    // second and third reads are the first, so the bounds check of y[$v] repeats the loop's
    // test and goes.
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let var = k.b.var("v", S::U64);
    k.b.push(Stmt::WriteVar { var, value: i });
    k.b.begin_block();
    let a = k.op(Op::ReadVar(var));
    let n = k.op(Op::SliceLen(y));
    let more = k.cmp(CmpOp::Lt, a, n);
    k.if_else(more, |_| {}, |k| k.b.push(Stmt::Break));
    let b = k.op(Op::ReadVar(var));
    k.bounds_check(y, b);
    let one = k.u32(1);
    k.store(y, b, one);
    let c = k.op(Op::ReadVar(var));
    let stride = k.u64(u64::from(T));
    let next = k.add(c, stride);
    k.b.push(Stmt::WriteVar { var, value: next });
    let body = k.b.end_block();
    k.b.push(Stmt::Loop { body });
    let kernel = k.finish();
    let p = passes(&["vars", "cse", "conditions", "fold", "dce"]);
    for len in [T as u64 * 3 + 7, 50] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64 * 3 + 7);
    let text = print_kernel(&opt);
    assert_eq!(text.matches("read $").count(), 1, "{text}");
    assert_eq!(text.matches("trap").count(), 0, "{text}");
}

#[test]
fn a_read_after_a_write_in_a_branch_is_not_forwarded_past_it() {
    // $v = 1; if t < 40 { $v = 2 }; y[i] = $v: the read after the `if` stays a read.
    let mut k = K::new("k");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let var = k.b.var("v", S::U32);
    let one = k.u32(1);
    k.b.push(Stmt::WriteVar { var, value: one });
    let t = k.tid();
    let forty = k.u32(40);
    let c = k.cmp(CmpOp::Lt, t, forty);
    k.if_else(
        c,
        |k| {
            let two = k.u32(2);
            k.b.push(Stmt::WriteVar { var, value: two });
        },
        |_| {},
    );
    let v = k.op(Op::ReadVar(var));
    k.bounds_check(y, i);
    k.store(y, i, v);
    let kernel = k.finish();
    let p = passes(&["vars", "dce"]);
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64);
    assert!(print_kernel(&opt).contains("read $"));
}

#[test]
fn checks_pass_branches_of_safe_loads_and_shared_stores() {
    // Three times `if t < 80 { check(x, i + jT); tile[t + jT] = x[i + jT] }`, as an unrolled
    // tile copy is lowered: every check goes ahead of every load, so the loads issue
    // together. Then `if t < 70 { check(y, i); y[i] = 1 }`: a global store, which the last
    // check (of x[2i]) passes as well; the check after the barrier stays there.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 3 * T,
    });
    let i = k.global_id();
    let t = k.tid();
    let eighty = k.u32(80);
    let c = k.cmp(CmpOp::Lt, t, eighty);
    let base = k.op(Op::SharedAddr(tile));
    for j in 0..3u32 {
        let off = k.u64(u64::from(j * T));
        let idx = k.add(i, off);
        let soff = k.u32(j * T);
        let sidx = k.add(t, soff);
        k.if_else(
            c,
            |k| {
                k.bounds_check(x, idx);
                let v = k.load(x, S::U32, idx);
                let four = k.u32(4);
                let bytes = k.mul(sidx, four);
                let addr = k.add(base, bytes);
                k.b.push(Stmt::Store {
                    space: AddressSpace::Shared,
                    addr,
                    value: v,
                });
            },
            |_| {},
        );
    }
    let seventy = k.u32(70);
    let c2 = k.cmp(CmpOp::Lt, t, seventy);
    k.if_else(
        c2,
        |k| {
            k.bounds_check(y, i);
            let one = k.u32(1);
            k.store(y, i, one);
        },
        |_| {},
    );
    let two = k.u64(2);
    let i2 = k.mul(i, two);
    k.bounds_check(x, i2);
    let v = k.load(x, S::U32, i2);
    k.b.push(Stmt::Barrier);
    k.bounds_check(y, i);
    k.store(y, i, v);
    let kernel = k.finish();
    let p = passes(&["checks", "dce"]);
    for len in [3 * T as u64, 2 * T as u64 + 10, T as u64, 50] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = common::optimized(&kernel, &p);
    let text = print_kernel(&opt);
    let first_load = at(&opt, "load.Global");
    // The check of x[2i] passes the global store too, that of y[i] not the barrier.
    assert_eq!(text[..first_load].matches("trap").count(), 5, "{text}");
    let barrier = at(&opt, "barrier");
    assert_eq!(text[barrier..].matches("trap").count(), 1, "{text}");
}

#[test]
fn a_load_past_the_checked_element_is_not_safe() {
    // check(x, i); a = load u32 at x + 8 i (two elements per index step, past x[i] for
    // large i); check(x, i + 1): the second check must not move above that load, which may
    // fault first.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    k.bounds_check(x, i);
    let base = k.op(Op::SliceBase(x));
    let eight = k.u64(8);
    let off = k.mul(i, eight);
    let addr = k.add(base, off);
    let a = k.op(Op::Load {
        space: AddressSpace::Global,
        ty: S::U32,
        addr,
        eviction: cuprum_ir::Eviction::Normal,
    });
    let one = k.u64(1);
    let i1 = k.add(i, one);
    k.bounds_check(x, i1);
    let b = k.load(x, S::U32, i1);
    let s = k.add(a, b);
    k.store(y, i, s);
    let kernel = k.finish();
    let opt = same_outcome(
        &kernel,
        &passes(&["checks", "dce"]),
        T,
        32,
        T as u64 * 2 + 2,
    );
    let text = print_kernel(&opt);
    let first_load = at(&opt, "load.Global");
    assert_eq!(text[..first_load].matches("trap").count(), 1, "{text}");
}

#[test]
fn checks_pass_loads_at_checked_constant_positions_and_bytes() {
    // check(x, 3); a = x[3], at `x + 12` (the product already folded); check(b, i); c = b[i]
    // of a byte slice, at `b + i` (no `* 1`); check(x, i); d = x[i]. Both early loads are at
    // an element already checked, as their linear forms show, so the later checks move
    // above them and every load follows every check.
    let mut k = K::new("k");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let bytes = k.slice("b", S::U8, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let three = k.u64(3);
    k.bounds_check(x, three);
    let base = k.op(Op::SliceBase(x));
    let twelve = k.u64(12);
    let at3 = k.add(base, twelve);
    let a = k.op(Op::Load {
        space: AddressSpace::Global,
        ty: S::U32,
        addr: at3,
        eviction: cuprum_ir::Eviction::Normal,
    });
    k.bounds_check(bytes, i);
    let bbase = k.op(Op::SliceBase(bytes));
    let at_i = k.add(bbase, i);
    let c = k.op(Op::Load {
        space: AddressSpace::Global,
        ty: S::U8,
        addr: at_i,
        eviction: cuprum_ir::Eviction::Normal,
    });
    let c = k.cast(c, S::U32);
    k.bounds_check(x, i);
    let d = k.load(x, S::U32, i);
    let s = k.add(a, c);
    let s = k.add(s, d);
    k.bounds_check(y, i);
    k.store(y, i, s);
    let kernel = k.finish();
    let p = passes(&["checks", "dce"]);
    // The constant check fails first where `x` has 3 elements or fewer.
    for len in [T as u64, T as u64 - 1, 40, 3] {
        same_outcome(&kernel, &p, T, 32, len);
    }
    let opt = same_behaviour(&kernel, &p, T, 32, T as u64);
    let text = print_kernel(&opt);
    let first_load = at(&opt, "load.Global");
    assert_eq!(text[..first_load].matches("trap").count(), 4, "{text}");
}
