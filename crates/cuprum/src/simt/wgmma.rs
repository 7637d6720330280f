//! Hopper's warpgroup matrix multiply-accumulate (`wgmma`), with cuda-oxide's names, and the
//! warp-specialization calls that a Hopper GEMM uses around it: `setmaxnreg`, named barriers
//! and `stmatrix`. Needs an sm_90a GPU (H100, H200); the emulator runs all of it.
//!
//! A *warpgroup* is four consecutive warps whose first warp index is a multiple of four (128
//! threads). Together they compute `D = A B (+ D)` for a `64 x N` tile of `D` and a `K`-slice
//! (`K = 16` for `bf16`/`f16`, `K = 8` for `tf32`), accumulating in `f32`. A and B are read
//! from shared memory through 64-bit *matrix descriptors* ([`make_smem_desc`] and its
//! siblings); A may instead come from registers (the `_reg_a` forms). The accumulator is a
//! per-thread array of `N / 2` `f32`s: `[[f32; 8]; N / 16]` (`[f32; N / 2]` where 16 does not
//! divide `N`), in which thread `t` (warp `w = t / 32`, lane `l`, `g = l / 4`, `q = l % 4`) holds, in its
//! element `i` (row-major), `D[16 w + g + 8 ((i / 2) % 2)][8 (i / 4) + 2 q + i % 2]`.
//!
//! The operation is *asynchronous*:
//!
//! ```text
//! wgmma_fence();                                    // order earlier accumulator writes
//! wgmma_mma_m64n128k16_f32_bf16(&mut acc, da, db);  // start (one or more)
//! wgmma_commit_group();                             // close the group
//! wgmma_wait_group::<0>();                          // at most 0 groups still in flight
//! // only now may `acc` be read or written, and A's and B's shared memory be overwritten
//! ```
//!
//! # Why the MMAs are `unsafe`
//!
//! Between the call and the covering wait, the tensor cores own the accumulator's registers
//! and read the operands' shared memory: reading or writing `acc`, or overwriting A or B,
//! before `wgmma_wait_group` says the group completed is a data race no type rules out, as is
//! a descriptor that does not describe the operands' layout, a register of A defined again
//! before the wait, or operands written by ordinary stores with no `fence_proxy_async()`
//! after them (the MMA reads shared memory through the async proxy). The emulator reports
//! each such misuse (`WgmmaMisuse`: an early accumulator access, an operand overwritten
//! before the wait, a register of A redefined, a missing `wgmma_fence`, a warpgroup whose
//! threads do not all take part; `MissingProxyFence`). The
//! fence, commit and wait themselves cannot break memory safety and are safe, as in
//! cuda-oxide.
//!
//! # The accumulator stays in registers
//!
//! An array passed as `&mut acc` to an MMA is kept in registers from its `let` on, and the
//! instruction names those registers themselves: nothing is copied between the fence and the
//! wait, so ptxas never serializes the pipeline (its warning C7510). The array must be a
//! local array of the kernel (`let mut acc = [[0.0f32; 8]; 8];`, or a row of one picked by a
//! constant, `&mut accs[1]`); index it with constants where you can (loops with constant
//! bounds unroll, so their indices are constants); an index known only at run time reads
//! through a chain of selects.
//!
//! # Beyond cuda-oxide's names
//!
//! cuda-oxide has `wgmma_mma_m64n64k16_f32_{bf16,f16,tf32}`. cuprum has that spelling for
//! every `N` PTX has (8 to 256 in steps of 8), with `tf32` as `..k8_f32_tf32` (its `K` is
//! 8: cuda-oxide's `..k16_f32_tf32` is refused at build with that advice), and the general
//! forms [`wgmma_mma_f32_bf16`], [`wgmma_mma_f32_f16`], [`wgmma_mma_f32_tf32`] (and their
//! `_reg_a` twins, A from registers), whose `N` is the accumulator's and whose
//! [`WgmmaFlags`] choose overwriting (`scale_d`, which may be computed at run time),
//! negation and transposed (MN-major) operands. [`make_smem_desc_swizzled`] makes a
//! descriptor for any swizzle. The register cap `setmaxnreg` needs is the kernel attribute
//! `#[max_registers(N)]` (`cuprum::simt::max_registers`).
//!
//! # Example
//!
//! One `m64n8k16`: A (64 x 16) and B (16 x 8, stored as 8 rows of K) laid out K-major with
//! the 128-byte swizzle by the host, copied into shared memory, multiplied by the warpgroup.
//!
//! ```
//! use cuprum::ir::wgmma::{Descriptor, Major, accumulator_position};
//! use cuprum::ir::Swizzle;
//! use cuprum::simt::wgmma::*;
//! use cuprum::simt::{SharedArray, fence_proxy_async, kernel, sync_threads, thread};
//! use cuprum::{cuda_module, CudaContext, DeviceBuffer, LaunchConfig};
//!
//! #[cuda_module]
//! mod kernels {
//!     use super::*;
//!
//!     /// D = A B; thread t's four elements of D to `out[4 t..]`.
//!     #[kernel]
//!     pub unsafe fn mma(img: &[u32], out: &mut [f32]) {
//!         // A: 64 rows of 128 bytes at 0; B: 8 rows at 8192.
//!         static mut SMEM: SharedArray<u32, 2304, 1024> = SharedArray::UNINIT;
//!         let t = thread::threadIdx_x() as usize;
//!         // SAFETY: each thread copies its words and fences them for the async proxy (which
//!         // wgmma reads shared memory through) before the block barrier; the MMA reads the
//!         // tiles its descriptors describe, and `acc` is read after the wait.
//!         unsafe {
//!             for j in 0..18 {
//!                 SMEM[t + 128 * j] = img[t + 128 * j];
//!             }
//!             fence_proxy_async();
//!             sync_threads();
//!             let base = &raw const SMEM as *const u8;
//!             let da = make_smem_desc_swizzled(base, 16, 1024, 128);
//!             let db = make_smem_desc_swizzled(base.add(8192), 16, 1024, 128);
//!             let mut acc = [0.0f32; 4];
//!             wgmma_fence();
//!             wgmma_mma_m64n8k16_f32_bf16(&mut acc, da, db);
//!             wgmma_commit_group();
//!             wgmma_wait_group::<0>();
//!             for i in 0..4 {
//!                 out[4 * t + i] = acc[i];
//!             }
//!         }
//!     }
//! }
//!
//! # fn main() -> cuprum::Result<()> {
//! let ctx = CudaContext::new(0)?;
//! if ctx.compute_capability()? != (9, 0) {
//!     return Ok(()); // wgmma needs an sm_90 GPU (the emulator models one)
//! }
//! let a = |m: u32, k: u32| ((m + 2 * k) % 5) as f32 - 2.0;
//! let b = |k: u32, n: u32| ((3 * k + n) % 4) as f32 - 1.0;
//! let mut bytes = vec![0u8; 2304 * 4];
//! let mut put = |start, mn, k, x: f32| {
//!     let d = Descriptor {
//!         start,
//!         leading_byte_offset: 16,
//!         stride_byte_offset: 1024,
//!         base_offset: 0,
//!         swizzle: Swizzle::B128,
//!     };
//!     let at = d.element_address(Major::K, 2, mn, k) as usize;
//!     bytes[at..at + 2].copy_from_slice(&cuprum::half::bf16::from_f32(x).to_le_bytes());
//! };
//! for k in 0..16 {
//!     (0..64).for_each(|m| put(0, m, k, a(m, k)));
//!     (0..8).for_each(|n| put(8192, n, k, b(k, n)));
//! }
//! let img: Vec<u32> = bytes
//!     .chunks_exact(4)
//!     .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
//!     .collect();
//! let stream = ctx.default_stream();
//! let dimg = DeviceBuffer::from_host(&stream, &img)?;
//! let mut out = DeviceBuffer::<f32>::zeroed(&stream, 512)?;
//! let module = kernels::load(&ctx)?;
//! let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
//! unsafe { module.mma(&stream, cfg, &dimg, &mut out) }?;
//! let got = out.to_host_vec(&stream)?;
//! for t in 0..128 {
//!     for i in 0..4 {
//!         let (row, col) = accumulator_position(t, i);
//!         let want: f32 = (0..16).map(|k| a(row, k) * b(k, col)).sum();
//!         assert_eq!(got[(4 * t + i) as usize], want);
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use super::shared::unreachable_on_host;

// ----- synchronization ------------------------------------------------------------------

/// `wgmma.fence.sync.aligned`: orders this thread's earlier register accesses of accumulators
/// (and shared-memory writes of operands) before the warpgroup's later MMAs. Needed before the
/// first MMA of an accumulator that was written since the last fence. All 128 threads of the
/// warpgroup call it together.
pub fn wgmma_fence() {}

/// `wgmma.commit_group.sync.aligned`: closes the thread's current group of MMAs (an empty
/// group if there were none). Warpgroup-collective.
pub fn wgmma_commit_group() {}

/// `wgmma.wait_group.sync.aligned N`: waits until at most `N` (0 to 7) of the most recently
/// committed groups are still in flight; the others have then read their operands and
/// written their accumulators. Warpgroup-collective.
pub fn wgmma_wait_group<const N: u32>() {}

// ----- descriptors ----------------------------------------------------------------------

/// cuda-oxide's fixed shared-memory descriptor: `((address >> 4) & 0x3FFF) |
/// 0xC000000800080000`, that is the matrix at `ptr` with leading and stride byte offsets of
/// 128 and layout code 3 (the PTX ISA's 32-byte swizzle). For other layouts use
/// [`make_smem_desc_custom`] or [`make_smem_desc_swizzled`].
///
/// # Safety
///
/// `ptr` must point into shared memory (a `static mut SharedArray`'s `&raw const`), and the
/// matrix there must be laid out as the descriptor says for the MMA that reads it.
pub unsafe fn make_smem_desc(ptr: *const u8) -> u64 {
    let _ = ptr;
    unreachable_on_host()
}

/// A shared-memory descriptor with cuda-oxide's `custom` fields: the leading- and
/// stride-dimension byte offsets (each a multiple of 16 below 256 KiB; bits 16-29 and 32-45
/// hold them over 16) and either the 128-byte swizzle or none.
///
/// # Safety
///
/// As [`make_smem_desc`].
pub unsafe fn make_smem_desc_custom(
    ptr: *const u8,
    leading_dim: u32,
    stride: u32,
    swizzle_128b: bool,
) -> u64 {
    let _ = (ptr, leading_dim, stride, swizzle_128b);
    unreachable_on_host()
}

/// A shared-memory descriptor for any swizzle (cuprum's): `swizzle_bytes` is 0 (none), 32,
/// 64 or 128, a constant. For a K-major tile swizzled by 128 bytes whose rows are 128 bytes
/// (64 `bf16`s), the leading offset is unused (write 16) and the stride offset is 1024, the
/// bytes of eight rows; stepping K by 16 `bf16`s inside the tile adds 32 bytes to `ptr`. A
/// swizzled tile starts at a multiple of its pattern's period (1024 bytes for 128).
///
/// # Safety
///
/// As [`make_smem_desc`].
pub unsafe fn make_smem_desc_swizzled(
    ptr: *const u8,
    leading_byte_offset: u32,
    stride_byte_offset: u32,
    swizzle_bytes: u32,
) -> u64 {
    let _ = (ptr, leading_byte_offset, stride_byte_offset, swizzle_bytes);
    unreachable_on_host()
}

// ----- accumulators ---------------------------------------------------------------------

/// cuda-oxide's name for the accumulator of an `m64n64` MMA: 32 `f32`s per thread.
pub type Acc64x64 = [[f32; 8]; 4];

/// A zeroed `m64n64` accumulator.
pub const fn zero_accumulator() -> Acc64x64 {
    [[0.0f32; 8]; 4]
}

mod sealed {
    pub trait Sealed {}
}

/// The accumulator arrays of the general MMA forms: `[f32; N / 2]` for every `N` (8 to 256 in
/// steps of 8), and `[[f32; 8]; N / 16]` for the multiples of 16. `N` is the accumulator's.
pub trait WgmmaAccumulator: sealed::Sealed {
    /// The `N` of the instruction that takes this accumulator.
    const N: u32;
}

macro_rules! accumulators {
    ($($ty:ty => $n:expr,)*) => {$(
        impl sealed::Sealed for $ty {}
        impl WgmmaAccumulator for $ty {
            const N: u32 = $n;
        }
    )*};
}

accumulators! {
    [f32; 4] => 8,
    [f32; 8] => 16,
    [f32; 12] => 24,
    [f32; 16] => 32,
    [f32; 20] => 40,
    [f32; 24] => 48,
    [f32; 28] => 56,
    [f32; 32] => 64,
    [f32; 36] => 72,
    [f32; 40] => 80,
    [f32; 44] => 88,
    [f32; 48] => 96,
    [f32; 52] => 104,
    [f32; 56] => 112,
    [f32; 60] => 120,
    [f32; 64] => 128,
    [f32; 68] => 136,
    [f32; 72] => 144,
    [f32; 76] => 152,
    [f32; 80] => 160,
    [f32; 84] => 168,
    [f32; 88] => 176,
    [f32; 92] => 184,
    [f32; 96] => 192,
    [f32; 100] => 200,
    [f32; 104] => 208,
    [f32; 108] => 216,
    [f32; 112] => 224,
    [f32; 116] => 232,
    [f32; 120] => 240,
    [f32; 124] => 248,
    [f32; 128] => 256,
    [[f32; 8]; 1] => 16,
    [[f32; 8]; 2] => 32,
    [[f32; 8]; 3] => 48,
    [[f32; 8]; 4] => 64,
    [[f32; 8]; 5] => 80,
    [[f32; 8]; 6] => 96,
    [[f32; 8]; 7] => 112,
    [[f32; 8]; 8] => 128,
    [[f32; 8]; 9] => 144,
    [[f32; 8]; 10] => 160,
    [[f32; 8]; 11] => 176,
    [[f32; 8]; 12] => 192,
    [[f32; 8]; 13] => 208,
    [[f32; 8]; 14] => 224,
    [[f32; 8]; 15] => 240,
    [[f32; 8]; 16] => 256,
}

/// What a general MMA does besides `D = A B + D` (each an immediate of the instruction but
/// `scale_d`). Write it in the call: `WgmmaFlags::ACCUMULATE`, `WgmmaFlags::OVERWRITE`, or
/// `WgmmaFlags { transpose_b: true, ..WgmmaFlags::ACCUMULATE }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgmmaFlags {
    /// `true`: `D = A B + D`; `false`: `D = A B` (the first K-step of a tile). May be computed
    /// at run time, the same in every thread of the warpgroup.
    pub scale_d: bool,
    /// A is negated (`imm-scale-a = -1`).
    pub negate_a: bool,
    /// B is negated (`imm-scale-b = -1`).
    pub negate_b: bool,
    /// A is stored MN-major (its `M` elements contiguous); 16-bit types, A from a descriptor.
    pub transpose_a: bool,
    /// B is stored MN-major (its `N` elements contiguous); 16-bit types.
    pub transpose_b: bool,
}

impl WgmmaFlags {
    /// `D = A B + D`, both operands K-major.
    pub const ACCUMULATE: WgmmaFlags = WgmmaFlags {
        scale_d: true,
        negate_a: false,
        negate_b: false,
        transpose_a: false,
        transpose_b: false,
    };
    /// `D = A B`, both operands K-major.
    pub const OVERWRITE: WgmmaFlags = WgmmaFlags {
        scale_d: false,
        ..WgmmaFlags::ACCUMULATE
    };
}

// ----- MMAs -----------------------------------------------------------------------------

macro_rules! general_forms {
    ($($name:ident, $reg:ident, $ty:literal;)*) => {$(
        #[doc = concat!("`wgmma.mma_async` with `", $ty, "` inputs: `D = A B + (scale_d ? D : 0)` \
            for the `64 x N` tile whose `N` is the accumulator's ([`WgmmaAccumulator`]), A and \
            B through shared-memory descriptors, [`WgmmaFlags`] saying the rest.\n\n\
            # Safety\n\nThe warpgroup's 128 threads call it together, after a [`wgmma_fence`] \
            that follows any write of `acc`; the descriptors describe the operands' shared \
            memory; neither `acc` nor the operands are touched until a [`wgmma_wait_group`] \
            covers the group. sm_90a.")]
        pub unsafe fn $name<Acc: WgmmaAccumulator>(
            acc: &mut Acc,
            desc_a: u64,
            desc_b: u64,
            flags: WgmmaFlags,
        ) {
            let _ = (acc, desc_a, desc_b, flags);
            unreachable_on_host()
        }

        #[doc = concat!("[`", stringify!($name), "`] with A from registers: each warp `w` \
            supplies rows `16 w .. 16 w + 16` of A as four `u32`s per thread, laid out as the \
            A fragment of `mma.sync` (`m16n8k16`, `m16n8k8` for `tf32`; `cuprum::simt::mma`). \
            `flags.transpose_a` must be false.\n\n# Safety\n\nAs [`", stringify!($name), "`].")]
        pub unsafe fn $reg<Acc: WgmmaAccumulator>(
            acc: &mut Acc,
            a: [u32; 4],
            desc_b: u64,
            flags: WgmmaFlags,
        ) {
            let _ = (acc, a, desc_b, flags);
            unreachable_on_host()
        }
    )*};
}

general_forms! {
    wgmma_mma_f32_bf16, wgmma_mma_f32_bf16_reg_a, "bf16";
    wgmma_mma_f32_f16, wgmma_mma_f32_f16_reg_a, "f16";
    wgmma_mma_f32_tf32, wgmma_mma_f32_tf32_reg_a, "tf32";
}

macro_rules! named_family {
    ($(($n:literal, $acc:ty, $bf16:ident, $f16:ident, $tf32:ident),)*) => {$(
        named_family!(@one $n, $acc, $bf16, "bf16", "16");
        named_family!(@one $n, $acc, $f16, "f16", "16");
        named_family!(@one $n, $acc, $tf32, "tf32", "8");
    )*};
    (@one $n:literal, $acc:ty, $name:ident, $ty:literal, $k:literal) => {
        #[doc = concat!("`wgmma.mma_async.sync.aligned.m64n", stringify!($n), "k", $k, ".f32.",
            $ty, ".", $ty, "`: `D += A B` for a `64 x ", stringify!($n), "` tile and K = ", $k,
            ", A and B K-major through shared-memory descriptors.\n\n# Safety\n\nAs \
            [`wgmma_mma_f32_", $ty, "`].")]
        pub unsafe fn $name(acc: &mut $acc, desc_a: u64, desc_b: u64) {
            let _ = (acc, desc_a, desc_b);
            unreachable_on_host()
        }
    };
}

named_family! {
    (8, [f32; 4], wgmma_mma_m64n8k16_f32_bf16, wgmma_mma_m64n8k16_f32_f16, wgmma_mma_m64n8k8_f32_tf32),
    (16, [[f32; 8]; 1], wgmma_mma_m64n16k16_f32_bf16, wgmma_mma_m64n16k16_f32_f16, wgmma_mma_m64n16k8_f32_tf32),
    (24, [f32; 12], wgmma_mma_m64n24k16_f32_bf16, wgmma_mma_m64n24k16_f32_f16, wgmma_mma_m64n24k8_f32_tf32),
    (32, [[f32; 8]; 2], wgmma_mma_m64n32k16_f32_bf16, wgmma_mma_m64n32k16_f32_f16, wgmma_mma_m64n32k8_f32_tf32),
    (40, [f32; 20], wgmma_mma_m64n40k16_f32_bf16, wgmma_mma_m64n40k16_f32_f16, wgmma_mma_m64n40k8_f32_tf32),
    (48, [[f32; 8]; 3], wgmma_mma_m64n48k16_f32_bf16, wgmma_mma_m64n48k16_f32_f16, wgmma_mma_m64n48k8_f32_tf32),
    (56, [f32; 28], wgmma_mma_m64n56k16_f32_bf16, wgmma_mma_m64n56k16_f32_f16, wgmma_mma_m64n56k8_f32_tf32),
    (64, [[f32; 8]; 4], wgmma_mma_m64n64k16_f32_bf16, wgmma_mma_m64n64k16_f32_f16, wgmma_mma_m64n64k8_f32_tf32),
    (72, [f32; 36], wgmma_mma_m64n72k16_f32_bf16, wgmma_mma_m64n72k16_f32_f16, wgmma_mma_m64n72k8_f32_tf32),
    (80, [[f32; 8]; 5], wgmma_mma_m64n80k16_f32_bf16, wgmma_mma_m64n80k16_f32_f16, wgmma_mma_m64n80k8_f32_tf32),
    (88, [f32; 44], wgmma_mma_m64n88k16_f32_bf16, wgmma_mma_m64n88k16_f32_f16, wgmma_mma_m64n88k8_f32_tf32),
    (96, [[f32; 8]; 6], wgmma_mma_m64n96k16_f32_bf16, wgmma_mma_m64n96k16_f32_f16, wgmma_mma_m64n96k8_f32_tf32),
    (104, [f32; 52], wgmma_mma_m64n104k16_f32_bf16, wgmma_mma_m64n104k16_f32_f16, wgmma_mma_m64n104k8_f32_tf32),
    (112, [[f32; 8]; 7], wgmma_mma_m64n112k16_f32_bf16, wgmma_mma_m64n112k16_f32_f16, wgmma_mma_m64n112k8_f32_tf32),
    (120, [f32; 60], wgmma_mma_m64n120k16_f32_bf16, wgmma_mma_m64n120k16_f32_f16, wgmma_mma_m64n120k8_f32_tf32),
    (128, [[f32; 8]; 8], wgmma_mma_m64n128k16_f32_bf16, wgmma_mma_m64n128k16_f32_f16, wgmma_mma_m64n128k8_f32_tf32),
    (136, [f32; 68], wgmma_mma_m64n136k16_f32_bf16, wgmma_mma_m64n136k16_f32_f16, wgmma_mma_m64n136k8_f32_tf32),
    (144, [[f32; 8]; 9], wgmma_mma_m64n144k16_f32_bf16, wgmma_mma_m64n144k16_f32_f16, wgmma_mma_m64n144k8_f32_tf32),
    (152, [f32; 76], wgmma_mma_m64n152k16_f32_bf16, wgmma_mma_m64n152k16_f32_f16, wgmma_mma_m64n152k8_f32_tf32),
    (160, [[f32; 8]; 10], wgmma_mma_m64n160k16_f32_bf16, wgmma_mma_m64n160k16_f32_f16, wgmma_mma_m64n160k8_f32_tf32),
    (168, [f32; 84], wgmma_mma_m64n168k16_f32_bf16, wgmma_mma_m64n168k16_f32_f16, wgmma_mma_m64n168k8_f32_tf32),
    (176, [[f32; 8]; 11], wgmma_mma_m64n176k16_f32_bf16, wgmma_mma_m64n176k16_f32_f16, wgmma_mma_m64n176k8_f32_tf32),
    (184, [f32; 92], wgmma_mma_m64n184k16_f32_bf16, wgmma_mma_m64n184k16_f32_f16, wgmma_mma_m64n184k8_f32_tf32),
    (192, [[f32; 8]; 12], wgmma_mma_m64n192k16_f32_bf16, wgmma_mma_m64n192k16_f32_f16, wgmma_mma_m64n192k8_f32_tf32),
    (200, [f32; 100], wgmma_mma_m64n200k16_f32_bf16, wgmma_mma_m64n200k16_f32_f16, wgmma_mma_m64n200k8_f32_tf32),
    (208, [[f32; 8]; 13], wgmma_mma_m64n208k16_f32_bf16, wgmma_mma_m64n208k16_f32_f16, wgmma_mma_m64n208k8_f32_tf32),
    (216, [f32; 108], wgmma_mma_m64n216k16_f32_bf16, wgmma_mma_m64n216k16_f32_f16, wgmma_mma_m64n216k8_f32_tf32),
    (224, [[f32; 8]; 14], wgmma_mma_m64n224k16_f32_bf16, wgmma_mma_m64n224k16_f32_f16, wgmma_mma_m64n224k8_f32_tf32),
    (232, [f32; 116], wgmma_mma_m64n232k16_f32_bf16, wgmma_mma_m64n232k16_f32_f16, wgmma_mma_m64n232k8_f32_tf32),
    (240, [[f32; 8]; 15], wgmma_mma_m64n240k16_f32_bf16, wgmma_mma_m64n240k16_f32_f16, wgmma_mma_m64n240k8_f32_tf32),
    (248, [f32; 124], wgmma_mma_m64n248k16_f32_bf16, wgmma_mma_m64n248k16_f32_f16, wgmma_mma_m64n248k8_f32_tf32),
    (256, [[f32; 8]; 16], wgmma_mma_m64n256k16_f32_bf16, wgmma_mma_m64n256k16_f32_f16, wgmma_mma_m64n256k8_f32_tf32),
}

/// cuda-oxide's `tf32` spelling with `K = 16`, kept so that its programs compile: PTX's `tf32`
/// wgmma has `K = 8`, so device code that calls it is refused at build; call
/// [`wgmma_mma_m64n64k8_f32_tf32`] (twice for `K = 16`).
///
/// # Safety
///
/// Never runs.
pub unsafe fn wgmma_mma_m64n64k16_f32_tf32(acc: &mut [[f32; 8]; 4], desc_a: u64, desc_b: u64) {
    let _ = (acc, desc_a, desc_b);
    unreachable_on_host()
}

// ----- warp specialization ----------------------------------------------------------------

/// `setmaxnreg.inc.sync.aligned.u32 N`: the warpgroup asks for `N` registers per thread (a
/// multiple of 8 from 24 to 256), waiting until the block's pool has them: what the consumer
/// warpgroups of a warp-specialized kernel do. The kernel needs `#[max_registers(..)]`, else
/// the build refuses it (ptxas would ignore the instruction). Warpgroup-collective; sm_90a.
pub fn setmaxnreg_inc<const N: u32>() {}

/// `setmaxnreg.dec.sync.aligned.u32 N`: the warpgroup gives registers back, keeping `N` per
/// thread: what a producer warpgroup does. As [`setmaxnreg_inc`] otherwise.
pub fn setmaxnreg_dec<const N: u32>() {}

/// `bar.sync id, threads`: waits on named barrier `id` (1 to 15; 0 is
/// [`sync_threads`](super::sync_threads)') until `threads` threads (a multiple of 32, counted
/// by whole warps) have arrived. Both are constants. The whole warp calls it together. It
/// orders the arrivers' earlier memory accesses before the waiters' later ones.
pub fn named_barrier_sync(id: u32, threads: u32) {
    let _ = (id, threads);
}

/// `bar.arrive id, threads`: counts this warp toward named barrier `id` without waiting (a
/// producer signalling consumers that wait with [`named_barrier_sync`]).
pub fn named_barrier_arrive(id: u32, threads: u32) {
    let _ = (id, threads);
}

macro_rules! stmatrix_forms {
    ($($name:ident($($r:ident),*), $count:literal, $trans:literal;)*) => {$(
        #[doc = concat!("`stmatrix.sync.aligned.m8n8.x", $count, $trans, ".shared.b16`: the \
            warp stores ", $count, " 8x8 matrices of 16-bit elements (the inverse of \
            `ldmatrix`). Lane `l < 8 x ", $count, "` gives in `smem_ptr` the shared address of \
            row `l % 8` of matrix `l / 8` (16 bytes, 16-byte aligned); each lane's `r{m}` is its \
            fragment of matrix `m`, two 16-bit elements.\n\n# Safety\n\nThe whole warp calls it \
            together, and the addresses are rows of shared memory nothing else touches \
            meanwhile. sm_90.")]
        pub unsafe fn $name(smem_ptr: *mut u8, $($r: u32),*) {
            let _ = (smem_ptr, $($r),*);
            unreachable_on_host()
        }
    )*};
}

stmatrix_forms! {
    stmatrix_m8n8_x1(r0), "1", "";
    stmatrix_m8n8_x1_trans(r0), "1", ".trans";
    stmatrix_m8n8_x2(r0, r1), "2", "";
    stmatrix_m8n8_x2_trans(r0, r1), "2", ".trans";
    stmatrix_m8n8_x4(r0, r1, r2, r3), "4", "";
    stmatrix_m8n8_x4_trans(r0, r1, r2, r3), "4", ".trans";
}
