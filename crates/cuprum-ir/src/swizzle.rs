//! The shared-memory swizzle modes of Hopper's tensor memory accelerator (TMA) and of
//! `wgmma`'s shared-memory matrix descriptors, defined once.
//!
//! A swizzled tile is stored in rows of `span` bytes (32, 64 or 128). The 16-byte chunk
//! index of an address (bits 4 up) is XORed with its 128-byte line index (bits 7 up), masked
//! to the chunks of one span (CUTLASS's `Swizzle<1|2|3, 4, 3>`), so the pattern repeats every
//! eight spans ([`Swizzle::period_bytes`]). The hardware applies it to the bits of the
//! *shared-memory address*, so a swizzled buffer starts at a multiple of its period for byte
//! offsets and addresses to agree. The GPU probe tests pin this against the H200.
//!
//! Every layer asks this module: the emulator places TMA loads and reads `wgmma` operands
//! through [`Swizzle::apply`], the PTX writer and the host encode [`Swizzle::tensor_map_code`]
//! and [`Swizzle::descriptor_code`], and the tests model the hardware with it.

/// How a TMA copy or a `wgmma` descriptor lays a tile out in shared memory.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Swizzle {
    /// Rows stored as they are (`CU_TENSOR_MAP_SWIZZLE_NONE`; a descriptor's "interleave").
    None,
    /// 32-byte rows, 2 chunks: bit 7 of the address into bit 4.
    B32,
    /// 64-byte rows, 4 chunks: bits 7–8 into bits 4–5.
    B64,
    /// 128-byte rows, 8 chunks: bits 7–9 into bits 4–6.
    B128,
}

impl Swizzle {
    /// Every mode, for tests that cover them all.
    pub const ALL: [Swizzle; 4] = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];

    /// The width of a swizzled row in bytes: the most a TMA box's inner dimension may span
    /// (`None`: no limit from the swizzle, so `None` here).
    pub const fn span_bytes(self) -> Option<u32> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }

    /// The bytes after which the pattern repeats (eight rows), and so the alignment a
    /// swizzled shared-memory buffer needs: 256, 512 or 1024 (16 for `None`, TMA's least).
    pub const fn period_bytes(self) -> u32 {
        match self.span_bytes() {
            Some(span) => span * 8,
            None => 16,
        }
    }

    /// The XOR mask applied to address bits 4 and up: the number of 16-byte chunks in a
    /// row, less one (0 for `None`).
    pub const fn chunk_mask(self) -> u32 {
        match self.span_bytes() {
            Some(span) => span / 16 - 1,
            None => 0,
        }
    }

    /// Where the byte a row-major (unswizzled) tile would keep at shared address `addr`
    /// lives under this swizzle. An involution that permutes the 16-byte chunks inside each
    /// [`Swizzle::period_bytes`] block, and keeps the bytes of a chunk together.
    pub const fn apply(self, addr: u32) -> u32 {
        let row_in_period = (addr >> 7) & 7;
        addr ^ ((row_in_period & self.chunk_mask()) << 4)
    }

    /// The driver's `CUtensorMapSwizzle` value for this mode.
    pub const fn tensor_map_code(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 1,
            Swizzle::B64 => 2,
            Swizzle::B128 => 3,
        }
    }

    /// The 2-bit layout type of a `wgmma` shared-memory matrix descriptor (bits 62–63):
    /// 0 none, 1 128-byte, 2 64-byte, 3 32-byte swizzle.
    pub const fn descriptor_code(self) -> u64 {
        match self {
            Swizzle::None => 0,
            Swizzle::B128 => 1,
            Swizzle::B64 => 2,
            Swizzle::B32 => 3,
        }
    }

    /// The mode a descriptor's layout type names ([`Swizzle::descriptor_code`]'s inverse).
    pub const fn from_descriptor_code(code: u64) -> Swizzle {
        match code & 3 {
            0 => Swizzle::None,
            1 => Swizzle::B128,
            2 => Swizzle::B64,
            _ => Swizzle::B32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_permutes_whole_chunks_within_its_period() {
        for s in Swizzle::ALL {
            let period = s.period_bytes().max(1024);
            let mut seen = vec![false; period as usize];
            for a in 0..period {
                let p = s.apply(a);
                assert_eq!(s.apply(p), a, "{s:?} is an involution");
                assert_eq!(p & 15, a & 15, "{s:?} keeps a chunk's bytes together");
                assert_eq!(
                    p / s.period_bytes(),
                    a / s.period_bytes(),
                    "{s:?} stays in its period"
                );
                assert!(!seen[p as usize]);
                seen[p as usize] = true;
            }
        }
    }

    #[test]
    fn the_128_byte_mode_xors_the_row_into_the_chunk() {
        // Row 3 of a 128-byte-swizzled tile: chunk c is stored at chunk c ^ 3.
        for c in 0..8u32 {
            assert_eq!(
                Swizzle::B128.apply(3 * 128 + c * 16),
                3 * 128 + (c ^ 3) * 16
            );
        }
        // 64-byte rows: row 5 of a period is at address 5 * 64 = 320, bits 7-8 = 2.
        assert_eq!(Swizzle::B64.apply(320), 320 ^ (2 << 4));
        // 32-byte mode: only bit 7 moves into bit 4.
        assert_eq!(Swizzle::B32.apply(128), 128 + 16);
        assert_eq!(Swizzle::None.apply(12345), 12345);
        for s in Swizzle::ALL {
            assert_eq!(Swizzle::from_descriptor_code(s.descriptor_code()), s);
        }
    }
}
