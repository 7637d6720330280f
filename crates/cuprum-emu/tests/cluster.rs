//! Thread-block clusters on the emulator, built with the IR builder: the cluster specials
//! of every block of 3-D grids; the cluster barrier ordering exchanges through global and
//! shared memory (and its absence, or a write after the arrival, reported as a race); remote
//! mbarrier arrivals handing data to another block; multicast tensor loads landing in every
//! masked block; a GEMM-like multicast pipeline whose consumers release stages with remote
//! arrivals; returned threads counting as arrived; distributed shared memory (loads and
//! stores of other blocks' shared memory in every block of 2-D clusters, compared with a
//! plain-Rust reference, ordered by cluster barriers and by remote arrivals passed on by a
//! block barrier, and their races); and the misuses (a grid of partial clusters, ranks and
//! mask bits beyond the cluster, double arrivals, waits without an arrival, a block that
//! returns while another still arrives on its barrier or reads its memory, reads of
//! unwritten bytes, a cluster barrier nobody completes) reported with their errors.

mod common;

use common::*;
use cuprum_emu::{ArgValue, EmuError, LaunchDims, Memory, RaceKind, launch};
use cuprum_ir::*;
use cuprum_testkit::poison::BYTE;
use rand::Rng;

/// A kernel's cluster shape (`Kernel::cluster`).
type Cluster = Option<(u32, u32, u32)>;

/// What `common::output` fills a `u32` with.
const POISON: u32 = u32::from_ne_bytes([BYTE; 4]);

fn dims(grid: [u32; 3], block: [u32; 3]) -> LaunchDims {
    LaunchDims {
        grid,
        block,
        dynamic_shared_bytes: 0,
    }
}

/// `blockIdx` linearised over the grid, x fastest (`u32`).
fn block_linear(k: &mut K) -> Value {
    let [bx, by, bz] = [Dim::X, Dim::Y, Dim::Z].map(|d| k.special(Special::BlockIdx(d)));
    let gx = k.special(Special::GridDim(Dim::X));
    let gy = k.special(Special::GridDim(Dim::Y));
    let z = k.mul(bz, gy);
    let yz = k.add(by, z);
    let yz = k.mul(yz, gx);
    k.add(bx, yz)
}

/// `threadIdx` linearised over the block, x fastest (`u32`).
fn thread_linear(k: &mut K) -> Value {
    let [tx, ty, tz] = [Dim::X, Dim::Y, Dim::Z].map(|d| k.special(Special::ThreadIdx(d)));
    let dx = k.special(Special::BlockDim(Dim::X));
    let dy = k.special(Special::BlockDim(Dim::Y));
    let z = k.mul(tz, dy);
    let yz = k.add(ty, z);
    let yz = k.mul(yz, dx);
    k.add(tx, yz)
}

fn rank(k: &mut K) -> Value {
    k.special(Special::ClusterCtaRank)
}

fn cluster_sync(k: &mut K) {
    k.push(Stmt::ClusterArrive);
    k.push(Stmt::ClusterWait);
}

fn mbarrier(k: &mut K, op: MbarrierOp, addr: Value, arg: Option<Value>) {
    k.b.mbarrier(op, addr, arg).unwrap();
}

/// `a == b` for `u32`s.
fn eq(k: &mut K, a: Value, b: u32) -> Value {
    let b = k.u32(b);
    k.cmp(CmpOp::Eq, a, b)
}

fn and(k: &mut K, a: Value, b: Value) -> Value {
    k.bin(BinaryOp::And, a, b)
}

fn u64_of(k: &mut K, v: Value) -> Value {
    k.cast(v, ScalarType::U64)
}

/// Thread 0 initialises the mbarrier at `bar` for `count` arrivals and fences the init for
/// the cluster; then the cluster synchronises, so every block may use every block's barrier:
/// the setup of real cluster GEMMs.
fn init_for_cluster(k: &mut K, bar: Value, count: u32) {
    let tid = k.tid();
    let is0 = eq(k, tid, 0);
    k.if_(is0, |k| {
        let n = k.u32(count);
        mbarrier(k, MbarrierOp::Init, bar, Some(n));
        k.push(Stmt::FenceMbarrierInit);
    });
    cluster_sync(k);
}

fn shared(k: &mut K, name: &str, elem: ScalarType, len: u32) -> u32 {
    k.b.shared_array(ArrayDecl {
        name: name.into(),
        elem,
        len,
    })
}

fn u64_shared(k: &mut K, name: &str, len: u32) -> u32 {
    shared(k, name, ScalarType::U64, len)
}

// ---------------------------------------------------------------------------------------
// Specials

const SPECIALS: [Special; 13] = [
    Special::ClusterCtaRank,
    Special::ClusterCtaIdx(Dim::X),
    Special::ClusterCtaIdx(Dim::Y),
    Special::ClusterCtaIdx(Dim::Z),
    Special::ClusterDim(Dim::X),
    Special::ClusterDim(Dim::Y),
    Special::ClusterDim(Dim::Z),
    Special::ClusterIdx(Dim::X),
    Special::ClusterIdx(Dim::Y),
    Special::ClusterIdx(Dim::Z),
    Special::ClusterCount(Dim::X),
    Special::ClusterCount(Dim::Y),
    Special::ClusterCount(Dim::Z),
];

/// Every thread writes the cluster specials at its slot of `out`.
fn specials_kernel(cluster: Cluster) -> Kernel {
    let mut k = K::new("cluster_specials");
    k.b.set_cluster(cluster);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let b = block_linear(&mut k);
    let [dx, dy, dz] = [Dim::X, Dim::Y, Dim::Z].map(|d| k.special(Special::BlockDim(d)));
    let threads = k.mul(dx, dy);
    let threads = k.mul(threads, dz);
    let t = thread_linear(&mut k);
    let g = k.mul(b, threads);
    let g = k.add(g, t);
    let g = u64_of(&mut k, g);
    let fields = k.u64(SPECIALS.len() as u64);
    let base = k.mul(g, fields);
    for (i, s) in SPECIALS.into_iter().enumerate() {
        let v = k.special(s);
        let i = k.u64(i as u64);
        let at = k.add(base, i);
        k.store(out, at, v);
    }
    k.finish()
}

/// The specials of every thread of a launch of `grid` x `block` in clusters of `cluster`.
fn specials_reference(grid: [u32; 3], block: [u32; 3], cluster: [u32; 3]) -> Vec<u32> {
    let threads = block.iter().product::<u32>() as usize;
    let mut out = Vec::new();
    for bz in 0..grid[2] {
        for by in 0..grid[1] {
            for bx in 0..grid[0] {
                let b = [bx, by, bz];
                let cta = [0, 1, 2].map(|d| b[d] % cluster[d]);
                let rank = cta[0] + cta[1] * cluster[0] + cta[2] * cluster[0] * cluster[1];
                let mut fields = vec![rank];
                fields.extend(cta);
                fields.extend(cluster);
                fields.extend([0, 1, 2].map(|d| b[d] / cluster[d]));
                fields.extend([0, 1, 2].map(|d| grid[d] / cluster[d]));
                for _ in 0..threads {
                    out.extend(&fields);
                }
            }
        }
    }
    out
}

#[test]
fn specials_name_every_block_of_3d_grids_of_clusters() {
    let cases: [([u32; 3], [u32; 3], Cluster); 6] = [
        ([4, 6, 2], [8, 2, 1], Some((2, 2, 1))),
        ([3, 4, 4], [5, 1, 2], Some((1, 2, 2))),
        ([6, 1, 1], [32, 1, 1], Some((3, 1, 1))),
        ([8, 2, 1], [4, 1, 1], Some((8, 1, 1))),
        ([2, 2, 4], [3, 3, 1], Some((1, 1, 4))),
        ([3, 2, 2], [4, 1, 1], None),
    ];
    for (grid, block, cluster) in cases {
        let mem = Memory::new();
        let n = (grid.iter().product::<u32>() * block.iter().product::<u32>()) as usize;
        let out = output(&mem, ScalarType::U32, n * SPECIALS.len());
        launch(&mem, &specials_kernel(cluster), dims(grid, block), &[out])
            .unwrap_or_else(|e| panic!("{grid:?} in clusters {cluster:?}: {e}"));
        let got: Vec<u32> = download(&mem, out);
        let shape = cluster.map_or([1, 1, 1], |(x, y, z)| [x, y, z]);
        let want = specials_reference(grid, block, shape);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let (thread, field) = (i / SPECIALS.len(), i % SPECIALS.len());
            assert_eq!(
                g, w,
                "{grid:?} in clusters {cluster:?}: thread {thread} (block-major), {:?}",
                SPECIALS[field]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The cluster barrier through global memory

const BLOCK: u32 = 64;
const GRID: u32 = 8;
const CLUSTER: u32 = 4;

/// How the exchange kernel orders its write before its partner's read.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Order {
    /// Write, arrive, wait: ordered.
    Barrier,
    /// Nothing.
    Nothing,
    /// Arrive, write, wait: the write is after the arrival, so not ordered.
    WriteAfterArrive,
}

/// The partner of thread `t` of block `b` in the exchange kernels: the reversed thread of
/// the neighbouring block of the same cluster.
fn partner(b: u32, t: u32) -> (u32, u32) {
    (b ^ 1, BLOCK - 1 - t)
}

/// `partner(bx, tid)` as a global index (`u64`).
fn partner_index(k: &mut K) -> Value {
    let bx = k.special(Special::BlockIdx(Dim::X));
    let tid = k.tid();
    let one = k.u32(1);
    let pb = k.bin(BinaryOp::Xor, bx, one);
    let last = k.u32(BLOCK - 1);
    let pt = k.bin(BinaryOp::Sub, last, tid);
    let w = k.u32(BLOCK);
    let p = k.mul(pb, w);
    let p = k.add(p, pt);
    u64_of(k, p)
}

/// `mid[g] = data[g] * 3 + rank`, ordered as `order` says before `out[g] = mid[partner]`.
fn exchange_kernel(order: Order, cluster: Cluster) -> Kernel {
    let mut k = K::new("cluster_exchange");
    k.b.set_cluster(cluster);
    let data = k.slice("data", ScalarType::U32, SliceAccess::ReadOnly);
    let mid = k.slice("mid", ScalarType::U32, SliceAccess::ReadWrite);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let g = k.global_id();
    let x = k.load(data, g);
    let three = k.u32(3);
    let v = k.mul(x, three);
    let r = rank(&mut k);
    let v = k.add(v, r);
    match order {
        Order::Barrier => {
            k.store(mid, g, v);
            cluster_sync(&mut k);
        }
        Order::Nothing => k.store(mid, g, v),
        Order::WriteAfterArrive => {
            k.push(Stmt::ClusterArrive);
            k.store(mid, g, v);
            k.push(Stmt::ClusterWait);
        }
    }
    let p = partner_index(&mut k);
    let got = k.load(mid, p);
    k.store(out, g, got);
    k.finish()
}

fn exchange_reference(data: &[u32], cluster: u32) -> Vec<u32> {
    (0..GRID * BLOCK)
        .map(|g| {
            let (pb, pt) = partner(g / BLOCK, g % BLOCK);
            let p = (pb * BLOCK + pt) as usize;
            data[p].wrapping_mul(3).wrapping_add(pb % cluster)
        })
        .collect()
}

fn run_exchange(order: Order) -> (Result<(), EmuError>, Vec<u32>, Vec<u32>) {
    run_on_random_words(
        &exchange_kernel(order, Some((CLUSTER, 1, 1))),
        "cluster_exchange",
    )
}

/// Launches `kernel` over `GRID` blocks of `BLOCK` threads with a random `u32` per thread
/// (`seed` names the stream) and two poisoned outputs; the launch's result, the data and
/// the second output.
fn run_on_random_words(kernel: &Kernel, seed: &str) -> (Result<(), EmuError>, Vec<u32>, Vec<u32>) {
    let mem = Memory::new();
    let mut rng = cuprum_testkit::random::rng(seed);
    let n = (GRID * BLOCK) as usize;
    let data: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let args = [
        upload(&mem, &data),
        output(&mem, ScalarType::U32, n),
        output(&mem, ScalarType::U32, n),
    ];
    let result = launch(&mem, kernel, dims([GRID, 1, 1], [BLOCK, 1, 1]), &args);
    (result, data, download(&mem, args[2]))
}

#[test]
fn a_cluster_barrier_orders_an_exchange_through_global_memory() {
    let (result, data, got) = run_exchange(Order::Barrier);
    result.unwrap();
    let want = exchange_reference(&data, CLUSTER);
    for (g, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(a, b, "out[{g}]");
    }
}

/// A race the exchange reports: between two blocks of one cluster, on `mid`.
fn assert_cluster_race(result: Result<(), EmuError>, what: &str) {
    match result {
        Err(EmuError::GlobalRace(race)) => {
            let (a, b) = (race.first.block[0], race.second.block[0]);
            assert_eq!(a ^ 1, b, "{what}: the partners race: {race:?}");
            assert!(race.location.contains("`mid`"), "{what}: {}", race.location);
        }
        other => panic!("{what}: no race reported: {other:?}"),
    }
}

#[test]
fn without_the_cluster_barrier_the_exchange_is_a_race() {
    assert_cluster_race(run_exchange(Order::Nothing).0, "no barrier");
}

#[test]
fn a_write_between_arrival_and_wait_is_not_ordered_by_the_barrier() {
    assert_cluster_race(
        run_exchange(Order::WriteAfterArrive).0,
        "write after arrive",
    );
}

/// Thread 5 of rank 1 returns at once and thread 6 of rank 1 after writing its `mid`; the
/// others exchange through the cluster barrier, which the returned threads do not hold up.
fn early_return_kernel() -> Kernel {
    let mut k = K::new("cluster_early_return");
    k.b.set_cluster(Some((2, 1, 1)));
    let data = k.slice("data", ScalarType::U32, SliceAccess::ReadOnly);
    let mid = k.slice("mid", ScalarType::U32, SliceAccess::ReadWrite);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let tid = k.tid();
    let r = rank(&mut k);
    let is1 = eq(&mut k, r, 1);
    let t5 = eq(&mut k, tid, 5);
    let t6 = eq(&mut k, tid, 6);
    let gone = and(&mut k, is1, t5);
    let write_and_go = and(&mut k, is1, t6);
    k.if_(gone, |k| k.push(Stmt::Return));
    let g = k.global_id();
    let x = k.load(data, g);
    let three = k.u32(3);
    let v = k.mul(x, three);
    let v = k.add(v, r);
    k.store(mid, g, v);
    k.if_(write_and_go, |k| k.push(Stmt::Return));
    cluster_sync(&mut k);
    let p = partner_index(&mut k);
    let got = k.load(mid, p);
    k.store(out, g, got);
    k.finish()
}

#[test]
fn returned_threads_count_as_arrived_at_the_cluster_barrier() {
    let (result, data, got) = run_on_random_words(&early_return_kernel(), "cluster_early_return");
    result.unwrap();
    let returned = |b: u32, t: u32| b % 2 == 1 && (t == 5 || t == 6);
    for g in 0..GRID * BLOCK {
        let (b, t) = (g / BLOCK, g % BLOCK);
        let (pb, pt) = partner(b, t);
        let want = if returned(b, t) || (pb % 2 == 1 && pt == 5) {
            // Never written: the thread returned, or its partner did before writing `mid`.
            POISON
        } else {
            let p = (pb * BLOCK + pt) as usize;
            data[p].wrapping_mul(3).wrapping_add(pb % 2)
        };
        assert_eq!(got[g as usize], want, "out[{g}] (block {b}, thread {t})");
    }
}

// ---------------------------------------------------------------------------------------
// The cluster barrier through shared memory

/// `s[tid] = data[g] + 1`, then (if `barrier`) a cluster barrier, then
/// `out[g] = s[tid ^ 1]`: a neighbouring lane's element.
fn shared_exchange_kernel(cluster: Cluster, barrier: bool) -> Kernel {
    let mut k = K::new("cluster_shared_exchange");
    k.b.set_cluster(cluster);
    let data = k.slice("data", ScalarType::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let s = shared(&mut k, "s", ScalarType::U32, BLOCK);
    let tid = k.tid();
    let g = k.global_id();
    let x = k.load(data, g);
    let one = k.u32(1);
    let v = k.add(x, one);
    k.store_shared(s, tid, v);
    if barrier {
        cluster_sync(&mut k);
    }
    let other = k.bin(BinaryOp::Xor, tid, one);
    let got = k.load_shared(s, other);
    k.store(out, g, got);
    k.finish()
}

#[test]
fn the_cluster_barrier_orders_shared_memory_with_or_without_a_cluster() {
    for cluster in [Some((2, 1, 1)), Some((1, 1, 1)), None] {
        let mem = Memory::new();
        let mut rng = cuprum_testkit::random::rng("cluster_shared_exchange");
        let n = (GRID * BLOCK) as usize;
        let data: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let args = [upload(&mem, &data), output(&mem, ScalarType::U32, n)];
        let d = dims([GRID, 1, 1], [BLOCK, 1, 1]);
        launch(&mem, &shared_exchange_kernel(cluster, true), d, &args)
            .unwrap_or_else(|e| panic!("cluster {cluster:?}: {e}"));
        let got: Vec<u32> = download(&mem, args[1]);
        for g in 0..n {
            assert_eq!(got[g], data[g ^ 1].wrapping_add(1), "{cluster:?}: out[{g}]");
        }
        match launch(&mem, &shared_exchange_kernel(cluster, false), d, &args) {
            Err(EmuError::SharedRace { .. }) => {}
            other => panic!("{cluster:?}: no shared race without the barrier: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Remote mbarrier arrivals

/// In each cluster of two blocks, block 0's threads write `mid` and arrive on block 1's
/// mbarrier (initialised for all of them, with the cluster setup real GEMMs use); block 1's
/// threads wait on it and read what block 0 wrote. Block 0 returns without waiting for
/// anything: block 1 observed its arrivals.
fn remote_arrival_kernel() -> Kernel {
    let mut k = K::new("cluster_remote_arrival");
    k.b.set_cluster(Some((2, 1, 1)));
    let data = k.slice("data", ScalarType::U32, SliceAccess::ReadOnly);
    let mid = k.slice("mid", ScalarType::U32, SliceAccess::ReadWrite);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let bar_array = u64_shared(&mut k, "bar", 1);
    let bar = k.op(Op::SharedAddr(bar_array));
    init_for_cluster(&mut k, bar, BLOCK);
    let g = k.global_id();
    let r = rank(&mut k);
    let is0 = eq(&mut k, r, 0);
    k.if_else(
        is0,
        |k| {
            let x = k.load(data, g);
            let seven = k.u32(7);
            let v = k.add(x, seven);
            k.store(mid, g, v);
            let mask = k.u32(0x5555_5555);
            let mine = k.bin(BinaryOp::Xor, x, mask);
            k.store(out, g, mine);
            let one = k.u32(1);
            mbarrier(k, MbarrierOp::ArriveCluster, bar, Some(one));
        },
        |k| {
            let zero = k.u32(0);
            mbarrier(k, MbarrierOp::WaitParity, bar, Some(zero));
            let p = partner_index(k);
            let got = k.load(mid, p);
            k.store(out, g, got);
        },
    );
    k.finish()
}

#[test]
fn a_remote_arrival_hands_data_to_the_block_that_waits() {
    let (result, data, got) =
        run_on_random_words(&remote_arrival_kernel(), "cluster_remote_arrival");
    result.unwrap();
    for g in 0..GRID * BLOCK {
        let (b, t) = (g / BLOCK, g % BLOCK);
        let want = if b % 2 == 0 {
            data[g as usize] ^ 0x5555_5555
        } else {
            let (pb, pt) = partner(b, t);
            data[(pb * BLOCK + pt) as usize].wrapping_add(7)
        };
        assert_eq!(got[g as usize], want, "out[{g}] (block {b}, thread {t})");
    }
}

// ---------------------------------------------------------------------------------------
// Multicast tensor loads

/// Columns and rows of the tensor, and the box (f32).
const TW: u64 = 40;
const TH: u64 = 16;
const BW: u32 = 32;
const BH: u32 = 8;
const BOX_BYTES: u32 = BW * BH * 4;
const MC_BLOCK: u32 = 128;

/// A `TW x TH` f32 tensor of random values, and its map in boxes of `BW x box_h`.
fn tensor(mem: &Memory, box_h: u32) -> (ArgValue, Vec<f32>) {
    let mut rng = cuprum_testkit::random::rng("cluster_multicast");
    let data: Vec<f32> = (0..TW * TH)
        .map(|_| rng.random_range(-100.0f32..100.0))
        .collect();
    let ArgValue::Slice { base, .. } = upload(mem, &data) else {
        panic!("a slice");
    };
    let mut d = TensorMapDesc::new(ScalarType::F32, 2, base);
    d.dims[..2].copy_from_slice(&[TW, TH]);
    d.strides[0] = TW * 4;
    d.box_dims[..2].copy_from_slice(&[BW, box_h]);
    d.check(None).unwrap();
    (ArgValue::TensorMap(d.encode_emulated()), data)
}

fn mask16(k: &mut K, mask: u16) -> Value {
    k.c(Constant::new(ScalarType::U16, u64::from(mask)))
}

/// Each cluster of two blocks loads the box at rows `8 * clusterIdx.x` into both blocks'
/// `tile`: rank 0 multicasts it whole (`halves` false), or each rank multicasts its half of
/// the rows (through a map of half-height boxes). Each block waits on its own mbarrier,
/// which expects the whole box, and copies its tile to its part of `out`. `mask` is the
/// multicast mask.
fn multicast_kernel(halves: bool, mask: u16) -> Kernel {
    let mut k = K::new("cluster_multicast");
    k.b.set_cluster(Some((2, 1, 1)));
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: ScalarType::F32,
            rank: 2,
        },
    );
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let tile = k.b.shared_array_aligned(
        ArrayDecl {
            name: "tile".into(),
            elem: ScalarType::U32,
            len: BW * BH,
        },
        1024,
    );
    let bar_array = u64_shared(&mut k, "bar", 1);
    let bar = k.op(Op::SharedAddr(bar_array));
    let dst = k.op(Op::SharedAddr(tile));
    init_for_cluster(&mut k, bar, 1);
    let tid = k.tid();
    let r = rank(&mut k);
    let is0 = eq(&mut k, tid, 0);
    let c = k.special(Special::ClusterIdx(Dim::X));
    let rows = k.u32(BH);
    let y0 = k.mul(c, rows);
    k.if_(is0, |k| {
        let bytes = k.u32(BOX_BYTES);
        k.b.mbarrier(MbarrierOp::ArriveExpectTx, bar, Some(bytes))
            .unwrap();
    });
    let m = mask16(&mut k, mask);
    let x = k.i32(0);
    if halves {
        k.if_(is0, |k| {
            let half_rows = k.u32(BH / 2);
            let off = k.mul(r, half_rows);
            let y = k.add(y0, off);
            let y = k.cast(y, ScalarType::I32);
            let half_bytes = k.u32(BOX_BYTES / 2);
            let shift = k.mul(r, half_bytes);
            let d = k.add(dst, shift);
            k.b.tma(TmaOp::LoadTile {
                map: TensorMapRef::Param(map),
                coords: vec![x, y],
                dst: d,
                mbar: bar,
                multicast: Some(m),
            })
            .unwrap();
        });
    } else {
        let r0 = eq(&mut k, r, 0);
        let issuer = and(&mut k, is0, r0);
        k.if_(issuer, |k| {
            let y = k.cast(y0, ScalarType::I32);
            k.b.tma(TmaOp::LoadTile {
                map: TensorMapRef::Param(map),
                coords: vec![x, y],
                dst,
                mbar: bar,
                multicast: Some(m),
            })
            .unwrap();
        });
    }
    let zero = k.u32(0);
    mbarrier(&mut k, MbarrierOp::WaitParity, bar, Some(zero));
    let b = block_linear(&mut k);
    let per_block = k.u32(BW * BH);
    let base = k.mul(b, per_block);
    for half in 0..2u32 {
        let off = k.u32(half * MC_BLOCK);
        let i = k.add(tid, off);
        let v = k.load_shared(tile, i);
        let at = k.add(base, i);
        let at = u64_of(&mut k, at);
        k.store(out, at, v);
    }
    cluster_sync(&mut k);
    k.finish()
}

#[test]
fn a_multicast_load_lands_in_every_block_of_the_mask() {
    for halves in [false, true] {
        let mem = Memory::new();
        let box_h = if halves { BH / 2 } else { BH };
        let (map, data) = tensor(&mem, box_h);
        let grid = 4u32;
        let out = output(&mem, ScalarType::U32, (grid * BW * BH) as usize);
        launch(
            &mem,
            &multicast_kernel(halves, 0b11),
            dims([grid, 1, 1], [MC_BLOCK, 1, 1]),
            &[map, out],
        )
        .unwrap_or_else(|e| panic!("halves {halves}: {e}"));
        let got: Vec<u32> = download(&mem, out);
        for b in 0..grid {
            let y0 = u64::from(b / 2 * BH);
            for r in 0..u64::from(BH) {
                for c in 0..u64::from(BW) {
                    let want = data[((y0 + r) * TW + c) as usize].to_bits();
                    let i = (u64::from(b * BW * BH) + r * u64::from(BW) + c) as usize;
                    assert_eq!(
                        got[i], want,
                        "halves {halves}: block {b}, box row {r}, column {c}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_multicast_mask_beyond_the_cluster_is_reported() {
    let mem = Memory::new();
    let (map, _) = tensor(&mem, BH);
    let out = output(&mem, ScalarType::U32, (2 * BW * BH) as usize);
    match launch(
        &mem,
        &multicast_kernel(false, 0b101),
        dims([2, 1, 1], [MC_BLOCK, 1, 1]),
        &[map, out],
    ) {
        Err(e @ EmuError::ClusterMisuse { .. }) => {
            assert!(e.to_string().contains("0x0005"), "{e}");
            assert!(e.to_string().contains("2 blocks"), "{e}");
        }
        other => panic!("no misuse reported: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// A multicast pipeline (the shape of a cluster GEMM's main loop)

const STAGES: u32 = 2;
const STEPS: u32 = 4;

/// Rank 0's thread 0 produces: for each of `STEPS` boxes it waits until stage `s` is free
/// (its `empty[s]` barrier, which every consumer thread of both blocks arrives on remotely)
/// unless `skip_empty_wait`, then multicasts the box into stage `s` of both blocks. Every
/// thread of both blocks consumes: it waits on its block's `full[s]`, adds two elements of
/// the stage to its sums, and releases the stage to the producer. The sums go to `out`.
fn pipeline_kernel(skip_empty_wait: bool) -> Kernel {
    let mut k = K::new("cluster_pipeline");
    k.b.set_cluster(Some((2, 1, 1)));
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: ScalarType::F32,
            rank: 2,
        },
    );
    let out = k.slice("out", ScalarType::F32, SliceAccess::Disjoint);
    let tile = k.b.shared_array_aligned(
        ArrayDecl {
            name: "tile".into(),
            elem: ScalarType::F32,
            len: STAGES * BW * BH,
        },
        1024,
    );
    let full_array = u64_shared(&mut k, "full", STAGES);
    let empty_array = u64_shared(&mut k, "empty", STAGES);
    let tid = k.tid();
    let r = rank(&mut k);
    let is0 = eq(&mut k, tid, 0);
    let r0 = eq(&mut k, r, 0);
    let producer = and(&mut k, is0, r0);
    let eight = k.u32(8);
    let full: Vec<Value> = (0..STAGES)
        .map(|s| {
            let i = k.u32(s);
            let o = k.mul(i, eight);
            let base = k.op(Op::SharedAddr(full_array));
            k.add(base, o)
        })
        .collect();
    let empty: Vec<Value> = (0..STAGES)
        .map(|s| {
            let i = k.u32(s);
            let o = k.mul(i, eight);
            let base = k.op(Op::SharedAddr(empty_array));
            k.add(base, o)
        })
        .collect();
    k.if_(is0, |k| {
        for s in 0..STAGES as usize {
            let one = k.u32(1);
            mbarrier(k, MbarrierOp::Init, full[s], Some(one));
            let consumers = k.u32(2 * MC_BLOCK);
            mbarrier(k, MbarrierOp::Init, empty[s], Some(consumers));
        }
        k.push(Stmt::FenceMbarrierInit);
    });
    cluster_sync(&mut k);
    let zero_f = k.f32(0.0);
    let sums = [
        k.var("sum0", ScalarType::F32, zero_f),
        k.var("sum1", ScalarType::F32, zero_f),
    ];
    let tile_base = k.op(Op::SharedAddr(tile));
    let x = k.i32(0);
    let both = mask16(&mut k, 0b11);
    let rank0 = k.u32(0);
    for step in 0..STEPS {
        let s = (step % STAGES) as usize;
        let parity = (step / STAGES) % 2;
        k.if_(is0, |k| {
            let bytes = k.u32(BOX_BYTES);
            mbarrier(k, MbarrierOp::ArriveExpectTx, full[s], Some(bytes));
        });
        k.if_(producer, |k| {
            if step >= STAGES && !skip_empty_wait {
                let p = k.u32((step / STAGES - 1) % 2);
                mbarrier(k, MbarrierOp::WaitParity, empty[s], Some(p));
            }
            let y = k.i32((step * BH) as i32);
            let off = k.u32(s as u32 * BOX_BYTES);
            let dst = k.add(tile_base, off);
            k.b.tma(TmaOp::LoadTile {
                map: TensorMapRef::Param(map),
                coords: vec![x, y],
                dst,
                mbar: full[s],
                multicast: Some(both),
            })
            .unwrap();
        });
        let p = k.u32(parity);
        mbarrier(&mut k, MbarrierOp::WaitParity, full[s], Some(p));
        for (half, sum) in sums.iter().enumerate() {
            let off = k.u32(s as u32 * BW * BH + half as u32 * MC_BLOCK);
            let i = k.add(tid, off);
            let v = k.load_shared(tile, i);
            let acc = k.read(*sum);
            let acc = k.add(acc, v);
            k.write(*sum, acc);
        }
        mbarrier(&mut k, MbarrierOp::ArriveCluster, empty[s], Some(rank0));
    }
    let b = block_linear(&mut k);
    let per_block = k.u32(2 * MC_BLOCK);
    let base = k.mul(b, per_block);
    for (half, sum) in sums.iter().enumerate() {
        let off = k.u32(half as u32 * MC_BLOCK);
        let i = k.add(tid, off);
        let i = k.add(base, i);
        let i = u64_of(&mut k, i);
        let v = k.read(*sum);
        k.store(out, i, v);
    }
    // Rank 1's last arrivals on rank 0's `empty` barriers are ordered before rank 0 returns.
    cluster_sync(&mut k);
    k.finish()
}

fn run_pipeline(skip_empty_wait: bool) -> (Result<(), EmuError>, Vec<f32>, Vec<f32>) {
    let mem = Memory::new();
    let mut rng = cuprum_testkit::random::rng("cluster_pipeline");
    let (w, h) = (u64::from(BW), u64::from(STEPS * BH));
    let data: Vec<f32> = (0..w * h)
        .map(|_| rng.random_range(-100.0f32..100.0))
        .collect();
    let ArgValue::Slice { base, .. } = upload(&mem, &data) else {
        panic!("a slice");
    };
    let mut d = TensorMapDesc::new(ScalarType::F32, 2, base);
    d.dims[..2].copy_from_slice(&[w, h]);
    d.strides[0] = w * 4;
    d.box_dims[..2].copy_from_slice(&[BW, BH]);
    d.check(None).unwrap();
    let grid = 4u32;
    let out = output(&mem, ScalarType::F32, (grid * 2 * MC_BLOCK) as usize);
    let result = launch(
        &mem,
        &pipeline_kernel(skip_empty_wait),
        dims([grid, 1, 1], [MC_BLOCK, 1, 1]),
        &[ArgValue::TensorMap(d.encode_emulated()), out],
    );
    (result, data, download(&mem, out))
}

#[test]
fn a_multicast_pipeline_released_by_remote_arrivals_runs_without_races() {
    let (result, data, got) = run_pipeline(false);
    result.unwrap();
    let per_box = (BW * BH) as usize;
    for b in 0..4usize {
        for half in 0..2usize {
            for t in 0..MC_BLOCK as usize {
                let mut sum = 0.0f32;
                for step in 0..STEPS as usize {
                    sum += data[step * per_box + half * MC_BLOCK as usize + t];
                }
                let i = (b * 2 + half) * MC_BLOCK as usize + t;
                assert_eq!(
                    got[i].to_bits(),
                    sum.to_bits(),
                    "block {b}, sum {half}, thread {t}"
                );
            }
        }
    }
}

/// Without the wait on `empty`, the producer's next copy into a stage is not ordered after
/// the consumers' reads of it: reported as a race with the TMA or, when the producer runs so
/// far ahead that the stage's last copy into the other block has not even landed, as a copy
/// over bytes another copy still owns.
#[test]
fn a_producer_that_does_not_wait_for_the_consumers_is_reported() {
    match run_pipeline(true).0 {
        Err(e @ EmuError::AsyncProxyRace { .. }) => {
            assert!(e.to_string().contains("TMA"), "{e}")
        }
        Err(e @ EmuError::TmaMisuse { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("in block [1, 0, 0]'s shared memory"),
                "{text}"
            );
            assert!(text.contains("still owns"), "{text}");
        }
        other => panic!("no race reported: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Misuse

#[test]
fn a_grid_that_is_not_whole_clusters_is_refused() {
    let mem = Memory::new();
    let out = output(&mem, ScalarType::U32, 3 * 32 * SPECIALS.len());
    let kernel = specials_kernel(Some((2, 1, 1)));
    match launch(&mem, &kernel, dims([3, 1, 1], [32, 1, 1]), &[out]) {
        Err(e @ EmuError::InvalidLaunch { .. }) => {
            let text = e.to_string();
            for part in ["grid [3, 1, 1]", "[2, 1, 1]", "multiple", "[4, 1, 1]"] {
                assert!(text.contains(part), "`{part}` missing: {text}");
            }
        }
        other => panic!("launch not refused: {other:?}"),
    }
}

/// The cluster setup, then thread 0 of rank 0 arrives on the barrier of rank `target`.
fn remote_rank_kernel(target: u32) -> Kernel {
    let mut k = K::new("cluster_remote_rank");
    k.b.set_cluster(Some((2, 1, 1)));
    let bar_array = u64_shared(&mut k, "bar", 1);
    let bar = k.op(Op::SharedAddr(bar_array));
    init_for_cluster(&mut k, bar, 1);
    let tid = k.tid();
    let r = rank(&mut k);
    let is0 = eq(&mut k, tid, 0);
    let r0 = eq(&mut k, r, 0);
    let who = and(&mut k, is0, r0);
    k.if_(who, |k| {
        let t = k.u32(target);
        mbarrier(k, MbarrierOp::ArriveCluster, bar, Some(t));
    });
    cluster_sync(&mut k);
    k.finish()
}

#[test]
fn a_remote_arrival_beyond_the_cluster_is_reported() {
    let mem = Memory::new();
    let d = dims([2, 1, 1], [32, 1, 1]);
    launch(&mem, &remote_rank_kernel(1), d, &[]).unwrap();
    match launch(&mem, &remote_rank_kernel(2), d, &[]) {
        Err(e @ EmuError::ClusterMisuse { .. }) => {
            assert!(e.to_string().contains("rank 2"), "{e}");
        }
        other => panic!("no misuse reported: {other:?}"),
    }
}

#[test]
fn arriving_twice_or_waiting_without_an_arrival_is_reported() {
    let mem = Memory::new();
    for (cluster, twice) in [
        (Some((2, 1, 1)), true),
        (None, true),
        (Some((2, 1, 1)), false),
    ] {
        let mut k = K::new("cluster_alternation");
        k.b.set_cluster(cluster);
        if twice {
            k.push(Stmt::ClusterArrive);
            k.push(Stmt::ClusterArrive);
        } else {
            k.push(Stmt::ClusterWait);
        }
        let want = if twice { "again" } else { "without" };
        match launch(&mem, &k.finish(), dims([2, 1, 1], [64, 1, 1]), &[]) {
            Err(e @ EmuError::ClusterMisuse { .. }) => {
                assert!(e.to_string().contains(want), "{e}");
                assert!(e.to_string().contains("alternates"), "{e}");
            }
            other => panic!("{cluster:?}, twice {twice}: no misuse reported: {other:?}"),
        }
    }
}

/// The cluster setup; then the other block arrives on block `target`'s barrier, while
/// `target` returns unless `ordered` (then both end with a cluster barrier).
fn returning_target_kernel(target: u32, ordered: bool) -> Kernel {
    let mut k = K::new("cluster_returning_target");
    k.b.set_cluster(Some((2, 1, 1)));
    let bar_array = u64_shared(&mut k, "bar", 1);
    let bar = k.op(Op::SharedAddr(bar_array));
    init_for_cluster(&mut k, bar, 32);
    let r = rank(&mut k);
    let arriving = eq(&mut k, r, 1 - target);
    k.if_(arriving, |k| {
        let t = k.u32(target);
        mbarrier(k, MbarrierOp::ArriveCluster, bar, Some(t));
    });
    if ordered {
        cluster_sync(&mut k);
    }
    k.finish()
}

#[test]
fn a_block_that_returns_while_another_still_arrives_on_its_barrier_is_reported() {
    let mem = Memory::new();
    let d = dims([2, 1, 1], [32, 1, 1]);
    for target in [0, 1] {
        launch(&mem, &returning_target_kernel(target, true), d, &[])
            .unwrap_or_else(|e| panic!("target {target}, ordered: {e}"));
        match launch(&mem, &returning_target_kernel(target, false), d, &[]) {
            Err(e @ EmuError::ClusterMisuse { .. }) => {
                let text = e.to_string();
                assert!(text.contains("cluster barrier (arrive and wait)"), "{text}");
                assert!(text.contains("returned"), "{text}");
            }
            other => panic!("target {target}: no misuse reported: {other:?}"),
        }
    }
}

#[test]
fn a_cluster_barrier_that_no_one_completes_deadlocks() {
    let mut k = K::new("cluster_deadlock");
    k.b.set_cluster(Some((2, 1, 1)));
    let tid = k.tid();
    let r = rank(&mut k);
    let is0 = eq(&mut k, r, 0);
    let thirty_two = k.u32(32);
    let first_warp = k.cmp(CmpOp::Lt, tid, thirty_two);
    let arrives = k.bin(BinaryOp::Or, is0, first_warp);
    // Rank 1's second warp waits at a block barrier that its first warp never reaches.
    k.if_else(arrives, cluster_sync, |k| k.barrier());
    let mem = Memory::new();
    match launch(&mem, &k.finish(), dims([2, 1, 1], [64, 1, 1]), &[]) {
        Err(e @ EmuError::ClusterBarrierDeadlock { .. }) => {
            let text = e.to_string();
            assert!(text.contains("phase 1 of the cluster barrier"), "{text}");
            assert!(text.contains("32 of the cluster's 128"), "{text}");
            assert!(text.contains("[1, 0, 0]"), "{text}");
        }
        other => panic!("no deadlock reported: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Distributed shared memory

/// Blocks per cluster of the distributed shared-memory kernels (x by y).
const DS: (u32, u32) = (2, 2);
const DS_BLOCKS: u32 = DS.0 * DS.1;

/// How the distributed shared-memory kernel orders its local writes before the other
/// blocks' accesses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum DsOrder {
    /// Local writes, a cluster barrier, remote accesses, a cluster barrier, local reads, and
    /// a last cluster barrier.
    Barriers,
    /// No cluster barrier between the local writes and the remote reads.
    NoFirstBarrier,
    /// The local writes between the arrival and the wait.
    WriteAfterArrive,
    /// A block barrier, not a cluster barrier, between the remote writes and the local reads.
    BlockBarrierOnly,
}

/// `(r + k) % DS_BLOCKS` for the block's rank `r`.
fn rank_plus(k: &mut K, r: Value, plus: u32) -> Value {
    let plus = k.u32(plus);
    let n = k.u32(DS_BLOCKS);
    let s = k.add(r, plus);
    k.bin(BinaryOp::Rem, s, n)
}

/// Each thread writes `a[tid] = data[g] * 5 + rank` (u32) and `f[tid] = -(data[g] as f32)`
/// in its block; then reads the reversed thread's `a` and `f` of the block `pull` ranks on
/// (`ClusterLoad`), and writes `data[g] ^ 0xA5A5_A5A5` into `b[tid]` and `data[g] & 1 != 0`
/// into `flags[tid]` of the block `push` ranks on (`ClusterStore`); after the second barrier,
/// its own `b` and `flags`. Outputs: `out[4 g ..4 g + 4]` = the pulled `a`, the pulled `f`'s
/// bits, its own `b`, its own `flags` (0 or 1).
fn dsmem_kernel(order: DsOrder, (pull, push): (u32, u32)) -> Kernel {
    let mut k = K::new("cluster_dsmem");
    k.b.set_cluster(Some((DS.0, DS.1, 1)));
    let data = k.slice("data", ScalarType::U32, SliceAccess::ReadOnly);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let a = shared(&mut k, "a", ScalarType::U32, BLOCK);
    let f = shared(&mut k, "f", ScalarType::F32, BLOCK);
    let b = shared(&mut k, "b", ScalarType::U32, BLOCK);
    let flags = shared(&mut k, "flags", ScalarType::Bool, BLOCK);
    let tid = k.tid();
    let g = block_linear(&mut k);
    let w = k.u32(BLOCK);
    let g = k.mul(g, w);
    let g = k.add(g, tid);
    let g = u64_of(&mut k, g);
    let x = k.load(data, g);
    let r = rank(&mut k);
    let five = k.u32(5);
    let v = k.mul(x, five);
    let v = k.add(v, r);
    if order == DsOrder::WriteAfterArrive {
        k.push(Stmt::ClusterArrive);
    }
    k.store_shared(a, tid, v);
    let xf = k.cast(x, ScalarType::F32);
    let xf = k.un(UnaryOp::Neg, xf);
    k.store_shared(f, tid, xf);
    match order {
        DsOrder::WriteAfterArrive => k.push(Stmt::ClusterWait),
        DsOrder::NoFirstBarrier => {}
        _ => cluster_sync(&mut k),
    }
    let from = rank_plus(&mut k, r, pull);
    let last = k.u32(BLOCK - 1);
    let mirror = k.bin(BinaryOp::Sub, last, tid);
    let at = k.shared_addr(a, mirror);
    let got_a = k.b.cluster_load(ScalarType::U32, at, from).unwrap();
    let at = k.shared_addr(f, mirror);
    let got_f = k.b.cluster_load(ScalarType::F32, at, from).unwrap();
    let to = rank_plus(&mut k, r, push);
    let mask = k.u32(0xA5A5_A5A5);
    let pushed = k.bin(BinaryOp::Xor, x, mask);
    let at = k.shared_addr(b, tid);
    k.b.cluster_store(at, to, pushed).unwrap();
    let one = k.u32(1);
    let odd = k.bin(BinaryOp::And, x, one);
    let zero = k.u32(0);
    let odd = k.cmp(CmpOp::Ne, odd, zero);
    let at = k.shared_addr(flags, tid);
    k.b.cluster_store(at, to, odd).unwrap();
    match order {
        DsOrder::BlockBarrierOnly => k.barrier(),
        _ => cluster_sync(&mut k),
    }
    let own_b = k.load_shared(b, tid);
    let own_flag = k.load_shared(flags, tid);
    let own_flag = k.cast(own_flag, ScalarType::U32);
    let four = k.u64(4);
    let base = k.mul(g, four);
    let bits = k.op(Op::Bitcast {
        value: got_f,
        to: ScalarType::U32,
    });
    for (i, v) in [got_a, bits, own_b, own_flag].into_iter().enumerate() {
        let i = k.u64(i as u64);
        let at = k.add(base, i);
        k.store(out, at, v);
    }
    cluster_sync(&mut k);
    k.finish()
}

/// What `dsmem_kernel` writes, for a grid of `grid` blocks (x by y) in clusters of `DS`.
fn dsmem_reference(data: &[u32], grid: (u32, u32), (pull, push): (u32, u32)) -> Vec<u32> {
    let n = DS_BLOCKS;
    // Block (bx, by) has rank `bx % cx + (by % cy) * cx`; the block of rank `q` in its
    // cluster is at the cluster's corner plus `(q % cx, q / cx)`.
    let block_of = |bx: u32, by: u32, q: u32| {
        let (x0, y0) = (bx - bx % DS.0, by - by % DS.1);
        (x0 + q % DS.0, y0 + q / DS.0)
    };
    let linear = |bx: u32, by: u32| by * grid.0 + bx;
    let mut want = vec![0u32; data.len() * 4];
    for by in 0..grid.1 {
        for bx in 0..grid.0 {
            let r = bx % DS.0 + (by % DS.1) * DS.0;
            for t in 0..BLOCK {
                let g = (linear(bx, by) * BLOCK + t) as usize;
                let (fx, fy) = block_of(bx, by, (r + pull) % n);
                let src = (linear(fx, fy) * BLOCK + BLOCK - 1 - t) as usize;
                want[4 * g] = data[src].wrapping_mul(5).wrapping_add((r + pull) % n);
                want[4 * g + 1] = (-(data[src] as f32)).to_bits();
                // Its own `b` and `flags` come from the block whose push lands here.
                let (px, py) = block_of(bx, by, (r + n - push % n) % n);
                let from = (linear(px, py) * BLOCK + t) as usize;
                want[4 * g + 2] = data[from] ^ 0xA5A5_A5A5;
                want[4 * g + 3] = data[from] & 1;
            }
        }
    }
    want
}

fn run_dsmem(order: DsOrder, ranks: (u32, u32)) -> (Result<(), EmuError>, Vec<u32>, Vec<u32>) {
    let grid = (4, 2);
    let mem = Memory::new();
    let mut rng = cuprum_testkit::random::rng("cluster_dsmem");
    let n = (grid.0 * grid.1 * BLOCK) as usize;
    let data: Vec<u32> = (0..n).map(|_| rng.random_range(0..1 << 24)).collect();
    let args = [upload(&mem, &data), output(&mem, ScalarType::U32, 4 * n)];
    let d = dims([grid.0, grid.1, 1], [BLOCK, 1, 1]);
    let result = launch(&mem, &dsmem_kernel(order, ranks), d, &args);
    let want = dsmem_reference(&data, grid, ranks);
    (result, download(&mem, args[1]), want)
}

#[test]
fn distributed_shared_memory_reads_and_writes_other_blocks_between_cluster_barriers() {
    // Pull from the next block and push to the previous one, pull from and push to the
    // block two on, and (rank + 0) the block's own memory, which is an ordinary access.
    for ranks in [(1, DS_BLOCKS - 1), (2, 2), (0, 0), (3, 1)] {
        let (result, got, want) = run_dsmem(DsOrder::Barriers, ranks);
        result.unwrap_or_else(|e| panic!("{ranks:?}: {e}"));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g,
                w,
                "{ranks:?}: out[{i}] (thread {}, field {})",
                i / 4,
                i % 4
            );
        }
    }
}

/// A distributed shared-memory race between two blocks of one cluster.
#[track_caller]
fn assert_dsmem_race(result: Result<(), EmuError>, kind: RaceKind, what: &str) {
    match result {
        Err(EmuError::ClusterSharedRace(race)) => {
            assert_eq!(race.kind, kind, "{what}: {race:?}");
            assert_ne!(race.first.block, race.second.block, "{what}: {race:?}");
            let text = EmuError::ClusterSharedRace(race).to_string();
            assert!(text.contains("cluster_sync"), "{what}: {text}");
        }
        other => panic!("{what}: no distributed shared-memory race reported: {other:?}"),
    }
}

#[test]
fn distributed_shared_memory_without_a_cluster_barrier_is_a_race() {
    // Rank 0 runs first, up to the cluster barrier after its reads: the bytes it reads are
    // not even written yet.
    match run_dsmem(DsOrder::NoFirstBarrier, (1, 3)).0 {
        Err(EmuError::UninitializedClusterSharedRead { owner, block, .. }) => {
            assert_eq!((owner, block), ([1, 0, 0], [0, 0, 0]));
        }
        other => panic!("no uninitialized read reported: {other:?}"),
    }
    assert_dsmem_race(
        run_dsmem(DsOrder::WriteAfterArrive, (1, 3)).0,
        RaceKind::ReadWrite,
        "write after the arrival",
    );
    // The target's block barrier orders its own threads, not another block's store.
    assert_dsmem_race(
        run_dsmem(DsOrder::BlockBarrierOnly, (1, 3)).0,
        RaceKind::ReadWrite,
        "block barrier only",
    );
}

/// cuda-oxide's ring exchange: thread 0 of each block writes `1000 + rank` to its `s`, the
/// cluster synchronises, thread 0 reads the next rank's `s` into `out[block]`; then, if
/// `last_sync`, the cluster synchronises again so that no block returns while read.
fn ring_kernel(cluster: u32, last_sync: bool) -> Kernel {
    let mut k = K::new("cluster_dsmem_ring");
    k.b.set_cluster(Some((cluster, 1, 1)));
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let s = shared(&mut k, "s", ScalarType::U32, 1);
    let tid = k.tid();
    let t0 = eq(&mut k, tid, 0);
    let r = rank(&mut k);
    let zero = k.u32(0);
    k.if_(t0, |k| {
        let v = k.u32(1000);
        let v = k.add(v, r);
        k.store_shared(s, zero, v);
    });
    k.barrier();
    cluster_sync(&mut k);
    k.if_(t0, |k| {
        let one = k.u32(1);
        let n = k.special(Special::ClusterDim(Dim::X));
        let next = k.add(r, one);
        let next = k.bin(BinaryOp::Rem, next, n);
        let at = k.shared_addr(s, zero);
        let v = k.b.cluster_load(ScalarType::U32, at, next).unwrap();
        let bx = k.special(Special::BlockIdx(Dim::X));
        let bx = u64_of(k, bx);
        k.store(out, bx, v);
    });
    if last_sync {
        cluster_sync(&mut k);
    }
    k.finish()
}

#[test]
fn a_block_that_returns_while_others_still_read_it_is_reported() {
    let mem = Memory::new();
    for cluster in [2, 4, 8] {
        let d = dims([2 * cluster, 1, 1], [32, 1, 1]);
        let out = output(&mem, ScalarType::U32, 2 * cluster as usize);
        launch(&mem, &ring_kernel(cluster, true), d, &[out])
            .unwrap_or_else(|e| panic!("cluster {cluster}: {e}"));
        let got: Vec<u32> = download(&mem, out);
        let want: Vec<u32> = (0..2 * cluster).map(|b| 1000 + (b + 1) % cluster).collect();
        assert_eq!(got, want, "cluster {cluster}");
        // As cuda-oxide's example writes it, without the last barrier: a block may be gone
        // when its neighbour reads it, whichever order the blocks run in.
        match launch(&mem, &ring_kernel(cluster, false), d, &[out]) {
            Err(e @ EmuError::ClusterMisuse { .. }) => {
                let text = e.to_string();
                assert!(text.contains("shared memory"), "{text}");
                assert!(text.contains("cluster barrier (arrive and wait)"), "{text}");
            }
            other => panic!("cluster {cluster}: no misuse reported: {other:?}"),
        }
    }
}

/// Thread 0 of every rank but 0 stores `value` at word 0 of rank 0's shared memory (after
/// it initialised it), with `order` between the stores.
fn two_writers_kernel(ordered: bool) -> Kernel {
    let mut k = K::new("cluster_dsmem_writers");
    k.b.set_cluster(Some((4, 1, 1)));
    let s = shared(&mut k, "s", ScalarType::U32, 4);
    let tid = k.tid();
    let r = rank(&mut k);
    let t0 = eq(&mut k, tid, 0);
    let zero = k.u32(0);
    k.if_(t0, |k| k.store_shared(s, zero, zero));
    cluster_sync(&mut k);
    let at = k.shared_addr(s, zero);
    for writer in 1..4 {
        let me = eq(&mut k, r, writer);
        let who = and(&mut k, me, t0);
        k.if_(who, |k| {
            let v = k.u32(writer);
            k.b.cluster_store(at, zero, v).unwrap();
        });
        if ordered {
            cluster_sync(&mut k);
        }
    }
    cluster_sync(&mut k);
    k.finish()
}

#[test]
fn two_blocks_writing_one_word_of_a_third_race_unless_ordered() {
    let mem = Memory::new();
    let d = dims([4, 1, 1], [32, 1, 1]);
    launch(&mem, &two_writers_kernel(true), d, &[]).unwrap();
    assert_dsmem_race(
        launch(&mem, &two_writers_kernel(false), d, &[]),
        RaceKind::WriteWrite,
        "two remote writers",
    );
}

/// Rank 1's threads store into rank 0's `s` and arrive on rank 0's mbarrier; on rank 0
/// only thread 0 waits for the phase, then a block barrier passes what it learnt to the
/// other threads, which read `s`. `out[t]` = what thread `t` of rank 0 read.
fn handoff_kernel(block_barrier: bool) -> Kernel {
    let mut k = K::new("cluster_dsmem_handoff");
    k.b.set_cluster(Some((2, 1, 1)));
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let s = shared(&mut k, "s", ScalarType::U32, BLOCK);
    let bar_array = u64_shared(&mut k, "bar", 1);
    let bar = k.op(Op::SharedAddr(bar_array));
    init_for_cluster(&mut k, bar, BLOCK);
    let tid = k.tid();
    let r = rank(&mut k);
    let is0 = eq(&mut k, r, 0);
    k.if_else(
        is0,
        |k| {
            let t0 = eq(k, tid, 0);
            k.if_(t0, |k| {
                let zero = k.u32(0);
                mbarrier(k, MbarrierOp::WaitParity, bar, Some(zero));
            });
            if block_barrier {
                k.barrier();
            }
            let got = k.load_shared(s, tid);
            let g = u64_of(k, tid);
            k.store(out, g, got);
        },
        |k| {
            let seven = k.u32(7);
            let v = k.mul(tid, seven);
            let at = k.shared_addr(s, tid);
            let zero = k.u32(0);
            k.b.cluster_store(at, zero, v).unwrap();
            mbarrier(k, MbarrierOp::ArriveCluster, bar, Some(zero));
        },
    );
    k.finish()
}

#[test]
fn a_remote_arrival_orders_distributed_stores_and_a_block_barrier_passes_it_on() {
    let mem = Memory::new();
    let d = dims([2, 1, 1], [BLOCK, 1, 1]);
    let out = output(&mem, ScalarType::U32, BLOCK as usize);
    launch(&mem, &handoff_kernel(true), d, &[out]).unwrap();
    let got: Vec<u32> = download(&mem, out);
    let want: Vec<u32> = (0..BLOCK).map(|t| t * 7).collect();
    assert_eq!(got, want);
    // Without the block barrier only thread 0 observed the phase.
    assert_dsmem_race(
        launch(&mem, &handoff_kernel(false), d, &[out]),
        RaceKind::ReadWrite,
        "threads that did not observe the phase",
    );
}

/// Thread 0 of rank 0 reads word `word` of rank `target`'s `s`, which thread 0 of every
/// block wrote (word 0 only).
fn read_rank_kernel(cluster: Cluster, target: u32, word: u32) -> Kernel {
    let mut k = K::new("cluster_dsmem_rank");
    k.b.set_cluster(cluster);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let s = shared(&mut k, "s", ScalarType::U32, 2);
    let tid = k.tid();
    let t0 = eq(&mut k, tid, 0);
    let r = rank(&mut k);
    let zero = k.u32(0);
    k.if_(t0, |k| {
        let v = k.u32(41);
        let v = k.add(v, r);
        k.store_shared(s, zero, v);
    });
    cluster_sync(&mut k);
    let r0 = eq(&mut k, r, 0);
    let who = and(&mut k, t0, r0);
    k.if_(who, |k| {
        let w = k.u32(word);
        let at = k.shared_addr(s, w);
        let t = k.u32(target);
        let v = k.b.cluster_load(ScalarType::U32, at, t).unwrap();
        let bx = k.special(Special::BlockIdx(Dim::X));
        let bx = u64_of(k, bx);
        k.store(out, bx, v);
    });
    cluster_sync(&mut k);
    k.finish()
}

#[test]
fn ranks_beyond_the_cluster_and_unwritten_bytes_are_reported() {
    let mem = Memory::new();
    let d = dims([4, 1, 1], [32, 1, 1]);
    let out = output(&mem, ScalarType::U32, 4);
    launch(&mem, &read_rank_kernel(Some((2, 1, 1)), 1, 0), d, &[out]).unwrap();
    let got: Vec<u32> = download(&mem, out);
    assert_eq!(got, [42, POISON, 42, POISON]);
    for (cluster, target) in [(Some((2, 1, 1)), 2), (None, 1)] {
        match launch(&mem, &read_rank_kernel(cluster, target, 0), d, &[out]) {
            Err(e @ EmuError::ClusterMisuse { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&format!("rank {target}")), "{text}");
            }
            other => panic!("{cluster:?}: rank {target} not reported: {other:?}"),
        }
    }
    match launch(&mem, &read_rank_kernel(Some((2, 1, 1)), 1, 1), d, &[out]) {
        Err(EmuError::UninitializedClusterSharedRead {
            owner,
            block,
            address,
            ..
        }) => {
            assert_eq!((owner, block, address), ([1, 0, 0], [0, 0, 0], 4));
        }
        other => panic!("no uninitialized read reported: {other:?}"),
    }
}

/// Thread 0 of rank 0 writes word 0 of its `s`; after a cluster barrier, thread 0 of rank 1
/// reads it (distributed shared memory) while rank 0's thread 0 writes it again, before
/// (`ordered`: after) a second cluster barrier.
fn overwrite_kernel(ordered: bool) -> Kernel {
    let mut k = K::new("cluster_dsmem_overwrite");
    k.b.set_cluster(Some((2, 1, 1)));
    let s = shared(&mut k, "s", ScalarType::U32, 1);
    let tid = k.tid();
    let t0 = eq(&mut k, tid, 0);
    let r = rank(&mut k);
    let r0 = eq(&mut k, r, 0);
    let r1 = eq(&mut k, r, 1);
    let owner = and(&mut k, t0, r0);
    let reader = and(&mut k, t0, r1);
    let zero = k.u32(0);
    k.if_(owner, |k| {
        let v = k.u32(5);
        k.store_shared(s, zero, v);
    });
    cluster_sync(&mut k);
    k.if_(reader, |k| {
        let at = k.shared_addr(s, zero);
        k.b.cluster_load(ScalarType::U32, at, zero).unwrap();
    });
    if ordered {
        cluster_sync(&mut k);
    }
    k.if_(owner, |k| {
        let v = k.u32(6);
        k.store_shared(s, zero, v);
    });
    cluster_sync(&mut k);
    k.finish()
}

#[test]
fn the_owner_overwriting_what_another_block_reads_races_unless_ordered() {
    let mem = Memory::new();
    let d = dims([2, 1, 1], [32, 1, 1]);
    launch(&mem, &overwrite_kernel(true), d, &[]).unwrap();
    assert_dsmem_race(
        launch(&mem, &overwrite_kernel(false), d, &[]),
        RaceKind::ReadWrite,
        "the owner's write after another block's read",
    );
}
