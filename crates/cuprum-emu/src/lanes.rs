//! A warp register: one value per lane, as the emulator holds them, and the mask of its
//! true lanes. What the lanes compute is `cuprum_ir::scalar`'s, shared with the optimizer.

/// One register: the value of each of the 32 lanes.
pub(crate) type Lanes = [u64; 32];

/// The lanes whose `Bool` value is true, as a mask.
#[inline]
pub(crate) fn true_mask(v: &Lanes) -> u32 {
    // Four independent chains of eight lanes each, so the CPU can overlap them.
    let mut parts = [0u32; 4];
    for (p, chunk) in parts.iter_mut().zip(v.chunks_exact(8)) {
        for (i, &x) in chunk.iter().enumerate() {
            *p |= ((x & 1) as u32) << i;
        }
    }
    parts[0] | parts[1] << 8 | parts[2] << 16 | parts[3] << 24
}
