//! Constant divisors that reach every way a division by a constant is computed: one, powers
//! of two, odd and even others, the extremes of the type, and negative ones of signed types.
//! The optimizer's division tests and the GPU semantics corpus both divide by them.

/// The divisors (as the bits of a `bits`-bit integer, nonzero, sorted, each once) of a
/// `bits`-bit type, `signed` or not.
pub fn constant_divisors(bits: u32, signed: bool) -> Vec<u64> {
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let half = mask >> 1;
    let mut ds: Vec<u64> = vec![
        1,
        2,
        3,
        5,
        6,
        7,
        10,
        12,
        25,
        64,
        100,
        641,
        1000,
        65537,
        0x7FFF_FFFF,
        0xFFFF_FFFF,
    ];
    // Around half the range (the largest signed value, the sign bit, just above) and the top.
    ds.extend([half, half + 1, half + 2, mask, mask - 1, mask / 3]);
    if signed {
        for d in [1u64, 2, 3, 7, 64, 1000] {
            ds.push(d.wrapping_neg());
        }
    }
    let mut ds: Vec<u64> = ds
        .into_iter()
        .map(|d| d & mask)
        .filter(|&d| d != 0)
        .collect();
    ds.sort_unstable();
    ds.dedup();
    ds
}
