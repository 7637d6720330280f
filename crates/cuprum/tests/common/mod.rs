//! Shared helpers of the facade's tests: one context per test binary, random data, and
//! element-by-element comparison with messages that show where a result went wrong.

#![allow(dead_code)]

use std::sync::OnceLock;

use cuprum::CudaContext;
use rand::Rng;

/// The context every test of a binary shares: the backend `CUPRUM_DEVICE` selects.
pub fn ctx() -> &'static CudaContext {
    static CTX: OnceLock<CudaContext> = OnceLock::new();
    CTX.get_or_init(|| match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => panic!("no context for the tests: {e}"),
    })
}

/// The sizes every element-wise kernel is tested at: tiny, not a multiple of anything, and
/// larger than one wave of blocks.
pub const SIZES: [usize; 4] = [1, 255, 1000, (1 << 20) + 3];

pub fn random_f32(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-100.0f32..100.0)).collect()
}

pub fn random_i32(n: usize) -> Vec<i32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random()).collect()
}

pub fn random_u32(n: usize) -> Vec<u32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random()).collect()
}

/// Asserts `got == want` element by element (bit-exact for floats, NaN equal to NaN).
pub fn assert_same<T: PartialEq + std::fmt::Debug + Copy>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| got[i] != want[i] && !(is_nan(got[i]) && is_nan(want[i])))
        .collect();
    if let Some(&first) = bad.first() {
        panic!(
            "{what}: {} of {} elements differ; first at {first}: got {:?}, want {:?}",
            bad.len(),
            got.len(),
            got[first],
            want[first]
        );
    }
}

fn is_nan<T: PartialEq + Copy>(v: T) -> bool {
    #[allow(clippy::eq_op)]
    {
        v != v
    }
}

/// A grid of `block`-sized blocks covering `n` threads (at least one block).
pub fn blocks_for(n: usize, block: u32) -> u32 {
    (n as u32).div_ceil(block).max(1)
}
