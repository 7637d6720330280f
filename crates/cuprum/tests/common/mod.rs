//! The facade tests' context (one per test binary, on the backend `CUPRUM_DEVICE` selects)
//! and the sizes element-wise kernels are tested at. Random data, comparisons and grid sizes
//! are the shared ones of `cuprum-testkit`, re-exported so the tests name them from here.

#![allow(dead_code, unused_imports)]

use std::sync::OnceLock;

use cuprum::CudaContext;
pub use cuprum_testkit::blocks_for;
pub use cuprum_testkit::compare::assert_same;
pub use cuprum_testkit::random::{random_f32, random_i32, random_u32};

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

/// nbody's integration step on the CPU (cuda-samples' `integrateBodies`): each body's new
/// position and velocity after `dt`, summing the pulls of all bodies (`[x, y, z, mass]`) in
/// order with `softening` added to each squared distance, as the kernels do, so that IEEE
/// arithmetic gives the same bits.
pub fn integrate_bodies_reference(
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
    dt: f32,
    damping: f32,
    softening: f32,
) -> (Vec<[f32; 4]>, Vec<[f32; 4]>) {
    let (mut want_pos, mut want_vel) = (Vec::new(), Vec::new());
    for (me, v) in pos.iter().zip(vel) {
        let mut acc = [0.0f32; 3];
        for other in pos {
            let (dx, dy, dz) = (other[0] - me[0], other[1] - me[1], other[2] - me[2]);
            let d2 = dx * dx + dy * dy + dz * dz + softening;
            let inv = 1.0 / d2.sqrt();
            let s = other[3] * inv * inv * inv;
            acc[0] += dx * s;
            acc[1] += dy * s;
            acc[2] += dz * s;
        }
        let nv = [
            (v[0] + acc[0] * dt) * damping,
            (v[1] + acc[1] * dt) * damping,
            (v[2] + acc[2] * dt) * damping,
            v[3],
        ];
        want_vel.push(nv);
        want_pos.push([
            me[0] + nv[0] * dt,
            me[1] + nv[1] * dt,
            me[2] + nv[2] * dt,
            me[3],
        ]);
    }
    (want_pos, want_vel)
}
