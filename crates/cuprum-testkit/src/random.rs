//! Random test data. Seeded generators print their seed, so a failure can be replayed:
//! `CUPRUM_TEST_SEED=<n> cargo test <test>` makes [`rng`] use that seed instead of a fresh one.

use rand::distr::uniform::SampleUniform;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A generator with a fresh random seed (or the one in `CUPRUM_TEST_SEED`), printed on stderr
/// as `<test>: seed <n>`.
pub fn rng(test: &str) -> StdRng {
    let seed: u64 = std::env::var("CUPRUM_TEST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("{test}: seed {seed}");
    seeded(seed)
}

/// The generator [`rng`] makes for `seed`.
pub fn seeded(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `len` values drawn uniformly from `lo..hi`.
pub fn random<T: SampleUniform + PartialOrd + Copy>(
    rng: &mut StdRng,
    len: usize,
    lo: T,
    hi: T,
) -> Vec<T> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

/// `n` floats in `-100.0..100.0` from the thread's generator.
pub fn random_f32(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-100.0f32..100.0)).collect()
}

/// `n` integers over the whole range of `i32`, from the thread's generator.
pub fn random_i32(n: usize) -> Vec<i32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random()).collect()
}

/// `n` integers over the whole range of `u32`, from the thread's generator.
pub fn random_u32(n: usize) -> Vec<u32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random()).collect()
}
