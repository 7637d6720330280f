//! Launches: checks a launch against the kernel and the GPU's limits, prepares what every
//! thread needs (value types, argument bits, memory layouts, a snapshot of device memory),
//! spreads the blocks over the CPU cores with rayon and schedules the warps of each block
//! around its barriers.
//!
//! Inside a block, warps run one after another on one CPU thread: each runs until it finishes
//! or stops at a barrier; when all have stopped, the scheduler checks that every warp still
//! running waits at the same barrier statement, starts a new race-tracking epoch and resumes
//! them. Blocks share nothing but global memory, so they run in parallel.
//!
//! The first failure stops the launch: blocks after the failing one stop at their next loop
//! back edge or never start, blocks before it run to the end, and the error of the lowest
//! failing block is returned, so which error a faulty launch reports does not depend on timing
//! (unless blocks race on global memory).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use cuprum_ir::{
    ArrayDecl, Kernel, ParamKind, ScalarType, array_layout, array_layout_size, validate_kernel,
};
use rayon::prelude::*;

use crate::access::{Ctx, Ports};
use crate::error::{Dim3, EmuError};
use crate::memory::{GlobalView, Memory};
use crate::ops::Lanes;
use crate::printf::Sink;
use crate::shared::SharedMem;
use crate::warp::{Exec, Stop, Warp};

pub use cuprum_ir::{MAX_LOCAL_BYTES, MAX_SHARED_BYTES};
/// Most threads in one block.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// One argument of a launch, matching one [`cuprum_ir::Param`], in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgValue {
    /// A scalar's bits, zero-extended to 64 bits (as [`cuprum_ir::Constant`]).
    Scalar(u64),
    /// A slice: device address of the first element and length in elements.
    Slice {
        /// The device address of the first element, aligned to the element size and inside
        /// one live allocation (not checked when `len` is 0).
        base: u64,
        /// The number of elements (not bytes).
        len: u64,
    },
}

/// Grid and block shape of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks in the grid along `x`, `y` and `z`: each at least 1, at most
    /// `[2^31 - 1, 65535, 65535]`.
    pub grid: [u32; 3],
    /// Threads in each block along `x`, `y` and `z`: each at least 1, at most
    /// `[1024, 1024, 64]`, with a product of at most [`MAX_THREADS_PER_BLOCK`] (and within
    /// the kernel's launch bounds).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block, placed after the static shared arrays; the
    /// total must stay within [`MAX_SHARED_BYTES`].
    pub dynamic_shared_bytes: u32,
}

/// Everything about a launch that all blocks share.
pub(crate) struct Launch<'k> {
    pub(crate) kernel: &'k Kernel,
    /// Type of every value, by value index.
    pub(crate) types: Vec<ScalarType>,
    /// Per parameter: `[bits, 0]` for a scalar, `[base, len]` for a slice.
    pub(crate) params: Vec<[u64; 2]>,
    pub(crate) shared_offsets: Vec<u32>,
    pub(crate) dyn_shared_offset: u32,
    pub(crate) shared_size: u32,
    pub(crate) local_offsets: Vec<u32>,
    pub(crate) local_size: u32,
    pub(crate) grid: Dim3,
    pub(crate) block: Dim3,
    pub(crate) threads: u32,
    pub(crate) warps: u32,
    /// `threadIdx.{x,y,z}` of every lane of every warp (`warps * 32` entries each).
    pub(crate) thread_index: [Vec<u32>; 3],
    pub(crate) global: GlobalView,
    /// Where device `printf` text goes (stdout, or the launching thread's capture).
    pub(crate) prints: Sink,
    /// Lowest block index that failed so far (`u64::MAX`: none).
    first_failed: AtomicU64,
    error: Mutex<Option<(u64, EmuError)>>,
}

impl Launch<'_> {
    /// `[x, y, z]` of block-linear thread index `t`.
    #[inline]
    pub(crate) fn thread_coords(&self, t: u32) -> Dim3 {
        let [bx, by, _] = self.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }

    fn block_coords(&self, b: u64) -> Dim3 {
        let [gx, gy, _] = self.grid.map(u64::from);
        [
            (b % gx) as u32,
            ((b / gx) % gy) as u32,
            (b / (gx * gy)) as u32,
        ]
    }

    /// Whether a block before `block_linear` has failed, so this one should stop.
    #[inline]
    pub(crate) fn stopped(&self, block_linear: u64) -> bool {
        self.first_failed.load(Relaxed) < block_linear
    }

    fn fail(&self, block_linear: u64, error: EmuError) {
        self.first_failed.fetch_min(block_linear, Relaxed);
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|(b, _)| block_linear < *b) {
            *slot = Some((block_linear, error));
        }
    }
}

/// Per-worker state, reused from block to block.
struct BlockState<'k> {
    warps: Vec<Warp<'k>>,
    at_barrier: Vec<Option<usize>>,
    done: Vec<bool>,
    regs: Vec<Lanes>,
    vars: Vec<Lanes>,
    shared: SharedMem,
    local: Vec<u8>,
    hint: usize,
}

impl<'k> BlockState<'k> {
    fn new(launch: &Launch<'k>) -> Self {
        let w = launch.warps as usize;
        Self {
            warps: (0..w).map(|_| Warp::new()).collect(),
            at_barrier: vec![None; w],
            done: vec![false; w],
            regs: vec![[0; 32]; w * launch.types.len()],
            vars: vec![[0; 32]; w * launch.kernel.vars.len()],
            shared: SharedMem::new(),
            local: vec![0; w * 32 * launch.local_size as usize],
            hint: 0,
        }
    }
}

fn run_block<'k>(
    launch: &Launch<'k>,
    st: &mut BlockState<'k>,
    block_linear: u64,
) -> Result<(), EmuError> {
    let block_idx = launch.block_coords(block_linear);
    let nwarps = launch.warps as usize;
    let nvalues = launch.types.len();
    let nvars = launch.kernel.vars.len();
    let local_per_warp = 32 * launch.local_size as usize;
    for (w, warp) in st.warps.iter_mut().enumerate() {
        let first = w as u32 * 32;
        let n = (launch.threads - first).min(32);
        let valid = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        warp.reset(&launch.kernel.body.stmts, valid);
    }
    st.done.fill(false);
    st.vars.fill([0; 32]);
    st.local.fill(crate::memory::POISON);
    st.shared.begin_block(launch.shared_size);
    loop {
        for w in 0..nwarps {
            if st.done[w] {
                continue;
            }
            let mut exec = Exec {
                ctx: Ctx {
                    launch,
                    block_idx,
                    block_linear,
                    warp_index: w as u32,
                },
                regs: &mut st.regs[w * nvalues..(w + 1) * nvalues],
                vars: &mut st.vars[w * nvars..(w + 1) * nvars],
                mem: Ports {
                    shared: &mut st.shared,
                    local: &mut st.local[w * local_per_warp..(w + 1) * local_per_warp],
                    hint: &mut st.hint,
                },
            };
            match exec.run(&mut st.warps[w])? {
                Stop::Done => {
                    st.done[w] = true;
                    st.at_barrier[w] = None;
                }
                Stop::Barrier(id) => st.at_barrier[w] = Some(id),
                Stop::Aborted => return Ok(()),
            }
        }
        // Every warp not done now waits at a barrier: they must all wait at the same one.
        let mut waiting = (0..nwarps).filter(|&w| !st.done[w]);
        let Some(first) = waiting.next() else {
            return Ok(());
        };
        if let Some(other) = waiting.find(|&w| st.at_barrier[w] != st.at_barrier[first]) {
            let lane = st.warps[other].live().trailing_zeros();
            return Err(EmuError::BarrierDivergence {
                kernel: launch.kernel.name.clone(),
                block: block_idx,
                thread: launch.thread_coords(other as u32 * 32 + lane),
                message: format!(
                    "warp {first} (thread {:?}) waits at one barrier and warp {other} (this \
                     thread) at a different barrier statement; every thread of the block that \
                     has not returned must reach the same barrier",
                    launch
                        .thread_coords(first as u32 * 32 + st.warps[first].live().trailing_zeros())
                ),
            });
        }
        st.shared.next_epoch();
    }
}

/// `threadIdx` of every lane of every warp of a block, one table per dimension.
fn thread_index_tables(block: Dim3, warps: u32) -> [Vec<u32>; 3] {
    let [bx, by, _] = block;
    let n = warps * 32;
    [
        (0..n).map(|t| t % bx).collect(),
        (0..n).map(|t| (t / bx) % by).collect(),
        (0..n).map(|t| t / (bx * by)).collect(),
    ]
}

fn invalid_launch(kernel: &Kernel, message: String) -> EmuError {
    EmuError::InvalidLaunch {
        kernel: kernel.name.clone(),
        message,
    }
}

fn check_dims(kernel: &Kernel, dims: &LaunchDims) -> Result<(u32, u32), EmuError> {
    let LaunchDims { grid, block, .. } = *dims;
    if grid.contains(&0) || block.contains(&0) {
        return Err(invalid_launch(
            kernel,
            format!("grid {grid:?} and block {block:?} must have every dimension >= 1"),
        ));
    }
    if block[0] > 1024 || block[1] > 1024 || block[2] > 64 {
        return Err(invalid_launch(
            kernel,
            format!("block {block:?} exceeds the per-dimension limits [1024, 1024, 64]"),
        ));
    }
    if let Some((x, y, z)) = kernel.block
        && block != [x, y, z]
    {
        return Err(invalid_launch(
            kernel,
            format!("block {block:?} does not match the block [{x}, {y}, {z}] the kernel declares"),
        ));
    }
    let threads = block.iter().map(|&d| u64::from(d)).product::<u64>();
    if threads > u64::from(MAX_THREADS_PER_BLOCK) {
        return Err(invalid_launch(
            kernel,
            format!(
                "block {block:?} has {threads} threads; at most {MAX_THREADS_PER_BLOCK} are allowed"
            ),
        ));
    }
    if grid[0] > i32::MAX as u32 || grid[1] > 65535 || grid[2] > 65535 {
        return Err(invalid_launch(
            kernel,
            format!("grid {grid:?} exceeds the limits [2^31 - 1, 65535, 65535]"),
        ));
    }
    if let Some(b) = kernel.launch_bounds
        && threads > u64::from(b.max_threads)
    {
        return Err(invalid_launch(
            kernel,
            format!(
                "block of {threads} threads exceeds the kernel's launch bounds ({} threads)",
                b.max_threads
            ),
        ));
    }
    let threads = threads as u32;
    Ok((threads, threads.div_ceil(32)))
}

/// Layout of `arrays` after checking that the sizes cannot overflow.
fn layout(
    kernel: &Kernel,
    arrays: &[ArrayDecl],
    what: &str,
    limit: u32,
) -> Result<(Vec<u32>, u32), EmuError> {
    let total = array_layout_size(arrays);
    if total > u64::from(limit) {
        return Err(invalid_launch(
            kernel,
            format!("its static {what} arrays need {total} bytes; at most {limit} are available"),
        ));
    }
    Ok(array_layout(arrays))
}

fn check_args(
    kernel: &Kernel,
    args: &[ArgValue],
    global: &GlobalView,
) -> Result<Vec<[u64; 2]>, EmuError> {
    if args.len() != kernel.params.len() {
        return Err(EmuError::ArgumentCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            got: args.len(),
        });
    }
    let mut out = Vec::with_capacity(args.len());
    for (index, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let err = |message: String| EmuError::ArgumentMismatch {
            kernel: kernel.name.clone(),
            index,
            param: p.name.clone(),
            message,
        };
        match (p.kind, *a) {
            (ParamKind::Scalar(ty), ArgValue::Scalar(bits)) => {
                if !(cuprum_ir::Constant { ty, bits }).is_canonical() {
                    return Err(err(format!(
                        "the {ty} parameter got bits {bits:#x}, which do not fit in {} bits; \
                         pass the value zero-extended (e.g. `x as u32 as u64` for an i32)",
                        ty.bits()
                    )));
                }
                out.push([bits, 0]);
            }
            (ParamKind::Slice { elem, .. }, ArgValue::Slice { base, len }) => {
                let size = u64::from(elem.size_bytes());
                let Some(bytes) = len.checked_mul(size) else {
                    return Err(err(format!(
                        "slice length {len} of {elem} overflows the address space"
                    )));
                };
                if len > 0 {
                    if base % size != 0 {
                        return Err(err(format!(
                            "slice of {elem} at {base:#x} is not aligned to {size} bytes"
                        )));
                    }
                    if !global.contains(base, bytes) {
                        return Err(err(format!(
                            "slice of {len} {elem} ({bytes} bytes) at {base:#x} is not inside a \
                             live allocation (freed buffer, wrong length, or a host pointer)"
                        )));
                    }
                }
                out.push([base, len]);
            }
            (ParamKind::Scalar(ty), ArgValue::Slice { .. }) => {
                return Err(err(format!(
                    "the parameter is a {ty} scalar but a slice was passed"
                )));
            }
            (ParamKind::Slice { elem, .. }, ArgValue::Scalar(_)) => {
                return Err(err(format!(
                    "the parameter is a slice of {elem} but a scalar was passed"
                )));
            }
        }
    }
    Ok(out)
}

/// Runs `kernel` on the emulator over the grid `dims` with `args`, one per parameter.
///
/// Validates the kernel and the launch first (nothing runs if either is wrong), then runs every
/// block; returns the first error found (see the module docs for which one).
pub fn launch(
    memory: &Memory,
    kernel: &Kernel,
    dims: LaunchDims,
    args: &[ArgValue],
) -> Result<(), EmuError> {
    validate_kernel(kernel).map_err(|e| EmuError::InvalidKernel {
        kernel: kernel.name.clone(),
        message: e.message,
    })?;
    let (threads, warps) = check_dims(kernel, &dims)?;
    let (shared_offsets, static_shared) =
        layout(kernel, &kernel.shared, "shared", MAX_SHARED_BYTES)?;
    let shared_size = u64::from(static_shared) + u64::from(dims.dynamic_shared_bytes);
    if shared_size > u64::from(MAX_SHARED_BYTES) {
        return Err(invalid_launch(
            kernel,
            format!(
                "it needs {static_shared} bytes of static and {} of dynamic shared memory; at \
                 most {MAX_SHARED_BYTES} are available per block",
                dims.dynamic_shared_bytes
            ),
        ));
    }
    let (local_offsets, local_size) = layout(kernel, &kernel.locals, "local", MAX_LOCAL_BYTES)?;
    let global = memory.snapshot();
    let params = check_args(kernel, args, &global)?;
    let launch = Launch {
        kernel,
        types: kernel.values.iter().map(|(_, d)| d.ty).collect(),
        params,
        shared_offsets,
        dyn_shared_offset: static_shared,
        shared_size: shared_size as u32,
        local_offsets,
        local_size,
        grid: dims.grid,
        block: dims.block,
        threads,
        warps,
        thread_index: thread_index_tables(dims.block, warps),
        global,
        prints: Sink::current(),
        first_failed: AtomicU64::new(u64::MAX),
        error: Mutex::new(None),
    };

    let nblocks: u64 = dims.grid.iter().map(|&d| u64::from(d)).product();
    let workers = rayon::current_num_threads().max(1) as u64;
    let nchunks = nblocks.min(workers * 8);
    let per_chunk = nblocks.div_ceil(nchunks);
    // Block states are pooled so a chunk reuses the registers and trackers of an earlier one.
    let pool: Mutex<Vec<BlockState>> = Mutex::new(Vec::new());
    let run_chunk = |c: u64| {
        let reused = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut state = reused.unwrap_or_else(|| BlockState::new(&launch));
        let start = c * per_chunk;
        for b in start..(start + per_chunk).min(nblocks) {
            if launch.stopped(b) {
                break;
            }
            if let Err(e) = run_block(&launch, &mut state, b) {
                launch.fail(b, e);
                break;
            }
        }
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(state);
    };
    if nchunks == 1 {
        run_chunk(0);
    } else {
        (0..nchunks).into_par_iter().for_each(run_chunk);
    }
    let error = launch.error.into_inner().unwrap_or_else(|e| e.into_inner());
    match error {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}
