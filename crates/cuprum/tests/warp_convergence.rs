//! Warp operations after and inside divergent control flow act on exactly the lanes the IR
//! says: those that execute them together. The GPU does not reconverge lanes by itself, so the
//! PTX writer gives these operations exact member masks (`cuprum-ptx`'s `control`); before it
//! did, a butterfly reduction inside a loop that followed a divergent loop read other lanes as
//! if they were absent on an H200 (found by the differential fuzzer, seed 5017). Each kernel
//! here is checked against a plain-Rust model of the lanes' schedule on random data.

mod common;

use common::{assert_same, ctx, random_i32, random_u32};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread, warp};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

const BLOCK: u32 = 128;
const BLOCKS: u32 = 6;

#[cuda_module]
mod kernels {
    use super::*;

    /// A divergent loop, then a uniform loop of full-warp butterfly sums.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn sums_after_divergent_loop(x: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let v = x[i.get()];
        let mut spins = 0u32;
        while spins < v % 7 {
            spins += 1;
        }
        let mut acc = spins;
        let mut r = 0u32;
        while r < 3 {
            let mut s = v.wrapping_add(r);
            s = s.wrapping_add(warp::shuffle_xor(s, 16));
            s = s.wrapping_add(warp::shuffle_xor(s, 8));
            s = s.wrapping_add(warp::shuffle_xor(s, 4));
            s = s.wrapping_add(warp::shuffle_xor(s, 2));
            s = s.wrapping_add(warp::shuffle_xor(s, 1));
            acc = acc.wrapping_mul(31).wrapping_add(s);
            r += 1;
        }
        if let Some(o) = out.get_mut(i) {
            *o = acc;
        }
    }

    /// Ballots of the lanes still in a loop that lanes leave at different iterations, some
    /// skipping iterations with `continue`; a full-warp sum after it.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn ballots_while_lanes_leave(x: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let stay = x[i.get()] % 9;
        let even = thread::lane_id() % 2 == 0;
        let mut k = 0u32;
        let mut h = 0u32;
        loop {
            if k == stay {
                break;
            }
            if k % 3 == 1 && even {
                k += 1;
                continue;
            }
            let b = warp::ballot(true);
            h = h.wrapping_mul(0x9E37_79B9) ^ b;
            k += 1;
        }
        let total = warp::reduce_add(k);
        if let Some(o) = out.get_mut(i) {
            *o = h ^ total.wrapping_mul(0x0101_0101);
        }
    }

    /// Votes in both arms of nested branches, after a divergent loop.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn votes_in_branches(x: &[i32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let v = x[i.get()];
        let lane = thread::lane_id();
        let mut spins = 0u32;
        while spins < (v as u32) % 5 {
            spins += 1;
        }
        let mut r = spins;
        if lane < 20 {
            r ^= warp::ballot(v > 0);
            if v % 3 == 0 {
                r ^= warp::ballot(true) << 1;
            } else {
                r = r.wrapping_add(warp::any(v > 1 << 30) as u32);
            }
        } else {
            r ^= warp::ballot(v < 0) ^ 0xF000_0000;
        }
        if let Some(o) = out.get_mut(i) {
            *o = r;
        }
    }
}

/// The lanes of each warp of `x`, 32 at a time.
fn warps<T: Copy>(x: &[T]) -> impl Iterator<Item = &[T]> {
    x.chunks(32)
}

/// The mask of the lanes `l` of a warp for which `f(l)` holds.
fn mask(f: impl Fn(usize) -> bool) -> u32 {
    (0..32).filter(|&l| f(l)).fold(0, |m, l| m | 1 << l)
}

fn launch() -> LaunchConfig1D {
    LaunchConfig1D::new(BLOCKS, BLOCK, 0)
}

#[test]
fn full_warp_sums_after_a_divergent_loop() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), (BLOCK * BLOCKS) as usize);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu32; n])?;
    let prepared = m.prepare_sums_after_divergent_loop(launch())?;
    m.sums_after_divergent_loop(&stream, &prepared, &dx, &mut out)?;
    let want: Vec<u32> = warps(&x)
        .flat_map(|lanes| {
            lanes.iter().map(move |&v| {
                (0..3u32).fold(v % 7, |acc, r| {
                    let s = lanes
                        .iter()
                        .fold(0u32, |s, &w| s.wrapping_add(w.wrapping_add(r)));
                    acc.wrapping_mul(31).wrapping_add(s)
                })
            })
        })
        .collect();
    assert_same("sums", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn ballots_see_exactly_the_lanes_still_in_the_loop() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), (BLOCK * BLOCKS) as usize);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu32; n])?;
    let prepared = m.prepare_ballots_while_lanes_leave(launch())?;
    m.ballots_while_lanes_leave(&stream, &prepared, &dx, &mut out)?;
    let want: Vec<u32> = warps(&x)
        .flat_map(|lanes| {
            let stay: Vec<u32> = lanes.iter().map(|v| v % 9).collect();
            let skips = |k: u32, l: usize| k % 3 == 1 && l.is_multiple_of(2);
            let total = stay.iter().fold(0u32, |t, &s| t.wrapping_add(s));
            (0..32).map(move |l| {
                let h = (0..stay[l]).filter(|&k| !skips(k, l)).fold(0u32, |h, k| {
                    let b = mask(|o| stay[o] > k && !skips(k, o));
                    h.wrapping_mul(0x9E37_79B9) ^ b
                });
                h ^ total.wrapping_mul(0x0101_0101)
            })
        })
        .collect();
    assert_same("ballots", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn votes_in_nested_branches_after_a_divergent_loop() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), (BLOCK * BLOCKS) as usize);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_i32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu32; n])?;
    let prepared = m.prepare_votes_in_branches(launch())?;
    m.votes_in_branches(&stream, &prepared, &dx, &mut out)?;
    let want: Vec<u32> = warps(&x)
        .flat_map(|v| {
            (0..32).map(move |l| {
                let r = (v[l] as u32) % 5;
                if l < 20 {
                    let r = r ^ mask(|o| o < 20 && v[o] > 0);
                    if v[l] % 3 == 0 {
                        r ^ mask(|o| o < 20 && v[o] % 3 == 0) << 1
                    } else {
                        let any = (0..20).any(|o| v[o] % 3 != 0 && v[o] > 1 << 30);
                        r.wrapping_add(any as u32)
                    }
                } else {
                    r ^ mask(|o| o >= 20 && v[o] < 0) ^ 0xF000_0000
                }
            })
        })
        .collect();
    assert_same("votes", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
