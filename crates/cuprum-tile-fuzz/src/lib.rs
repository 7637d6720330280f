//! Three-way differential testing of the tile track: one tile kernel, run by the tile
//! interpreter (`cuprum-tile-interp`, the tile IR's executable definition), and lowered
//! (`cuprum-tile-lower`), optimized (`cuprum-opt`) and run on a device through
//! `cuprum-runtime`: the emulator, or the GPU where `gpu-pack` runs the test binaries with
//! `CUPRUM_DEVICE=cuda`. The interpreter and the lowering never depend on each other; this
//! crate (dev-only) depends on both.
//!
//! * [`generate`](generate::generate) makes a random, valid, specialized tile program and
//!   its launch from a seed ([`Case`]): random element types, tile shapes of one to three
//!   axes (any size up to 40, and 64 to 256), tensors with ragged edge tiles in strided,
//!   transposed, reversed, broadcast or offset views, element-wise chains, comparisons,
//!   selects, casts and bitcasts, broadcasts, reshapes, permutations, iotas, constants,
//!   reductions (built-in and closures), `for` and `loop` with carried values, `break` and
//!   `continue`, `if` with results, early returns, scalar parameters, and loads of tiles
//!   outside the tensor. Every output bit it makes is defined by the tile IR and the same on
//!   every backend (see [`mod@generate`] for how).
//! * [`CaseBuilder`] builds a case by hand (the directed tests of `tests/ops.rs`: every
//!   operation on every element type): each parameter declared with its launch argument.
//! * [`Case::check`] and [`check_batch`] run the interpreter and the lowered kernel (on the
//!   emulator, also the kernel as the lowering emitted it, before the optimizer) with the
//!   outputs poisoned, and [`compare`](compare::compare) every element of every tensor's
//!   allocation; a failure names the seed, the step that failed and the first differing
//!   elements, and [`Case::report`] adds the printed tile IR and the tensors' views.
//! * [`shrink`](shrink::shrink) removes statements from a failing case while it keeps
//!   failing the same way.
//! * [`tensor`]: tensors as launches pass them, random views and values.

#![warn(missing_docs)]

pub mod build;
pub mod compare;
pub mod device;
pub mod generate;
pub mod interp;
pub mod shrink;
pub mod tensor;

use std::fmt;

use cuprum_ir::Constant;
use cuprum_runtime::{BackendKind, CudaContext};
use cuprum_tile_ir::{TileKernel, print_kernel};
use cuprum_tile_lower::LowerOptions;
use rayon::prelude::*;

pub use build::{CaseBuilder, InvalidCase};
pub use compare::{Mismatch, Tolerance};
pub use generate::{Config, generate};
pub use tensor::Tensor;

/// One argument of a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgData {
    /// A tensor parameter's tensor (an output's allocation starts poisoned).
    Tensor(Tensor),
    /// A scalar parameter's value.
    Scalar(Constant),
}

/// A kernel and one launch of it.
#[derive(Clone, Debug)]
pub struct Case {
    /// The seed it was made from (0 for hand-written cases).
    pub seed: u64,
    /// The specialized tile kernel.
    pub kernel: TileKernel,
    /// One argument per parameter.
    pub args: Vec<ArgData>,
    /// The grid (what `cuprum_tile_ir::grid_of` gives for the partitioned tensors).
    pub grid: [u32; 3],
    /// How far float results may differ between backends.
    pub tolerance: Tolerance,
    /// Options of the lowering (the number of warps, say).
    pub options: LowerOptions,
}

impl Case {
    /// The case lowered for what a launch knows of its tensors (their
    /// `cuprum_tile_lower::TensorFacts`, as the tile launch computes them; allocations start
    /// 16-byte aligned), so that the code without run-time tests is what runs.
    pub fn with_tensor_facts(mut self) -> Case {
        let extents = cuprum_tile_lower::access_extents(&self.kernel);
        self.options.tensor_facts = extents
            .iter()
            .zip(&self.args)
            .map(|(extents, arg)| match arg {
                ArgData::Tensor(t) => cuprum_tile_lower::TensorFacts::of(
                    u64::from(t.elem.size_bytes()),
                    0,
                    t.offset,
                    &t.shape,
                    &t.strides,
                    extents,
                ),
                ArgData::Scalar(_) => cuprum_tile_lower::TensorFacts::default(),
            })
            .collect();
        self
    }
}

/// Which trap stopped a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapClass {
    /// An integer division or remainder by zero.
    DivideByZero,
    /// A signed `MIN / -1` or `MIN % -1`.
    DivideOverflow,
    /// A failed assertion (or a `for` step that is not positive).
    Assert,
    /// A trap on a GPU, whose class the driver does not report.
    Unknown,
}

impl TrapClass {
    /// Whether two backends' traps are the same (a GPU's is any).
    pub fn matches(self, other: TrapClass) -> bool {
        self == other || self == TrapClass::Unknown || other == TrapClass::Unknown
    }
}

/// Why a run did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The launch trapped, as the tile IR says it must (its stores are then unspecified).
    Trap(TrapClass),
    /// Anything else: an error of a backend, which is a bug somewhere.
    Failed(String),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Trap(c) => write!(f, "a trap ({c:?})"),
            Fault::Failed(why) => write!(f, "a failure: {why}"),
        }
    }
}

/// What a run left: the final bytes of every tensor argument's allocation (empty for a
/// scalar), or why it did not complete.
pub type Outcome = Result<Vec<Vec<u8>>, Fault>;

/// Why a case failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The step that failed: `"interpreter"`, `"compile"`, or the comparison
    /// (`"interpreter vs emulator"`, ...).
    pub what: String,
    /// What went wrong.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.detail)
    }
}

impl Case {
    /// The interpreter's outcome.
    pub fn reference(&self) -> Outcome {
        interp::interpret(self).0
    }

    /// Checks this case alone on `ctx` (see [`check_batch`]).
    pub fn check(&self, ctx: &CudaContext) -> Result<(), Failure> {
        check_batch(ctx, std::slice::from_ref(self))
            .pop()
            .unwrap_or(Ok(()))
    }

    /// A report of this case for a person: the seed, the failure, the launch, every
    /// argument and the tile IR.
    pub fn report(&self, failure: &dyn fmt::Display) -> String {
        let mut args = String::new();
        for (p, a) in self.kernel.params.iter().zip(&self.args) {
            let what = match a {
                ArgData::Tensor(t) => t.describe(),
                ArgData::Scalar(c) => c.to_string(),
            };
            args.push_str(&format!("  {}: {what}\n", p.name));
        }
        format!(
            "tile fuzz seed {}: {failure}\ngrid {:?}, lowering options {:?}\narguments:\n{args}tile IR:\n{}",
            self.seed,
            self.grid,
            self.options,
            print_kernel(&self.kernel)
        )
    }
}

/// Checks `cases` on `ctx`: for each, the interpreter's outcome (which must not be a
/// failure: the programs are valid), the lowering (which must accept it, with PTX for sm_80
/// and sm_90), and the lowered kernel on `ctx` compared with the interpreter; on the
/// emulator also the kernel before the optimizer. On a GPU the kernels load as one module.
/// One result per case, in order.
pub fn check_batch(ctx: &CudaContext, cases: &[Case]) -> Vec<Result<(), Failure>> {
    let device = match ctx.backend() {
        BackendKind::Emulator => "emulator",
        BackendKind::Cuda => "GPU",
    };
    // The interpreter and the compiler, case by case in parallel.
    let prepared: Vec<(Outcome, Result<device::Compiled, String>)> = cases
        .par_iter()
        .map(|case| (case.reference(), device::compile(case, &case.options)))
        .collect();
    let mut results: Vec<Result<(), Failure>> = Vec::with_capacity(cases.len());
    let mut runnable = Vec::new();
    for (case, (reference, compiled)) in cases.iter().zip(prepared) {
        if let Err(Fault::Failed(why)) = &reference {
            results.push(Err(Failure {
                what: "interpreter".into(),
                detail: why.clone(),
            }));
            continue;
        }
        match compiled {
            Ok(c) => {
                runnable.push((results.len(), case, c, reference));
                results.push(Ok(()));
            }
            Err(why) => results.push(Err(Failure {
                what: "compile".into(),
                detail: why,
            })),
        }
    }
    let mut variants = vec![(true, format!("interpreter vs {device}"))];
    if ctx.backend() == BackendKind::Emulator {
        variants.push((
            false,
            "interpreter vs emulator, kernel before the optimizer".into(),
        ));
    }
    for (optimized, what) in variants {
        let batch: Vec<(&Case, &device::Compiled)> =
            runnable.iter().map(|(_, case, c, _)| (*case, c)).collect();
        let outcomes = device::run_batch(ctx, &batch, optimized);
        for ((i, case, _, reference), got) in runnable.iter().zip(outcomes) {
            if results[*i].is_err() {
                continue;
            }
            if let Err(m) = compare::compare(case, reference, &got) {
                results[*i] = Err(Failure {
                    what: what.clone(),
                    detail: m.to_string(),
                });
            }
        }
    }
    results
}
