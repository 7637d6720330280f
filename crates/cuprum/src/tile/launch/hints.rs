//! Tuning hints of tile kernels, in cuTile Rust's shape: an entry's
//! `optimization_hints = (sm_90 = (num_worker_warps_per_cta = 16, occupancy = 4), ..)` and a
//! launch's `.compile_options(CompileOptions::default().occupancy(4))`. The hints for the
//! device a launch runs on ([`CompileOptions::for_target`]) become the lowering's options:
//! warps per block and the blocks per multiprocessor the PTX compiler must leave room for.
//! They change no result, so both backends lower a kernel with the same hints the same way;
//! like the tensors' facts, they are part of the specialization key.

use cuprum_tile_lower::LowerOptions;

/// Options of a tile kernel's compilation (cuTile Rust's `CompileOptions`): hints, which
/// change no result. cuprum honours `num_worker_warps_per_cta` (warps per block; cuprum's
/// lowering otherwise chooses), `occupancy` (blocks per multiprocessor: the PTX compiler
/// keeps registers within what that many blocks leave each thread) and `num_cta_in_cga`
/// (blocks per cluster: the Hopper GEMM recipe runs pairs of blocks sharing B's tiles
/// with 2, single blocks with 1; other kernels run no clusters). It accepts
/// `max_divisibility` (cuprum specializes on what each launch's tensors are, see
/// `cuprum_tile_lower::TensorFacts`) and ignores it.
///
/// ```
/// use cuprum::tile::tile_kernel::CompileOptions;
/// let options = CompileOptions::default().occupancy(4).num_worker_warps_per_cta(16);
/// assert_eq!(options.get_occupancy(), Some(4));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    occupancy: Option<u32>,
    num_worker_warps_per_cta: Option<u32>,
    num_cta_in_cga: Option<u32>,
    max_divisibility: Option<u32>,
}

impl CompileOptions {
    /// No hints: the lowering chooses.
    pub const fn new() -> Self {
        Self {
            occupancy: None,
            num_worker_warps_per_cta: None,
            num_cta_in_cga: None,
            max_divisibility: None,
        }
    }

    /// Fit `blocks` blocks on one multiprocessor at once (1 to 32).
    pub const fn occupancy(mut self, blocks: u32) -> Self {
        self.occupancy = Some(blocks);
        self
    }

    /// `warps` warps per block (a power of two, 1 to 32).
    pub const fn num_worker_warps_per_cta(mut self, warps: u32) -> Self {
        self.num_worker_warps_per_cta = Some(warps);
        self
    }

    /// Blocks per cluster: 2 runs the Hopper GEMM recipe's tiles in pairs of blocks that
    /// share B's tiles (TMA multicast), 1 runs single blocks; kernels of other shapes run
    /// no clusters.
    pub const fn num_cta_in_cga(mut self, blocks: u32) -> Self {
        self.num_cta_in_cga = Some(blocks);
        self
    }

    /// The most divisibility the compiler may assume: accepted and ignored (cuprum
    /// specializes on what each launch's tensors are).
    pub const fn max_divisibility(mut self, divisor: u32) -> Self {
        self.max_divisibility = Some(divisor);
        self
    }

    /// The occupancy hint, if any.
    pub const fn get_occupancy(&self) -> Option<u32> {
        self.occupancy
    }

    /// The warps-per-block hint, if any.
    pub const fn get_num_worker_warps_per_cta(&self) -> Option<u32> {
        self.num_worker_warps_per_cta
    }

    /// These options, with `base`'s where these have none (a launch's options over its
    /// entry's hints).
    pub(crate) fn over(self, base: CompileOptions) -> CompileOptions {
        CompileOptions {
            occupancy: self.occupancy.or(base.occupancy),
            num_worker_warps_per_cta: self
                .num_worker_warps_per_cta
                .or(base.num_worker_warps_per_cta),
            num_cta_in_cga: self.num_cta_in_cga.or(base.num_cta_in_cga),
            max_divisibility: self.max_divisibility.or(base.max_divisibility),
        }
    }

    /// The hints of an entry's `optimization_hints` table for `target` (`"sm_90"`): that
    /// target's, each missing hint taken from the `default` entry.
    pub(crate) fn for_target(table: &[(&str, CompileOptions)], target: &str) -> CompileOptions {
        let find = |key: &str| {
            table
                .iter()
                .find(|(t, _)| *t == key)
                .map(|(_, o)| *o)
                .unwrap_or_default()
        };
        find(target).over(find("default"))
    }

    /// The lowering's options for these hints (the tensors' facts are added by the launch).
    pub(crate) fn lower_options(&self) -> LowerOptions {
        LowerOptions {
            num_warps: self.num_worker_warps_per_cta,
            occupancy: self.occupancy,
            cluster_blocks: self.num_cta_in_cga,
            ..LowerOptions::default()
        }
    }
}

/// The PTX target name of a device of compute capability `(major, minor)`: the key its
/// hints are found under (`"sm_90"`).
pub(crate) fn target_key((major, minor): (u32, u32)) -> String {
    format!("sm_{major}{minor}")
}
