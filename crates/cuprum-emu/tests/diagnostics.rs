//! Planted bugs, each of which must be reported with the right variant, kernel, block, thread
//! and address; and correct kernels using the same features, which must report nothing.

mod common;

use std::time::{Duration, Instant};

use common::*;
use cuprum_emu::{
    AccessKind, ArgValue, EmuError, LaunchDims, LaunchOptions, Memory, RaceKind, launch,
    launch_with,
};
use cuprum_ir::*;

fn slice_base(a: ArgValue) -> u64 {
    match a {
        ArgValue::Slice { base, .. } => base,
        ArgValue::Scalar(_) | ArgValue::TensorMap(_) => panic!("not a slice"),
    }
}

/// `out[i] = i` for every launched thread, without a bounds guard.
fn unguarded_write() -> Kernel {
    let mut k = K::new("unguarded");
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let i = k.global_id();
    let v = k.cast(i, ScalarType::U32);
    k.store(out, i, v);
    k.finish()
}

#[test]
fn out_of_bounds_global_write() {
    let mem = Memory::new();
    let out = output(&mem, ScalarType::U32, 1000);
    // A second buffer right after: the overrun must not land in it.
    let next = output(&mem, ScalarType::U32, 1000);
    let err = launch(&mem, &unguarded_write(), dims1(1000, 128), &[out]).unwrap_err();
    let base = slice_base(out);
    match &err {
        EmuError::OutOfBounds {
            kernel,
            block,
            thread,
            address,
            size,
            space,
            access,
        } => {
            assert_eq!(kernel, "unguarded");
            assert_eq!(*block, [7, 0, 0]);
            assert_eq!(*thread, [104, 0, 0]);
            assert_eq!(*address, base + 4000);
            assert_eq!(*size, 4);
            assert_eq!(*space, AddressSpace::Global);
            assert_eq!(*access, AccessKind::Store);
        }
        other => panic!("expected OutOfBounds, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("unguarded") && msg.contains("[7, 0, 0]") && msg.contains("[104, 0, 0]"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("{:#x}", base + 4000)) && msg.contains("global memory store"),
        "{msg}"
    );
    let untouched: Vec<u32> = download(&mem, next);
    assert!(untouched.iter().all(|&x| x == 0xA5A5_A5A5));
    // The correct size launches cleanly.
    launch(&mem, &unguarded_write(), dims1(1000, 100), &[out]).unwrap();
}

#[test]
fn use_after_free_and_wild_pointers() {
    let mem = Memory::new();
    let mut k = K::new("deref");
    let p = k.scalar("ptr", ScalarType::U64);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let addr = k.param(p);
    let v = k.op(Op::Load {
        space: AddressSpace::Global,
        ty: ScalarType::U32,
        addr,
        eviction: cuprum_ir::Eviction::Normal,
    });
    let z = k.u64(0);
    k.store(out, z, v);
    let kernel = k.finish();
    let dout = output(&mem, ScalarType::U32, 1);
    let freed = mem.alloc(64).unwrap();
    mem.free(freed).unwrap();
    for wild in [freed, 0, 8, slice_base(dout) + 4, u64::MAX - 3] {
        let err = launch(&mem, &kernel, dims1(1, 32), &[ArgValue::Scalar(wild), dout]).unwrap_err();
        assert!(
            matches!(err, EmuError::OutOfBounds { address, access: AccessKind::Load, .. } if address == wild),
            "{wild:#x}: {err:?}"
        );
    }
    // Misaligned but in bounds.
    let err = launch(
        &mem,
        &kernel,
        dims1(1, 32),
        &[ArgValue::Scalar(slice_base(dout) + 2), dout],
    );
    let ok_buf = output(&mem, ScalarType::U32, 4);
    assert!(
        matches!(err, Err(EmuError::OutOfBounds { .. })),
        "straddles the end: {err:?}"
    );
    let err = launch(
        &mem,
        &kernel,
        dims1(1, 32),
        &[ArgValue::Scalar(slice_base(ok_buf) + 2), dout],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::Misaligned {
                size: 4,
                space: AddressSpace::Global,
                ..
            }
        ),
        "{err:?}"
    );
    // A freed buffer passed as a slice is refused before anything runs.
    let gone = output(&mem, ScalarType::U32, 10);
    mem.free(slice_base(gone)).unwrap();
    let err = launch(&mem, &unguarded_write(), dims1(10, 32), &[gone]).unwrap_err();
    assert!(matches!(err, EmuError::ArgumentMismatch { .. }), "{err:?}");
}

#[test]
fn bounds_check_trap() {
    let mut k = K::new("checked");
    let x = k.slice("x", ScalarType::F32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::F32, SliceAccess::Disjoint);
    let i = k.global_id();
    let n = k.len(x);
    let bad = k.cmp(CmpOp::Ge, i, n);
    k.if_(bad, |k| {
        k.push(Stmt::Trap(TrapKind::BoundsCheck {
            index: i,
            len: n,
            site: "x[i]".into(),
        }))
    });
    let v = k.load(x, i);
    k.store(out, i, v);
    let kernel = k.finish();
    let mem = Memory::new();
    let dx = upload(&mem, &vec![1.0f32; 300]);
    let dout = output(&mem, ScalarType::F32, 1000);
    let err = launch(&mem, &kernel, dims1(1000, 256), &[dx, dout]).unwrap_err();
    assert_eq!(
        err,
        EmuError::BoundsCheck {
            kernel: "checked".into(),
            block: [1, 0, 0],
            thread: [44, 0, 0],
            index: 300,
            len: 300,
            site: "x[i]".into()
        }
    );
    assert!(
        err.to_string()
            .contains("the len is 300 but the index is 300"),
        "{err}"
    );
    launch(&mem, &kernel, dims1(300, 256), &[dx, dout]).unwrap_err(); // 512 threads > 300
    launch(
        &mem,
        &kernel,
        LaunchDims {
            grid: [3, 1, 1],
            block: [100, 1, 1],
            dynamic_shared_bytes: 0,
        },
        &[dx, dout],
    )
    .unwrap();
}

/// Every launched thread fails an assertion: the error of block 0, thread 0 is the one
/// reported, every time.
#[test]
fn first_failing_block_is_reported_deterministically() {
    let mut k = K::new("always_fails");
    let t = k.bool(true);
    k.if_(t, |k| {
        k.push(Stmt::Trap(TrapKind::Assert {
            message: "x > 0".into(),
        }))
    });
    let kernel = k.finish();
    let mem = Memory::new();
    for _ in 0..5 {
        let err = launch(&mem, &kernel, dims1(1 << 16, 64), &[]).unwrap_err();
        assert_eq!(
            err,
            EmuError::AssertFailed {
                kernel: "always_fails".into(),
                block: [0, 0, 0],
                thread: [0, 0, 0],
                message: "x > 0".into()
            }
        );
    }
}

/// Block 0 fails at once while every other block spins forever: the launch still ends.
#[test]
fn a_failure_stops_the_other_blocks() {
    let mut k = K::new("spin");
    let b = k.special(Special::BlockIdx(Dim::X));
    let z = k.u32(0);
    let first = k.cmp(CmpOp::Eq, b, z);
    k.if_else(
        first,
        |k| {
            k.push(Stmt::Trap(TrapKind::Assert {
                message: "stop".into(),
            }))
        },
        |k| k.loop_(|_| {}),
    );
    let kernel = k.finish();
    let mem = Memory::new();
    let t = Instant::now();
    let err = launch(&mem, &kernel, dims1(64 * 32, 32), &[]).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::AssertFailed {
                block: [0, 0, 0],
                ..
            }
        ),
        "{err:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(20));
}

/// A kernel with one shared array of `len` u32 and the statements `body` builds.
fn shared_kernel(name: &str, len: u32, body: impl FnOnce(&mut K, u32, Value)) -> Kernel {
    let mut k = K::new(name);
    let s = k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: ScalarType::U32,
        len,
    });
    let tid = k.tid();
    body(&mut k, s, tid);
    k.finish()
}

fn run_block(kernel: &Kernel, block: u32) -> Result<(), EmuError> {
    let mem = Memory::new();
    launch(
        &mem,
        kernel,
        LaunchDims {
            grid: [2, 1, 1],
            block: [block, 1, 1],
            dynamic_shared_bytes: 0,
        },
        &[],
    )
}

#[test]
fn shared_write_write_race() {
    let k = shared_kernel("ww", 1, |k, s, tid| {
        let z = k.u32(0);
        k.store_shared(s, z, tid);
    });
    let err = run_block(&k, 64).unwrap_err();
    assert_eq!(
        err,
        EmuError::SharedRace {
            kernel: "ww".into(),
            block: [0, 0, 0],
            threads: ([0, 0, 0], [1, 0, 0]),
            address: 0,
            kind: RaceKind::WriteWrite
        }
    );
    assert!(err.to_string().contains("write/write race"), "{err}");
    // Across warps, with a barrier in between: no race.
    let k = shared_kernel("ww_ok", 1, |k, s, tid| {
        let z = k.u32(0);
        for t in [0u32, 40] {
            let tv = k.u32(t);
            let me = k.cmp(CmpOp::Eq, tid, tv);
            k.if_(me, |k| k.store_shared(s, z, tid));
            k.barrier();
        }
    });
    run_block(&k, 64).unwrap();
    // Without the barrier, the second writer (another warp) races with the first.
    let k = shared_kernel("ww_warps", 1, |k, s, tid| {
        let z = k.u32(0);
        for t in [0u32, 40] {
            let tv = k.u32(t);
            let me = k.cmp(CmpOp::Eq, tid, tv);
            k.if_(me, |k| k.store_shared(s, z, tid));
        }
    });
    let err = run_block(&k, 64).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::SharedRace {
                threads: ([0, 0, 0], [40, 0, 0]),
                kind: RaceKind::WriteWrite,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn shared_read_write_race() {
    // s[tid] = tid; x = s[(tid + 1) % n]: a neighbour's value without a barrier.
    let build = |with_barrier: bool| {
        shared_kernel(
            if with_barrier { "rw_ok" } else { "rw" },
            64,
            move |k, s, tid| {
                k.store_shared(s, tid, tid);
                if with_barrier {
                    k.barrier();
                }
                let one = k.u32(1);
                let n = k.u32(64);
                let t1 = k.add(tid, one);
                let j = k.bin(BinaryOp::Rem, t1, n);
                let v = k.load_shared(s, j);
                if with_barrier {
                    k.barrier();
                }
                // Overwrite with something derived, then read our own slot: fine after a barrier.
                let w = k.add(v, one);
                k.store_shared(s, tid, w);
                let _ = k.load_shared(s, tid);
            },
        )
    };
    let err = run_block(&build(false), 64).unwrap_err();
    assert_eq!(
        err,
        EmuError::SharedRace {
            kernel: "rw".into(),
            block: [0, 0, 0],
            threads: ([1, 0, 0], [0, 0, 0]),
            address: 4,
            kind: RaceKind::ReadWrite
        }
    );
    run_block(&build(true), 64).unwrap();
    // Read first, then another thread writes: also a read/write race.
    let k = shared_kernel("read_then_write", 64, |k, s, tid| {
        k.store_shared(s, tid, tid);
        k.barrier();
        let v = k.load_shared(s, tid);
        let one = k.u32(1);
        let n = k.u32(64);
        let t1 = k.add(tid, one);
        let j = k.bin(BinaryOp::Rem, t1, n);
        k.store_shared(s, j, v);
    });
    let err = run_block(&k, 64).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::SharedRace {
                threads: ([1, 0, 0], [0, 0, 0]),
                kind: RaceKind::ReadWrite,
                address: 4,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn uninitialized_shared_read() {
    let k = shared_kernel("uninit", 64, |k, s, tid| {
        let small = k.u32(10);
        let lt = k.cmp(CmpOp::Lt, tid, small);
        k.if_(lt, |k| k.store_shared(s, tid, tid));
        k.barrier();
        let v = k.load_shared(s, tid);
        let _ = k.add(v, v);
    });
    let err = run_block(&k, 64).unwrap_err();
    assert_eq!(
        err,
        EmuError::UninitializedSharedRead {
            kernel: "uninit".into(),
            block: [0, 0, 0],
            thread: [10, 0, 0],
            address: 40,
            size: 4
        }
    );
    // Initialization does not carry over from one block to the next: block 1 writes only
    // when its index is 0, so it reads nothing written.
    let k = shared_kernel("uninit_b1", 64, |k, s, tid| {
        let b = k.special(Special::BlockIdx(Dim::X));
        let z = k.u32(0);
        let first = k.cmp(CmpOp::Eq, b, z);
        k.if_(first, |k| k.store_shared(s, tid, tid));
        k.barrier();
        let _ = k.load_shared(s, tid);
    });
    let err = run_block(&k, 64).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::UninitializedSharedRead {
                block: [1, 0, 0],
                thread: [0, 0, 0],
                ..
            }
        ),
        "{err:?}"
    );
    // An atomic on uninitialized shared memory reads it too.
    let k = shared_kernel("uninit_atomic", 4, |k, s, _| {
        let z = k.u32(0);
        let addr = k.shared_addr(s, z);
        let one = k.u32(1);
        k.op(Op::Atomic {
            op: AtomicOp::Add,
            space: AddressSpace::Shared,
            scope: Scope::Block,
            order: cuprum_ir::MemOrder::Relaxed,
            addr,
            value: one,
            compare: None,
        });
    });
    assert!(matches!(
        run_block(&k, 32),
        Err(EmuError::UninitializedSharedRead { .. })
    ));
}

#[test]
fn barrier_in_divergent_branch() {
    // Within a warp: even lanes only.
    let k = shared_kernel("bar_div", 1, |k, _, tid| {
        let one = k.u32(1);
        let z = k.u32(0);
        let bit = k.bin(BinaryOp::And, tid, one);
        let even = k.cmp(CmpOp::Eq, bit, z);
        k.if_(even, |k| k.barrier());
    });
    let err = run_block(&k, 64).unwrap_err();
    assert!(
        matches!(&err, EmuError::BarrierDivergence { kernel, block: [0, 0, 0], thread: [1, 0, 0], .. } if kernel == "bar_div"),
        "{err:?}"
    );
    assert!(err.to_string().contains("barrier divergence"), "{err}");
    // Across warps: warp 0 waits at one barrier, warp 1 at another.
    let k = shared_kernel("bar_two", 1, |k, _, tid| {
        let w = k.u32(32);
        let lt = k.cmp(CmpOp::Lt, tid, w);
        k.if_else(lt, |k| k.barrier(), |k| k.barrier());
    });
    let err = run_block(&k, 64).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::BarrierDivergence {
                thread: [32, 0, 0],
                ..
            }
        ),
        "{err:?}"
    );
    // A barrier in a loop whose trip count differs between warps. (Had the warp with fewer
    // trips exited instead, that would be fine: a barrier waits only for non-exited threads.)
    let k = shared_kernel("bar_loop", 1, |k, _, tid| {
        let five = k.u32(5);
        let trips = k.bin(BinaryOp::Shr, tid, five); // warp index
        let z = k.u32(0);
        let i = k.var("i", ScalarType::U32, z);
        k.loop_(|k| {
            let iv = k.read(i);
            let done = k.cmp(CmpOp::Gt, iv, trips);
            k.if_(done, |k| k.push(Stmt::Break));
            k.barrier();
            let one = k.u32(1);
            let n = k.add(iv, one);
            k.write(i, n);
        });
        // Warp 0 arrives here while warp 1 waits in the loop's barrier.
        k.barrier();
    });
    let err = run_block(&k, 64).unwrap_err();
    assert!(matches!(err, EmuError::BarrierDivergence { .. }), "{err:?}");
    assert!(err.to_string().contains("different barrier"), "{err}");
    // A uniform branch around a barrier is fine, and so are threads that returned before it.
    let k = shared_kernel("bar_ok", 64, |k, s, tid| {
        let bsz = k.special(Special::BlockDim(Dim::X));
        let big = k.u32(16);
        let uniform = k.cmp(CmpOp::Gt, bsz, big);
        let limit = k.u32(40);
        let late = k.cmp(CmpOp::Ge, tid, limit);
        k.if_(late, |k| k.push(Stmt::Return));
        k.store_shared(s, tid, tid);
        k.if_(uniform, |k| k.barrier());
        let one = k.u32(1);
        let t1 = k.add(tid, one);
        let n = k.u32(40);
        let j = k.bin(BinaryOp::Rem, t1, n);
        let _ = k.load_shared(s, j);
    });
    run_block(&k, 64).unwrap();
}

#[test]
fn shuffle_from_inactive_lane() {
    let mut k = K::new("shfl_div");
    let lane = k.special(Special::LaneId);
    let sixteen = k.u32(16);
    let low = k.cmp(CmpOp::Lt, lane, sixteen);
    k.if_(low, |k| {
        let src = k.u32(20);
        let _ = k.op(Op::Shuffle {
            mode: ShuffleMode::Idx,
            value: lane,
            lane: src,
        });
    });
    let kernel = k.finish();
    let err = run_block(&kernel, 32).unwrap_err();
    assert_eq!(
        err,
        EmuError::ShuffleInactiveLane {
            kernel: "shfl_div".into(),
            block: [0, 0, 0],
            thread: [0, 0, 0],
            source_lane: 20
        }
    );
}

#[test]
fn division_faults() {
    let mem = Memory::new();
    let mut k = K::new("div");
    let a = k.slice("a", ScalarType::I32, SliceAccess::ReadOnly);
    let b = k.slice("b", ScalarType::I32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::I32, SliceAccess::Disjoint);
    k.guarded(out, |k, i| {
        let x = k.load(a, i);
        let y = k.load(b, i);
        let q = k.bin(BinaryOp::Div, x, y);
        k.store(out, i, q);
    });
    let kernel = k.finish();
    let da = upload(&mem, &[7i32, 8, 9, i32::MIN]);
    let dout = output(&mem, ScalarType::I32, 3);
    let db = upload(&mem, &[1i32, 0, 3]);
    let err = launch(&mem, &kernel, dims1(3, 32), &[da, db, dout]).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::DivideByZero {
                thread: [1, 0, 0],
                ..
            }
        ),
        "{err:?}"
    );
    let ArgValue::Slice { base, .. } = da else {
        unreachable!()
    };
    let dmin = ArgValue::Slice {
        base: base + 12,
        len: 1,
    };
    let dm1 = upload(&mem, &[-1i32]);
    let out1 = output(&mem, ScalarType::I32, 1);
    let err = launch(&mem, &kernel, dims1(1, 32), &[dmin, dm1, out1]).unwrap_err();
    assert!(matches!(err, EmuError::DivideOverflow { .. }), "{err:?}");
    // A zero divisor in a lane that does not execute the division is fine.
    let mut k = K::new("div_guarded");
    let b2 = k.slice("b", ScalarType::U32, SliceAccess::ReadOnly);
    let out2 = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    k.guarded(out2, |k, i| {
        let y = k.load(b2, i);
        let z = k.u32(0);
        let nz = k.cmp(CmpOp::Ne, y, z);
        k.if_else(
            nz,
            |k| {
                let h = k.u32(100);
                let q = k.bin(BinaryOp::Div, h, y);
                k.store(out2, i, q);
            },
            |k| {
                let m = k.u32(u32::MAX);
                k.store(out2, i, m);
            },
        );
    });
    let kernel = k.finish();
    let db = upload(&mem, &[5u32, 0, 7, 0]);
    let dout = output(&mem, ScalarType::U32, 4);
    launch(&mem, &kernel, dims1(4, 32), &[db, dout]).unwrap();
    assert_eq!(download::<u32>(&mem, dout), [20, u32::MAX, 14, u32::MAX]);
    // The front end's own check.
    let mut k = K::new("div_trap");
    let t = k.bool(true);
    k.if_(t, |k| {
        k.push(Stmt::Trap(TrapKind::DivideByZero {
            site: "a / b".into(),
        }))
    });
    let err = launch(&mem, &k.finish(), dims1(1, 32), &[]).unwrap_err();
    assert!(
        matches!(&err, EmuError::DivideByZero { site, .. } if site.contains("a / b")),
        "{err:?}"
    );
    // ... and its check of `MIN / -1`, with the site as the front end wrote it.
    let mut k = K::new("div_overflow_trap");
    let t = k.bool(true);
    k.if_(t, |k| {
        k.push(Stmt::Trap(TrapKind::DivideOverflow {
            site: "`a / b` at line 12".into(),
        }))
    });
    let err = launch(&mem, &k.finish(), dims1(1, 32), &[]).unwrap_err();
    assert!(matches!(&err, EmuError::DivideOverflow { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "kernel `div_overflow_trap`, block [0, 0, 0], thread [0, 0, 0]: attempt to divide with \
         overflow (the signed `MIN` by -1) in `a / b` at line 12"
    );
}

#[test]
fn shared_and_local_out_of_bounds() {
    let k = shared_kernel("shared_oob", 8, |k, s, tid| {
        k.store_shared(s, tid, tid);
    });
    let err = run_block(&k, 32).unwrap_err();
    assert_eq!(
        err,
        EmuError::OutOfBounds {
            kernel: "shared_oob".into(),
            block: [0, 0, 0],
            thread: [8, 0, 0],
            address: 32,
            size: 4,
            space: AddressSpace::Shared,
            access: AccessKind::Store
        }
    );
    let mut k = K::new("local_oob");
    let arr = k.b.local_array(ArrayDecl {
        name: "a".into(),
        elem: ScalarType::U64,
        len: 4,
    });
    let tid = k.tid();
    let base = k.op(Op::LocalAddr(arr));
    let eight = k.u32(8);
    let off = k.mul(tid, eight);
    let addr = k.add(base, off);
    let v = k.u64(1);
    k.push(Stmt::Store {
        space: AddressSpace::Local,
        addr,
        value: v,
    });
    let kernel = k.finish();
    let err = run_block(&kernel, 32).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::OutOfBounds {
                thread: [4, 0, 0],
                address: 32,
                space: AddressSpace::Local,
                ..
            }
        ),
        "{err:?}"
    );
}

/// Blocks racing on the same global bytes with narrow stores: reported as a race; and with race
/// detection off, no crash, and every byte ends up holding a value some thread wrote.
#[test]
fn racy_global_stores_are_sound() {
    let mut k = K::new("racy");
    let out = k.slice("out", ScalarType::U8, SliceAccess::ReadWrite);
    let t = k.tid();
    let b = k.special(Special::BlockIdx(Dim::X));
    let seven = k.u32(7);
    let slot = k.bin(BinaryOp::And, t, seven);
    let s64 = k.cast(slot, ScalarType::U64);
    let v = k.cast(b, ScalarType::U8);
    k.store(out, s64, v);
    let kernel = k.finish();
    let mem = Memory::new();
    let dout = output(&mem, ScalarType::U8, 8);
    let dims = dims1(256 * 100, 256);
    match launch(&mem, &kernel, dims, &[dout]) {
        Err(EmuError::GlobalRace(race)) if race.kind == RaceKind::WriteWrite => {}
        other => panic!("expected a write/write race, got {other:?}"),
    }
    let unchecked = LaunchOptions::default().with_global_race_check(false);
    launch_with(&mem, &kernel, dims, &[dout], &unchecked).unwrap();
    let got: Vec<u8> = download(&mem, dout);
    assert!(got.iter().all(|&x| x < 100), "{got:?}");
}

/// A shared histogram read back without a barrier after the atomics races; with the barrier it
/// does not (atomics among themselves never race).
#[test]
fn plain_read_racing_with_shared_atomics() {
    let build = |with_barrier: bool| {
        shared_kernel("shared_hist", 4, move |k, s, tid| {
            let four = k.u32(4);
            let small = k.cmp(CmpOp::Lt, tid, four);
            k.if_(small, |k| {
                let z = k.u32(0);
                k.store_shared(s, tid, z);
            });
            k.barrier();
            let bin = k.bin(BinaryOp::Rem, tid, four);
            let addr = k.shared_addr(s, bin);
            let one = k.u32(1);
            k.op(Op::Atomic {
                op: AtomicOp::Add,
                space: AddressSpace::Shared,
                scope: Scope::Block,
                order: cuprum_ir::MemOrder::Relaxed,
                addr,
                value: one,
                compare: None,
            });
            if with_barrier {
                k.barrier();
            }
            k.if_(small, |k| {
                let _ = k.load_shared(s, tid);
            });
        })
    };
    run_block(&build(true), 64).unwrap();
    let err = run_block(&build(false), 64).unwrap_err();
    assert!(
        matches!(
            err,
            EmuError::SharedRace {
                kind: RaceKind::ReadWrite,
                threads: (_, [0, 0, 0]),
                address: 0,
                ..
            }
        ),
        "{err:?}"
    );
}
