//! Mapped partitions (`partition(..).map(map_shape, blocks)` on the host,
//! `MappedPartitionMut` and `for idx in z.iter_indices()` in the kernel) end to end on the
//! backend `CUPRUM_DEVICE` selects: a persistent `f32` GEMM bit for bit against plain Rust's
//! chain of `mul_add`s at ragged sizes, for fewer blocks than tiles and as many; which block
//! writes which tile, in which order, against the schedule written out here; outputs
//! poisoned first, every element checked. And the refusals before anything runs: a map of
//! the wrong rank, one that groups along another axis, no blocks or more blocks than tiles.
//! (A mapped output cannot also be an input: `partition` takes the tensor, as for any
//! output.) The three-way comparison with the tile interpreter is `cuprum-tile-fuzz`'s
//! `tests/ops.rs`.

use cuprum::tile::error::LaunchProblem;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::assert_same;
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn gemm<const BM: i32, const BN: i32, const BK: i32, const MAP: [i32; 2]>(
        mut z: MappedPartitionMut<f32, { [BM, BN] }, MAP>,
        x: &Tensor<f32, { [-1, -1] }>,
        y: &Tensor<f32, { [-1, -1] }>,
    ) {
        let part_x = x.partition(const_shape![BM, BK]);
        let part_y = y.partition(const_shape![BK, BN]);
        for idx in z.iter_indices() {
            let (m, n) = idx.components();
            let mut acc: Tile<f32, { [BM, BN] }> = constant(0.0f32, const_shape![BM, BN]);
            for k in 0i32..num_tiles(&part_x, 1) {
                acc = mma(part_x.load([m, k]), part_y.load([k, n]), acc);
            }
            z.store(acc, idx);
        }
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

const POISON: f32 = -7.25e30;

fn stream() -> Arc<Stream> {
    Device::new(0)
        .and_then(|d| d.new_stream())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The tile coordinates of tile `t` of `m x n` tiles in bands of `g` rows, column by
/// column within a band (the schedule `cuprum_tile_ir::grid::mapped_tile` defines).
fn scheduled(t: usize, m: usize, n: usize, g: usize) -> (usize, usize) {
    let band = t / (g * n);
    let first = band * g;
    let rows = g.min(m - first);
    let within = t % (g * n);
    (first + within % rows, within / rows)
}

#[test]
fn a_persistent_gemm_is_exact_for_any_number_of_blocks() -> Result<(), Error> {
    let s = stream();
    let mut r = rng("a_persistent_gemm_is_exact_for_any_number_of_blocks");
    let (m, n, k) = (50usize, 37usize, 29usize);
    let (bm, bn, bk) = (16usize, 16usize, 8usize);
    let xs: Vec<f32> = random(&mut r, m * k, -2.0, 2.0);
    let ys: Vec<f32> = random(&mut r, k * n, -2.0, 2.0);
    let mut want = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for q in 0..k {
                acc = xs[i * k + q].mul_add(ys[q * n + j], acc);
            }
            want[i * n + j] = acc;
        }
    }
    let tiles = m.div_ceil(bm) * n.div_ceil(bn);
    for (group, blocks) in [(2usize, 5u32), (1, 1), (4, tiles as u32)] {
        let z = api::full(POISON, &[m, n])
            .sync_on(&s)?
            .partition([bm, bn])
            .map([group, 1], blocks);
        let x = api::from_host(&xs, &[m, k]).sync_on(&s)?;
        let y = api::from_host(&ys, &[k, n]).sync_on(&s)?;
        let generics: Vec<String> = [bm, bn, bk, group, 1]
            .iter()
            .map(|v| v.to_string())
            .collect();
        let (z, _, _) = kernels::gemm(z, x, y).generics(generics).sync_on(&s)?;
        let got = z.unpartition().to_host_vec().sync_on(&s)?;
        assert_same(
            &format!("gemm, map [{group}, 1], {blocks} blocks"),
            &got,
            &want,
        );
    }
    Ok(())
}

#[test]
fn each_tile_is_written_once_by_the_block_the_schedule_gives_it() -> Result<(), Error> {
    let s = stream();
    let (rows, cols, b0, b1) = (23usize, 20usize, 4usize, 6usize);
    let (m, n) = (rows.div_ceil(b0), cols.div_ceil(b1));
    for (group, blocks) in [(3usize, 4u32), (2, 7), (1, (m * n) as u32)] {
        let z = api::full(-1i32, &[rows, cols])
            .sync_on(&s)?
            .partition([b0, b1])
            .map([group, 1], blocks);
        let generics: Vec<String> = [b0, b1, group, 1].iter().map(|v| v.to_string()).collect();
        let (z,) = kernels::visits(z).generics(generics).sync_on(&s)?;
        let got = z.unpartition().to_host_vec().sync_on(&s)?;
        let mut want = vec![-1i32; rows * cols];
        for t in 0..m * n {
            let (tm, tn) = scheduled(t, m, n, group);
            let (block, visit) = (t % blocks as usize, t / blocks as usize);
            for i in tm * b0..((tm + 1) * b0).min(rows) {
                for j in tn * b1..((tn + 1) * b1).min(cols) {
                    want[i * cols + j] = (block * 1000 + visit) as i32;
                }
            }
        }
        assert_same(
            &format!("visits, map [{group}, 1], {blocks} blocks"),
            &got,
            &want,
        );
    }
    Ok(())
}

#[test]
fn maps_that_do_not_fit_are_refused_before_anything_runs() -> Result<(), Error> {
    let s = stream();
    let launch = |map: Vec<usize>, blocks: u32| -> LaunchProblem {
        let z = api::full(-1i32, &[8, 8])
            .sync_on(&s)
            .unwrap_or_else(|e| panic!("{e}"))
            .partition([4, 4]);
        let z = match map.as_slice() {
            [a] => z.map([*a], blocks),
            [a, b] => z.map([*a, *b], blocks),
            _ => z.map([1, 1, 1], blocks),
        };
        let mut generics = vec!["4".to_string(), "4".to_string()];
        generics.extend(map.iter().map(|v| v.to_string()));
        while generics.len() < 4 {
            generics.push("1".into());
        }
        generics.truncate(4);
        match kernels::visits(z).generics(generics).sync_on(&s) {
            Err(Error::InvalidLaunch { problem, .. }) => problem,
            Err(other) => panic!("expected a refused launch, got {other}"),
            Ok(_) => panic!("map {map:?} with {blocks} blocks was launched"),
        }
    };
    for (map, blocks, says) in [
        (vec![2], 2, "rank 1"),
        (vec![1, 2], 2, "only the second-to-last"),
        (vec![2, 1], 0, "0 tile blocks"),
        (vec![2, 1], 5, "5 tile blocks for 4 tiles"),
    ] {
        match launch(map.clone(), blocks) {
            LaunchProblem::BadMap { param, reason } => {
                assert_eq!(param, "z");
                assert!(reason.contains(says), "{map:?}, {blocks}: {reason}");
            }
            other => panic!("{map:?}, {blocks}: unexpected refusal: {other}"),
        }
    }
    Ok(())
}
