//! Addresses at a constant distance from an earlier one, redefined as that one plus the
//! constant: a transpose-like shared tile written at `(t + 64 k) * 4` under four guards and
//! read back at other offsets, addresses in sibling branches that must not lean on each other,
//! and a loop whose body reaches an address made before it. Addresses a multiple of one value
//! apart (a transpose's rows `x[(r + 8k) * w + c]`), redefined as the previous one plus a
//! step, and zero extensions of sums that wrap, which must not be read as sums. Each kernel
//! runs on the emulator before and after the passes (`rebase` alone and the whole pipeline)
//! on random inputs.
//!
//! Planted bugs these tests catch (tried by hand on `rebase`): the offset taken the wrong way
//! round (`c0 - c`: the tile is written at the wrong places, `same_behaviour` fails), the
//! scopes left open (an address in one branch redefined from its sibling's: the validator
//! refuses the IR), the step's sign flipped (`strided_rows` reads the wrong rows), and a zero
//! extension of `a + c` read as `zext(a) + c` without the range test (`wrapping_extension`
//! reads past its slice).

mod common;

use common::{K, passes, same_behaviour};
use cuprum_ir::*;

use ScalarType as S;

/// How many of the kernel's shared stores and loads use an address defined as another value
/// plus a constant.
fn offset_accesses(kernel: &Kernel) -> usize {
    let mut consts = std::collections::HashSet::new();
    let mut offset = std::collections::HashSet::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def { value, op } = s {
            match op {
                Op::Const(_) => {
                    consts.insert(*value);
                }
                Op::Binary(BinaryOp::Add, _, k) if consts.contains(k) => {
                    offset.insert(*value);
                }
                _ => {}
            }
        }
    });
    let mut n = 0;
    kernel.body.visit(&mut |s| match s {
        Stmt::Store {
            space: AddressSpace::Shared,
            addr,
            ..
        }
        | Stmt::Def {
            op:
                Op::Load {
                    space: AddressSpace::Shared,
                    addr,
                    ..
                },
            ..
        } if offset.contains(addr) => n += 1,
        _ => {}
    });
    n
}

/// `tile + (t + 64 k) * 4` as the front end computes it: from scratch.
fn tile_addr(k: &mut K, tile: Value, t: Value, row: u32) -> Value {
    let r = k.u32(row);
    let i = k.add(t, r);
    let four = k.u32(4);
    let off = k.mul(i, four);
    k.add(tile, off)
}

/// Each thread of 64 stores `x[4 gid + j]` at `tile[t + 64 j]` for `j = 0..4`, each under a
/// guard `4 gid + j < len(x)` (a transpose's edge test), then after a barrier writes
/// `tile[t + 64 j]` to `y[4 gid + j]` for the rows the guards allowed.
fn shared_rows() -> Kernel {
    let mut k = K::new("shared_rows");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 256,
    });
    let base = k.op(Op::SharedAddr(tile));
    let t = k.tid();
    let gid = k.global_id();
    let four = k.u64(4);
    let first = k.mul(gid, four);
    let len = k.op(Op::SliceLen(x));
    let mut guards = Vec::new();
    for j in 0..4u32 {
        let jj = k.u64(u64::from(j));
        let i = k.add(first, jj);
        let ok = k.cmp(CmpOp::Lt, i, len);
        guards.push((i, ok));
        k.if_else(
            ok,
            |k| {
                k.bounds_check(x, i);
                let v = k.load(x, S::U32, i);
                let at = tile_addr(k, base, t, 64 * j);
                k.b.push(Stmt::Store {
                    space: AddressSpace::Shared,
                    addr: at,
                    value: v,
                });
            },
            |_| {},
        );
    }
    k.b.push(Stmt::Barrier);
    for (j, (i, ok)) in guards.into_iter().enumerate() {
        k.if_else(
            ok,
            |k| {
                let at = tile_addr(k, base, t, 64 * j as u32);
                let v = k.op(Op::Load {
                    space: AddressSpace::Shared,
                    ty: S::U32,
                    addr: at,
                    eviction: cuprum_ir::Eviction::Normal,
                });
                k.bounds_check(y, i);
                k.store(y, i, v);
            },
            |_| {},
        );
    }
    k.finish()
}

#[test]
fn a_tile_written_at_constant_distances_is_addressed_from_one_register() {
    let k = shared_rows();
    assert_eq!(offset_accesses(&k), 0);
    // `checks` takes the address arithmetic out of the guarded branches (as in a
    // transpose), to the top level where one address dominates the others.
    let alone = same_behaviour(&k, &passes(&["checks", "rebase"]), 256, 64, 1000);
    // The first store's address is the base; the other three stores and the four loads
    // are offsets from it.
    assert_eq!(offset_accesses(&alone), 7, "{}", print_kernel(&alone));
    let all = same_behaviour(&k, cuprum_opt::PASSES, 256, 64, 1000);
    assert!(offset_accesses(&all) >= 6, "{}", print_kernel(&all));
    // Lengths that stop inside a thread's four rows.
    same_behaviour(&k, cuprum_opt::PASSES, 256, 64, 999);
}

/// `if t odd { tile[t + 64] = 1 } else { tile[t + 128] = 2 }; tile[t + 192] = 3`, then each
/// thread reads back the three words of its own column into `y`.
fn sibling_branches() -> Kernel {
    let mut k = K::new("siblings");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 256,
    });
    let base = k.op(Op::SharedAddr(tile));
    let t = k.tid();
    let one = k.u32(1);
    let odd_bit = k.bin(BinaryOp::And, t, one);
    let odd = k.cmp(CmpOp::Eq, odd_bit, one);
    let store = |k: &mut K, row: u32, v: u32| {
        let at = tile_addr(k, base, t, row);
        let v = k.u32(v);
        k.b.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr: at,
            value: v,
        });
    };
    k.if_else(odd, |k| store(k, 64, 1), |k| store(k, 128, 2));
    store(&mut k, 192, 3);
    store(&mut k, 0, 4);
    k.b.push(Stmt::Barrier);
    let gid = k.global_id();
    let mut acc = k.u32(0);
    let eight = k.u32(8);
    for row in [0, 192] {
        let at = tile_addr(&mut k, base, t, row);
        let v = k.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr: at,
            eviction: cuprum_ir::Eviction::Normal,
        });
        let shifted = k.bin(BinaryOp::Shl, acc, eight);
        acc = k.add(shifted, v);
    }
    k.bounds_check(y, gid);
    k.store(y, gid, acc);
    k.finish()
}

#[test]
fn addresses_in_sibling_branches_stay_apart() {
    let k = sibling_branches();
    let opt = same_behaviour(&k, &passes(&["rebase"]), 128, 64, 128);
    // Neither branch's store leans on the other's (the validator would refuse the IR); the
    // store and the loads after the branches lean on the first address made outside them.
    assert_eq!(offset_accesses(&opt), 3, "{}", print_kernel(&opt));
    same_behaviour(&k, cuprum_opt::PASSES, 128, 64, 128);
}

/// `tile[t] = t`, then a loop of `n` trips (`n` a parameter below 8) adding `tile[t + 64]`
/// (written before the loop) into `tile[t]` and storing the sum back to both, then
/// `y[gid] = tile[t]`: addresses in the loop at constant distances from one made before it.
fn loop_body() -> Kernel {
    let mut k = K::new("loop_body");
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: S::U32,
        len: 128,
    });
    let base = k.op(Op::SharedAddr(tile));
    let t = k.tid();
    let at0 = tile_addr(&mut k, base, t, 0);
    k.b.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr: at0,
        value: t,
    });
    let at1 = tile_addr(&mut k, base, t, 64);
    let three = k.u32(3);
    k.b.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr: at1,
        value: three,
    });
    k.counted_loop(0, 5, 1, |k, i| {
        let a = tile_addr(k, base, t, 0);
        let b = tile_addr(k, base, t, 64);
        let va = k.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr: a,
            eviction: cuprum_ir::Eviction::Normal,
        });
        let vb = k.op(Op::Load {
            space: AddressSpace::Shared,
            ty: S::U32,
            addr: b,
            eviction: cuprum_ir::Eviction::Normal,
        });
        let sum = k.add(va, vb);
        let sum = k.add(sum, i);
        k.b.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr: a,
            value: sum,
        });
        k.b.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr: b,
            value: va,
        });
    });
    let at = tile_addr(&mut k, base, t, 0);
    let v = k.op(Op::Load {
        space: AddressSpace::Shared,
        ty: S::U32,
        addr: at,
        eviction: cuprum_ir::Eviction::Normal,
    });
    let gid = k.global_id();
    k.bounds_check(y, gid);
    k.store(y, gid, v);
    k.finish()
}

#[test]
fn a_loop_reaches_addresses_made_before_it() {
    let k = loop_body();
    let opt = same_behaviour(&k, &passes(&["rebase"]), 128, 64, 128);
    // Before the loop: one base and one offset; in the loop, every access; after it, the
    // load.
    assert_eq!(offset_accesses(&opt), 6, "{}", print_kernel(&opt));
    same_behaviour(&k, cuprum_opt::PASSES, 128, 64, 128);
}

/// Thread `t` (of 64) of block `b` reads `x[(8 b + (t >> 5) + 8 k) * w + (t & 31)]` for
/// `k = 0..4` (`w` a parameter, the row computed as a transpose computes it: a 64-bit block
/// row plus the zero extension of a small 32-bit one; the front end's checks before each
/// read) and writes their sum to `y[gid]`.
fn strided_rows() -> Kernel {
    let mut k = K::new("strided_rows");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let w = k.scalar("w", S::U64);
    let bx = k.op(Op::Special(Special::BlockIdx(Dim::X)));
    let t = k.tid();
    let bx = k.cast(bx, S::U64);
    let eight = k.u64(8);
    let r0 = k.mul(bx, eight);
    let five = k.u32(5);
    let ty = k.bin(BinaryOp::Shr, t, five);
    let lanes = k.u32(31);
    let tx = k.bin(BinaryOp::And, t, lanes);
    let c = k.cast(tx, S::U64);
    let mut acc = k.u32(0);
    for j in 0..4u32 {
        let jj = k.u32(8 * j);
        let r = k.add(ty, jj);
        let r = k.cast(r, S::U64);
        let r = k.add(r0, r);
        let rw = k.mul(r, w);
        let i = k.add(rw, c);
        k.bounds_check(x, i);
        let v = k.load(x, S::U32, i);
        acc = k.add(acc, v);
    }
    let gid = k.global_id();
    k.bounds_check(y, gid);
    k.store(y, gid, acc);
    k.finish()
}

/// How many global loads of the kernel use an address defined as another load's address
/// plus a step (a value times a constant); panics where that other address was itself
/// stepped (a chain of dependent adds before the loads, which the pass must not make).
fn stepped_loads(kernel: &Kernel) -> usize {
    let mut addresses = std::collections::HashSet::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def {
            op:
                Op::Load {
                    space: AddressSpace::Global,
                    addr,
                    ..
                },
            ..
        } = s
        {
            addresses.insert(*addr);
        }
    });
    let mut consts = std::collections::HashSet::new();
    let mut steps = std::collections::HashSet::new();
    let mut stepped = std::collections::HashSet::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def { value, op } = s {
            match op {
                Op::Const(_) => {
                    consts.insert(*value);
                }
                Op::Binary(BinaryOp::Mul, a, b) if !consts.contains(a) && consts.contains(b) => {
                    steps.insert(*value);
                }
                Op::Binary(BinaryOp::Add, a, b)
                    if addresses.contains(value) && addresses.contains(a) && steps.contains(b) =>
                {
                    assert!(
                        !stepped.contains(a),
                        "{value:?} steps from {a:?}, itself stepped: a chain"
                    );
                    stepped.insert(*value);
                }
                _ => {}
            }
        }
    });
    stepped.len()
}

#[test]
fn rows_a_multiple_of_the_width_apart_are_reached_by_a_step() {
    let k = strided_rows();
    // Widths and lengths that keep every read in bounds, and others that trap (the same way
    // before and after).
    for len in [4096, 3000, 64] {
        // (`cse` makes the four reads' copies of the slice's base one value.)
        let alone = common::same_outcome(&k, &passes(&["cse", "rebase"]), 256, 64, len);
        // The first read's address is computed; the other three step from it (one add each,
        // not a chain through each other).
        assert_eq!(stepped_loads(&alone), 3, "{}", print_kernel(&alone));
        let all = common::same_outcome(&k, cuprum_opt::PASSES, 256, 64, len);
        assert_eq!(stepped_loads(&all), 3, "{}", print_kernel(&all));
    }
}

/// Thread `t` (of 64) with `t >= 1` reads `x[zext(t + 0) * w]` and
/// `x[zext(t + 0xffff_ffff) * w]`, the second sum wrapping (to `t - 1`), and writes their
/// sum to `y[gid]`.
fn wrapping_extension() -> Kernel {
    let mut k = K::new("wrapping_extension");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let w = k.scalar("w", S::U64);
    let t = k.tid();
    let one = k.u32(1);
    let ok = k.cmp(CmpOp::Ge, t, one);
    let gid = k.global_id();
    k.if_else(
        ok,
        |k| {
            let mut acc = k.u32(0);
            for c in [0u32, u32::MAX] {
                let c = k.u32(c);
                let a = k.add(t, c);
                let a = k.cast(a, S::U64);
                let i = k.mul(a, w);
                k.bounds_check(x, i);
                let v = k.load(x, S::U32, i);
                acc = k.add(acc, v);
            }
            k.bounds_check(y, gid);
            k.store(y, gid, acc);
        },
        |_| {},
    );
    k.finish()
}

#[test]
fn a_wrapping_extension_is_not_read_as_a_sum() {
    let k = wrapping_extension();
    for len in [4096, 64] {
        let opt = common::same_outcome(&k, &passes(&["cse", "rebase"]), 256, 64, len);
        assert_eq!(stepped_loads(&opt), 0, "{}", print_kernel(&opt));
        common::same_outcome(&k, cuprum_opt::PASSES, 256, 64, len);
    }
}
