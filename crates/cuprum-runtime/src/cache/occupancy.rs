//! Occupancy arithmetic for the compile cache: how many blocks of a kernel one multiprocessor
//! (SM) holds at once, given the registers per thread the compiler gave it, and the judgement
//! of a linked kernel against the JIT's compile of the same kernel. Pure functions, no GPU:
//! the cache's load path (`backend/cuda/cached.rs`) feeds them what the driver reported.
//!
//! Why the cache needs it: the driver's linker compiles PTX as relocatable code, which can
//! want more registers than the JIT's whole-program compile. Capped at the JIT's register
//! count, such a kernel may spill to local memory; capped a little higher it may not, and a
//! few more registers per thread cost nothing as long as the SM still holds as many blocks of
//! the kernel at once. [`raised_caps`] lists the caps worth trying and [`judge`] says whether
//! a linked kernel is as good as the JIT's by these rules.
//!
//! **The rules** (NVIDIA's occupancy calculator for compute capabilities 7.x to 9.x, which is
//! what runs cuprum's sm_80/sm_90 code):
//! * registers are allocated per warp, the warp's `registers per thread x 32` rounded up to a
//!   unit of [`REGISTER_ALLOCATION_UNIT`] = 256 registers (so per thread in steps of 8);
//! * a thread has at most [`MAX_REGISTERS_PER_THREAD`] = 255 registers;
//! * the register file of an SM (65536 registers on every sm_80/sm_90 part) is split between
//!   [`SUB_PARTITIONS`] = 4 sub-partitions, each holding whole warps: warps per SM from
//!   registers = `(registers per SM / 4) / registers per warp`, times 4; blocks per SM from
//!   registers = that divided by the block's warps;
//! * a block must fit the per-block register limit (65536) twice over: its warps times the
//!   registers per warp (the software check), and its warps rounded up to a multiple of 4
//!   times the registers per warp (the hardware check, which assumes every sub-partition
//!   allocates at once); a block that does not fit cannot launch at all (0 blocks);
//! * blocks per SM are also limited by the resident warps per SM (`max threads per SM / 32`:
//!   64 warps on sm_80/sm_90) and by the resident blocks per SM (32 on sm_80/sm_90).
//!
//! Sources: `cuda_occupancy.h` of the CUDA toolkit (the occupancy calculator in C:
//! `cudaOccMaxBlocksPerSMRegsLimit`, `cudaOccMaxBlocksPerSMWarpsLimit`,
//! `cudaOccMaxBlocksPerMultiprocessor`, with `cudaOccRegAllocationGranularity` = 256,
//! `cudaOccRegAllocationMaxPerThread` = 255 and `cudaOccSubPartitionsPerMultiprocessor` = 4);
//! the CUDA Occupancy Calculator spreadsheet's GPU data ("register allocation unit size 256",
//! "register allocation granularity: warp", "warp allocation granularity 4", "max registers
//! per thread 255", "registers per multiprocessor 65536"); and the CUDA C++ Programming
//! Guide's table of technical specifications per compute capability (64K 32-bit registers per
//! SM and per block, 255 per thread, 64 resident warps and 32 resident blocks per SM on 8.0
//! and 9.0). The per-device numbers ([`SmLimits`]) come from the driver's device attributes;
//! the allocation unit, the sub-partitions and the per-thread maximum have no attribute and
//! are the calculator's constants for these architectures.
//!
//! Shared memory is left out on purpose: it is the same for both compiles of a kernel (same
//! PTX), so it can only lower both occupancies to the same bound; comparing without it is the
//! stricter test (see [`keeps_occupancy`]).

/// Registers are allocated to a warp in units of this many (all of 32 threads' registers,
/// rounded up).
pub const REGISTER_ALLOCATION_UNIT: u32 = 256;

/// The sub-partitions of an SM, each with its own quarter of the register file.
pub const SUB_PARTITIONS: u32 = 4;

/// The most registers one thread may have.
pub const MAX_REGISTERS_PER_THREAD: u32 = 255;

/// What one SM of a device holds, for [`blocks_per_sm`]; from the driver's device attributes
/// ([`SmLimits::of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmLimits {
    /// 32-bit registers per SM (`CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR`).
    pub registers_per_sm: u32,
    /// 32-bit registers one block may have (`CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK`).
    pub registers_per_block: u32,
    /// Resident threads per SM (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`).
    pub max_threads_per_sm: u32,
    /// Resident blocks per SM (`CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR`).
    pub max_blocks_per_sm: u32,
    /// Threads per warp (32).
    pub warp_size: u32,
}

impl SmLimits {
    /// An sm_90 SM (H100, H200) and an sm_80 one (A100) alike: 65536 registers per SM and per
    /// block, 2048 threads (64 warps) and 32 blocks per SM.
    pub const SM80_SM90: Self = Self {
        registers_per_sm: 65536,
        registers_per_block: 65536,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        warp_size: 32,
    };

    /// The SM limits of `device`, or `None` when the driver did not report one of them (a
    /// zero in [`DeviceLimits`](crate::DeviceLimits)).
    pub fn of(device: &crate::DeviceLimits) -> Option<Self> {
        let limits = Self {
            registers_per_sm: device.registers_per_sm,
            registers_per_block: device.registers_per_block,
            max_threads_per_sm: device.max_threads_per_sm,
            max_blocks_per_sm: device.max_blocks_per_sm,
            warp_size: device.warp_size,
        };
        let known = [
            limits.registers_per_sm,
            limits.registers_per_block,
            limits.max_threads_per_sm,
            limits.max_blocks_per_sm,
            limits.warp_size,
        ]
        .iter()
        .all(|&v| v > 0);
        known.then_some(limits)
    }

    /// Registers per thread that one allocation unit holds: 256 / 32 = 8. Caps that differ by
    /// less can share an allocation; [`raised_caps`] steps by this.
    pub fn register_step(&self) -> u32 {
        (REGISTER_ALLOCATION_UNIT / self.warp_size.max(1)).max(1)
    }
}

/// The block sizes a kernel may be launched with, over which occupancy must be kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockSizes {
    /// Exactly this many threads: the kernel declares its block (`.reqntid`,
    /// `#[launch_contract(block = ...)]`) and every launch must have it.
    Exactly(u32),
    /// Any number of threads up to this many: `.maxntid` (`#[launch_bounds]`), or for a
    /// kernel that declares nothing, the largest block the driver lets it launch with
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` of the JIT's compile).
    UpTo(u32),
}

impl BlockSizes {
    /// One thread count per warp count the sizes span (occupancy depends only on the warps):
    /// `[n]` for `Exactly(n)`, `[32, 64, .., n]` for `UpTo(n)`.
    fn thread_counts(self, warp_size: u32) -> Vec<u32> {
        let warp = warp_size.max(1);
        match self {
            Self::Exactly(n) => vec![n],
            Self::UpTo(n) => (1..=n.div_ceil(warp)).map(|w| (w * warp).min(n)).collect(),
        }
    }
}

impl std::fmt::Display for BlockSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exactly(n) => write!(f, "blocks of {n} threads"),
            Self::UpTo(n) => write!(f, "every block size up to {n} threads"),
        }
    }
}

/// Blocks of `threads` threads, each thread with `registers` registers, that one SM holds at
/// once as far as registers, resident warps and resident blocks allow (the occupancy
/// calculator's rules in the module docs; shared memory not counted). 0 means such a block
/// cannot launch.
pub fn blocks_per_sm(limits: &SmLimits, registers: u32, threads: u32) -> u32 {
    let warp = u64::from(limits.warp_size.max(1));
    let warps = u64::from(threads).div_ceil(warp);
    if warps == 0 {
        return 0;
    }
    let by_warps = u64::from(limits.max_threads_per_sm) / warp / warps;
    let by_blocks = u64::from(limits.max_blocks_per_sm);
    let by_registers = blocks_by_registers(limits, registers, warps);
    let blocks = by_registers.min(by_warps).min(by_blocks);
    u32::try_from(blocks).unwrap_or(u32::MAX)
}

/// `cudaOccMaxBlocksPerSMRegsLimit` for blocks of `warps` warps.
fn blocks_by_registers(limits: &SmLimits, registers: u32, warps: u64) -> u64 {
    if registers > MAX_REGISTERS_PER_THREAD {
        return 0;
    }
    let unit = u64::from(REGISTER_ALLOCATION_UNIT);
    let per_warp = (u64::from(registers) * u64::from(limits.warp_size)).div_ceil(unit) * unit;
    if per_warp == 0 {
        return u64::MAX;
    }
    let parts = u64::from(SUB_PARTITIONS);
    let per_block = per_warp * warps;
    let per_block_as_checked = per_warp * warps.div_ceil(parts) * parts;
    let block_limit = u64::from(limits.registers_per_block);
    if per_block > block_limit || per_block_as_checked > block_limit {
        return 0;
    }
    let warps_per_part = u64::from(limits.registers_per_sm) / parts / per_warp;
    warps_per_part * parts / warps
}

/// Whether a kernel with `linked` registers per thread holds at least as many blocks per SM as
/// with `jit` registers, for every block size in `sizes`. Since shared memory is the same for
/// both, its limit can only lower both to the same bound: if this holds without it, it holds
/// with it.
pub fn keeps_occupancy(limits: &SmLimits, sizes: BlockSizes, jit: u32, linked: u32) -> bool {
    sizes
        .thread_counts(limits.warp_size)
        .into_iter()
        .all(|t| blocks_per_sm(limits, linked, t) >= blocks_per_sm(limits, jit, t))
}

/// The register caps above `jit` (the JIT's count) at which a kernel that spills when capped
/// at `jit` is linked again, in order: each the next multiple of the register step (8) above
/// the one before, up to [`MAX_REGISTERS_PER_THREAD`], ending before the first cap at which
/// the kernel would hold fewer blocks per SM than with `jit` registers (for some size in
/// `sizes`). Blocks per SM only fall as registers rise, so no later cap could keep them.
///
/// ```
/// use cuprum_runtime::cache::occupancy::{BlockSizes, SmLimits, raised_caps};
///
/// // 64 registers, 256-thread blocks: 4 blocks per SM up to 64 registers, 3 from 72 on.
/// assert_eq!(raised_caps(&SmLimits::SM80_SM90, BlockSizes::Exactly(256), 64), Vec::<u32>::new());
/// // 60 registers share their allocation with 64: one free step.
/// assert_eq!(raised_caps(&SmLimits::SM80_SM90, BlockSizes::Exactly(256), 60), vec![64]);
/// ```
pub fn raised_caps(limits: &SmLimits, sizes: BlockSizes, jit: u32) -> Vec<u32> {
    let step = limits.register_step();
    let mut caps = Vec::new();
    let mut cap = jit;
    loop {
        let next = (cap / step + 1) * step;
        if next > MAX_REGISTERS_PER_THREAD || !keeps_occupancy(limits, sizes, jit, next) {
            return caps;
        }
        caps.push(next);
        cap = next;
    }
}

/// What the driver gave one compiled kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelUse {
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`).
    pub registers: u32,
    /// Local memory per thread in bytes, spills included
    /// (`CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`).
    pub local_bytes: u32,
    /// The largest block it can be launched with (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub max_threads_per_block: u32,
}

/// Why a linked kernel is worse than the JIT's compile of it ([`judge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shortfall {
    /// More local memory per thread (the cap made it spill).
    Spills {
        /// Bytes from the JIT.
        jit: u32,
        /// Bytes from the linker.
        linked: u32,
    },
    /// It cannot be launched with blocks as large as the JIT's code can.
    SmallerBlocks {
        /// Threads the JIT's code allows.
        jit: u32,
        /// Threads the linked code allows.
        linked: u32,
    },
    /// Fewer resident blocks per SM for blocks of `threads` threads.
    FewerBlocks {
        /// The block size that loses.
        threads: u32,
        /// Blocks per SM with the JIT's registers.
        jit: u32,
        /// Blocks per SM with the linker's.
        linked: u32,
    },
    /// More registers than the JIT's, with the SM's limits unknown (so no occupancy to
    /// compare).
    MoreRegisters {
        /// Registers from the JIT.
        jit: u32,
        /// Registers from the linker.
        linked: u32,
    },
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Spills { jit, linked } => write!(
                f,
                "{linked} bytes of local memory per thread, {jit} from the JIT"
            ),
            Self::SmallerBlocks { jit, linked } => {
                write!(f, "blocks of at most {linked} threads, {jit} from the JIT")
            }
            Self::FewerBlocks {
                threads,
                jit,
                linked,
            } => write!(
                f,
                "{linked} blocks of {threads} threads per SM, {jit} from the JIT"
            ),
            Self::MoreRegisters { jit, linked } => write!(
                f,
                "{linked} registers, {jit} from the JIT (occupancy unknown)"
            ),
        }
    }
}

/// Whether `linked` (a kernel from the driver's linker) is as good as `jit` (the same kernel
/// from the JIT): no more local memory, blocks as large, and, over every block size in
/// `sizes`, at least as many resident blocks per SM ([`keeps_occupancy`]). More registers than
/// the JIT's are fine under that last rule; without the SM's limits (`None`) they are not.
pub fn judge(
    limits: Option<&SmLimits>,
    sizes: BlockSizes,
    jit: KernelUse,
    linked: KernelUse,
) -> Result<(), Shortfall> {
    if linked.local_bytes > jit.local_bytes {
        return Err(Shortfall::Spills {
            jit: jit.local_bytes,
            linked: linked.local_bytes,
        });
    }
    if linked.max_threads_per_block < jit.max_threads_per_block {
        return Err(Shortfall::SmallerBlocks {
            jit: jit.max_threads_per_block,
            linked: linked.max_threads_per_block,
        });
    }
    if linked.registers <= jit.registers {
        return Ok(());
    }
    let Some(limits) = limits else {
        return Err(Shortfall::MoreRegisters {
            jit: jit.registers,
            linked: linked.registers,
        });
    };
    for threads in sizes.thread_counts(limits.warp_size) {
        let (from_jit, from_linker) = (
            blocks_per_sm(limits, jit.registers, threads),
            blocks_per_sm(limits, linked.registers, threads),
        );
        if from_linker < from_jit {
            return Err(Shortfall::FewerBlocks {
                threads,
                jit: from_jit,
                linked: from_linker,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const H200: SmLimits = SmLimits::SM80_SM90;

    /// sm_86 (RTX 30xx, A10): 1536 threads and 16 blocks per SM.
    const SM86: SmLimits = SmLimits {
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        ..SmLimits::SM80_SM90
    };

    fn usage(registers: u32, local_bytes: u32, max_threads_per_block: u32) -> KernelUse {
        KernelUse {
            registers,
            local_bytes,
            max_threads_per_block,
        }
    }

    #[test]
    fn register_limited_blocks_match_the_calculator() {
        // Values the CUDA occupancy calculator gives for compute capability 9.0.
        // 128 threads: 80 registers -> 2560 per warp, 6 warps per sub-partition, 24 warps.
        assert_eq!(blocks_per_sm(&H200, 80, 128), 6);
        // 81..88 registers -> 2816 per warp, 5 warps per sub-partition, 20 warps.
        assert_eq!(blocks_per_sm(&H200, 81, 128), 5);
        assert_eq!(blocks_per_sm(&H200, 88, 128), 5);
        assert_eq!(blocks_per_sm(&H200, 96, 128), 5);
        assert_eq!(blocks_per_sm(&H200, 104, 128), 4);
        // 1024 threads (sgemm_tiled): 32 registers -> 2 blocks, 40 -> 1 (the 45 of the plain
        // linker's cubin cost one block, as measured).
        assert_eq!(blocks_per_sm(&H200, 32, 1024), 2);
        assert_eq!(blocks_per_sm(&H200, 40, 1024), 1);
        assert_eq!(blocks_per_sm(&H200, 45, 1024), 1);
        // 256 threads (sgemm_reg): 64 registers -> 4 blocks, 72 -> 3.
        assert_eq!(blocks_per_sm(&H200, 64, 256), 4);
        assert_eq!(blocks_per_sm(&H200, 72, 256), 3);
        // 64 registers, 1024 threads: exactly the per-block limit; 72 do not fit at all.
        assert_eq!(blocks_per_sm(&H200, 64, 1024), 1);
        assert_eq!(blocks_per_sm(&H200, 72, 1024), 0);
        // More than 255 registers never launch.
        assert_eq!(blocks_per_sm(&H200, 256, 32), 0);
    }

    #[test]
    fn warps_and_blocks_per_sm_limit_too() {
        // Few registers: 32 one-warp blocks (block limit), 2 blocks of 1024 (64 warps).
        assert_eq!(blocks_per_sm(&H200, 16, 32), 32);
        assert_eq!(blocks_per_sm(&H200, 16, 1024), 2);
        assert_eq!(blocks_per_sm(&H200, 0, 256), 8);
        // A partial warp counts as a whole one.
        assert_eq!(blocks_per_sm(&H200, 16, 33), 32);
        assert_eq!(blocks_per_sm(&H200, 16, 1000), 2);
        // sm_86: 48 warps, 16 blocks.
        assert_eq!(blocks_per_sm(&SM86, 16, 32), 16);
        assert_eq!(blocks_per_sm(&SM86, 16, 512), 3);
        assert_eq!(blocks_per_sm(&H200, 16, 0), 0);
    }

    #[test]
    fn the_per_block_check_rounds_warps_up_to_the_sub_partitions() {
        // 5 warps of 200 registers (6400 per warp): 32000 registers as allocated, but the
        // hardware check counts 8 warps (51200), still within 65536.
        assert_eq!(blocks_per_sm(&H200, 200, 160), 1);
        // 9 warps of 200 registers: 57600 as allocated, 12 warps = 76800 as checked: refused.
        assert_eq!(blocks_per_sm(&H200, 200, 288), 0);
    }

    #[test]
    fn the_register_step_is_eight() {
        assert_eq!(H200.register_step(), 8);
    }

    #[test]
    fn hgemm_mma_gets_no_raised_cap() {
        // bench_simt's hgemm_mma: 80 registers from the JIT, 128-thread blocks. 88 registers
        // hold 5 blocks per SM instead of 6: no cap above 80 keeps the occupancy.
        assert_eq!(
            raised_caps(&H200, BlockSizes::Exactly(128), 80),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn caps_step_by_the_allocation_unit_while_blocks_are_kept() {
        // 76 registers share the 80-register allocation: 80 is free, 88 is not.
        assert_eq!(raised_caps(&H200, BlockSizes::Exactly(128), 76), vec![80]);
        // 1024-thread blocks at 32 registers hold 2 blocks; 40 would hold 1.
        assert_eq!(
            raised_caps(&H200, BlockSizes::Exactly(1024), 32),
            Vec::<u32>::new()
        );
        // 128-thread blocks at 40 registers: 12 blocks (48 warps); 48 registers -> 10 warps
        // per sub-partition -> 10 blocks. None kept.
        assert_eq!(
            raised_caps(&H200, BlockSizes::Exactly(128), 40),
            Vec::<u32>::new()
        );
        // Occupancy bound by warps, not registers: 512-thread blocks at 32 registers hold 4
        // (64 warps); 40 registers -> 12 warps per sub-partition -> 48 warps -> 3 blocks.
        assert_eq!(
            raised_caps(&H200, BlockSizes::Exactly(512), 32),
            Vec::<u32>::new()
        );
        // Bound by the block limit: 32-thread blocks at 24 registers hold 32 (block limit);
        // up to 64 registers 32 warps still fit, so 32 blocks are kept up to 64.
        assert_eq!(
            raised_caps(&H200, BlockSizes::Exactly(32), 24),
            vec![32, 40, 48, 56, 64]
        );
        // One 32-thread block at 200 registers: 2 warps per sub-partition up to 256 per
        // thread, so every cap up to 255 keeps 8 blocks; the last cap is 248 (256 > 255).
        let caps = raised_caps(&H200, BlockSizes::Exactly(32), 200);
        assert_eq!(caps, vec![208, 216, 224, 232, 240, 248]);
        assert!(caps.iter().all(|&c| c <= MAX_REGISTERS_PER_THREAD));
    }

    #[test]
    fn a_range_of_block_sizes_must_keep_every_one() {
        // Exactly 32 threads keeps 32 blocks from 24 to 64 registers, but blocks of 64
        // threads lose at 40 (32 blocks at 24 and 32 registers, 24 at 40): up to 64 threads,
        // only 32 is free.
        assert_eq!(raised_caps(&H200, BlockSizes::UpTo(64), 24), vec![32]);
        // A kernel without bounds at 64 registers launches with up to 1024 threads (1 block);
        // 72 registers cannot launch 1024 threads at all.
        assert!(!keeps_occupancy(&H200, BlockSizes::UpTo(1024), 64, 72));
        assert!(keeps_occupancy(&H200, BlockSizes::UpTo(1024), 64, 60));
        assert!(keeps_occupancy(&H200, BlockSizes::UpTo(1024), 64, 64));
    }

    #[test]
    fn judge_keeps_what_is_no_worse_than_the_jit() {
        let sizes = BlockSizes::Exactly(128);
        let jit = usage(80, 0, 128);
        // The capped link's usual outcome: same or fewer registers, no spills.
        assert_eq!(judge(Some(&H200), sizes, jit, usage(80, 0, 128)), Ok(()));
        assert_eq!(judge(Some(&H200), sizes, jit, usage(72, 0, 128)), Ok(()));
        assert_eq!(judge(None, sizes, jit, usage(80, 0, 128)), Ok(()));
        // hgemm_mma's capped link: 80 registers and 24 bytes of spills.
        assert_eq!(
            judge(Some(&H200), sizes, jit, usage(80, 24, 128)),
            Err(Shortfall::Spills { jit: 0, linked: 24 })
        );
        // Raised to 88: no spills, but 5 blocks per SM instead of 6.
        assert_eq!(
            judge(Some(&H200), sizes, jit, usage(86, 0, 128)),
            Err(Shortfall::FewerBlocks {
                threads: 128,
                jit: 6,
                linked: 5
            })
        );
        // More registers within the same allocation: kept when the limits are known.
        let jit = usage(76, 0, 128);
        assert_eq!(judge(Some(&H200), sizes, jit, usage(80, 0, 128)), Ok(()));
        assert_eq!(
            judge(None, sizes, jit, usage(80, 0, 128)),
            Err(Shortfall::MoreRegisters {
                jit: 76,
                linked: 80
            })
        );
        // A kernel that could launch larger blocks from the JIT must keep them.
        let jit = usage(64, 0, 1024);
        assert_eq!(
            judge(Some(&H200), BlockSizes::UpTo(1024), jit, usage(64, 0, 768)),
            Err(Shortfall::SmallerBlocks {
                jit: 1024,
                linked: 768
            })
        );
        // Spills that the JIT's code has too are no reason to refuse.
        let jit = usage(255, 64, 256);
        assert_eq!(judge(Some(&H200), sizes, jit, usage(255, 64, 256)), Ok(()));
    }

    #[test]
    fn limits_of_a_device_need_every_attribute() {
        let mut device = crate::DeviceLimits::emulator();
        assert_eq!(SmLimits::of(&device), Some(SmLimits::SM80_SM90));
        device.max_blocks_per_sm = 0;
        assert_eq!(SmLimits::of(&device), None);
    }

    #[test]
    fn shortfalls_read_as_sentences() {
        let text = Shortfall::FewerBlocks {
            threads: 128,
            jit: 6,
            linked: 5,
        }
        .to_string();
        assert_eq!(text, "5 blocks of 128 threads per SM, 6 from the JIT");
        assert_eq!(
            BlockSizes::UpTo(768).to_string(),
            "every block size up to 768 threads"
        );
    }
}
