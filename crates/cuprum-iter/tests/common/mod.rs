//! Shared helpers of the iterator tests: a device on the backend `CUPRUM_DEVICE` selects
//! (the emulator here, the GPU on a GPU machine) with outputs poisoned before every kernel,
//! seeded random data (the seed is printed so a failure can be replayed), and the lengths
//! every chain is tried on.
#![allow(dead_code)]

use cuprum_iter::prelude::*;
use rand::distr::uniform::SampleUniform;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Empty, one element, fewer than one vector, and a million plus a ragged tail.
pub const LENGTHS: [usize; 4] = [0, 1, 3, (1 << 20) + 7];

/// Device 0 with poisoned outputs, so that an element a kernel misses cannot pass.
pub fn device() -> GpuDevice {
    let device = match GpuDevice::default() {
        Ok(d) => d,
        Err(e) => panic!("could not open device 0: {e}"),
    };
    device.set_poison_outputs(true);
    device
}

pub fn rng(test: &str) -> StdRng {
    let seed: u64 = rand::rng().random();
    eprintln!("{test}: seed {seed}");
    StdRng::seed_from_u64(seed)
}

pub fn random<T: SampleUniform + PartialOrd + Copy>(
    rng: &mut StdRng,
    len: usize,
    lo: T,
    hi: T,
) -> Vec<T> {
    (0..len).map(|_| rng.random_range(lo..hi)).collect()
}

/// Asserts `got == want` element by element, bit for bit (so NaNs and signed zeros count).
#[track_caller]
pub fn assert_bits_eq(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits(),
            "{what}: element {i} of {}: got {g} ({:#x}), want {w} ({:#x})",
            want.len(),
            g.to_bits(),
            w.to_bits()
        );
    }
}

/// Unwraps a result, naming the error.
#[track_caller]
pub fn ok<T>(r: GpuResult<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error: {e}"),
    }
}
