//! The tensor memory accelerator on the emulator, built with the IR builder: tile loads land
//! in the swizzled layout with zero fill at the edges and complete their bytes on an
//! mbarrier; tile stores clip at the edges; and the planted bugs (reading the destination
//! before the wait, a store without `fence.proxy.async`, rewriting a store's source before
//! `wait_group.read`, more bytes expected than arrive, a read the copy's issuer did not
//! know of, across a barrier after the issue or behind a copy that landed first) are
//! reported with their errors.

mod common;

use common::*;
use cuprum_emu::{ArgValue, EmuError, LaunchDims, Memory, launch};
use cuprum_ir::*;

const W: u64 = 45;
const H: u64 = 13;
const BOX_W: u32 = 32;
const BOX_H: u32 = 8;

/// The widest box of f32 a swizzle's rows hold (32 unswizzled).
fn box_w(swizzle: Swizzle) -> u32 {
    swizzle.span_bytes().map_or(BOX_W, |s| s / 4)
}

fn dims() -> LaunchDims {
    LaunchDims {
        grid: [1, 1, 1],
        block: [128, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

/// The map of a `W x H` f32 tensor (rows padded to 48 elements) in boxes of 32 x 8.
fn map(mem: &Memory, swizzle: Swizzle) -> (ArgValue, TensorMapDesc, Vec<f32>) {
    let data: Vec<f32> = (0..48 * H).map(|i| i as f32 * 0.5 + 1.0).collect();
    let arg = upload(mem, &data);
    let ArgValue::Slice { base, .. } = arg else {
        panic!("a slice");
    };
    let mut d = TensorMapDesc::new(ScalarType::F32, 2, base);
    d.dims[..2].copy_from_slice(&[W, H]);
    d.strides[0] = 48 * 4;
    d.box_dims[..2].copy_from_slice(&[box_w(swizzle), BOX_H]);
    d.swizzle = swizzle;
    d.check(None).unwrap();
    (ArgValue::TensorMap(d.encode_emulated()), d, data)
}

/// The kernel's tensor-map parameter and its `out` slice of words.
fn map_and_out(k: &mut K) -> (u32, u32) {
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: ScalarType::F32,
            rank: 2,
        },
    );
    (map, k.slice("out", ScalarType::U32, SliceAccess::Disjoint))
}

/// A shared array of one box's words, aligned for every swizzle.
fn box_tile(k: &mut K, name: &str) -> u32 {
    k.b.shared_array_aligned(
        ArrayDecl {
            name: name.into(),
            elem: ScalarType::U32,
            len: BOX_W * BOX_H,
        },
        1024,
    )
}

/// A shared array of `n` mbarriers.
fn mbarriers(k: &mut K, n: u32) -> u32 {
    k.b.shared_array(ArrayDecl {
        name: "bars".into(),
        elem: ScalarType::U64,
        len: n,
    })
}

/// The calling thread loads the unswizzled box at `(0, 0)` into `dst`, its bytes expected
/// on `mbar`.
fn load_box(k: &mut K, map: u32, dst: Value, mbar: Value) {
    let bytes = k.u32(BOX_W * BOX_H * 4);
    k.b.mbarrier(MbarrierOp::ArriveExpectTx, mbar, Some(bytes))
        .unwrap();
    let c = k.i32(0);
    k.b.tma(TmaOp::LoadTile {
        map: TensorMapRef::Param(map),
        coords: vec![c, c],
        dst,
        mbar,
        multicast: None,
    })
    .unwrap();
}

/// What a kernel that loads one box into one tile starts with.
struct OneBox {
    map: u32,
    out: u32,
    tile: u32,
    tid: Value,
    zero: Value,
    /// Whether this is thread 0.
    is0: Value,
    /// The tile's mbarrier and the tile, as shared addresses.
    mbar: Value,
    dst: Value,
}

/// A kernel named `name` with a map, an `out` slice, a box's tile and one mbarrier, which
/// thread 0 sets up before the block meets.
fn one_box_kernel(name: &str) -> (K, OneBox) {
    let mut k = K::new(name);
    let (map, out) = map_and_out(&mut k);
    let tile = box_tile(&mut k, "tile");
    let bar = mbarriers(&mut k, 1);
    let tid = k.tid();
    let zero = k.u32(0);
    let is0 = k.cmp(CmpOp::Eq, tid, zero);
    let mbar = k.op(Op::SharedAddr(bar));
    let dst = k.op(Op::SharedAddr(tile));
    k.if_(is0, |k| {
        let one = k.u32(1);
        k.b.mbarrier(MbarrierOp::Init, mbar, Some(one)).unwrap();
    });
    k.barrier();
    let parts = OneBox {
        map,
        out,
        tile,
        tid,
        zero,
        is0,
        mbar,
        dst,
    };
    (k, parts)
}

/// Thread 0 loads the box at `(x, y)` (unless `skip_wait`, every thread waits for it), then
/// each thread copies words of the tile's raw shared bytes to `out`.
fn load_kernel(x: i32, y: i32, skip_wait: bool, extra_tx: u32, swizzle: Swizzle) -> Kernel {
    let bw = box_w(swizzle);
    let (mut k, parts) = one_box_kernel("tma_load");
    k.if_(parts.is0, |k| {
        let bytes = k.u32(bw * BOX_H * 4 + extra_tx);
        k.b.mbarrier(MbarrierOp::ArriveExpectTx, parts.mbar, Some(bytes))
            .unwrap();
        let cx = k.i32(x);
        let cy = k.i32(y);
        k.b.tma(TmaOp::LoadTile {
            map: TensorMapRef::Param(parts.map),
            coords: vec![cx, cy],
            dst: parts.dst,
            mbar: parts.mbar,
            multicast: None,
        })
        .unwrap();
    });
    if !skip_wait {
        k.b.mbarrier(MbarrierOp::WaitParity, parts.mbar, Some(parts.zero))
            .unwrap();
    }
    // The box's words, up to two per thread.
    for half in 0..2u32 {
        let off = k.u32(half * 128);
        let i = k.add(parts.tid, off);
        let n = k.u32(bw * BOX_H);
        let inside = k.cmp(CmpOp::Lt, i, n);
        k.if_(inside, |k| {
            let v = k.load_shared(parts.tile, i);
            let i64_ = k.cast(i, ScalarType::U64);
            k.store(parts.out, i64_, v);
        });
    }
    k.finish()
}

/// The raw shared words the box at `(x, y)` leaves under `swizzle`.
fn model(data: &[f32], x: i64, y: i64, swizzle: Swizzle) -> Vec<u32> {
    let bw = box_w(swizzle);
    let mut bytes = vec![0u8; (bw * BOX_H * 4) as usize];
    for r in 0..i64::from(BOX_H) {
        for c in 0..i64::from(bw) {
            let (gx, gy) = (x + c, y + r);
            let v = if (0..W as i64).contains(&gx) && (0..H as i64).contains(&gy) {
                data[(gy * 48 + gx) as usize]
            } else {
                0.0
            };
            let dense = ((r * i64::from(bw) + c) * 4) as u32;
            let at = swizzle.apply(dense) as usize;
            bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn tile_loads_land_swizzled_with_zeros_outside() {
    for swizzle in Swizzle::ALL {
        // Each x a multiple of 16 bytes (4 `f32`s), as the hardware requires.
        for (x, y) in [(0, 0), (16, 8), (-8, -3), (40, 12)] {
            let mem = Memory::new();
            let (arg, _, data) = map(&mem, swizzle);
            let n = (box_w(swizzle) * BOX_H) as usize;
            let out = upload(&mem, &vec![0xDEAD_BEEFu32; n]);
            launch(
                &mem,
                &load_kernel(x, y, false, 0, swizzle),
                dims(),
                &[arg, out],
            )
            .unwrap_or_else(|e| panic!("{swizzle:?} ({x}, {y}): {e}"));
            let got: Vec<u32> = download(&mem, out);
            let want = model(&data, i64::from(x), i64::from(y), swizzle);
            assert_eq!(got, want, "{swizzle:?} at ({x}, {y})");
        }
    }
}

#[test]
fn reading_the_destination_before_the_wait_is_a_race() {
    let mem = Memory::new();
    let (arg, _, _) = map(&mem, Swizzle::None);
    let out = upload(&mem, &vec![0u32; 256]);
    match launch(
        &mem,
        &load_kernel(0, 0, true, 0, Swizzle::None),
        dims(),
        &[arg, out],
    ) {
        Err(e @ EmuError::AsyncProxyRace { .. }) => {
            assert!(e.to_string().contains("mbarrier phase"), "{e}")
        }
        other => panic!("no race reported: {other:?}"),
    }
}

#[test]
fn expecting_more_bytes_than_arrive_deadlocks() {
    let mem = Memory::new();
    let (arg, _, _) = map(&mem, Swizzle::B64);
    let out = upload(&mem, &vec![0u32; 256]);
    match launch(
        &mem,
        &load_kernel(0, 0, false, 16, Swizzle::B64),
        dims(),
        &[arg, out],
    ) {
        Err(e @ EmuError::MbarrierDeadlock { .. }) => {
            assert!(e.to_string().contains("16 transaction bytes"), "{e}")
        }
        other => panic!("no deadlock reported: {other:?}"),
    }
}

/// Every thread writes its slots of a tile (fencing the async proxy unless `fence` is
/// false), then thread 0 stores the box at `(x, y)`, commits, and (unless `rewrite`) waits
/// for the reads before writing the tile again.
fn store_kernel(x: i32, y: i32, fence: bool, rewrite: bool) -> Kernel {
    let mut k = K::new("tma_store");
    let map = k.b.param(
        "map",
        ParamKind::TensorMap {
            elem: ScalarType::F32,
            rank: 2,
        },
    );
    let tile = k.b.shared_array_aligned(
        ArrayDecl {
            name: "tile".into(),
            elem: ScalarType::F32,
            len: BOX_W * BOX_H,
        },
        128,
    );
    let tid = k.tid();
    for half in 0..2u32 {
        let off = k.u32(half * 128);
        let i = k.add(tid, off);
        let f = k.cast(i, ScalarType::F32);
        let neg = k.f32(-7.0);
        let v = k.add(f, neg);
        k.store_shared(tile, i, v);
    }
    if fence {
        k.push(Stmt::FenceProxyAsync {
            space: cuprum_ir::ProxyFenceSpace::SharedCta,
        });
    }
    k.barrier();
    let zero = k.u32(0);
    let is0 = k.cmp(CmpOp::Eq, tid, zero);
    let src = k.op(Op::SharedAddr(tile));
    k.if_(is0, |k| {
        let cx = k.i32(x);
        let cy = k.i32(y);
        k.b.tma(TmaOp::StoreTile {
            map: TensorMapRef::Param(map),
            coords: vec![cx, cy],
            src,
        })
        .unwrap();
        k.b.tma(TmaOp::Commit).unwrap();
        if !rewrite {
            k.b.tma(TmaOp::WaitGroup {
                pending: 0,
                read: true,
            })
            .unwrap();
        }
        let z = k.u32(0);
        let v = k.f32(0.0);
        k.store_shared(tile, z, v);
        k.b.tma(TmaOp::WaitGroup {
            pending: 0,
            read: false,
        })
        .unwrap();
    });
    k.finish()
}

#[test]
fn tile_stores_clip_at_the_edges() {
    for (x, y) in [(0, 0), (16, 8), (-8, -2)] {
        let mem = Memory::new();
        let (arg, desc, data) = map(&mem, Swizzle::None);
        let tensor = ArgValue::Slice {
            base: desc.address,
            len: data.len() as u64,
        };
        launch(&mem, &store_kernel(x, y, true, false), dims(), &[arg])
            .unwrap_or_else(|e| panic!("({x}, {y}): {e}"));
        let got: Vec<f32> = download(&mem, tensor);
        let mut want = data.clone();
        for r in 0..i64::from(BOX_H) {
            for c in 0..i64::from(BOX_W) {
                let (gx, gy) = (i64::from(x) + c, i64::from(y) + r);
                // A store writes each row's last 16-byte chunk whole (columns 45..47 too).
                let stored_cols = W.next_multiple_of(4) as i64;
                if (0..stored_cols).contains(&gx) && (0..H as i64).contains(&gy) {
                    want[(gy * 48 + gx) as usize] = (r * i64::from(BOX_W) + c) as f32 - 7.0;
                }
            }
        }
        assert_eq!(got, want, "store at ({x}, {y})");
    }
}

#[test]
fn a_store_without_a_proxy_fence_is_reported() {
    let mem = Memory::new();
    let (arg, _, _) = map(&mem, Swizzle::None);
    match launch(&mem, &store_kernel(0, 0, false, false), dims(), &[arg]) {
        Err(e @ EmuError::MissingProxyFence { .. }) => {
            assert!(e.to_string().contains("fence_proxy_async"), "{e}")
        }
        other => panic!("no missing fence reported: {other:?}"),
    }
}

#[test]
fn rewriting_a_store_source_before_the_read_wait_is_a_race() {
    let mem = Memory::new();
    let (arg, _, _) = map(&mem, Swizzle::None);
    match launch(&mem, &store_kernel(0, 0, true, true), dims(), &[arg]) {
        Err(e @ EmuError::AsyncProxyRace { .. }) => {
            assert!(e.to_string().contains("wait_group_read"), "{e}")
        }
        other => panic!("no race reported: {other:?}"),
    }
}

/// Thread 1 reads word 0 of the tile (after everyone wrote it), thread 0 (another thread of
/// its warp: lanes are not ordered by the warp's program order) loads a box into the tile,
/// the block meets, and everyone waits for the box: the barrier comes after the issue, so it
/// does not order the read before the copy, which may write any time after it is issued.
/// With `met_before_issue` the block also meets between the read and the issue.
fn read_then_load_kernel(met_before_issue: bool) -> Kernel {
    let (mut k, parts) = one_box_kernel("read_then_load");
    // Every thread writes two words of the tile, then the block meets.
    for half in 0..2u32 {
        let off = k.u32(half * 128);
        let i = k.add(parts.tid, off);
        k.store_shared(parts.tile, i, i);
    }
    k.barrier();
    let one = k.u32(1);
    let is1 = k.cmp(CmpOp::Eq, parts.tid, one);
    k.if_(is1, |k| {
        let v = k.load_shared(parts.tile, parts.zero);
        let at = k.cast(parts.tid, ScalarType::U64);
        k.store(parts.out, at, v);
    });
    if met_before_issue {
        k.barrier();
    }
    k.if_(parts.is0, |k| load_box(k, parts.map, parts.dst, parts.mbar));
    k.barrier();
    k.b.mbarrier(MbarrierOp::WaitParity, parts.mbar, Some(parts.zero))
        .unwrap();
    k.finish()
}

#[test]
fn a_barrier_after_the_issue_does_not_order_an_earlier_read_before_the_copy() {
    let mem = Memory::new();
    let (arg, _, _) = map(&mem, Swizzle::None);
    let out = upload(&mem, &vec![0u32; 256]);
    match launch(&mem, &read_then_load_kernel(false), dims(), &[arg, out]) {
        Err(e @ EmuError::AsyncProxyRace { .. }) => {
            assert!(e.to_string().contains("thread [1, 0, 0]"), "{e}")
        }
        other => panic!("no race reported: {other:?}"),
    }
    // Met between the read and the issue: ordered.
    launch(&mem, &read_then_load_kernel(true), dims(), &[arg, out])
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Thread 1 reads word 0 of tile `a` and then loads a box into tile `b`; thread 0 (unordered
/// with thread 1: lanes of one warp) loads a box into `a`. Everyone waits for `b`'s box,
/// then for `a`'s: `a`'s copy follows what thread 0 knew when it issued it, not what
/// `b`'s issuer knew, although `b`'s landed first.
fn two_loads_kernel() -> Kernel {
    let mut k = K::new("two_loads");
    let (map, out) = map_and_out(&mut k);
    let tiles = [box_tile(&mut k, "a"), box_tile(&mut k, "b")];
    let bars = mbarriers(&mut k, 2);
    let tid = k.tid();
    let zero = k.u32(0);
    let one = k.u32(1);
    let is0 = k.cmp(CmpOp::Eq, tid, zero);
    let is1 = k.cmp(CmpOp::Eq, tid, one);
    let base = k.op(Op::SharedAddr(bars));
    let eight = k.u32(8);
    let mbar_b = k.add(base, eight);
    for half in 0..2u32 {
        let off = k.u32(half * 128);
        let i = k.add(tid, off);
        k.store_shared(tiles[0], i, i);
    }
    k.if_(is0, |k| {
        for m in [base, mbar_b] {
            k.b.mbarrier(MbarrierOp::Init, m, Some(one)).unwrap();
        }
    });
    k.barrier();
    let load = |k: &mut K, tile: u32, mbar: Value| {
        let dst = k.op(Op::SharedAddr(tile));
        load_box(k, map, dst, mbar);
    };
    k.if_(is1, |k| {
        let v = k.load_shared(tiles[0], zero);
        let at = k.cast(tid, ScalarType::U64);
        k.store(out, at, v);
        load(k, tiles[1], mbar_b);
    });
    k.if_(is0, |k| load(k, tiles[0], base));
    for m in [mbar_b, base] {
        k.b.mbarrier(MbarrierOp::WaitParity, m, Some(zero)).unwrap();
    }
    k.finish()
}

#[test]
fn a_copy_follows_its_own_issuers_knowledge_not_an_earlier_landed_ones() {
    let mem = Memory::new();
    let (arg, _, _) = map(&mem, Swizzle::None);
    let out = upload(&mem, &vec![0u32; 256]);
    match launch(&mem, &two_loads_kernel(), dims(), &[arg, out]) {
        Err(e @ EmuError::AsyncProxyRace { .. }) => {
            assert!(e.to_string().contains("thread [1, 0, 0]"), "{e}")
        }
        other => panic!("no race reported: {other:?}"),
    }
}
