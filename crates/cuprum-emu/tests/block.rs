//! Cooperation inside blocks and across the grid: shared-memory reductions with barriers,
//! dynamic shared memory, atomics (global and shared) from many blocks at once, and warp
//! shuffles and votes, each against a plain-Rust reference.

// References index several parallel arrays by element; ranges read better than zips here.
#![allow(clippy::needless_range_loop)]

mod common;

use common::*;
use cuprum_emu::{ArgValue, LaunchDims, Memory, launch};
use cuprum_ir::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Tree reduction of f32 in shared memory; one partial sum per block.
fn reduction_kernel(block: u32) -> Kernel {
    let mut k = K::new("block_sum");
    let x = k.slice("x", ScalarType::F32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::F32, SliceAccess::Disjoint);
    let s = k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: ScalarType::F32,
        len: block,
    });
    let tid = k.tid();
    let i = k.global_id();
    let n = k.len(x);
    let inb = k.cmp(CmpOp::Lt, i, n);
    let zero = k.f32(0.0);
    let v = k.var("v", ScalarType::F32, zero);
    k.if_(inb, |k| {
        let xv = k.load(x, i);
        k.write(v, xv);
    });
    let vv = k.read(v);
    k.store_shared(s, tid, vv);
    k.barrier();
    let half = k.u32(block / 2);
    let stride = k.var("stride", ScalarType::U32, half);
    k.loop_(|k| {
        let st = k.read(stride);
        let z = k.u32(0);
        let done = k.cmp(CmpOp::Eq, st, z);
        k.if_(done, |k| k.push(Stmt::Break));
        let active = k.cmp(CmpOp::Lt, tid, st);
        k.if_(active, |k| {
            let other = k.add(tid, st);
            let a = k.load_shared(s, tid);
            let b = k.load_shared(s, other);
            let sum = k.add(a, b);
            k.store_shared(s, tid, sum);
        });
        k.barrier();
        let one = k.u32(1);
        let next = k.bin(BinaryOp::Shr, st, one);
        k.write(stride, next);
    });
    let z = k.u32(0);
    let first = k.cmp(CmpOp::Eq, tid, z);
    k.if_(first, |k| {
        let r = k.load_shared(s, z);
        let b = k.special(Special::BlockIdx(Dim::X));
        let b64 = k.cast(b, ScalarType::U64);
        k.store(out, b64, r);
    });
    k.finish()
}

#[test]
fn shared_memory_tree_reduction() {
    let mut rng = StdRng::seed_from_u64(20);
    let mem = Memory::new();
    for &(n, block) in &[(1usize, 32u32), (1000, 64), (100_003, 256), (5000, 1024)] {
        let kernel = reduction_kernel(block);
        let xs: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let dx = upload(&mem, &xs);
        let blocks = n.div_ceil(block as usize);
        let dout = output(&mem, ScalarType::F32, blocks);
        launch(&mem, &kernel, dims1(n as u64, block), &[dx, dout]).unwrap();
        let got: Vec<f32> = download(&mem, dout);
        for b in 0..blocks {
            let mut s: Vec<f32> = (0..block as usize)
                .map(|t| xs.get(b * block as usize + t).copied().unwrap_or(0.0))
                .collect();
            let mut stride = block as usize / 2;
            while stride > 0 {
                for t in 0..stride {
                    s[t] += s[t + stride];
                }
                stride /= 2;
            }
            assert_eq!(
                got[b].to_bits(),
                s[0].to_bits(),
                "n={n} block={block} b={b}"
            );
        }
    }
}

/// Reverses each block's chunk through dynamic shared memory placed after a static array.
#[test]
fn dynamic_shared_memory() {
    let block = 128u32;
    let mut k = K::new("reverse");
    let x = k.slice("x", ScalarType::U64, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::U64, SliceAccess::Disjoint);
    let st = k.b.shared_array(ArrayDecl {
        name: "pad".into(),
        elem: ScalarType::U8,
        len: 3,
    });
    let tid = k.tid();
    let i = k.global_id();
    let dynb = k.op(Op::DynSharedAddr);
    let eight = k.u32(8);
    let off = k.mul(tid, eight);
    let addr = k.add(dynb, off);
    let v = k.load(x, i);
    k.push(Stmt::Store {
        space: AddressSpace::Shared,
        addr,
        value: v,
    });
    // The static array is usable too and does not overlap.
    let zero = k.u32(0);
    let first = k.cmp(CmpOp::Eq, tid, zero);
    k.if_(first, |k| {
        let b = k.c(Constant::new(ScalarType::U8, 7));
        k.store_shared(st, zero, b);
    });
    k.barrier();
    let last = k.u32(block - 1);
    let r = k.bin(BinaryOp::Sub, last, tid);
    let roff = k.mul(r, eight);
    let raddr = k.add(dynb, roff);
    let w = k.op(Op::Load {
        space: AddressSpace::Shared,
        ty: ScalarType::U64,
        addr: raddr,
        eviction: cuprum_ir::Eviction::Normal,
    });
    k.store(y, i, w);
    let kernel = k.finish();
    assert_eq!(
        array_layout(&kernel.shared).1,
        16,
        "dynamic region starts 16-aligned"
    );

    let mem = Memory::new();
    let n = block as usize * 10;
    let xs: Vec<u64> = (0..n as u64)
        .map(|v| v.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let dx = upload(&mem, &xs);
    let dy = output(&mem, ScalarType::U64, n);
    let dims = LaunchDims {
        dynamic_shared_bytes: block * 8,
        ..dims1(n as u64, block)
    };
    launch(&mem, &kernel, dims, &[dx, dy]).unwrap();
    let ys: Vec<u64> = download(&mem, dy);
    for (i, yv) in ys.iter().enumerate() {
        let b = i / block as usize;
        let t = i % block as usize;
        assert_eq!(*yv, xs[b * block as usize + block as usize - 1 - t]);
    }
}

fn atomic(
    k: &mut K,
    op: AtomicOp,
    space: AddressSpace,
    addr: Value,
    value: Value,
    compare: Option<Value>,
) -> Value {
    k.op(Op::Atomic {
        op,
        space,
        scope: Scope::Device,
        order: cuprum_ir::MemOrder::Relaxed,
        addr,
        value,
        compare,
    })
}

/// A histogram with global atomics, and the same through a shared-memory histogram per block.
#[test]
fn histogram_with_atomics_across_blocks() {
    const BINS: u32 = 64;
    let mut rng = StdRng::seed_from_u64(21);
    let n = 200_003;
    let xs: Vec<u32> = (0..n).map(|_| rng.random_range(0..1000)).collect();
    let mut want = vec![0u32; BINS as usize];
    for &x in &xs {
        want[(x % BINS) as usize] += 1;
    }
    let mem = Memory::new();
    for via_shared in [false, true] {
        let mut k = K::new("hist");
        let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
        let h = k.slice("h", ScalarType::U32, SliceAccess::ReadWrite);
        let sh = k.b.shared_array(ArrayDecl {
            name: "sh".into(),
            elem: ScalarType::U32,
            len: BINS,
        });
        let tid = k.tid();
        let bins = k.u32(BINS);
        let one = k.u32(1);
        if via_shared {
            let small = k.cmp(CmpOp::Lt, tid, bins);
            k.if_(small, |k| {
                let z = k.u32(0);
                k.store_shared(sh, tid, z);
            });
            k.barrier();
        }
        let i = k.global_id();
        let n_ = k.len(x);
        let inb = k.cmp(CmpOp::Lt, i, n_);
        k.if_(inb, |k| {
            let v = k.load(x, i);
            let bin = k.bin(BinaryOp::Rem, v, bins);
            if via_shared {
                let addr = k.shared_addr(sh, bin);
                atomic(k, AtomicOp::Add, AddressSpace::Shared, addr, one, None);
            } else {
                let b64 = k.cast(bin, ScalarType::U64);
                let addr = k.elem_addr(h, b64);
                atomic(k, AtomicOp::Add, AddressSpace::Global, addr, one, None);
            }
        });
        if via_shared {
            k.barrier();
            let small = k.cmp(CmpOp::Lt, tid, bins);
            k.if_(small, |k| {
                let c = k.load_shared(sh, tid);
                let t64 = k.cast(tid, ScalarType::U64);
                let addr = k.elem_addr(h, t64);
                atomic(k, AtomicOp::Add, AddressSpace::Global, addr, c, None);
            });
        }
        let kernel = k.finish();
        let dx = upload(&mem, &xs);
        let dh = upload(&mem, &vec![0u32; BINS as usize]);
        launch(&mem, &kernel, dims1(n as u64, 256), &[dx, dh]).unwrap();
        let got: Vec<u32> = download(&mem, dh);
        assert_eq!(got, want, "via_shared = {via_shared}");
    }
}

/// Every atomic operation on one global cell from every thread, against the fold in Rust
/// (all these operations commute, so the order of the blocks does not matter).
#[test]
fn atomic_operations() {
    let mut rng = StdRng::seed_from_u64(22);
    let n = 10_000usize;
    let mem = Memory::new();
    let cases: [(AtomicOp, ScalarType); 12] = [
        (AtomicOp::Add, ScalarType::U64),
        (AtomicOp::Sub, ScalarType::I32),
        (AtomicOp::Min, ScalarType::I32),
        (AtomicOp::Max, ScalarType::I32),
        (AtomicOp::Min, ScalarType::U32),
        (AtomicOp::Max, ScalarType::I64),
        (AtomicOp::And, ScalarType::U32),
        (AtomicOp::Or, ScalarType::U64),
        (AtomicOp::Xor, ScalarType::I64),
        (AtomicOp::Add, ScalarType::F32),
        (AtomicOp::Add, ScalarType::F64),
        (AtomicOp::Add, ScalarType::I32),
    ];
    for (op, ty) in cases {
        let vals: Vec<u64> = (0..n)
            .map(|_| match ty {
                // Small integers: float sums are exact in any order.
                ScalarType::F32 => (rng.random_range(-1000i32..1000) as f32).to_bits() as u64,
                ScalarType::F64 => (rng.random_range(-1000i32..1000) as f64).to_bits(),
                _ => {
                    Constant::new(
                        ty,
                        rng.random::<u64>()
                            | if op == AtomicOp::And {
                                0xFFFF_0000_F0F0_FFFF
                            } else {
                                0
                            },
                    )
                    .bits
                }
            })
            .collect();
        let init: u64 = match (op, ty) {
            (AtomicOp::And, _) => Constant::new(ty, u64::MAX).bits,
            (AtomicOp::Min, ScalarType::U32) => u32::MAX as u64,
            _ => 0,
        };
        let mut k = K::new("atomics");
        let x = k.slice("x", ty, SliceAccess::ReadOnly);
        let cell = k.slice("cell", ty, SliceAccess::ReadWrite);
        k.guarded(x, |k, i| {
            let v = k.load(x, i);
            let z = k.u64(0);
            let addr = k.elem_addr(cell, z);
            atomic(k, op, AddressSpace::Global, addr, v, None);
        });
        let kernel = k.finish();
        let dx = upload_bits(&mem, ty, &vals);
        let dc = upload_bits(&mem, ty, &[init]);
        launch(&mem, &kernel, dims1(n as u64, 128), &[dx, dc]).unwrap();
        let got = download_bits(&mem, ty, dc)[0];
        let want = vals.iter().fold(init, |acc, &v| {
            let m = |x: u64| Constant::new(ty, x).bits;
            match (op, ty) {
                (AtomicOp::Add, ScalarType::F32) => {
                    (f32::from_bits(acc as u32) + f32::from_bits(v as u32)).to_bits() as u64
                }
                (AtomicOp::Add, ScalarType::F64) => {
                    (f64::from_bits(acc) + f64::from_bits(v)).to_bits()
                }
                (AtomicOp::Add, _) => m(acc.wrapping_add(v)),
                (AtomicOp::Sub, _) => m(acc.wrapping_sub(v)),
                (AtomicOp::Min, ScalarType::I32) => {
                    (acc as u32 as i32).min(v as u32 as i32) as u32 as u64
                }
                (AtomicOp::Max, ScalarType::I32) => {
                    (acc as u32 as i32).max(v as u32 as i32) as u32 as u64
                }
                (AtomicOp::Max, ScalarType::I64) => (acc as i64).max(v as i64) as u64,
                (AtomicOp::Min, _) => acc.min(v),
                (AtomicOp::And, _) => acc & v,
                (AtomicOp::Or, _) => acc | v,
                (AtomicOp::Xor, _) => acc ^ v,
                _ => unreachable!(),
            }
        });
        assert_eq!(got, want, "{op:?} on {ty}");
    }
}

/// A lock-free increment with a compare-exchange retry loop: lanes of one warp contend, so the
/// loop diverges; Exchange hands out tickets.
#[test]
fn compare_exchange_retry_loop() {
    let n = 5000u64;
    let mut k = K::new("cas_inc");
    let cell = k.slice("cell", ScalarType::U32, SliceAccess::ReadWrite);
    let seen = k.slice("seen", ScalarType::U32, SliceAccess::Disjoint);
    k.guarded(seen, |k, i| {
        let z = k.u64(0);
        let addr = k.elem_addr(cell, z);
        let ld = k.op(Op::Load {
            space: AddressSpace::Global,
            ty: ScalarType::U32,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        });
        let cur = k.var("cur", ScalarType::U32, ld);
        k.loop_(|k| {
            let c = k.read(cur);
            let one = k.u32(1);
            let next = k.add(c, one);
            let old = atomic(
                k,
                AtomicOp::CompareExchange,
                AddressSpace::Global,
                addr,
                next,
                Some(c),
            );
            let ok = k.cmp(CmpOp::Eq, old, c);
            k.if_(ok, |k| {
                k.store(seen, i, c);
                k.push(Stmt::Break);
            });
            k.write(cur, old);
        });
    });
    let kernel = k.finish();
    let mem = Memory::new();
    let dc = upload(&mem, &[0u32]);
    let ds = output(&mem, ScalarType::U32, n as usize);
    launch(&mem, &kernel, dims1(n, 64), &[dc, ds]).unwrap();
    assert_eq!(download::<u32>(&mem, dc)[0], n as u32);
    let mut s: Vec<u32> = download(&mem, ds);
    s.sort_unstable();
    assert!(
        s.iter().enumerate().all(|(i, &v)| v == i as u32),
        "every ticket exactly once"
    );
}

/// Shuffles in every mode with random lane arguments (some out of range), in a block whose last
/// warp is partial, against a per-warp reference.
#[test]
fn shuffles_match_reference() {
    let mut rng = StdRng::seed_from_u64(23);
    let block = 48u32; // warp 1 has 16 lanes
    let blocks = 7u32;
    let n = (block * blocks) as usize;
    let vals: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let lanes_arg: Vec<u32> = (0..n)
        .map(|i| {
            if i % 5 == 0 {
                rng.random_range(0..70)
            } else {
                rng.random_range(0..16)
            }
        })
        .collect();
    let mem = Memory::new();
    for mode in [
        ShuffleMode::Idx,
        ShuffleMode::Up,
        ShuffleMode::Down,
        ShuffleMode::Xor,
    ] {
        let mut k = K::new("shfl");
        let v = k.slice("v", ScalarType::U32, SliceAccess::ReadOnly);
        let l = k.slice("l", ScalarType::U32, SliceAccess::ReadOnly);
        let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
        let i = k.global_id();
        let x = k.load(v, i);
        let la = k.load(l, i);
        let r = k.op(Op::Shuffle {
            mode,
            value: x,
            lane: la,
        });
        k.store(out, i, r);
        let kernel = k.finish();
        // Arguments that would read an absent lane of the partial warp are replaced here.
        let mut args = lanes_arg.clone();
        let src = |lane: u32, a: u32| -> u32 {
            let a = a & 31; // PTX uses the low five bits of the lane operand
            let s = match mode {
                ShuffleMode::Idx => Some(a),
                ShuffleMode::Up => lane.checked_sub(a),
                ShuffleMode::Down => lane.checked_add(a),
                ShuffleMode::Xor => Some(lane ^ a),
            };
            s.filter(|&s| s < 32).unwrap_or(lane)
        };
        for (t, a) in args.iter_mut().enumerate() {
            let in_block = t as u32 % block;
            let (warp, lane) = (in_block / 32, in_block % 32);
            let valid = if warp == 1 { 16 } else { 32 };
            if src(lane, *a) >= valid {
                *a = 0; // own value for Up/Down/Xor, lane 0 for Idx: both valid
            }
        }
        let dv = upload(&mem, &vals);
        let dl = upload(&mem, &args);
        let dout = output(&mem, ScalarType::U32, n);
        launch(&mem, &kernel, dims1(n as u64, block), &[dv, dl, dout]).unwrap();
        let got: Vec<u32> = download(&mem, dout);
        for t in 0..n {
            let in_block = t as u32 % block;
            let warp_start = t - (in_block % 32) as usize;
            let lane = in_block % 32;
            let s = src(lane, args[t]);
            assert_eq!(
                got[t],
                vals[warp_start + s as usize],
                "{mode:?} thread {t} arg {}",
                args[t]
            );
        }
    }
}

/// A butterfly warp sum with `Xor` shuffles, and votes under divergence.
#[test]
fn warp_sum_and_votes() {
    let mut rng = StdRng::seed_from_u64(24);
    let n = 32 * 40;
    let vals: Vec<u32> = (0..n).map(|_| rng.random_range(0..1_000_000)).collect();
    let mut k = K::new("warp_ops");
    let v = k.slice("v", ScalarType::U32, SliceAccess::ReadOnly);
    let sums = k.slice("sums", ScalarType::U32, SliceAccess::Disjoint);
    let ballots = k.slice("ballots", ScalarType::U32, SliceAccess::Disjoint);
    let alls = k.slice("alls", ScalarType::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let x = k.load(v, i);
    let acc = k.var("acc", ScalarType::U32, x);
    for d in [16u32, 8, 4, 2, 1] {
        let a = k.read(acc);
        let dv = k.u32(d);
        let o = k.op(Op::Shuffle {
            mode: ShuffleMode::Xor,
            value: a,
            lane: dv,
        });
        let s = k.add(a, o);
        k.write(acc, s);
    }
    let a = k.read(acc);
    k.store(sums, i, a);
    // Votes only among lanes < 20 whose predicate is "value is odd".
    let lane = k.special(Special::LaneId);
    let twenty = k.u32(20);
    let low = k.cmp(CmpOp::Lt, lane, twenty);
    k.if_else(
        low,
        |k| {
            let one = k.u32(1);
            let bit = k.bin(BinaryOp::And, x, one);
            let odd = k.cmp(CmpOp::Eq, bit, one);
            let b = k.op(Op::Vote {
                mode: VoteMode::Ballot,
                pred: odd,
            });
            k.store(ballots, i, b);
            let all = k.op(Op::Vote {
                mode: VoteMode::All,
                pred: odd,
            });
            let any = k.op(Op::Vote {
                mode: VoteMode::Any,
                pred: odd,
            });
            let all32 = k.cast(all, ScalarType::U32);
            let any32 = k.cast(any, ScalarType::U32);
            let two = k.u32(2);
            let any2 = k.mul(any32, two);
            let r = k.bin(BinaryOp::Or, all32, any2);
            k.store(alls, i, r);
        },
        |k| {
            let t = k.bool(true);
            let b = k.op(Op::Vote {
                mode: VoteMode::Ballot,
                pred: t,
            });
            k.store(ballots, i, b);
            let all = k.op(Op::Vote {
                mode: VoteMode::All,
                pred: t,
            });
            let all32 = k.cast(all, ScalarType::U32);
            k.store(alls, i, all32);
        },
    );
    let kernel = k.finish();
    let mem = Memory::new();
    let dv = upload(&mem, &vals);
    let (ds, db, da) = (
        output(&mem, ScalarType::U32, n),
        output(&mem, ScalarType::U32, n),
        output(&mem, ScalarType::U32, n),
    );
    launch(&mem, &kernel, dims1(n as u64, 128), &[dv, ds, db, da]).unwrap();
    let (s, b, a): (Vec<u32>, Vec<u32>, Vec<u32>) =
        (download(&mem, ds), download(&mem, db), download(&mem, da));
    for w in 0..n / 32 {
        let lanes = &vals[w * 32..w * 32 + 32];
        let sum = lanes.iter().fold(0u32, |x, y| x.wrapping_add(*y));
        let ballot = (0..20)
            .filter(|&l| lanes[l] & 1 == 1)
            .fold(0u32, |m, l| m | 1 << l);
        let all = (ballot == (1 << 20) - 1) as u32;
        let any = (ballot != 0) as u32;
        for l in 0..32 {
            let t = w * 32 + l;
            assert_eq!(s[t], sum, "warp {w} sum");
            if l < 20 {
                assert_eq!(b[t], ballot, "warp {w} ballot");
                assert_eq!(a[t], all | any << 1, "warp {w} all/any");
            } else {
                assert_eq!(b[t], 0xFFF0_0000, "warp {w} other-arm ballot");
                assert_eq!(a[t], 1);
            }
        }
    }
}

/// Slices passed with an offset base (inside an allocation) work like any other.
#[test]
fn sub_slices() {
    let mem = Memory::new();
    let base = mem.alloc(4 * 100).unwrap();
    let data: Vec<u8> = (0..100u32).flat_map(|v| v.to_le_bytes()).collect();
    mem.write(base, &data).unwrap();
    let mut k = K::new("double");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadWrite);
    k.guarded(x, |k, i| {
        let v = k.load(x, i);
        let s = k.add(v, v);
        k.store(x, i, s);
    });
    let kernel = k.finish();
    let sub = ArgValue::Slice {
        base: base + 40,
        len: 50,
    };
    launch(&mem, &kernel, dims1(50, 32), &[sub]).unwrap();
    let got: Vec<u32> = download(&mem, ArgValue::Slice { base, len: 100 });
    for (i, g) in got.iter().enumerate() {
        let want = if (10..60).contains(&i) {
            2 * i as u32
        } else {
            i as u32
        };
        assert_eq!(*g, want);
    }
}

#[test]
fn reduction_speed() {
    let mem = Memory::new();
    let n = 1usize << 20;
    let xs: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let dx = upload(&mem, &xs);
    let kernel = reduction_kernel(256);
    let dout = output(&mem, ScalarType::F32, n / 256);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = std::time::Instant::now();
        launch(&mem, &kernel, dims1(n as u64, 256), &[dx, dout]).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    let got: Vec<f32> = download(&mem, dout);
    assert!(
        got.iter()
            .enumerate()
            .all(|(b, &s)| s == (0..256).map(|t| ((b * 256 + t) % 17) as f32).sum::<f32>())
    );
    eprintln!(
        "shared-memory tree reduction of {n} f32 (blocks of 256, 9 barriers each): {:.1} ms",
        best * 1e3
    );
}

/// A 2-D block (16 x 8) transposes a tile through shared memory: threadIdx.y matters for the
/// layout, and the barrier separates writers from readers in other warps.
#[test]
fn two_dimensional_block_transpose() {
    let (tx, ty) = (16u32, 8u32);
    let mut k = K::new("transpose_tile");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::U32, SliceAccess::Disjoint);
    let s = k.b.shared_array(ArrayDecl {
        name: "tile".into(),
        elem: ScalarType::U32,
        len: tx * ty,
    });
    let cx = k.special(Special::ThreadIdx(Dim::X));
    let cy = k.special(Special::ThreadIdx(Dim::Y));
    let b = k.special(Special::BlockIdx(Dim::X));
    let w = k.u32(tx);
    let h = k.u32(ty);
    let tile = k.u32(tx * ty);
    let row = k.mul(cy, w);
    let lin = k.add(row, cx); // y * 16 + x
    let boff = k.mul(b, tile);
    let gi = k.add(boff, lin);
    let gi64 = k.cast(gi, ScalarType::U64);
    let v = k.load(x, gi64);
    k.store_shared(s, lin, v);
    k.barrier();
    // out[b][x][y] = tile[y][x], i.e. read (lin % 8) * 16 + lin / 8.
    let r = k.bin(BinaryOp::Rem, lin, h);
    let q = k.bin(BinaryOp::Div, lin, h);
    let rw = k.mul(r, w);
    let src = k.add(rw, q);
    let t = k.load_shared(s, src);
    k.store(y, gi64, t);
    let kernel = k.finish();
    let mem = Memory::new();
    let blocks = 5usize;
    let n = blocks * (tx * ty) as usize;
    let xs: Vec<u32> = (0..n as u32).map(|v| v * 3 + 1).collect();
    let dx = upload(&mem, &xs);
    let dy = output(&mem, ScalarType::U32, n);
    let dims = LaunchDims {
        grid: [blocks as u32, 1, 1],
        block: [tx, ty, 1],
        dynamic_shared_bytes: 0,
    };
    launch(&mem, &kernel, dims, &[dx, dy]).unwrap();
    let got: Vec<u32> = download(&mem, dy);
    for bi in 0..blocks {
        for lin in 0..(tx * ty) as usize {
            let src = (lin % ty as usize) * tx as usize + lin / ty as usize;
            assert_eq!(got[bi * 128 + lin], xs[bi * 128 + src]);
        }
    }
}

/// Nested loops: the inner loop continues and breaks per lane, the outer loop is left by
/// some lanes with `Return` from inside the inner loop.
#[test]
fn nested_loops_with_return_inside() {
    let mut k = K::new("nested");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    k.guarded(out, |k, i| {
        let n = k.load(x, i);
        let z = k.u32(0);
        let acc = k.var("acc", ScalarType::U32, z);
        let a = k.var("a", ScalarType::U32, z);
        k.loop_(|k| {
            let av = k.read(a);
            let done = k.cmp(CmpOp::Ge, av, n);
            k.if_(done, |k| k.push(Stmt::Break));
            let b = k.var("b", ScalarType::U32, z);
            k.loop_(|k| {
                let bv = k.read(b);
                let one = k.u32(1);
                let b1 = k.add(bv, one);
                k.write(b, b1);
                let lim = k.cmp(CmpOp::Gt, bv, av);
                k.if_(lim, |k| k.push(Stmt::Break));
                let three = k.u32(3);
                let m = k.bin(BinaryOp::Rem, bv, three);
                let skip = k.cmp(CmpOp::Eq, m, z);
                k.if_(skip, |k| k.push(Stmt::Continue));
                let c = k.read(acc);
                let ab = k.mul(av, bv);
                let c1 = k.add(c, ab);
                k.write(acc, c1);
                // Lanes whose sum passes 5000 store a marker and end the thread right here.
                let big = k.u32(5000);
                let over = k.cmp(CmpOp::Gt, c1, big);
                k.if_(over, |k| {
                    let mk = k.u32(0xFFFF_0000);
                    let v = k.bin(BinaryOp::Or, mk, av);
                    k.store(out, i, v);
                    k.push(Stmt::Return);
                });
            });
            let one = k.u32(1);
            let a1 = k.add(av, one);
            k.write(a, a1);
        });
        let c = k.read(acc);
        k.store(out, i, c);
    });
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(25);
    let n = 700;
    let xs: Vec<u32> = (0..n).map(|_| rng.random_range(0..40)).collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let dout = output(&mem, ScalarType::U32, n);
    launch(&mem, &kernel, dims1(n as u64, 64), &[dx, dout]).unwrap();
    let got: Vec<u32> = download(&mem, dout);
    'thread: for t in 0..n {
        let mut acc = 0u32;
        for a in 0..xs[t] {
            for b in 0..=a {
                if b % 3 == 0 {
                    continue;
                }
                acc += a * b;
                if acc > 5000 {
                    assert_eq!(got[t], 0xFFFF_0000 | a, "thread {t}");
                    continue 'thread;
                }
            }
        }
        assert_eq!(got[t], acc, "thread {t}");
    }
}

/// Half-precision data staged through shared memory by 2-byte accesses: neighbouring threads
/// write different halves of one 4-byte word, which is not a race.
#[test]
fn sub_word_shared_accesses_are_not_races() {
    use half::f16;
    let block = 64u32;
    let mut k = K::new("f16_stage");
    let x = k.slice("x", ScalarType::F16, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::F16, SliceAccess::Disjoint);
    let s = k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: ScalarType::F16,
        len: block,
    });
    let tid = k.tid();
    let i = k.global_id();
    let v = k.load(x, i);
    k.store_shared(s, tid, v);
    k.barrier();
    let one = k.u32(1);
    let m = k.u32(block - 1);
    let t1 = k.add(tid, one);
    let j = k.bin(BinaryOp::And, t1, m);
    let a = k.load_shared(s, tid);
    let b = k.load_shared(s, j);
    let sum = k.add(a, b);
    k.store(y, i, sum);
    let kernel = k.finish();
    let mem = Memory::new();
    let n = block as usize * 3;
    let xs: Vec<f16> = (0..n)
        .map(|v| f16::from_f32(v as f32 * 0.25 - 7.0))
        .collect();
    let dx = upload(&mem, &xs);
    let dy = output(&mem, ScalarType::F16, n);
    launch(&mem, &kernel, dims1(n as u64, block), &[dx, dy]).unwrap();
    let got: Vec<f16> = download(&mem, dy);
    for t in 0..n {
        let base = t - t % block as usize;
        let nb = base + (t + 1) % block as usize;
        let want = f16::from_f32(xs[t].to_f32() + xs[nb].to_f32());
        assert_eq!(got[t].to_bits(), want.to_bits(), "thread {t}");
    }
}

/// The last warp done adds up what every warp left in shared memory, with no barrier: each
/// warp's lane 0 stores its partial sum, then counts itself done with an atomic add on a
/// shared count; the one that finds every other warp counted reads all the partials (the
/// tile lowering's counted rings refill a buffer this way). With an acquire-release add the
/// reads are ordered after every store (the adds form a release sequence): right result, no
/// race. With a relaxed add nothing orders them: a read/write race on a partial.
fn last_warp_sums(order: MemOrder) -> Result<Vec<u32>, cuprum_emu::EmuError> {
    const WARPS: u32 = 4;
    let mut k = K::new("last_warp_sums");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::U32, SliceAccess::ReadWrite);
    let partials = k.b.shared_array(ArrayDecl {
        name: "partials".into(),
        elem: ScalarType::U32,
        len: WARPS,
    });
    let count = k.b.shared_array(ArrayDecl {
        name: "count".into(),
        elem: ScalarType::U32,
        len: 1,
    });
    let tid = k.tid();
    let zero = k.u32(0);
    let first = k.cmp(CmpOp::Eq, tid, zero);
    k.if_(first, |k| {
        let z = k.u32(0);
        let c = k.u32(0);
        k.store_shared(count, c, z);
    });
    k.barrier();
    let warp_size = k.u32(32);
    let warp = k.bin(BinaryOp::Div, tid, warp_size);
    let lane = k.bin(BinaryOp::Rem, tid, warp_size);
    let lane0 = k.cmp(CmpOp::Eq, lane, zero);
    k.if_(lane0, |k| {
        let w64 = k.cast(warp, ScalarType::U64);
        let v = k.load(x, w64);
        k.store_shared(partials, warp, v);
        let z = k.u32(0);
        let addr = k.shared_addr(count, z);
        let one = k.u32(1);
        let before = k.op(Op::Atomic {
            op: AtomicOp::Add,
            space: AddressSpace::Shared,
            scope: Scope::Block,
            order,
            addr,
            value: one,
            compare: None,
        });
        let last = k.u32(WARPS - 1);
        let is_last = k.cmp(CmpOp::Eq, before, last);
        k.if_(is_last, |k| {
            let mut sum = k.u32(0);
            for w in 0..WARPS {
                let i = k.u32(w);
                let p = k.load_shared(partials, i);
                sum = k.add(sum, p);
            }
            let z = k.u32(0);
            let z64 = k.cast(z, ScalarType::U64);
            k.store(out, z64, sum);
        });
    });
    let kernel = k.finish();
    let mem = Memory::new();
    let mut rng = StdRng::seed_from_u64(25);
    let xs: Vec<u32> = (0..WARPS).map(|_| rng.random_range(0..1000)).collect();
    let dx = upload(&mem, &xs);
    let dout = upload(&mem, &[0xDEAD_BEEFu32]);
    launch(
        &mem,
        &kernel,
        dims1(u64::from(32 * WARPS), 32 * WARPS),
        &[dx, dout],
    )?;
    let got: Vec<u32> = download(&mem, dout);
    assert_eq!(got, vec![xs.iter().sum::<u32>()], "{order:?}");
    Ok(got)
}

#[test]
fn an_acquire_release_count_orders_the_last_warps_reads_of_shared_memory() {
    for order in [MemOrder::AcqRel, MemOrder::SeqCst] {
        if let Err(e) = last_warp_sums(order) {
            panic!("{order:?}: {e}");
        }
    }
    for order in [MemOrder::Relaxed, MemOrder::Release] {
        match last_warp_sums(order) {
            Err(cuprum_emu::EmuError::SharedRace { kind, .. }) => {
                assert_eq!(kind, cuprum_emu::RaceKind::ReadWrite, "{order:?}");
            }
            other => panic!("{order:?}: expected a shared-memory race, got {other:?}"),
        }
    }
}
