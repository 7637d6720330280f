//! Element-wise kernels, loops with divergence, local arrays, the memory API and launch
//! checks, each against a plain-Rust reference on random inputs.

// References index several parallel arrays by element; ranges read better than zips here.
#![allow(clippy::needless_range_loop)]

mod common;

use std::time::Instant;

use common::*;
use cuprum_emu::{ArgValue, EmuError, LaunchDims, Memory, POISON, launch};
use cuprum_ir::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

fn vecadd_kernel() -> Kernel {
    let mut k = K::new("vecadd");
    let a = k.slice("a", ScalarType::F32, SliceAccess::ReadOnly);
    let b = k.slice("b", ScalarType::F32, SliceAccess::ReadOnly);
    let c = k.slice("c", ScalarType::F32, SliceAccess::Disjoint);
    k.guarded(c, |k, i| {
        let x = k.load(a, i);
        let y = k.load(b, i);
        let s = k.add(x, y);
        k.store(c, i, s);
    });
    k.finish()
}

fn saxpy_kernel() -> Kernel {
    let mut k = K::new("saxpy");
    let alpha = k.scalar("alpha", ScalarType::F32);
    let x = k.slice("x", ScalarType::F32, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::F32, SliceAccess::Disjoint);
    k.guarded(y, |k, i| {
        let al = k.param(alpha);
        let xv = k.load(x, i);
        let yv = k.load(y, i);
        let r = k.op(Op::Ternary(TernaryOp::MulAdd, al, xv, yv));
        k.store(y, i, r);
    });
    k.finish()
}

fn random_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| rng.random_range(-1000.0f32..1000.0))
        .collect()
}

#[test]
fn vecadd_and_saxpy_at_many_sizes_and_block_sizes() {
    let mut rng = StdRng::seed_from_u64(1);
    let mem = Memory::new();
    let (vecadd, saxpy) = (vecadd_kernel(), saxpy_kernel());
    for &n in &[1usize, 255, 1000, (1 << 20) + 3] {
        for &block in &[32u32, 128, 1000, 1024, 37] {
            if n > 100_000 && block == 37 {
                continue;
            }
            let a = random_f32(&mut rng, n);
            let b = random_f32(&mut rng, n);
            let (da, db) = (upload(&mem, &a), upload(&mem, &b));
            let dc = output(&mem, ScalarType::F32, n);
            launch(&mem, &vecadd, dims1(n as u64, block), &[da, db, dc]).unwrap();
            let c: Vec<f32> = download(&mem, dc);
            for i in 0..n {
                assert_eq!(
                    c[i].to_bits(),
                    (a[i] + b[i]).to_bits(),
                    "vecadd n={n} block={block} i={i}"
                );
            }

            let alpha = rng.random_range(-3.0f32..3.0);
            launch(
                &mem,
                &saxpy,
                dims1(n as u64, block),
                &[scalar(alpha), da, db],
            )
            .unwrap();
            let y: Vec<f32> = download(&mem, db);
            for i in 0..n {
                assert_eq!(
                    y[i].to_bits(),
                    alpha.mul_add(a[i], b[i]).to_bits(),
                    "saxpy n={n} i={i}"
                );
            }
            for d in [da, db, dc] {
                let ArgValue::Slice { base, .. } = d else {
                    unreachable!()
                };
                mem.free(base).unwrap();
            }
        }
    }
    assert_eq!(mem.allocation_count(), 0);
}

#[test]
fn vecadd_speed() {
    let n = (1usize << 20) + 3;
    let mut rng = StdRng::seed_from_u64(2);
    let mem = Memory::new();
    let k = vecadd_kernel();
    let a = random_f32(&mut rng, n);
    let b = random_f32(&mut rng, n);
    let (da, db) = (upload(&mem, &a), upload(&mem, &b));
    let dc = output(&mem, ScalarType::F32, n);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        launch(&mem, &k, dims1(n as u64, 256), &[da, db, dc]).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
    }
    let c: Vec<f32> = download(&mem, dc);
    assert!((0..n).all(|i| c[i] == a[i] + b[i]));
    eprintln!(
        "vecadd of {n} f32 on {} threads: {:.1} ms",
        rayon::current_num_threads(),
        best * 1e3
    );
    if !cfg!(debug_assertions) {
        assert!(best < 0.5, "vecadd took {best} s");
    }
}

/// Collatz steps per thread: a loop whose trip count differs per lane, with `Break` and a
/// `Continue` on odd steps, and a `Return` for a sentinel input.
#[test]
fn collatz_loop_with_break_and_continue() {
    let mut k = K::new("collatz");
    let inp = k.slice("x", ScalarType::U64, SliceAccess::ReadOnly);
    let out = k.slice("steps", ScalarType::U32, SliceAccess::Disjoint);
    let odd_out = k.slice("odd", ScalarType::U32, SliceAccess::Disjoint);
    k.guarded(out, |k, i| {
        let x0 = k.load(inp, i);
        let zero = k.u64(0);
        let is_zero = k.cmp(CmpOp::Eq, x0, zero);
        k.if_(is_zero, |k| {
            let m = k.u32(u32::MAX);
            k.store(out, i, m);
            k.push(Stmt::Return);
        });
        let z = k.u32(0);
        let x = k.var("x", ScalarType::U64, x0);
        let steps = k.var("steps", ScalarType::U32, z);
        let odd = k.var("odd", ScalarType::U32, z);
        k.loop_(|k| {
            let xv = k.read(x);
            let one = k.u64(1);
            let done = k.cmp(CmpOp::Eq, xv, one);
            k.if_(done, |k| k.push(Stmt::Break));
            let s = k.read(steps);
            let one32 = k.u32(1);
            let s1 = k.add(s, one32);
            k.write(steps, s1);
            let bit = k.bin(BinaryOp::And, xv, one);
            let is_odd = k.cmp(CmpOp::Eq, bit, one);
            k.if_(is_odd, |k| {
                let three = k.u64(3);
                let t = k.mul(xv, three);
                let t1 = k.add(t, one);
                k.write(x, t1);
                let o = k.read(odd);
                let o1 = k.add(o, one32);
                k.write(odd, o1);
                k.push(Stmt::Continue);
            });
            let sh = k.bin(BinaryOp::Shr, xv, one32);
            k.write(x, sh);
        });
        let s = k.read(steps);
        k.store(out, i, s);
        let o = k.read(odd);
        k.store(odd_out, i, o);
    });
    let kernel = k.finish();

    let mut rng = StdRng::seed_from_u64(3);
    let n = 5000;
    let xs: Vec<u64> = (0..n)
        .map(|i| {
            if i % 97 == 5 {
                0
            } else {
                rng.random_range(1..100_000u64)
            }
        })
        .collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let ds = output(&mem, ScalarType::U32, n);
    let dodd = output(&mem, ScalarType::U32, n);
    launch(&mem, &kernel, dims1(n as u64, 96), &[dx, ds, dodd]).unwrap();
    let steps: Vec<u32> = download(&mem, ds);
    let odd: Vec<u32> = download(&mem, dodd);
    for i in 0..n {
        if xs[i] == 0 {
            assert_eq!(steps[i], u32::MAX);
            assert_eq!(odd[i], 0xA5A5_A5A5, "returned thread must not store");
            continue;
        }
        let (mut x, mut s, mut o) = (xs[i], 0u32, 0u32);
        while x != 1 {
            s += 1;
            if x & 1 == 1 {
                x = 3 * x + 1;
                o += 1;
            } else {
                x >>= 1;
            }
        }
        assert_eq!((steps[i], odd[i]), (s, o), "x = {}", xs[i]);
    }
}

/// Each thread fills a local array, then reads it back reversed with a prefix sum.
#[test]
fn local_array_per_thread() {
    const L: u32 = 16;
    let mut k = K::new("local_rev");
    let inp = k.slice("x", ScalarType::I32, SliceAccess::ReadOnly);
    let out = k.slice("y", ScalarType::I32, SliceAccess::Disjoint);
    let arr = k.b.local_array(ArrayDecl {
        name: "buf".into(),
        elem: ScalarType::I32,
        len: L,
    });
    k.guarded(out, |k, i| {
        let x = k.load(inp, i);
        let zero = k.u32(0);
        let j = k.var("j", ScalarType::U32, zero);
        let base = k.op(Op::LocalAddr(arr));
        let four = k.u32(4);
        // buf[j] = x * j
        k.loop_(|k| {
            let jv = k.read(j);
            let lim = k.u32(L);
            let end = k.cmp(CmpOp::Ge, jv, lim);
            k.if_(end, |k| k.push(Stmt::Break));
            let ji = k.cast(jv, ScalarType::I32);
            let v = k.mul(x, ji);
            let off = k.mul(jv, four);
            let addr = k.add(base, off);
            k.push(Stmt::Store {
                space: AddressSpace::Local,
                addr,
                value: v,
            });
            let one = k.u32(1);
            let j1 = k.add(jv, one);
            k.write(j, j1);
        });
        // sum of buf[L-1-j] * (j+1)
        let zi = k.i32(0);
        let acc = k.var("acc", ScalarType::I32, zi);
        k.write(j, zero);
        k.loop_(|k| {
            let jv = k.read(j);
            let lim = k.u32(L);
            let end = k.cmp(CmpOp::Ge, jv, lim);
            k.if_(end, |k| k.push(Stmt::Break));
            let last = k.u32(L - 1);
            let r = k.bin(BinaryOp::Sub, last, jv);
            let off = k.mul(r, four);
            let addr = k.add(base, off);
            let v = k.op(Op::Load {
                space: AddressSpace::Local,
                ty: ScalarType::I32,
                addr,
                eviction: cuprum_ir::Eviction::Normal,
            });
            let one = k.u32(1);
            let j1 = k.add(jv, one);
            let w = k.cast(j1, ScalarType::I32);
            let p = k.mul(v, w);
            let a = k.read(acc);
            let a1 = k.add(a, p);
            k.write(acc, a1);
            k.write(j, j1);
        });
        let a = k.read(acc);
        k.store(out, i, a);
    });
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(4);
    let n = 3000;
    let xs: Vec<i32> = (0..n)
        .map(|_| rng.random_range(-100_000..100_000))
        .collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let dy = output(&mem, ScalarType::I32, n);
    launch(&mem, &kernel, dims1(n as u64, 128), &[dx, dy]).unwrap();
    let ys: Vec<i32> = download(&mem, dy);
    for i in 0..n {
        let mut acc = 0i32;
        for j in 0..L as i32 {
            let v = xs[i].wrapping_mul(L as i32 - 1 - j);
            acc = acc.wrapping_add(v.wrapping_mul(j + 1));
        }
        assert_eq!(ys[i], acc, "i = {i}");
    }
}

/// 2-D and 3-D grids: every thread writes its coordinates.
#[test]
fn multi_dimensional_indices() {
    let mut k = K::new("coords");
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let mut ids = Vec::new();
    for s in [
        Special::ThreadIdx,
        Special::BlockIdx,
        Special::BlockDim,
        Special::GridDim,
    ] {
        for d in [Dim::X, Dim::Y, Dim::Z] {
            ids.push(k.special(s(d)));
        }
    }
    let lane = k.special(Special::LaneId);
    // linear = ((bz*gy + by)*gx + bx) * (bdx*bdy*bdz) + (tz*bdy + ty)*bdx + tx
    let [tx, ty, tz, bx, by, bz, dx, dy, dz, gx, gy, _gz] = ids[..] else {
        unreachable!()
    };
    let t1 = k.mul(bz, gy);
    let t2 = k.add(t1, by);
    let t3 = k.mul(t2, gx);
    let blin = k.add(t3, bx);
    let d1 = k.mul(dx, dy);
    let bs = k.mul(d1, dz);
    let base = k.mul(blin, bs);
    let u1 = k.mul(tz, dy);
    let u2 = k.add(u1, ty);
    let u3 = k.mul(u2, dx);
    let tlin = k.add(u3, tx);
    let lin = k.add(base, tlin);
    let idx = k.cast(lin, ScalarType::U64);
    // out[lin] = tx | ty << 8 | tz << 16 | lane << 24
    let eight = k.u32(8);
    let sixteen = k.u32(16);
    let tw = k.u32(24);
    let a = k.bin(BinaryOp::Shl, ty, eight);
    let b = k.bin(BinaryOp::Shl, tz, sixteen);
    let c = k.bin(BinaryOp::Shl, lane, tw);
    let v1 = k.bin(BinaryOp::Or, tx, a);
    let v2 = k.bin(BinaryOp::Or, v1, b);
    let v = k.bin(BinaryOp::Or, v2, c);
    k.store(out, idx, v);
    let kernel = k.finish();

    let mem = Memory::new();
    let dims = LaunchDims {
        grid: [3, 2, 2],
        block: [5, 3, 4],
        dynamic_shared_bytes: 0,
    };
    let n = 12 * 60;
    let dout = output(&mem, ScalarType::U32, n);
    launch(&mem, &kernel, dims, &[dout]).unwrap();
    let got: Vec<u32> = download(&mem, dout);
    for (i, g) in got.iter().enumerate() {
        let t = (i % 60) as u32;
        let (x, y, z) = (t % 5, (t / 5) % 3, t / 15);
        assert_eq!(*g, x | y << 8 | z << 16 | (t % 32) << 24, "thread {i}");
    }
}

#[test]
fn memory_api() {
    let mem = Memory::new();
    let a = mem.alloc(1000).unwrap();
    let b = mem.alloc(0).unwrap();
    let c = mem.alloc(17).unwrap();
    assert!([a, b, c].iter().all(|x| x.is_multiple_of(256)));
    assert!(
        a < b && b < c && b - a >= 1000 + 4096 && c - b >= 4096,
        "gaps between allocations"
    );
    let mut buf = vec![0u8; 1000];
    mem.read(a, &mut buf).unwrap();
    assert!(buf.iter().all(|&x| x == POISON), "new memory is poisoned");
    let data: Vec<u8> = (0..1000).map(|i| (i * 7 % 251) as u8).collect();
    mem.write(a, &data).unwrap();
    // Unaligned reads and writes inside an allocation.
    let mut part = vec![0u8; 13];
    mem.read(a + 3, &mut part).unwrap();
    assert_eq!(part, data[3..16]);
    mem.write(a + 5, &[1, 2, 3]).unwrap();
    mem.read(a, &mut buf).unwrap();
    assert_eq!(&buf[..5], &data[..5]);
    assert_eq!(&buf[5..8], &[1, 2, 3]);
    assert_eq!(&buf[8..], &data[8..]);
    mem.fill(a + 1, 998, 9).unwrap();
    mem.read(a, &mut buf).unwrap();
    assert_eq!(buf[0], data[0]);
    assert!(buf[1..999].iter().all(|&x| x == 9));
    assert_eq!(buf[999], data[999]);
    // Overlapping copy in both directions (memmove).
    let seq: Vec<u8> = (0..1000).map(|i| i as u8).collect();
    mem.write(a, &seq).unwrap();
    mem.copy(a + 10, a, 500).unwrap();
    mem.read(a, &mut buf).unwrap();
    assert_eq!(&buf[10..510], &seq[..500]);
    mem.write(a, &seq).unwrap();
    mem.copy(a, a + 10, 500).unwrap();
    mem.read(a, &mut buf).unwrap();
    assert_eq!(&buf[..500], &seq[10..510]);
    mem.copy(c, a, 17).unwrap();
    let mut small = [0u8; 17];
    mem.read(c, &mut small).unwrap();
    assert_eq!(&small[..], &buf[..17]);
    // Out-of-bounds host accesses and frees.
    assert!(matches!(
        mem.write(a + 999, &[1, 2]),
        Err(EmuError::HostOutOfBounds { .. })
    ));
    assert!(matches!(
        mem.read(b, &mut [0u8; 1]),
        Err(EmuError::HostOutOfBounds { .. })
    ));
    assert!(matches!(
        mem.read(a + 1000, &mut [0u8; 1]),
        Err(EmuError::HostOutOfBounds { .. })
    ));
    assert!(matches!(
        mem.copy(c, a, 18),
        Err(EmuError::HostOutOfBounds { .. })
    ));
    assert!(matches!(mem.free(a + 8), Err(EmuError::InvalidFree { .. })));
    assert_eq!(mem.bytes_in_use(), 1017);
    mem.free(a).unwrap();
    assert!(matches!(mem.free(a), Err(EmuError::InvalidFree { .. })));
    assert!(matches!(
        mem.read(a, &mut [0u8; 1]),
        Err(EmuError::HostOutOfBounds { .. })
    ));
    let d = mem.alloc(8).unwrap();
    assert!(d > c, "addresses are never reused");
    let small_mem = Memory::with_capacity(1 << 20);
    assert!(matches!(
        small_mem.alloc(2 << 20),
        Err(EmuError::OutOfMemory { .. })
    ));
    let msg = small_mem.alloc(2 << 20).unwrap_err().to_string();
    assert!(msg.contains("out of emulated device memory"), "{msg}");
}

#[test]
fn launch_checks() {
    let mem = Memory::new();
    let k = vecadd_kernel();
    let n = 100;
    let a = upload(&mem, &vec![1.0f32; n]);
    let c = output(&mem, ScalarType::F32, n);
    let d = dims1(n as u64, 64);
    assert!(matches!(
        launch(&mem, &k, d, &[a, a]),
        Err(EmuError::ArgumentCount {
            expected: 3,
            got: 2,
            ..
        })
    ));
    assert!(matches!(
        launch(&mem, &k, d, &[a, ArgValue::Scalar(0), c]),
        Err(EmuError::ArgumentMismatch { index: 1, .. })
    ));
    let ArgValue::Slice { base, .. } = a else {
        unreachable!()
    };
    let too_long = ArgValue::Slice {
        base,
        len: n as u64 + 1,
    };
    assert!(matches!(
        launch(&mem, &k, d, &[too_long, a, c]),
        Err(EmuError::ArgumentMismatch { index: 0, .. })
    ));
    let bad = |grid: [u32; 3], block: [u32; 3], dyn_shared: u32| {
        launch(
            &mem,
            &k,
            LaunchDims {
                grid,
                block,
                dynamic_shared_bytes: dyn_shared,
            },
            &[a, a, c],
        )
    };
    assert!(matches!(
        bad([0, 1, 1], [32, 1, 1], 0),
        Err(EmuError::InvalidLaunch { .. })
    ));
    assert!(matches!(
        bad([1, 1, 1], [2048, 1, 1], 0),
        Err(EmuError::InvalidLaunch { .. })
    ));
    assert!(matches!(
        bad([1, 1, 1], [32, 32, 2], 0),
        Err(EmuError::InvalidLaunch { .. })
    ));
    assert!(matches!(
        bad([1, 1, 1], [32, 1, 1], 1 << 20),
        Err(EmuError::InvalidLaunch { .. })
    ));
    // An empty slice may have any base.
    let empty = ArgValue::Slice { base: 0, len: 0 };
    launch(&mem, &k, d, &[empty, empty, empty]).unwrap();
    // Non-canonical scalar bits.
    let s = saxpy_kernel();
    let r = launch(&mem, &s, d, &[ArgValue::Scalar(1 << 40), a, c]);
    assert!(
        matches!(r, Err(EmuError::ArgumentMismatch { index: 0, .. })),
        "{r:?}"
    );
    // Invalid IR.
    let mut broken = k.clone();
    broken.body.stmts.push(Stmt::Break);
    assert!(matches!(
        launch(&mem, &broken, d, &[a, a, c]),
        Err(EmuError::InvalidKernel { .. })
    ));
    // Launch bounds.
    let mut bounded = k.clone();
    bounded.launch_bounds = Some(LaunchBounds {
        max_threads: 32,
        min_blocks_per_sm: None,
    });
    assert!(matches!(
        launch(&mem, &bounded, d, &[a, a, c]),
        Err(EmuError::InvalidLaunch { .. })
    )); // A declared block shape: any other block is refused, the declared one runs.
    let mut shaped = k.clone();
    shaped.block = Some((d.block[0], d.block[1], d.block[2] + 1));
    assert!(matches!(
        launch(&mem, &shaped, d, &[a, a, c]),
        Err(EmuError::InvalidLaunch { .. })
    ));
    shaped.block = Some((d.block[0], d.block[1], d.block[2]));
    assert!(launch(&mem, &shaped, d, &[a, a, c]).is_ok());
}
