//! Hand-written GPU cases for warps, memory spaces and control flow, with their expected
//! output computed by hand.

use cuprum_ir::ScalarType::{self as S};
use cuprum_ir::*;

use super::{Case, K, Tol};
use crate::common;

/// A kernel over `out: &mut [u32]` with 64 threads (two warps); `body` gets the thread
/// index (`u32`) and returns the value to store.
fn per_thread(
    name: &str,
    threads: u32,
    body: impl FnOnce(&mut K, Value) -> Value,
    expect: impl Fn(u32) -> u32,
) -> Case {
    let mut k = K::new(name);
    // The same machine parameters as the element-wise cases; `inp` is unused.
    k.slice("inp", S::U8, SliceAccess::ReadOnly);
    let out = k.slice("out", S::U32, SliceAccess::Disjoint);
    let i = k.special(Special::ThreadIdx(Dim::X));
    let r = body(&mut k, i);
    let i64v = k.cast(i, S::U64);
    let p = k.elem_addr(out, i64v, S::U32);
    k.store(AddressSpace::Global, p, r);
    Case {
        name: name.into(),
        module: common::one(k.finish()),
        threads,
        input: vec![0; 16],
        out_ty: S::U32,
        stride: 4,
        expect: (0..threads).map(|t| expect(t) as u64).collect(),
        tol: Tol::Exact,
    }
}

pub(crate) fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    // Shuffles at the top level: every mode, including out-of-range sources.
    for (mode, name) in [
        (ShuffleMode::Idx, "idx"),
        (ShuffleMode::Up, "up"),
        (ShuffleMode::Down, "down"),
        (ShuffleMode::Xor, "xor"),
    ] {
        v.push(per_thread(
            &format!("shfl_{name}"),
            64,
            |k, i| {
                let thousand = k.u32(1000);
                let val = k.bin(BinaryOp::Add, i, thousand);
                let lane = k.special(Special::LaneId);
                let three = k.u32(3);
                // Distance 3, or for idx: lane * 3 (beyond 31 for most lanes).
                let b = if mode == ShuffleMode::Idx {
                    k.bin(BinaryOp::Mul, lane, three)
                } else {
                    three
                };
                k.op(Op::Shuffle {
                    mode,
                    value: val,
                    lane: b,
                })
            },
            move |t| {
                let lane = t % 32;
                let base = t - lane;
                let src = match mode {
                    ShuffleMode::Idx => (lane * 3) % 32,
                    ShuffleMode::Up => lane.checked_sub(3).unwrap_or(lane),
                    ShuffleMode::Down => {
                        if lane + 3 < 32 {
                            lane + 3
                        } else {
                            lane
                        }
                    }
                    ShuffleMode::Xor => lane ^ 3,
                };
                base + src + 1000
            },
        ));
    }
    // 64-bit and f64 shuffles.
    v.push(per_thread(
        "shfl_u64",
        64,
        |k, i| {
            let w = k.cast(i, S::U64);
            let sh = k.u32(40);
            let hi = k.bin(BinaryOp::Shl, w, sh);
            let val = k.bin(BinaryOp::Or, hi, w);
            let one = k.u32(1);
            let r = k.op(Op::Shuffle {
                mode: ShuffleMode::Xor,
                value: val,
                lane: one,
            });
            let hi = k.bin(BinaryOp::Shr, r, sh);
            let lo = k.cast(r, S::U32);
            let hi = k.cast(hi, S::U32);
            let eight = k.u32(8);
            let hi = k.bin(BinaryOp::Shl, hi, eight);
            k.bin(BinaryOp::Or, hi, lo)
        },
        |t| {
            let s = t ^ 1;
            (s << 8) | s
        },
    ));
    // Every integer atomic on shared memory, with an order-independent final state; thread
    // `t` reports slot `t % 8`.
    v.push(per_thread(
        "atomics_shared",
        64,
        |k, i| {
            let sh = k.b.shared_array(ArrayDecl {
                name: "slots".into(),
                elem: S::U32,
                len: 8,
            });
            let base = k.op(Op::SharedAddr(sh));
            let slot = |k: &mut K, n: u32| {
                let off = k.u32(4 * n);
                k.bin(BinaryOp::Add, base, off)
            };
            let zero = k.u32(0);
            let first = k.cmp(CmpOp::Eq, i, zero);
            let inits = [0u32, 1000, 1000, 0, u32::MAX, 0, 0, 0];
            k.if_(first, |k| {
                for (n, init) in inits.into_iter().enumerate() {
                    let a = slot(k, n as u32);
                    let v = k.u32(init);
                    k.store(AddressSpace::Shared, a, v);
                }
            });
            k.b.push(Stmt::Barrier);
            let one = k.u32(1);
            let five = k.u32(5);
            let lane = k.special(Special::LaneId);
            let bit = k.bin(BinaryOp::Shl, one, lane);
            let nbit = k.op(Op::Unary(UnaryOp::Not, bit));
            let hundred = k.u32(100);
            let plus5 = k.bin(BinaryOp::Add, i, five);
            let two = k.u32(2);
            let ops = [
                (AtomicOp::CompareExchange, hundred, Some(i)),
                (AtomicOp::Sub, one, None),
                (AtomicOp::Min, plus5, None),
                (AtomicOp::Max, i, None),
                (AtomicOp::And, nbit, None),
                (AtomicOp::Or, bit, None),
                (AtomicOp::Xor, i, None),
                (AtomicOp::Add, two, None),
            ];
            for (n, (op, value, compare)) in ops.into_iter().enumerate() {
                let addr = slot(k, n as u32);
                k.op(Op::Atomic {
                    op,
                    space: AddressSpace::Shared,
                    scope: Scope::Block,
                    order: cuprum_ir::MemOrder::Relaxed,
                    addr,
                    value,
                    compare,
                });
            }
            k.b.push(Stmt::Barrier);
            let seven = k.u32(7);
            let n = k.bin(BinaryOp::And, i, seven);
            let four = k.u32(4);
            let off = k.bin(BinaryOp::Mul, n, four);
            let a = k.bin(BinaryOp::Add, base, off);
            k.load(AddressSpace::Shared, S::U32, a)
        },
        |t| [100, 936, 5, 63, 0, u32::MAX, 0, 128][(t % 8) as usize],
    ));
    // Shuffles of the 16-bit, 8-bit, boolean and f64 representations.
    v.push(per_thread(
        "shfl_types",
        64,
        |k, i| {
            let one = k.u32(1);
            let shfl = |k: &mut K, value: Value| {
                k.op(Op::Shuffle {
                    mode: ShuffleMode::Xor,
                    value,
                    lane: one,
                })
            };
            let h = k.cast(i, S::F16);
            let h = shfl(k, h);
            let h = k.cast(h, S::U32);
            let bit = k.bin(BinaryOp::And, i, one);
            let p = k.cmp(CmpOp::Eq, bit, one);
            let p = shfl(k, p);
            let p = k.cast(p, S::U32);
            let hundred = k.u32(100);
            let n = k.bin(BinaryOp::Sub, i, hundred);
            let n = k.cast(n, S::I8);
            let n = shfl(k, n);
            let n = k.cast(n, S::I32);
            let n = k.cast(n, S::U32);
            let d = k.cast(i, S::F64);
            let d = shfl(k, d);
            let d = k.cast(d, S::U32);
            // h in bits 0..8, p in bit 8, (n + 128) in bits 9..17, d in bits 17..
            let eight = k.u32(8);
            let p = k.bin(BinaryOp::Shl, p, eight);
            let c128 = k.u32(128);
            let n = k.bin(BinaryOp::Add, n, c128);
            let nine = k.u32(9);
            let n = k.bin(BinaryOp::Shl, n, nine);
            let seventeen = k.u32(17);
            let d = k.bin(BinaryOp::Shl, d, seventeen);
            let r = k.bin(BinaryOp::Or, h, p);
            let r = k.bin(BinaryOp::Or, r, n);
            k.bin(BinaryOp::Or, r, d)
        },
        |t| {
            let s = t ^ 1;
            let n = (s as i32 - 100) as i8 as i32;
            s | ((s & 1) << 8) | (((n + 128) as u32) << 9) | (s << 17)
        },
    ));
    // Divergence: even lanes shuffle and vote among themselves.
    v.push(per_thread(
        "divergent_warp_ops",
        64,
        |k, i| {
            let res = k.b.var("res", S::U32);
            let zero = k.u32(0);
            k.write(res, zero);
            let one = k.u32(1);
            let bit = k.bin(BinaryOp::And, i, one);
            let even = k.cmp(CmpOp::Eq, bit, zero);
            k.if_(even, |k| {
                let two = k.u32(2);
                let s = k.op(Op::Shuffle {
                    mode: ShuffleMode::Down,
                    value: i,
                    lane: two,
                });
                let four = k.u32(4);
                let lane = k.special(Special::LaneId);
                let small = k.cmp(CmpOp::Lt, lane, four);
                let ballot = k.op(Op::Vote {
                    mode: VoteMode::Ballot,
                    pred: small,
                });
                let all = k.op(Op::Vote {
                    mode: VoteMode::All,
                    pred: even,
                });
                let any = k.op(Op::Vote {
                    mode: VoteMode::Any,
                    pred: small,
                });
                // res = s | ballot << 8 (low 8 bits of the ballot) | all << 16 | any << 17
                let eight = k.u32(8);
                let b8 = k.bin(BinaryOp::Shl, ballot, eight);
                let ff = k.u32(0xFF00);
                let b8 = k.bin(BinaryOp::And, b8, ff);
                let a = k.cast(all, S::U32);
                let sixteen = k.u32(16);
                let a = k.bin(BinaryOp::Shl, a, sixteen);
                let y = k.cast(any, S::U32);
                let seventeen = k.u32(17);
                let y = k.bin(BinaryOp::Shl, y, seventeen);
                let r = k.bin(BinaryOp::Or, s, b8);
                let r = k.bin(BinaryOp::Or, r, a);
                let r = k.bin(BinaryOp::Or, r, y);
                k.write(res, r);
            });
            k.read(res)
        },
        |t| {
            if t % 2 == 1 {
                return 0;
            }
            let lane = t % 32;
            // Down by 2 reaches the next even lane, or keeps its own at the end.
            let s = if lane + 2 < 32 { t + 2 } else { t };
            // Active lanes are the even ones: lanes 0 and 2 are below 4.
            let any_small = 1;
            s | (0b101 << 8) | (1 << 16) | (any_small << 17)
        },
    ));
    // Votes and shuffles at the top level after the odd lanes have returned.
    v.push(per_thread(
        "after_exit_warp_ops",
        64,
        |k, i| {
            let one = k.u32(1);
            let bit = k.bin(BinaryOp::And, i, one);
            let odd = k.cmp(CmpOp::Ne, bit, one);
            let odd = k.op(Op::Unary(UnaryOp::Not, odd));
            // Odd threads still store their marker before leaving.
            let out_base = k.op(Op::SliceBase(1));
            let four = k.u32(4);
            let off = k.bin(BinaryOp::Mul, i, four);
            let off = k.cast(off, S::U64);
            let p = k.bin(BinaryOp::Add, out_base, off);
            k.if_(odd, |k| {
                let marker = k.u32(77);
                k.store(AddressSpace::Global, p, marker);
                k.b.push(Stmt::Return);
            });
            let t = k.c(Constant::bool(true));
            let ballot = k.op(Op::Vote {
                mode: VoteMode::Ballot,
                pred: t,
            });
            let two = k.u32(2);
            let s = k.op(Op::Shuffle {
                mode: ShuffleMode::Xor,
                value: i,
                lane: two,
            });
            let ff = k.u32(0xFF);
            let b = k.bin(BinaryOp::And, ballot, ff);
            let eight = k.u32(8);
            let s = k.bin(BinaryOp::Shl, s, eight);
            k.bin(BinaryOp::Or, b, s)
        },
        |t| {
            if t % 2 == 1 {
                77
            } else {
                0x55 | ((t ^ 2) << 8)
            }
        },
    ));
    // Shared and local memory, a barrier, bool and narrow loads and stores.
    v.push(per_thread(
        "memory_spaces",
        64,
        |k, i| {
            let sh = k.b.shared_array(ArrayDecl {
                name: "a".into(),
                elem: S::U16,
                len: 64,
            });
            let sb = k.b.shared_array(ArrayDecl {
                name: "flags".into(),
                elem: S::Bool,
                len: 64,
            });
            let lo = k.b.local_array(ArrayDecl {
                name: "l".into(),
                elem: S::I8,
                len: 5,
            });
            let ld = k.b.local_array(ArrayDecl {
                name: "d".into(),
                elem: S::F64,
                len: 3,
            });
            let base = k.op(Op::SharedAddr(sh));
            let two = k.u32(2);
            let off = k.bin(BinaryOp::Mul, i, two);
            let p = k.bin(BinaryOp::Add, base, off);
            let big = k.u32(60000);
            let v16 = k.bin(BinaryOp::Add, i, big);
            let v16 = k.cast(v16, S::U16);
            k.store(AddressSpace::Shared, p, v16);
            let fb = k.op(Op::SharedAddr(sb));
            let fp = k.bin(BinaryOp::Add, fb, i);
            let three = k.u32(3);
            let m = k.bin(BinaryOp::Rem, i, three);
            let zero = k.u32(0);
            let flag = k.cmp(CmpOp::Eq, m, zero);
            k.store(AddressSpace::Shared, fp, flag);
            k.b.push(Stmt::Barrier);
            let one = k.u32(1);
            let j = k.bin(BinaryOp::Add, i, one);
            let sixty_three = k.u32(63);
            let j = k.bin(BinaryOp::And, j, sixty_three);
            let offj = k.bin(BinaryOp::Mul, j, two);
            let pj = k.bin(BinaryOp::Add, base, offj);
            let nb = k.load(AddressSpace::Shared, S::U16, pj);
            let fpj = k.bin(BinaryOp::Add, fb, j);
            let nflag = k.load(AddressSpace::Shared, S::Bool, fpj);
            // Local: an i8 array and an f64 array.
            let lb = k.op(Op::LocalAddr(lo));
            let four = k.u32(4);
            let lp = k.bin(BinaryOp::Add, lb, four);
            let neg = k.c(Constant::new(S::I8, (-5i8) as u8 as u64));
            k.store(AddressSpace::Local, lp, neg);
            let back = k.load(AddressSpace::Local, S::I8, lp);
            let db = k.op(Op::LocalAddr(ld));
            let sixteen = k.u32(16);
            let dp = k.bin(BinaryOp::Add, db, sixteen);
            let x = k.cast(i, S::F64);
            k.store(AddressSpace::Local, dp, x);
            let xb = k.load(AddressSpace::Local, S::F64, dp);
            let xi = k.cast(xb, S::U32);
            // r = nb + (nflag ? 1000000 : 0) + (back as i32 as u32) * 0 + xi * 65536... keep
            // fields apart: low 16 bits nb, bit 20 nflag, bits 21.. back + 5 (0), 24.. xi
            let nb32 = k.cast(nb, S::U32);
            let f32v = k.cast(nflag, S::U32);
            let twenty = k.u32(20);
            let f32v = k.bin(BinaryOp::Shl, f32v, twenty);
            let back32 = k.cast(back, S::I32);
            let back32 = k.cast(back32, S::U32);
            let five = k.u32(5);
            let b0 = k.bin(BinaryOp::Add, back32, five);
            let twenty_one = k.u32(21);
            let b0 = k.bin(BinaryOp::Shl, b0, twenty_one);
            let twenty_four = k.u32(24);
            let xs = k.bin(BinaryOp::Shl, xi, twenty_four);
            let r = k.bin(BinaryOp::Or, nb32, f32v);
            let r = k.bin(BinaryOp::Or, r, b0);
            k.bin(BinaryOp::Or, r, xs)
        },
        |t| {
            let j = (t + 1) % 64;
            (60000 + j) | (((j % 3 == 0) as u32) << 20) | (t << 24)
        },
    ));
    // Loops with break and continue, and atomics from every thread.
    v.push(per_thread(
        "loops_and_atomics",
        64,
        |k, i| {
            let sh = k.b.shared_array(ArrayDecl {
                name: "c".into(),
                elem: S::U32,
                len: 1,
            });
            let cnt = k.op(Op::SharedAddr(sh));
            let zero = k.u32(0);
            let tid0 = k.cmp(CmpOp::Eq, i, zero);
            k.if_(tid0, |k| k.store(AddressSpace::Shared, cnt, zero));
            k.b.push(Stmt::Barrier);
            let acc = k.b.var("acc", S::U32);
            let j = k.b.var("j", S::U32);
            k.write(acc, zero);
            k.write(j, zero);
            k.loop_(|k| {
                let jv = k.read(j);
                let one = k.u32(1);
                let next = k.bin(BinaryOp::Add, jv, one);
                k.write(j, next);
                let stop = k.cmp(CmpOp::Gt, jv, i);
                k.if_(stop, |k| k.b.push(Stmt::Break));
                let three = k.u32(3);
                let m = k.bin(BinaryOp::Rem, jv, three);
                let skip = k.cmp(CmpOp::Eq, m, zero);
                k.if_(skip, |k| k.b.push(Stmt::Continue));
                let a = k.read(acc);
                let s = k.bin(BinaryOp::Add, a, jv);
                k.write(acc, s);
            });
            let one = k.u32(1);
            k.op(Op::Atomic {
                op: AtomicOp::Add,
                space: AddressSpace::Shared,
                scope: Scope::Block,
                order: cuprum_ir::MemOrder::Relaxed,
                addr: cnt,
                value: one,
                compare: None,
            });
            k.b.push(Stmt::Barrier);
            let total = k.load(AddressSpace::Shared, S::U32, cnt);
            let a = k.read(acc);
            let sixteen = k.u32(16);
            let t = k.bin(BinaryOp::Shl, total, sixteen);
            k.bin(BinaryOp::Or, a, t)
        },
        |t| {
            let s: u32 = (0..=t).filter(|j| j % 3 != 0).sum();
            s | (64 << 16)
        },
    ));
    v
}
