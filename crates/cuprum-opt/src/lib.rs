//! cuprum's IR optimizer: a flat, named list of passes over kernel IR, run in one function
//! ([`optimize_kernel`]), between the front ends and the back ends.
//!
//! The PTX writer is a table from IR operation to PTX instruction and the front end emits
//! IR naively (the same address computed many times, constants left for later, a bounds
//! check before every access, small arrays in local memory). ptxas cleans much of that up,
//! but not all: it cannot keep a local array in registers through our address arithmetic,
//! and every instruction we emit is one it has to see through. These passes give it clean,
//! typed IR. The emulator runs the same optimized IR as the PTX writer, so the test suite
//! checks the passes on every kernel it runs.
//!
//! The passes, in order ([`PASSES`]):
//!
//! | pass | what it does |
//! |---|---|
//! | [`fold`] | constant folding, algebraic identities, constant branches, unreachable code |
//! | [`hoist`] | constants, parameters, addresses and index registers move to the top |
//! | [`vars`] | a read of a variable whose value is already in hand becomes that value |
//! | [`cse`] | one definition per pure operation and operands in each dominating position |
//! | [`unroll`] | short counted loops (the front end's array copies) become straight code |
//! | [`unroll_dynamic`] | other counted loops run four iterations per trip, then the rest |
//! | [`fold`], [`hoist`], [`vars`], [`cse`] | again, on the unrolled copies |
//! | [`conditions`] | drops tests already decided by a dominating branch, by value ranges, or by the kernel's launch requirements |
//! | [`narrow`] | 64-bit index arithmetic whose result fits in 32 bits is done in 32 bits |
//! | [`divide`] | integer divisions and remainders by constants become multiply-highs and shifts |
//! | [`fold`] | cleans up after `conditions`, `narrow` and `divide` |
//! | [`promote`] | local arrays accessed only at constant positions become variables |
//! | [`fold`], [`hoist`], [`vars`], [`cse`] | once more, on what promotion exposed |
//! | [`checks`] | bounds checks move ahead of the loads and stores they guard and out of branches |
//! | [`vectorize`] | consecutive aligned global loads and stores become 8- and 16-byte vector accesses |
//! | [`strength`] | addresses computed from a loop's counter become pointers advanced with it |
//! | [`rebase`] | addresses at a constant distance from an earlier one, or a multiple of one value, become that one plus the constant or a step |
//! | [`dce`] | definitions, variable writes and empty branches nothing needs |
//!
//! Every pass preserves the semantics documented in `cuprum_ir::kernel`, bit for bit: it
//! never changes a value a thread computes, an access to memory or another lane, a trap or
//! an error the emulator reports, except for reads of memory that was never written (whose
//! contents the IR leaves unspecified) and, in a launch that fails anyway, which of several
//! failures is reported (a failed check can be found before a shared-memory race, see
//! [`checks`]; lanes of one warp failing checks in different iterations can be reported in
//! another order, see [`unroll_dynamic`]) and what a launch that traps leaves in the global
//! memory it writes, which the IR leaves unspecified (a check can move above global stores,
//! see [`checks`]). A launch that succeeds behaves exactly the same. In debug builds (and so
//! in tests) the validator runs after every pass and a pass that breaks an invariant panics
//! with its name: that is a bug in the pass. In release builds an invalid result is discarded and the kernel is left as
//! the front end made it.
//!
//! Passes share analyses through one context ([`analyses::Analyses`]), which the runner drops
//! after every pass that changed the kernel.
//!
//! This crate depends only on `cuprum-ir`.

#![warn(missing_docs)]

pub mod analyses;
pub mod checks;
pub mod conditions;
pub mod cse;
pub mod dce;
pub mod divide;
mod eval;
mod facts;
pub mod fold;
pub mod hoist;
mod ir;
pub mod narrow;
pub mod promote;
pub mod rebase;
mod relations;
pub mod strength;
pub mod trace;
pub mod unroll;
pub mod unroll_dynamic;
pub mod vars;
pub mod vectorize;

use analyses::Analyses;
use cuprum_ir::{Kernel, Module, print_kernel, validate_kernel};

/// A named pass: rewrites a kernel in place and says whether it changed anything.
#[derive(Clone, Copy, Debug)]
pub struct Pass {
    /// The pass's name, used in debug-build validation failures and in tests.
    pub name: &'static str,
    /// Runs the pass once over a kernel, with the analyses the passes before it left
    /// ([`Analyses`]); returns `true` if it changed anything (the runner then drops the
    /// analyses). Must preserve the kernel's meaning and leave it valid.
    pub run: fn(&mut Kernel, &mut Analyses) -> bool,
}

/// A [`Pass`] named `name` that runs `run` (keeps [`PASSES`] one line per pass).
const fn pass(name: &'static str, run: fn(&mut Kernel, &mut Analyses) -> bool) -> Pass {
    Pass { name, run }
}

/// The passes [`optimize_kernel`] runs, in order (see the crate docs).
pub const PASSES: &[Pass] = &[
    pass("fold", |k, _| fold::run(k)),
    pass("hoist", |k, _| hoist::run(k)),
    pass("vars", |k, _| vars::run(k)),
    pass("cse", |k, _| cse::run(k)),
    pass("unroll", |k, _| unroll::run(k)),
    pass("unroll_dynamic", |k, _| unroll_dynamic::run(k)),
    pass("fold", |k, _| fold::run(k)),
    pass("hoist", |k, _| hoist::run(k)),
    pass("vars", |k, _| vars::run(k)),
    pass("cse", |k, _| cse::run(k)),
    pass("conditions", conditions::run_with),
    pass("narrow", narrow::run_with),
    pass("divide", divide::run_with),
    pass("fold", |k, _| fold::run(k)),
    pass("promote", promote::run_with),
    pass("fold", |k, _| fold::run(k)),
    pass("hoist", |k, _| hoist::run(k)),
    pass("vars", |k, _| vars::run(k)),
    pass("cse", |k, _| cse::run(k)),
    pass("checks", checks::run_with),
    pass("vectorize", vectorize::run_with),
    pass("strength", strength::run_with),
    pass("rebase", rebase::run_with),
    pass("dce", |k, _| dce::run(k)),
];

/// Optimizes every kernel of `module` (see [`optimize_kernel`]).
pub fn optimize(module: &mut Module) {
    for kernel in &mut module.kernels {
        optimize_kernel(kernel);
    }
}

/// Runs [`PASSES`] on `kernel`. A kernel that does not validate is left alone.
pub fn optimize_kernel(kernel: &mut Kernel) {
    run_passes(kernel, PASSES);
}

/// Runs `passes` in order on `kernel`, validating after each one in debug builds (see the
/// crate docs); returns whether any changed the kernel. A kernel that does not validate
/// before is left alone.
pub fn run_passes(kernel: &mut Kernel, passes: &[Pass]) -> bool {
    let trace = trace::Trace::from_env().filter(|t| t.wants(&kernel.name));
    run_passes_traced(kernel, passes, trace, &mut |line| eprintln!("{line}"))
}

/// [`run_passes`], telling `log` what `trace` asks for (nothing when `None`): one line per pass (its time and
/// whether it changed the kernel) and, with [`trace::Trace::ir`], the IR before the passes and
/// after each pass that changed it.
pub fn run_passes_traced(
    kernel: &mut Kernel,
    passes: &[Pass],
    trace: Option<&trace::Trace>,
    log: &mut dyn FnMut(&str),
) -> bool {
    if validate_kernel(kernel).is_err() {
        return false;
    }
    let ir_too = trace.is_some_and(|t| t.ir);
    if ir_too {
        log(&format!(
            "cuprum-opt: `{}` before the passes:\n{}",
            kernel.name,
            print_kernel(kernel)
        ));
    }
    let original = kernel.clone();
    let mut changed = false;
    let mut analyses = Analyses::new();
    for (i, pass) in passes.iter().enumerate() {
        let started = std::time::Instant::now();
        let this = (pass.run)(kernel, &mut analyses);
        if this {
            analyses.invalidate();
        }
        changed |= this;
        if trace.is_some() {
            log(&format!(
                "cuprum-opt: `{}` pass {i} `{}`: {:.3} ms, {}",
                kernel.name,
                pass.name,
                started.elapsed().as_secs_f64() * 1e3,
                if this { "changed" } else { "unchanged" }
            ));
            if this && ir_too {
                log(&print_kernel(kernel).to_string());
            }
        }
        if cfg!(debug_assertions)
            && let Err(e) = validate_kernel(kernel)
        {
            // A broken invariant is a bug in the pass, never an input problem: fail loudly
            // where tests run.
            panic!(
                "cuprum-opt: pass `{}` produced invalid IR: {e}\n{}\nbefore the passes:\n{}",
                pass.name,
                print_kernel(kernel),
                print_kernel(&original)
            );
        }
    }
    // Values numbered in program order, for people reading the IR and the PTX.
    ir::compact(kernel);
    if validate_kernel(kernel).is_err() {
        *kernel = original;
        return false;
    }
    changed
}
