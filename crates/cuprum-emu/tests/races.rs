//! Race detection on global memory. Planted bugs (two threads writing one element, a missing
//! barrier, an in-place stencil, a store among atomics, a second writer of a `DisjointSlice`
//! element, every way to get the fence + atomic handshake wrong) must be reported with both
//! threads, the address and the parameter; correct kernels using the same features (barriers,
//! shuffles, double buffering, atomics, the last-block reduction, grid-stride loops,
//! neighbour reads, narrow and wide elements, relaunches) must compute the right result and
//! report nothing.

mod common;

use common::*;
use cuprum_emu::{
    AccessKind, ArgValue, DisjointWrite, EmuError, GlobalRace, LaunchDims, LaunchOptions, Memory,
    RaceAccess, RaceKind, launch, launch_with,
};
use cuprum_ir::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn base_of(a: ArgValue) -> u64 {
    match a {
        ArgValue::Slice { base, .. } => base,
        ArgValue::Scalar(_) | ArgValue::TensorMap(_) => panic!("not a slice"),
    }
}

fn gid32(k: &mut K) -> Value {
    let i = k.global_id();
    k.cast(i, ScalarType::U32)
}

fn u64_of(k: &mut K, v: Value) -> Value {
    k.cast(v, ScalarType::U64)
}

fn atomic_add(k: &mut K, param: u32, idx: Value, value: Value) -> Value {
    let addr = k.elem_addr(param, idx);
    k.op(Op::Atomic {
        op: AtomicOp::Add,
        space: AddressSpace::Global,
        scope: Scope::Device,
        order: cuprum_ir::MemOrder::Relaxed,
        addr,
        value,
        compare: None,
    })
}

fn fence(k: &mut K) {
    k.push(Stmt::Fence {
        scope: Scope::Device,
    });
}

/// The race a launch must report: `(first, second, address, location, kind)`.
fn expect_race(result: Result<(), EmuError>) -> (RaceAccess, RaceAccess, u64, String, RaceKind) {
    match result {
        Err(EmuError::GlobalRace(race)) => {
            let GlobalRace {
                first,
                second,
                address,
                location,
                kind,
                ..
            } = *race;
            (first, second, address, location, kind)
        }
        other => panic!("expected a global-memory race, got {other:?}"),
    }
}

fn at(block: [u32; 3], thread: [u32; 3], access: AccessKind) -> RaceAccess {
    RaceAccess {
        block,
        thread,
        access,
    }
}

// ---------------------------------------------------------------------------------------------
// Planted bugs
// ---------------------------------------------------------------------------------------------

/// All lanes of one warp store to element 0: the first two lanes are named, in lane order.
#[test]
fn lanes_storing_to_one_element_race() {
    let mut k = K::new("all_to_zero");
    let out = k.slice("out", ScalarType::U32, SliceAccess::ReadWrite);
    let t = k.tid();
    let z = k.u64(0);
    k.store(out, z, t);
    let kernel = k.finish();
    let mem = Memory::new();
    let dout = output(&mem, ScalarType::U32, 4);
    let err = launch(&mem, &kernel, dims1(32, 32), &[dout]).unwrap_err();
    let text = err.to_string();
    let (first, second, address, location, kind) = expect_race(Err(err));
    assert_eq!(first, at([0, 0, 0], [0, 0, 0], AccessKind::Store));
    assert_eq!(second, at([0, 0, 0], [1, 0, 0], AccessKind::Store));
    assert_eq!(address, base_of(dout));
    assert_eq!(location, "element 0 of parameter `out` (u32)");
    assert_eq!(kind, RaceKind::WriteWrite);
    assert!(
        text.contains("kernel `all_to_zero`")
            && text.contains("write/write race")
            && text.contains("store by thread [0, 0, 0] of block [0, 0, 0]")
            && text.contains("store by thread [1, 0, 0] of block [0, 0, 0]"),
        "{text}"
    );
}

/// Every block writes `out[threadIdx.x]`: threads of different blocks collide.
#[test]
fn blocks_writing_the_same_elements_race() {
    let mut k = K::new("collide");
    let out = k.slice("out", ScalarType::U32, SliceAccess::ReadWrite);
    let t = k.tid();
    let b = k.special(Special::BlockIdx(Dim::X));
    let t64 = u64_of(&mut k, t);
    k.store(out, t64, b);
    let kernel = k.finish();
    let mem = Memory::new();
    let dout = output(&mem, ScalarType::U32, 64);
    for _ in 0..5 {
        let (first, second, address, location, kind) =
            expect_race(launch(&mem, &kernel, dims1(8 * 64, 64), &[dout]));
        assert_eq!(kind, RaceKind::WriteWrite);
        assert_eq!(first.thread, second.thread);
        assert_ne!(first.block, second.block);
        assert_eq!(
            (first.access, second.access),
            (AccessKind::Store, AccessKind::Store)
        );
        let element = first.thread[0];
        assert_eq!(address, base_of(dout) + 4 * u64::from(element));
        assert_eq!(
            location,
            format!("element {element} of parameter `out` (u32)")
        );
    }
}

/// An in-place three-point stencil: a thread overwrites an element its neighbours read.
#[test]
fn an_in_place_stencil_is_a_read_write_race() {
    let n = 256u32;
    let mut k = K::new("stencil_in_place");
    let x = k.slice("x", ScalarType::F32, SliceAccess::ReadWrite);
    let t = k.tid();
    let one = k.u32(1);
    let last = k.u32(n - 1);
    let nn = k.u32(n);
    let left = k.add(t, last);
    let left = k.bin(BinaryOp::Rem, left, nn);
    let right = k.add(t, one);
    let right = k.bin(BinaryOp::Rem, right, nn);
    let (li, ti, ri) = (
        u64_of(&mut k, left),
        u64_of(&mut k, t),
        u64_of(&mut k, right),
    );
    let a = k.load(x, li);
    let b = k.load(x, ti);
    let c = k.load(x, ri);
    let ab = k.add(a, b);
    let s = k.add(ab, c);
    k.store(x, ti, s);
    let kernel = k.finish();
    let mem = Memory::new();
    let dx = upload(&mem, &vec![1.0f32; n as usize]);
    let (first, second, address, location, kind) =
        expect_race(launch(&mem, &kernel, dims1(n as u64, n), &[dx]));
    assert_eq!(kind, RaceKind::ReadWrite);
    assert_eq!(
        (first.access, second.access),
        (AccessKind::Load, AccessKind::Store)
    );
    // The writer overwrites its own element, which a neighbour read.
    let written = second.thread[0];
    assert_eq!(address, base_of(dx) + 4 * u64::from(written));
    assert!(first.thread[0] == (written + 1) % n || first.thread[0] == (written + n - 1) % n);
    assert_eq!(
        location,
        format!("element {written} of parameter `x` (f32)")
    );
}

/// `buf[t] = t`, then `out[t] = buf[t + 1]`: with no barrier between, thread 0 reads what
/// thread 1 just wrote; with one, the result is right and nothing is reported.
#[test]
fn a_missing_barrier_between_global_phases_is_reported() {
    let build = |barrier: bool| {
        let mut k = K::new("phases");
        let buf = k.slice("buf", ScalarType::U32, SliceAccess::ReadWrite);
        let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
        let t = k.tid();
        let t64 = u64_of(&mut k, t);
        k.store(buf, t64, t);
        if barrier {
            k.barrier();
        }
        let one = k.u32(1);
        let n = k.u32(128);
        let next = k.add(t, one);
        let next = k.bin(BinaryOp::Rem, next, n);
        let next = u64_of(&mut k, next);
        let v = k.load(buf, next);
        k.store(out, t64, v);
        k.finish()
    };
    let mem = Memory::new();
    let dbuf = output(&mem, ScalarType::U32, 128);
    let dout = output(&mem, ScalarType::U32, 128);
    let (first, second, address, _, kind) =
        expect_race(launch(&mem, &build(false), dims1(128, 128), &[dbuf, dout]));
    assert_eq!(kind, RaceKind::ReadWrite);
    assert_eq!(first, at([0, 0, 0], [1, 0, 0], AccessKind::Store));
    assert_eq!(second, at([0, 0, 0], [0, 0, 0], AccessKind::Load));
    assert_eq!(address, base_of(dbuf) + 4);

    launch(&mem, &build(true), dims1(128, 128), &[dbuf, dout]).unwrap();
    let want: Vec<u32> = (0..128).map(|t| (t + 1) % 128).collect();
    assert_eq!(download::<u32>(&mem, dout), want);
}

/// Block `b` reads the element block `b + 1` writes, in the same launch.
#[test]
fn reading_another_blocks_output_races() {
    let mut k = K::new("peek");
    let buf = k.slice("buf", ScalarType::U32, SliceAccess::ReadWrite);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let i = gid32(&mut k);
    let i64_ = u64_of(&mut k, i);
    k.store(buf, i64_, i);
    let step = k.u32(64);
    let n = k.u32(64 * 8);
    let j = k.add(i, step);
    let j = k.bin(BinaryOp::Rem, j, n);
    let j = u64_of(&mut k, j);
    let v = k.load(buf, j);
    k.store(out, i64_, v);
    let kernel = k.finish();
    let mem = Memory::new();
    let dbuf = output(&mem, ScalarType::U32, 64 * 8);
    let dout = output(&mem, ScalarType::U32, 64 * 8);
    for _ in 0..5 {
        let (first, second, _, location, kind) =
            expect_race(launch(&mem, &kernel, dims1(64 * 8, 64), &[dbuf, dout]));
        assert_eq!(kind, RaceKind::ReadWrite);
        assert_ne!(first.block, second.block);
        assert_eq!(first.thread, second.thread);
        assert!(location.contains("parameter `buf`"), "{location}");
    }
}

/// A plain store into a counter that other threads add to atomically, with nothing between.
#[test]
fn a_store_among_atomics_races() {
    let build = |barrier: bool| {
        let mut k = K::new("reset_counter");
        let counter = k.slice("counter", ScalarType::U32, SliceAccess::ReadWrite);
        let z = k.u64(0);
        let one = k.u32(1);
        atomic_add(&mut k, counter, z, one);
        if barrier {
            k.barrier();
        }
        let t = k.tid();
        let zero = k.u32(0);
        let first = k.cmp(CmpOp::Eq, t, zero);
        k.if_(first, |k| {
            let z = k.u64(0);
            let hundred = k.u32(100);
            k.store(counter, z, hundred);
        });
        k.finish()
    };
    let mem = Memory::new();
    let dc = upload(&mem, &[0u32]);
    let (first, second, address, _, kind) =
        expect_race(launch(&mem, &build(false), dims1(64, 64), &[dc]));
    assert_eq!(kind, RaceKind::WriteWrite);
    assert_eq!(first.access, AccessKind::Atomic);
    assert_ne!(first.thread, [0, 0, 0]);
    assert_eq!(second, at([0, 0, 0], [0, 0, 0], AccessKind::Store));
    assert_eq!(address, base_of(dc));
    // After a barrier the store is ordered after every atomic of the block.
    launch(&mem, &build(true), dims1(64, 64), &[dc]).unwrap();
    assert_eq!(download::<u32>(&mem, dc), vec![100]);
}

/// Thread 0 also writes thread 1's element of a `DisjointSlice`, after a barrier: not a data
/// race, but a broken promise, reported as such with the parameter and element.
#[test]
fn a_second_writer_of_a_disjoint_element_is_reported() {
    let mut k = K::new("disjoint_twice");
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let t = k.tid();
    let t64 = u64_of(&mut k, t);
    k.store(out, t64, t);
    k.barrier();
    let zero = k.u32(0);
    let first = k.cmp(CmpOp::Eq, t, zero);
    k.if_(first, |k| {
        let one = k.u64(1);
        let v = k.u32(99);
        k.store(out, one, v);
    });
    let kernel = k.finish();
    let mem = Memory::new();
    let dout = output(&mem, ScalarType::U32, 64);
    let err = launch(&mem, &kernel, dims1(64, 64), &[dout]).unwrap_err();
    let text = err.to_string();
    assert_eq!(
        err,
        EmuError::DisjointWrite(Box::new(DisjointWrite {
            kernel: "disjoint_twice".into(),
            param: "out".into(),
            index: 1,
            first: ([0, 0, 0], [1, 0, 0]),
            second: ([0, 0, 0], [0, 0, 0]),
        }))
    );
    assert!(
        text.contains("element 1 of `DisjointSlice` parameter `out`")
            && text.contains("thread [1, 0, 0] of block [0, 0, 0]")
            && text.contains("thread [0, 0, 0] of block [0, 0, 0]"),
        "{text}"
    );
}

/// A raw launch with more blocks than the kernel's indexing tells apart: every block writes
/// elements `threadIdx.x` of a `DisjointSlice`.
#[test]
fn blocks_sharing_disjoint_elements_are_reported() {
    let mut k = K::new("block_blind");
    let out = k.slice("out", ScalarType::F32, SliceAccess::Disjoint);
    let t = k.tid();
    let t64 = u64_of(&mut k, t);
    let v = k.f32(1.0);
    k.store(out, t64, v);
    let kernel = k.finish();
    let mem = Memory::new();
    let dout = output(&mem, ScalarType::F32, 32);
    for _ in 0..5 {
        match launch(&mem, &kernel, dims1(4 * 32, 32), &[dout]) {
            Err(EmuError::DisjointWrite(w)) => {
                assert_eq!(w.param, "out");
                assert_eq!(w.first.1, w.second.1);
                assert_eq!(u64::from(w.first.1[0]), w.index);
                assert_ne!(w.first.0, w.second.0);
            }
            other => panic!("expected a DisjointSlice violation, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The last block finishes the reduction (CUDA's threadFenceReduction), right and wrong
// ---------------------------------------------------------------------------------------------

const BLOCK: u32 = 64;

/// How the last block's kernel gets the handshake between the blocks.
#[derive(Clone, Copy, Debug)]
enum Handshake {
    /// As the CUDA sample: thread 0 stores its block's partial, fences, takes a ticket with
    /// an atomic; a barrier shares "this is the last block"; thread 0 of the last block adds
    /// the partials.
    Sample,
    /// Thread 0 takes the ticket and, if it is the last, fences and adds up the partials
    /// itself (the acquire is the atomic and the fence).
    SameThread,
    /// `Sample` without the fence before the atomic: nothing publishes the partial.
    NoReleaseFence,
    /// `SameThread` without the fence after the atomic: nothing acquires the partials.
    NoAcquireFence,
    /// `Sample`, but the partial is stored after the fence and the atomic.
    StoreAfterPublish,
}

/// Sums `x` (one element per thread, `BLOCK` per block) into `total[0]`: a tree reduction in
/// shared memory per block, then the blocks' partial sums added by the last block to finish.
fn last_block_sum(handshake: Handshake) -> Kernel {
    let mut k = K::new("last_block_sum");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let partial = k.slice("partial", ScalarType::U32, SliceAccess::ReadWrite);
    let count = k.slice("count", ScalarType::U32, SliceAccess::ReadWrite);
    let total = k.slice("total", ScalarType::U32, SliceAccess::ReadWrite);
    let s = k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: ScalarType::U32,
        len: BLOCK,
    });
    let last_flag = k.b.shared_array(ArrayDecl {
        name: "am_last".into(),
        elem: ScalarType::U32,
        len: 1,
    });
    let t = k.tid();
    let i = k.global_id();
    let v = k.load(x, i);
    k.store_shared(s, t, v);
    k.barrier();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        let st = k.u32(stride);
        let active = k.cmp(CmpOp::Lt, t, st);
        k.if_(active, |k| {
            let a = k.load_shared(s, t);
            let other = k.add(t, st);
            let b = k.load_shared(s, other);
            let sum = k.add(a, b);
            k.store_shared(s, t, sum);
        });
        k.barrier();
        stride /= 2;
    }
    let zero = k.u32(0);
    let leader = k.cmp(CmpOp::Eq, t, zero);
    let block = k.special(Special::BlockIdx(Dim::X));
    let grid = k.special(Special::GridDim(Dim::X));
    // Thread 0 of the last block adds up every partial into `total[0]`.
    let finish = |k: &mut K| {
        let z = k.u32(0);
        let acc = k.var("acc", ScalarType::U32, z);
        let j = k.var("j", ScalarType::U32, z);
        k.loop_(|k| {
            let jv = k.read(j);
            let g = k.special(Special::GridDim(Dim::X));
            let done = k.cmp(CmpOp::Ge, jv, g);
            k.if_(done, |k| k.push(Stmt::Break));
            let j64 = k.cast(jv, ScalarType::U64);
            let p = k.load(partial, j64);
            let a = k.read(acc);
            let sum = k.add(a, p);
            k.write(acc, sum);
            let one = k.u32(1);
            let next = k.add(jv, one);
            k.write(j, next);
        });
        let a = k.read(acc);
        let z64 = k.u64(0);
        k.store(total, z64, a);
    };
    k.if_(leader, |k| {
        let sum = k.load_shared(s, zero);
        let b64 = k.cast(block, ScalarType::U64);
        let store_partial = |k: &mut K| k.store(partial, b64, sum);
        if !matches!(handshake, Handshake::StoreAfterPublish) {
            store_partial(k);
        }
        if !matches!(handshake, Handshake::NoReleaseFence) {
            fence(k);
        }
        let z64 = k.u64(0);
        let one = k.u32(1);
        let ticket = atomic_add(k, count, z64, one);
        if matches!(handshake, Handshake::StoreAfterPublish) {
            store_partial(k);
        }
        let one = k.u32(1);
        let last = k.bin(BinaryOp::Sub, grid, one);
        let is_last = k.cmp(CmpOp::Eq, ticket, last);
        match handshake {
            Handshake::SameThread | Handshake::NoAcquireFence => {
                k.if_(is_last, |k| {
                    if matches!(handshake, Handshake::SameThread) {
                        fence(k);
                    }
                    finish(k);
                });
            }
            _ => {
                let flag = k.cast(is_last, ScalarType::U32);
                let z = k.u32(0);
                k.store_shared(last_flag, z, flag);
            }
        }
    });
    if matches!(
        handshake,
        Handshake::Sample | Handshake::NoReleaseFence | Handshake::StoreAfterPublish
    ) {
        k.barrier();
        let z = k.u32(0);
        let flag = k.load_shared(last_flag, z);
        let zero = k.u32(0);
        let am_last = k.cmp(CmpOp::Ne, flag, zero);
        let go = k.op(Op::Binary(BinaryOp::And, am_last, leader));
        k.if_(go, finish);
    }
    k.finish()
}

struct Sum {
    mem: Memory,
    args: [ArgValue; 4],
    want: u32,
    dims: LaunchDims,
}

fn sum_inputs(blocks: u32) -> Sum {
    let mut rng = StdRng::seed_from_u64(u64::from(blocks));
    let n = (blocks * BLOCK) as usize;
    let xs: Vec<u32> = (0..n).map(|_| rng.random_range(0..1000)).collect();
    let mem = Memory::new();
    let args = [
        upload(&mem, &xs),
        upload(&mem, &vec![0xDEAD_BEEFu32; blocks as usize]),
        upload(&mem, &[0u32]),
        upload(&mem, &[0xDEAD_BEEFu32]),
    ];
    Sum {
        want: xs.iter().sum(),
        args,
        mem,
        dims: dims1(n as u64, BLOCK),
    }
}

#[test]
fn the_last_block_reduction_is_not_a_race() {
    for handshake in [Handshake::Sample, Handshake::SameThread] {
        for blocks in [1, 2, 37, 200] {
            let s = sum_inputs(blocks);
            launch(&s.mem, &last_block_sum(handshake), s.dims, &s.args)
                .unwrap_or_else(|e| panic!("{handshake:?}, {blocks} blocks: {e}"));
            assert_eq!(
                download::<u32>(&s.mem, s.args[3]),
                vec![s.want],
                "{handshake:?}"
            );
            assert_eq!(
                download::<u32>(&s.mem, s.args[2]),
                vec![blocks],
                "{handshake:?}"
            );
        }
    }
}

#[test]
fn a_broken_last_block_handshake_is_a_race_on_the_partials() {
    for handshake in [
        Handshake::NoReleaseFence,
        Handshake::NoAcquireFence,
        Handshake::StoreAfterPublish,
    ] {
        let s = sum_inputs(37);
        let result = launch(&s.mem, &last_block_sum(handshake), s.dims, &s.args);
        let (first, second, _, location, kind) = expect_race(result);
        assert_eq!(kind, RaceKind::ReadWrite, "{handshake:?}");
        assert!(
            location.contains("parameter `partial`"),
            "{handshake:?}: {location}"
        );
        // A block's thread 0 stored its partial; the last block's thread 0 read it.
        assert_eq!(first.thread, [0, 0, 0], "{handshake:?}");
        assert_eq!(second.thread, [0, 0, 0], "{handshake:?}");
        assert_ne!(first.block, second.block, "{handshake:?}");
        let accesses = [first.access, second.access];
        assert!(
            accesses.contains(&AccessKind::Store) && accesses.contains(&AccessKind::Load),
            "{handshake:?}: {accesses:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Correct kernels report nothing
// ---------------------------------------------------------------------------------------------

/// A warp-shuffle reduction: lane 0 of every warp stores its warp's sum.
#[test]
fn warp_shuffle_reductions_are_not_races() {
    let mut k = K::new("warp_sums");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::U32, SliceAccess::ReadWrite);
    let i = k.global_id();
    let v0 = k.load(x, i);
    let v = k.var("v", ScalarType::U32, v0);
    for offset in [16u32, 8, 4, 2, 1] {
        let cur = k.read(v);
        let o = k.u32(offset);
        let other = k.op(Op::Shuffle {
            mode: ShuffleMode::Xor,
            value: cur,
            lane: o,
        });
        let sum = k.add(cur, other);
        k.write(v, sum);
    }
    let lane = k.special(Special::LaneId);
    let zero = k.u32(0);
    let first = k.cmp(CmpOp::Eq, lane, zero);
    k.if_(first, |k| {
        let thirty_two = k.u64(32);
        let w = k.bin(BinaryOp::Div, i, thirty_two);
        let sum = k.read(v);
        k.store(out, w, sum);
    });
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(5);
    let n = 32 * 96;
    let xs: Vec<u32> = (0..n).map(|_| rng.random_range(0..1 << 20)).collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let dout = upload(&mem, &vec![0xDEAD_BEEFu32; n / 32]);
    launch(&mem, &kernel, dims1(n as u64, 128), &[dx, dout]).unwrap();
    let want: Vec<u32> = xs.chunks(32).map(|c| c.iter().sum()).collect();
    assert_eq!(download::<u32>(&mem, dout), want);
}

/// Double buffering in global memory: each step reads both neighbours in one buffer and
/// writes the other, with a barrier between steps.
#[test]
fn double_buffering_with_barriers_is_not_a_race() {
    const N: u32 = 256;
    const STEPS: usize = 6;
    let mut k = K::new("ping_pong");
    let a = k.slice("a", ScalarType::U32, SliceAccess::ReadWrite);
    let b = k.slice("b", ScalarType::U32, SliceAccess::ReadWrite);
    let t = k.tid();
    let n = k.u32(N);
    let one = k.u32(1);
    let left = k.u32(N - 1);
    let l = k.add(t, left);
    let l = k.bin(BinaryOp::Rem, l, n);
    let r = k.add(t, one);
    let r = k.bin(BinaryOp::Rem, r, n);
    let (l, r, me) = (u64_of(&mut k, l), u64_of(&mut k, r), u64_of(&mut k, t));
    for step in 0..STEPS {
        let (from, to) = if step % 2 == 0 { (a, b) } else { (b, a) };
        let x = k.load(from, l);
        let y = k.load(from, me);
        let z = k.load(from, r);
        let xy = k.add(x, y);
        let s = k.add(xy, z);
        k.store(to, me, s);
        k.barrier();
    }
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(6);
    let init: Vec<u32> = (0..N).map(|_| rng.random_range(0..100)).collect();
    let mem = Memory::new();
    let da = upload(&mem, &init);
    let db = upload(&mem, &vec![0xDEAD_BEEFu32; N as usize]);
    launch(&mem, &kernel, dims1(u64::from(N), N), &[da, db]).unwrap();
    let mut cur = init;
    for _ in 0..STEPS {
        let n = N as usize;
        cur = (0..n)
            .map(|i| {
                cur[(i + n - 1) % n]
                    .wrapping_add(cur[i])
                    .wrapping_add(cur[(i + 1) % n])
            })
            .collect();
    }
    assert_eq!(
        download::<u32>(&mem, da),
        cur,
        "STEPS is even: the result is in `a`"
    );
}

/// A global counter and a histogram built with atomics by every thread of many blocks; the
/// counter is read back (plainly) by thread 0 of each block while others still add to it,
/// which is allowed: it sees one of the counter's values.
#[test]
fn atomic_counters_and_histograms_are_not_races() {
    const BINS: u64 = 16;
    let mut k = K::new("histogram");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let hist = k.slice("hist", ScalarType::U32, SliceAccess::ReadWrite);
    let count = k.slice("count", ScalarType::U32, SliceAccess::ReadWrite);
    let seen = k.slice("seen", ScalarType::U32, SliceAccess::Disjoint);
    k.guarded(x, |k, i| {
        let v = k.load(x, i);
        let v64 = k.cast(v, ScalarType::U64);
        let bins = k.u64(BINS);
        let bin = k.bin(BinaryOp::Rem, v64, bins);
        let one = k.u32(1);
        atomic_add(k, hist, bin, one);
        let z = k.u64(0);
        atomic_add(k, count, z, one);
    });
    let t = k.tid();
    let zero = k.u32(0);
    let first = k.cmp(CmpOp::Eq, t, zero);
    k.if_(first, |k| {
        let z = k.u64(0);
        let c = k.load(count, z);
        let b = k.special(Special::BlockIdx(Dim::X));
        let b64 = k.cast(b, ScalarType::U64);
        k.store(seen, b64, c);
    });
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(7);
    let n: usize = 20_011;
    let xs: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let blocks = n.div_ceil(128);
    let mem = Memory::new();
    let args = [
        upload(&mem, &xs),
        upload(&mem, &vec![0u32; BINS as usize]),
        upload(&mem, &[0u32]),
        upload(&mem, &vec![u32::MAX; blocks]),
    ];
    launch(&mem, &kernel, dims1(n as u64, 128), &args).unwrap();
    let mut want = vec![0u32; BINS as usize];
    for v in &xs {
        want[(u64::from(*v) % BINS) as usize] += 1;
    }
    assert_eq!(download::<u32>(&mem, args[1]), want);
    assert_eq!(download::<u32>(&mem, args[2]), vec![n as u32]);
    let seen: Vec<u32> = download(&mem, args[3]);
    assert!(seen.iter().all(|&c| c >= 1 && c <= n as u32), "{seen:?}");
}

/// A grid-stride loop over more elements than threads, writing `y[i] = 3 * x[i] + i`.
#[test]
fn grid_stride_loops_are_not_races() {
    let mut k = K::new("grid_stride");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::U32, SliceAccess::Disjoint);
    let start = k.global_id();
    let i = k.var("i", ScalarType::U64, start);
    let bd = k.special(Special::BlockDim(Dim::X));
    let gd = k.special(Special::GridDim(Dim::X));
    let stride = k.mul(bd, gd);
    let stride = k.cast(stride, ScalarType::U64);
    k.loop_(|k| {
        let iv = k.read(i);
        let n = k.len(y);
        let done = k.cmp(CmpOp::Ge, iv, n);
        k.if_(done, |k| k.push(Stmt::Break));
        let v = k.load(x, iv);
        let three = k.u32(3);
        let v3 = k.mul(v, three);
        let i32_ = k.cast(iv, ScalarType::U32);
        let out = k.add(v3, i32_);
        k.store(y, iv, out);
        let next = k.add(iv, stride);
        k.write(i, next);
    });
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(8);
    let n = 100_003;
    let xs: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let dy = upload(&mem, &vec![0xDEAD_BEEFu32; n]);
    launch(&mem, &kernel, dims1(6 * 128, 128), &[dx, dy]).unwrap();
    let want: Vec<u32> = (0..n)
        .map(|i| xs[i].wrapping_mul(3).wrapping_add(i as u32))
        .collect();
    assert_eq!(download::<u32>(&mem, dy), want);
}

/// `y[i] = x[i - 1] + x[i] + x[i + 1]` over many blocks: every input is read by three
/// threads, often of two blocks; reads never race with reads.
#[test]
fn neighbour_reads_are_not_races() {
    let mut k = K::new("stencil");
    let x = k.slice("x", ScalarType::F32, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::F32, SliceAccess::Disjoint);
    k.guarded(y, |k, i| {
        let n = k.len(x);
        let one = k.u64(1);
        let last = k.bin(BinaryOp::Sub, n, one);
        let l = k.add(i, last);
        let l = k.bin(BinaryOp::Rem, l, n);
        let r = k.add(i, one);
        let r = k.bin(BinaryOp::Rem, r, n);
        let a = k.load(x, l);
        let b = k.load(x, i);
        let c = k.load(x, r);
        let ab = k.add(a, b);
        let s = k.add(ab, c);
        k.store(y, i, s);
    });
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(9);
    let n = 50_001;
    let xs: Vec<f32> = (0..n).map(|_| rng.random_range(-10.0f32..10.0)).collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let dy = upload(&mem, &vec![f32::NAN; n]);
    launch(&mem, &kernel, dims1(n as u64, 96), &[dx, dy]).unwrap();
    let want: Vec<f32> = (0..n)
        .map(|i| xs[(i + n - 1) % n] + xs[i] + xs[(i + 1) % n])
        .collect();
    assert_eq!(download::<f32>(&mem, dy), want);
}

/// Every thread of every block reads the same small table (broadcast reads), and each thread
/// reads back and updates its own output several times.
#[test]
fn shared_inputs_and_own_rewrites_are_not_races() {
    let mut k = K::new("table");
    let table = k.slice("table", ScalarType::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    k.guarded(out, |k, i| {
        let z = k.u32(0);
        k.store(out, i, z);
        for j in 0..4u64 {
            let jj = k.u64(j);
            let t = k.load(table, jj);
            let o = k.load(out, i);
            let s = k.add(o, t);
            k.store(out, i, s);
        }
    });
    let kernel = k.finish();
    let mem = Memory::new();
    let dt = upload(&mem, &[1u32, 10, 100, 1000]);
    let n = 10_000;
    let dout = upload(&mem, &vec![0xDEAD_BEEFu32; n]);
    launch(&mem, &kernel, dims1(n as u64, 256), &[dt, dout]).unwrap();
    assert_eq!(download::<u32>(&mem, dout), vec![1111u32; n]);
}

/// Elements of 1, 2 and 8 bytes: neighbouring threads write bytes of one 4-byte granule (not
/// a race), and 8-byte elements span two granules.
#[test]
fn narrow_and_wide_elements_are_tracked_by_the_byte() {
    for ty in [ScalarType::U8, ScalarType::U16, ScalarType::U64] {
        let mut k = K::new("widths");
        let x = k.slice("x", ty, SliceAccess::ReadOnly);
        let y = k.slice("y", ty, SliceAccess::Disjoint);
        k.guarded(y, |k, i| {
            let v = k.load(x, i);
            let c = k.c(Constant::new(ty, 3));
            let s = k.add(v, c);
            k.store(y, i, s);
        });
        let kernel = k.finish();
        let mut rng = StdRng::seed_from_u64(10);
        let n = 1001;
        let mask = if ty.size_bytes() == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * ty.size_bytes())) - 1
        };
        let xs: Vec<u64> = (0..n).map(|_| rng.random::<u64>() & mask).collect();
        let mem = Memory::new();
        let dx = upload_bits(&mem, ty, &xs);
        let dy = upload_bits(&mem, ty, &vec![mask / 3; n]);
        launch(&mem, &kernel, dims1(n as u64, 64), &[dx, dy]).unwrap();
        let want: Vec<u64> = xs.iter().map(|v| v.wrapping_add(3) & mask).collect();
        assert_eq!(download_bits(&mem, ty, dy), want, "{ty}");
    }
    // Two threads writing the two halves of one u32 as u16s do not race; writing one half
    // twice does.
    let mut k = K::new("halves");
    let y = k.slice("y", ScalarType::U16, SliceAccess::ReadWrite);
    let t = k.tid();
    let two = k.u32(2);
    let idx = k.bin(BinaryOp::Rem, t, two);
    let idx = u64_of(&mut k, idx);
    let v = k.cast(t, ScalarType::U16);
    k.store(y, idx, v);
    let kernel = k.finish();
    let mem = Memory::new();
    let dy = output(&mem, ScalarType::U16, 2);
    launch(&mem, &kernel, dims1(2, 2), &[dy]).unwrap();
    let (first, second, address, _, _) = expect_race(launch(&mem, &kernel, dims1(3, 3), &[dy]));
    assert_eq!((first.thread, second.thread), ([0, 0, 0], [2, 0, 0]));
    assert_eq!(address, base_of(dy));
}

/// 16-byte vector stores of four floats per thread.
#[test]
fn vector_accesses_are_not_races() {
    let mut k = K::new("vec4");
    let x = k.slice("x", ScalarType::F32, SliceAccess::ReadOnly);
    let y = k.slice("y", ScalarType::F32, SliceAccess::Disjoint);
    let i = k.global_id();
    let four = k.u64(4);
    let e = k.mul(i, four);
    let src = k.elem_addr(x, e);
    let parts =
        k.b.vector_load(AddressSpace::Global, ScalarType::F32, src, 4)
            .unwrap();
    let two = k.f32(2.0);
    let doubled: Vec<Value> = parts.iter().map(|&p| k.mul(p, two)).collect();
    let dst = k.elem_addr(y, e);
    k.b.vector_store(AddressSpace::Global, dst, doubled)
        .unwrap();
    let kernel = k.finish();
    let mut rng = StdRng::seed_from_u64(11);
    let n = 4 * 512;
    let xs: Vec<f32> = (0..n).map(|_| rng.random_range(-5.0f32..5.0)).collect();
    let mem = Memory::new();
    let dx = upload(&mem, &xs);
    let dy = upload(&mem, &vec![f32::NAN; n]);
    launch(&mem, &kernel, dims1(512, 128), &[dx, dy]).unwrap();
    let want: Vec<f32> = xs.iter().map(|v| v * 2.0).collect();
    assert_eq!(download::<f32>(&mem, dy), want);
}

/// Launches are ordered: a buffer written by one thread in one launch is written by another
/// in the next (the race tracker's records of a launch end with it), and an allocation's
/// tracker survives launches that use it in different ways.
#[test]
fn successive_launches_do_not_race() {
    let build = |reversed: bool| {
        let mut k = K::new(if reversed { "reversed" } else { "forward" });
        let y = k.slice("y", ScalarType::U32, SliceAccess::ReadWrite);
        k.guarded(y, |k, i| {
            let target = if reversed {
                let n = k.len(y);
                let one = k.u64(1);
                let last = k.bin(BinaryOp::Sub, n, one);
                k.bin(BinaryOp::Sub, last, i)
            } else {
                i
            };
            let old = k.load(y, target);
            let v = k.cast(i, ScalarType::U32);
            let s = k.add(old, v);
            k.store(y, target, s);
        });
        k.finish()
    };
    let (forward, reversed) = (build(false), build(true));
    let n = 5000usize;
    let mem = Memory::new();
    let dy = upload(&mem, &vec![0u32; n]);
    let mut want = vec![0u32; n];
    for round in 0..4 {
        let kernel = if round % 2 == 0 { &forward } else { &reversed };
        launch(&mem, kernel, dims1(n as u64, 128), &[dy]).unwrap();
        for (i, w) in want.iter_mut().enumerate() {
            let from = if round % 2 == 0 { i } else { n - 1 - i };
            *w = w.wrapping_add(from as u32);
        }
    }
    assert_eq!(download::<u32>(&mem, dy), want);
}

/// Race detection can be switched off per launch (for a deliberately racy kernel).
#[test]
fn race_detection_can_be_switched_off() {
    let mut k = K::new("benign_flag");
    let flag = k.slice("flag", ScalarType::U32, SliceAccess::ReadWrite);
    let z = k.u64(0);
    let one = k.u32(1);
    k.store(flag, z, one);
    let kernel = k.finish();
    let mem = Memory::new();
    let df = upload(&mem, &[0u32]);
    expect_race(launch(&mem, &kernel, dims1(64, 64), &[df]));
    let off = LaunchOptions::default().with_global_race_check(false);
    launch_with(&mem, &kernel, dims1(64, 64), &[df], &off).unwrap();
    assert_eq!(download::<u32>(&mem, df), vec![1]);
}

/// A `DisjointSlice` of bytes sharing a 4-byte granule with another parameter: ordered writes
/// by two threads to the other parameter's byte are fine; only the slice's own bytes are
/// given to one thread each.
#[test]
fn disjoint_checks_are_per_byte() {
    let mut k = K::new("neighbours");
    let d = k.slice("d", ScalarType::U8, SliceAccess::Disjoint);
    let o = k.slice("o", ScalarType::U8, SliceAccess::ReadWrite);
    let t = k.tid();
    let t64 = u64_of(&mut k, t);
    let v = k.cast(t, ScalarType::U8);
    k.store(d, t64, v);
    let zero = k.u32(0);
    let one = k.u32(1);
    let first = k.cmp(CmpOp::Eq, t, zero);
    k.if_(first, |k| {
        let z = k.u64(0);
        k.store(o, z, v);
    });
    k.barrier();
    let second = k.cmp(CmpOp::Eq, t, one);
    k.if_(second, |k| {
        let z = k.u64(0);
        k.store(o, z, v);
    });
    let kernel = k.finish();
    let mem = Memory::new();
    let buf = base_of(output(&mem, ScalarType::U8, 4));
    let args = [
        ArgValue::Slice { base: buf, len: 2 },
        ArgValue::Slice {
            base: buf + 2,
            len: 2,
        },
    ];
    launch(&mem, &kernel, dims1(2, 2), &args).unwrap();
    let mut bytes = [0u8; 4];
    mem.read(buf, &mut bytes).unwrap();
    assert_eq!(bytes[..3], [0, 1, 1]);
}

/// `x[t] = x[t] + x[(t + 1) % 32]` in place in one warp: each lane's write hits an element its
/// neighbour read. (The first load of the whole warp is stored compactly; the write must still
/// see the neighbour's read recorded beside it.)
#[test]
fn rewriting_own_elements_after_a_neighbour_read_races() {
    let mut k = K::new("shift_add");
    let x = k.slice("x", ScalarType::U32, SliceAccess::ReadWrite);
    let t = k.tid();
    let one = k.u32(1);
    let n = k.u32(32);
    let next = k.add(t, one);
    let next = k.bin(BinaryOp::Rem, next, n);
    let (me, next) = (u64_of(&mut k, t), u64_of(&mut k, next));
    let a = k.load(x, me);
    let b = k.load(x, next);
    let s = k.add(a, b);
    k.store(x, me, s);
    let kernel = k.finish();
    let mem = Memory::new();
    let dx = upload(&mem, &[1u32; 32]);
    let (first, second, address, _, kind) =
        expect_race(launch(&mem, &kernel, dims1(32, 32), &[dx]));
    assert_eq!(kind, RaceKind::ReadWrite);
    // Thread 0 writes element 0, which thread 31 read as its neighbour.
    assert_eq!(first, at([0, 0, 0], [31, 0, 0], AccessKind::Load));
    assert_eq!(second, at([0, 0, 0], [0, 0, 0], AccessKind::Store));
    assert_eq!(address, base_of(dx));
}

/// Atomics by every thread on one element of a `DisjointSlice` are no second *store*: not
/// reported, and the count is right.
#[test]
fn atomics_on_a_disjoint_element_are_not_a_second_writer() {
    let mut k = K::new("count_into_disjoint");
    let z = k.slice("z", ScalarType::U32, SliceAccess::Disjoint);
    let zero = k.u64(0);
    let one = k.u32(1);
    atomic_add(&mut k, z, zero, one);
    let kernel = k.finish();
    let mem = Memory::new();
    let dz = upload(&mem, &[0u32]);
    launch(&mem, &kernel, dims1(4 * 64, 64), &[dz]).unwrap();
    assert_eq!(download::<u32>(&mem, dz), vec![256]);
}
