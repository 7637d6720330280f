//! Divisions and remainders by constants in SIMT kernels (which the optimizer turns into
//! multiply-highs and shifts, as nvcc does): every quotient and remainder equals Rust's, for
//! each integer type, on dividends over the whole range and near its ends, and for index
//! arithmetic (`i / 12`, `i % 12` on the thread index). The divisions are plain helper
//! functions that the host runs as the reference.

mod common;

use common::assert_same;
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};
use cuprum_testkit::random::rng;
use rand::Rng;

#[cuda_module]
mod kernels {
    use super::*;

    // The divisions, as plain Rust the host runs too: Rust's own `/` and `%` are the
    // reference for what the kernels compute with them.

    pub fn unsigned32_quotients(v: u32) -> [u32; 8] {
        [
            v / 3,
            v / 7,
            v % 10,
            v / 641,
            v % 16,
            v / 0x8000_0001,
            v % 1000,
            v / 24,
        ]
    }

    pub fn signed32_quotients(v: i32) -> [i32; 8] {
        [
            v / 3,
            v / -7,
            v % 10,
            v / 16,
            v % -16,
            v / i32::MIN,
            v % 1000,
            v / 0x4000_0001,
        ]
    }

    pub fn unsigned64_quotients(v: u64) -> [u64; 6] {
        [v / 3, v / 7, v % 1000, v / 64, v % 6700417, v / u64::MAX]
    }

    pub fn signed64_quotients(v: i64) -> [i64; 6] {
        [v / 3, v % -7, v / 1000, v / -64, v % 6700417, v / 10]
    }

    pub fn narrow_quotients(v: i16, w: u8) -> [i32; 6] {
        [
            (v / 3) as i32,
            (v % -100) as i32,
            (v / 1024) as i32,
            (w / 10) as i32,
            (w % 7) as i32,
            (w / 200) as i32,
        ]
    }

    pub fn index_row(k: usize) -> [u32; 2] {
        [(k / 12) as u32, (k % 12) as u32]
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn unsigned32(x: &[u32], mut q: DisjointSlice<[u32; 8]>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            *o = unsigned32_quotients(x[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn signed32(x: &[i32], mut q: DisjointSlice<[i32; 8]>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            *o = signed32_quotients(x[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn unsigned64(x: &[u64], mut q: DisjointSlice<[u64; 6]>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            *o = unsigned64_quotients(x[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn signed64(x: &[i64], mut q: DisjointSlice<[i64; 6]>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            *o = signed64_quotients(x[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn narrow(x: &[i16], y: &[u8], mut q: DisjointSlice<[i32; 6]>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            *o = narrow_quotients(x[i.get()], y[i.get()]);
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn index_rows(mut q: DisjointSlice<[u32; 2]>) {
        let i = thread::index_1d();
        if let Some(o) = q.get_mut(i) {
            *o = index_row(i.get());
        }
    }
}

/// `n` values from `draw`, the first few replaced by `edges` (the type's extremes).
fn with_edges<T: Copy>(n: usize, edges: &[T], mut draw: impl FnMut() -> T) -> Vec<T> {
    let mut v: Vec<T> = (0..n).map(|_| draw()).collect();
    for (slot, e) in v.iter_mut().zip(edges) {
        *slot = *e;
    }
    v
}

#[test]
fn constant_divisions_match_rust_for_every_type() -> cuprum::Result<()> {
    let ctx = common::ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("constant_divisions_match_rust_for_every_type");
    let n: usize = 5000;
    let config = LaunchConfig1D::new(n.div_ceil(128) as u32, 128, 0);

    // Whole-range values, and values shifted toward zero (small magnitudes).
    let mut u32s = || {
        let v: u32 = rng.random();
        v >> rng.random_range(0..32)
    };
    let x = with_edges(
        n,
        &[0, 1, 2, u32::MAX, u32::MAX - 1, 1 << 31, 0x8000_0001],
        &mut u32s,
    );
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut q = DeviceBuffer::from_host(&stream, &vec![[0xDEAD_BEEFu32; 8]; n])?;
    m.unsigned32(&stream, &m.prepare_unsigned32(config)?, &dx, &mut q)?;
    let want: Vec<[u32; 8]> = x
        .iter()
        .map(|&v| kernels::unsigned32_quotients(v))
        .collect();
    assert_same("u32", &q.to_host_vec(&stream)?, &want);

    let mut i32s = || {
        let v: i32 = rng.random();
        v >> rng.random_range(0..32)
    };
    let x = with_edges(
        n,
        &[0, -1, 1, i32::MIN, i32::MIN + 1, i32::MAX, -7, 7],
        &mut i32s,
    );
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut q = DeviceBuffer::from_host(&stream, &vec![[0x5EAD_BEEF_i32; 8]; n])?;
    m.signed32(&stream, &m.prepare_signed32(config)?, &dx, &mut q)?;
    let want: Vec<[i32; 8]> = x.iter().map(|&v| kernels::signed32_quotients(v)).collect();
    assert_same("i32", &q.to_host_vec(&stream)?, &want);

    let mut u64s = || {
        let v: u64 = rng.random();
        v >> rng.random_range(0..64)
    };
    let x = with_edges(
        n,
        &[0, 1, u64::MAX, u64::MAX - 1, 1 << 63, 6700416],
        &mut u64s,
    );
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut q = DeviceBuffer::from_host(&stream, &vec![[0xDEAD_BEEF_DEAD_BEEFu64; 6]; n])?;
    m.unsigned64(&stream, &m.prepare_unsigned64(config)?, &dx, &mut q)?;
    let want: Vec<[u64; 6]> = x
        .iter()
        .map(|&v| kernels::unsigned64_quotients(v))
        .collect();
    assert_same("u64", &q.to_host_vec(&stream)?, &want);

    let mut i64s = || {
        let v: i64 = rng.random();
        v >> rng.random_range(0..64)
    };
    let x = with_edges(
        n,
        &[0, -1, i64::MIN, i64::MIN + 1, i64::MAX, -64, 63],
        &mut i64s,
    );
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut q = DeviceBuffer::from_host(&stream, &vec![[0x5EAD_BEEF_i64; 6]; n])?;
    m.signed64(&stream, &m.prepare_signed64(config)?, &dx, &mut q)?;
    let want: Vec<[i64; 6]> = x.iter().map(|&v| kernels::signed64_quotients(v)).collect();
    assert_same("i64", &q.to_host_vec(&stream)?, &want);

    let x: Vec<i16> = with_edges(n, &[i16::MIN, i16::MAX, -1, 0], || rng.random());
    let y: Vec<u8> = with_edges(n, &[0, 255, 199, 200], || rng.random());
    let (dx, dy) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &y)?,
    );
    let mut q = DeviceBuffer::from_host(&stream, &vec![[0x5EAD_BEEF_i32; 6]; n])?;
    m.narrow(&stream, &m.prepare_narrow(config)?, &dx, &dy, &mut q)?;
    let want: Vec<[i32; 6]> = x
        .iter()
        .zip(&y)
        .map(|(&v, &w)| kernels::narrow_quotients(v, w))
        .collect();
    assert_same("i16 and u8", &q.to_host_vec(&stream)?, &want);

    let mut q = DeviceBuffer::from_host(&stream, &vec![[0xDEAD_BEEFu32; 2]; n])?;
    m.index_rows(&stream, &m.prepare_index_rows(config)?, &mut q)?;
    let want: Vec<[u32; 2]> = (0..n).map(kernels::index_row).collect();
    assert_same("index rows", &q.to_host_vec(&stream)?, &want);
    Ok(())
}
