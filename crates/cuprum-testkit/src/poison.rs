//! Poison: what an output holds before a kernel runs, so that an element the kernel misses
//! cannot pass for a right one. Each value is one no kernel of the tests writes by accident.

/// The byte emulator-level tests fill output memory with (`0xA5A5_A5A5` as a `u32`).
pub const BYTE: u8 = 0xA5;

/// A type with a poison value.
pub trait Poison: Copy {
    /// The value an output of this type starts as.
    const POISON: Self;
}

impl Poison for u32 {
    const POISON: Self = 0xDEAD_BEEF;
}

impl Poison for u64 {
    const POISON: Self = 0xDEAD_BEEF_DEAD_BEEF;
}

impl Poison for i32 {
    const POISON: Self = 0xDEAD_BEEF_u32 as i32;
}

impl Poison for f64 {
    /// A quiet NaN with a payload of its own, which no arithmetic produces.
    const POISON: Self = f64::from_bits(0x7FF8_0000_DEAD_BEEF);
}

impl Poison for f32 {
    /// A quiet NaN with a payload of its own, which no arithmetic produces.
    const POISON: Self = f32::from_bits(0x7FC0_DEAD);
}

/// `n` poison values, to upload as an output.
pub fn poisoned<T: Poison>(n: usize) -> Vec<T> {
    vec![T::POISON; n]
}
