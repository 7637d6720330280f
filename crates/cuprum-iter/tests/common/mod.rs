//! The iterator tests' device, on the backend `CUPRUM_DEVICE` selects (the emulator here, the
//! GPU on a GPU machine) with outputs poisoned before every kernel, and the lengths every
//! chain is tried on. Seeded random data (the seed is printed so a failure can be replayed)
//! and bit-exact comparison are the shared ones of `cuprum-testkit`, re-exported.
#![allow(dead_code, unused_imports)]

use cuprum_iter::prelude::*;
pub use cuprum_testkit::compare::{assert_bits_eq, ok};
pub use cuprum_testkit::random::{random, rng};

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
