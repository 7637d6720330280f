//! What cuprum's test suites and benchmark examples used to copy into each crate's
//! `tests/common/mod.rs` and `examples/*.rs`: seeded random data ([`random`]), poison
//! values for outputs ([`poison`]), element-by-element comparison with messages that say
//! where a result went wrong ([`compare`]), the `ptxas` policy of the PTX tests ([`ptxas`]),
//! the medians of the timing examples ([`timing`]), constant divisors for division tests
//! ([`divisors`]), and a fake NVTX tool for the tests of
//! cuprum's NVTX ranges ([`nvtx_probe`]).
//!
//! A dev-dependency only (`publish = false`), and it depends on no cuprum crate, so that any
//! crate of the workspace can use it without a dependency cycle. What needs a context, a
//! stream or the IR stays in the crate: each `tests/common` keeps its context (or device)
//! and kernel builder, and the examples adapt their stream to [`timing::EventClock`].

pub mod compare;
pub mod divisors;
pub mod nvtx_probe;
pub mod poison;
pub mod ptxas;
pub mod random;
pub mod timing;

/// A grid of `block`-sized blocks covering `n` threads (at least one block).
pub fn blocks_for(n: usize, block: u32) -> u32 {
    (n as u32).div_ceil(block).max(1)
}

/// `text` with each line prefixed by its number (from 1), for messages that quote PTX.
pub fn numbered(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| format!("{:4} {l}\n", i + 1))
        .collect()
}
