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
