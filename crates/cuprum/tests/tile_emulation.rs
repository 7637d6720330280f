//! How the emulator runs tile launches (`CUPRUM_TILE_EMULATION`, unset here: `auto`): a
//! launch whose tensors are small runs the lowered kernel, one with a tensor of more than
//! 2^20 elements runs in the tile interpreter (recorded into a graph, each replay interprets
//! it again); either way every element is what plain Rust computes (outputs poisoned first).
//! A GEMM in cuTile Rust's `gemm` shape with 16x16x8 tiles at a ragged size checks the
//! interpreter's K loops bit for bit against the chain of `mul_add`s `mma` of `f32` is
//! defined as. On a GPU the same launches run there and the interpreter is never used.

use cuprum::BackendKind;
use cuprum::tile::__private::interpreted_launches;
use cuprum::tile::cuda_async::cuda_graph::CudaGraph;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_bits_eq, assert_same, ok};
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        z.store(load_tile_like(x, z) + load_tile_like(y, z));
    }

    #[cuprum::tile::entry()]
    fn gemm<const BM: i32, const BN: i32, const BK: i32>(
        z: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
        y: &Tensor<f32, { [-1, -1] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        let pid: (i32, i32, i32) = get_tile_block_id();
        let k: i32 = x.shape()[1];
        let mut tile_z = load_tile_mut(z);
        for i in 0i32..(k / BK) {
            tile_z = mma(part_x.load([pid.0, i]), part_y.load([i, pid.1]), tile_z);
        }
        z.store(tile_z);
    }

    /// Each tile filled with `1000 * block + visit`: who wrote it, and when.
    #[cuprum::tile::entry()]
    fn visits<const B0: i32, const B1: i32, const MAP: [i32; 2]>(
        mut z: MappedPartitionMut<i32, { [B0, B1] }, MAP>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let mut visit = 0i32;
        for idx in z.iter_indices() {
            z.store(constant(pid.0 * 1000i32 + visit, const_shape![B0, B1]), idx);
            visit = visit + 1i32;
        }
    }
}

const POISON: f32 = f32::from_bits(0x7FC0_DEAD);

/// The stream and whether its device is the emulator.
fn stream() -> (Stream, bool) {
    let device = ok(Device::new(0));
    let emulated = device.context().backend() == BackendKind::Emulator;
    (device.default_stream(), emulated)
}

/// `z = x + y` on `n` elements, and whether the launch ran in the interpreter.
fn add(n: usize, seed: &str) -> bool {
    let (stream, _) = stream();
    let mut r = rng(seed);
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let hy: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x = ok(api::from_host(&hx, &[n]).sync_on(&stream));
    let y = ok(api::from_host(&hy, &[n]).sync_on(&stream));
    let mut z = ok(api::full(POISON, &[n]).sync_on(&stream));
    let before = interpreted_launches();
    ok(kernels::add((&mut z).partition([1024]), &x, &y).sync_on(&stream));
    let interpreted = interpreted_launches() > before;
    let got = ok(z.to_host_vec().sync_on(&stream));
    let want: Vec<f32> = hx.iter().zip(&hy).map(|(a, b)| a + b).collect();
    assert_bits_eq(&format!("add of {n}"), &got, &want);
    interpreted
}

/// Whether `CUPRUM_TILE_EMULATION` asks for something other than `auto` (the routes are
/// then that setting's; the results are checked all the same).
fn forced() -> bool {
    std::env::var("CUPRUM_TILE_EMULATION").is_ok_and(|v| !matches!(v.trim(), "" | "auto"))
}

#[test]
fn small_launches_run_the_lowered_kernel_large_ones_the_interpreter() {
    let (_, emulated) = stream();
    let small = add(1000, "emulation_small");
    let large = add((1 << 20) + 5, "emulation_large");
    if !forced() {
        assert!(!small, "1000 elements: the lowered kernel");
        assert_eq!(
            large, emulated,
            "2^20 + 5 elements: the interpreter on the emulator, never on a GPU"
        );
    }
}

#[test]
fn a_large_gemm_in_small_tiles_is_its_chain_of_fmas() {
    let (stream, emulated) = stream();
    // x has 1100 * 1040 elements (past 2^20); 1100 rows are 68 tiles of 16 and 12 more.
    let (m, n, k) = (1100usize, 32usize, 1040usize);
    let mut r = rng("emulation_gemm");
    let hx: Vec<f32> = random(&mut r, m * k, -2.0, 2.0);
    let hy: Vec<f32> = random(&mut r, k * n, -2.0, 2.0);
    let hz: Vec<f32> = random(&mut r, m * n, -8.0, 8.0);
    let x = ok(api::from_host(&hx, &[m, k]).sync_on(&stream));
    let y = ok(api::from_host(&hy, &[k, n]).sync_on(&stream));
    let mut z = ok(api::from_host(&hz, &[m, n]).sync_on(&stream));
    let before = interpreted_launches();
    ok(kernels::gemm((&mut z).partition([16, 16]), &x, &y)
        .generics(["16", "16", "8"])
        .sync_on(&stream));
    if !forced() {
        assert_eq!(interpreted_launches() > before, emulated);
    }
    let got = ok(z.to_host_vec().sync_on(&stream));
    let mut want = hz.clone();
    for i in 0..m {
        for j in 0..n {
            let mut d = hz[i * n + j];
            for kk in 0..k {
                d = hx[i * k + kk].mul_add(hy[kk * n + j], d);
            }
            want[i * n + j] = d;
        }
    }
    assert_bits_eq("gemm 1100x32x1040 in 16x16x8 tiles", &got, &want);
}

#[test]
fn a_graph_replays_an_interpreted_launch_on_what_memory_then_holds() {
    let device = ok(Device::new(0));
    let emulated = device.context().backend() == BackendKind::Emulator;
    let stream = ok(device.new_stream());
    let n = (1 << 20) + 77;
    let x = ok(api::full(0.0f32, &[n]).sync_on(&stream));
    let y = ok(api::full(0.0f32, &[n]).sync_on(&stream));
    let mut z = ok(api::full(POISON, &[n]).sync_on(&stream));
    let before = interpreted_launches();
    let graph = ok(CudaGraph::scope(&stream, |s| {
        s.record(kernels::add((&mut z).partition([1024]), &x, &y))?;
        Ok(())
    }));
    assert_eq!(interpreted_launches() > before, emulated && !forced());
    // Recorded, not run.
    assert_bits_eq(
        "before a replay",
        &ok(z.dup().to_host_vec().sync_on(&stream)),
        &vec![POISON; n],
    );
    let mut r = rng("emulation_graph");
    let (mut x, mut y) = (x, y);
    for replay in 0..2 {
        let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
        let hy: Vec<f32> = random(&mut r, n, -100.0, 100.0);
        ok(api::memcpy(&mut x, &ok(api::from_host(&hx, &[n]).sync_on(&stream))).sync_on(&stream));
        ok(api::memcpy(&mut y, &ok(api::from_host(&hy, &[n]).sync_on(&stream))).sync_on(&stream));
        ok(graph.launch().sync_on(graph.stream()));
        let want: Vec<f32> = hx.iter().zip(&hy).map(|(a, b)| a + b).collect();
        assert_bits_eq(
            &format!("replay {replay}"),
            &ok(z.dup().to_host_vec().sync_on(&stream)),
            &want,
        );
    }
}

#[test]
fn a_large_mapped_output_is_written_by_the_schedule() {
    let (stream, emulated) = stream();
    // 1100 x 1000 elements (past 2^20) in 64x64 tiles: 18 x 16 tiles, 7 persistent blocks
    // visiting them in bands of 3 rows (`cuprum_tile_ir::grid::mapped_tile`'s schedule).
    let (rows, cols, b0, b1, group, blocks) = (1100usize, 1000usize, 64usize, 64usize, 3, 7u32);
    let (m, n) = (rows.div_ceil(b0), cols.div_ceil(b1));
    let z = ok(api::full(-1i32, &[rows, cols]).sync_on(&stream))
        .partition([b0, b1])
        .map([group, 1], blocks);
    let before = interpreted_launches();
    let (z,) = ok(kernels::visits(z)
        .generics(["64", "64", "3", "1"])
        .sync_on(&stream));
    if !forced() {
        assert_eq!(interpreted_launches() > before, emulated);
    }
    let got = ok(z.unpartition().to_host_vec().sync_on(&stream));
    let mut want = vec![-1i32; rows * cols];
    for t in 0..m * n {
        // Tile `t` of the schedule: bands of `group` rows, column by column within a band.
        let band = t / (group * n);
        let first = band * group;
        let band_rows = group.min(m - first);
        let within = t % (group * n);
        let (tm, tn) = (first + within % band_rows, within / band_rows);
        let (block, visit) = (t % blocks as usize, t / blocks as usize);
        for i in tm * b0..((tm + 1) * b0).min(rows) {
            for j in tn * b1..((tn + 1) * b1).min(cols) {
                want[i * cols + j] = (block * 1000 + visit) as i32;
            }
        }
    }
    assert_same("visits of a mapped output", &got, &want);
}
