//! Element-by-element comparison of results with messages that say where a result went
//! wrong (how many elements differ, the first one's index, what it holds and what it should).

use std::fmt::{Debug, Display};

/// Asserts `got == want` element by element, with `==` (so `0.0` equals `-0.0`), NaN equal to
/// NaN. On failure: how many elements differ and the first of them.
#[track_caller]
pub fn assert_same<T: PartialEq + Debug + Copy>(what: &str, got: &[T], want: &[T]) {
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

/// Whether `v` is unequal to itself (a NaN).
fn is_nan<T: PartialEq + Copy>(v: T) -> bool {
    #[allow(clippy::eq_op)]
    {
        v != v
    }
}

/// A float compared by its bits.
pub trait Bits: Copy + Display {
    /// The value's bits, widened to `u64`.
    fn bits(self) -> u64;
}

impl Bits for f32 {
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Bits for f64 {
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

/// Asserts `got == want` element by element, bit for bit (so NaNs and signed zeros count).
#[track_caller]
pub fn assert_bits_eq<T: Bits>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.bits() == w.bits(),
            "{what}: element {i} of {}: got {g} ({:#x}), want {w} ({:#x})",
            want.len(),
            g.bits(),
            w.bits()
        );
    }
}

/// Unwraps a result, naming the error.
#[track_caller]
pub fn ok<T, E: Display>(r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error: {e}"),
    }
}
