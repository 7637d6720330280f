//! A differential fuzzer for cuprum's back end: random kernels, run four ways, compared bit
//! for bit.
//!
//! [`generate`](generate::generate) makes a random [`Program`] from a seed: integer and float
//! arithmetic on every scalar type, casts between all of them, divergent control flow
//! (nested branches on thread-dependent conditions, counted loops with thread-dependent trip
//! counts, `break`, `continue`, early `return`), local arrays, shared-memory exchanges between
//! barriers, warp shuffles, votes and reductions where the whole warp is present, and
//! atomics whose results do not depend on the order threads run. The program is the
//! generator's own small language ([`program`]), which
//! * [`lower`](lower::lower) turns into IR with `cuprum_ir`'s builder, and
//! * [`reference`](reference::run) evaluates on the host, thread by thread in plain Rust
//!   ([`scalar`] holds its arithmetic), an independent definition of what the IR means.
//!
//! A [`Case`] is one seed's program, its IR before and after `cuprum_opt`, and its inputs.
//! Its outcomes ([`Outcome`]: the final bytes of every buffer) are compared:
//! * on the host: the reference against the emulator ([`emulate`]), before and after the
//!   optimizer ([`Case::check_on_host`]); the PTX writer must accept the kernel for sm_80 and
//!   sm_90;
//! * on a device: [`device::run_batch`] runs many cases' kernels as one module through
//!   `cuprum_runtime` (the CUDA driver, or the runtime's emulator), and the results are held
//!   to the host reference (the `gpu_fuzz` example).
//!
//! Every comparison is exact: a [`Mismatch`] names the buffer and the first elements that
//! differ.

#![warn(missing_docs)]

pub mod campaign;
pub mod device;
pub mod generate;
mod inputs;
pub mod lower;
pub mod program;
pub mod reduce;
pub mod reference;
pub mod scalar;
pub mod stats;

use std::fmt;

use cuprum_emu::{ArgValue, EmuError, LaunchDims, Memory};
use cuprum_ir::{Kernel, ScalarType};

pub use generate::{Config, Level, generate};
pub use inputs::{Fault, Inputs, Outcome, TrapClass, random_bits};
pub use program::Program;

/// How a kernel takes the program's slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceArgs {
    /// As IR slice parameters (the kernel `lower` made, optimized or not).
    Slice,
    /// As two `U64` parameters each, address then length: how the PTX writer lays them
    /// out, so what a kernel imported from that PTX takes.
    AddressAndLength,
}

/// Runs `kernel` (the IR of `program`, optimized or not) on the emulator on `inputs`.
pub fn emulate(kernel: &Kernel, program: &Program, inputs: &Inputs) -> Outcome {
    emulate_as(kernel, program, inputs, SliceArgs::Slice)
}

/// [`emulate`], the slices passed as `slices` says.
pub fn emulate_as(
    kernel: &Kernel,
    program: &Program,
    inputs: &Inputs,
    slices: SliceArgs,
) -> Outcome {
    let mem = Memory::new();
    let mut args = Vec::with_capacity(program.params.len());
    let mut bases = Vec::new();
    let fail = |e: EmuError| Fault::Invalid(format!("emulator: {e}"));
    for (i, bytes) in inputs.buffers.iter().enumerate() {
        if matches!(program.params[i], program::Param::Scalar(_)) {
            args.push(ArgValue::Scalar(inputs.scalars[i]));
            continue;
        }
        let base = mem.alloc(bytes.len().max(1)).map_err(fail)?;
        mem.write(base, bytes).map_err(fail)?;
        bases.push((i, base));
        let len = u64::from(program.buffer_len(i as u32));
        match slices {
            SliceArgs::Slice => args.push(ArgValue::Slice { base, len }),
            SliceArgs::AddressAndLength => {
                args.push(ArgValue::Scalar(base));
                args.push(ArgValue::Scalar(len));
            }
        }
    }
    let dims = LaunchDims {
        grid: [program.grid, 1, 1],
        block: [program.block, 1, 1],
        dynamic_shared_bytes: 0,
    };
    cuprum_emu::launch(&mem, kernel, dims, &args).map_err(|e| classify(&e))?;
    let mut out: Vec<Vec<u8>> = vec![Vec::new(); program.params.len()];
    for (i, base) in bases {
        let mut bytes = vec![0u8; inputs.buffers[i].len()];
        mem.read(base, &mut bytes).map_err(fail)?;
        out[i] = bytes;
    }
    Ok(out)
}

/// The fault an emulator error stands for: traps by class, anything else invalid.
pub fn classify(e: &EmuError) -> Fault {
    match e {
        EmuError::BoundsCheck { .. } => Fault::Trap(TrapClass::Bounds),
        EmuError::DivideByZero { .. } => Fault::Trap(TrapClass::DivideByZero),
        other => Fault::Invalid(format!("emulator: {other}")),
    }
}

/// Where two outcomes differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// One failed differently from the other (or only one failed).
    Fault {
        /// The first outcome's fault, or `None` if it succeeded.
        left: Option<Fault>,
        /// The second outcome's.
        right: Option<Fault>,
    },
    /// Buffer `param` differs; the first few differing elements, as (index, left bits,
    /// right bits).
    Data {
        /// The parameter index of the buffer.
        param: usize,
        /// Its element type.
        elem: ScalarType,
        /// How many elements differ.
        count: usize,
        /// The first differing elements.
        first: Vec<(usize, u64, u64)>,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Fault { left, right } => {
                write!(f, "outcomes differ: {left:?} versus {right:?}")
            }
            Mismatch::Data {
                param,
                elem,
                count,
                first,
            } => {
                write!(f, "buffer p{param} ({elem}): {count} element(s) differ:")?;
                for (i, a, b) in first {
                    write!(f, " [{i}] {a:#x} vs {b:#x};")?;
                }
                Ok(())
            }
        }
    }
}

/// Compares two outcomes of `program` bit for bit. Two traps of the same class are equal
/// (memory after a trap is unspecified).
pub fn compare(program: &Program, left: &Outcome, right: &Outcome) -> Result<(), Mismatch> {
    let (l, r) = match (left, right) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(Fault::Trap(a)), Err(Fault::Trap(b))) if a == b => return Ok(()),
        _ => {
            return Err(Mismatch::Fault {
                left: left.as_ref().err().cloned(),
                right: right.as_ref().err().cloned(),
            });
        }
    };
    for (param, (a, b)) in l.iter().zip(r).enumerate() {
        if a == b {
            continue;
        }
        let elem = match program.params[param] {
            program::Param::Buffer { elem, .. } => elem,
            program::Param::Scalar(t) => t,
        };
        let size = elem.size_bytes() as usize;
        let word = |bytes: &[u8], i: usize| {
            let mut w = [0u8; 8];
            let chunk = bytes.get(i * size..(i + 1) * size).unwrap_or(&[]);
            w[..chunk.len()].copy_from_slice(chunk);
            u64::from_le_bytes(w)
        };
        let n = a.len().max(b.len()) / size;
        let differing: Vec<usize> = (0..n).filter(|&i| word(a, i) != word(b, i)).collect();
        return Err(Mismatch::Data {
            param,
            elem,
            count: differing.len(),
            first: differing
                .iter()
                .take(4)
                .map(|&i| (i, word(a, i), word(b, i)))
                .collect(),
        });
    }
    Ok(())
}

/// One seed's kernel, ready to run anywhere.
#[derive(Clone, Debug)]
pub struct Case {
    /// The seed it was made from.
    pub seed: u64,
    /// The generated program.
    pub program: Program,
    /// Its IR, as lowered.
    pub kernel: Kernel,
    /// Its IR after `cuprum_opt`'s passes.
    pub optimized: Kernel,
    /// The launch's arguments.
    pub inputs: Inputs,
}

/// Why [`Case::check_on_host`] failed.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Which comparison failed ("reference vs emulator", ...).
    pub what: String,
    /// The difference, or the error.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.detail)
    }
}

impl Case {
    /// The case of `seed`: its program (kernel `fuzz_<seed>`), IR, optimized IR and inputs.
    pub fn new(seed: u64, cfg: &Config) -> Result<Self, lower::LowerError> {
        let program = generate(seed, cfg, &format!("fuzz_{seed}"));
        let kernel = lower::lower(&program)?;
        let mut optimized = kernel.clone();
        cuprum_opt::optimize_kernel(&mut optimized);
        let inputs = Inputs::random(&program, seed);
        Ok(Self {
            seed,
            program,
            kernel,
            optimized,
            inputs,
        })
    }

    /// The case of another program (a shrink candidate) on this case's seed and inputs:
    /// `None` if it does not lower.
    pub fn with_program(&self, program: &Program) -> Option<Case> {
        let kernel = lower::lower(program).ok()?;
        let mut optimized = kernel.clone();
        cuprum_opt::optimize_kernel(&mut optimized);
        Some(Case {
            seed: self.seed,
            program: program.clone(),
            kernel,
            optimized,
            inputs: self.inputs.clone(),
        })
    }

    /// The host reference's outcome.
    pub fn reference(&self) -> Outcome {
        reference::run(&self.program, &self.inputs)
    }

    /// Compares, on the host: the reference with the emulator running the kernel before and
    /// after the optimizer; with `ptx`, also writes the PTX of both for sm_80 and sm_90. A
    /// program the reference finds invalid is a failure (a generator bug). Returns the
    /// reference outcome.
    pub fn check_on_host(&self, ptx: bool) -> Result<Outcome, Failure> {
        let expected = self.reference();
        if let Err(Fault::Invalid(why)) = &expected {
            return Err(Failure {
                what: "the host reference".into(),
                detail: format!("the generated program is invalid: {why}"),
            });
        }
        for (what, kernel) in [
            ("reference vs emulator", &self.kernel),
            ("reference vs emulator after cuprum_opt", &self.optimized),
        ] {
            let got = emulate(kernel, &self.program, &self.inputs);
            compare(&self.program, &expected, &got).map_err(|m| Failure {
                what: what.into(),
                detail: m.to_string(),
            })?;
        }
        if ptx {
            for kernel in [&self.kernel, &self.optimized] {
                let module = cuprum_ir::Module {
                    kernels: vec![kernel.clone()],
                };
                for target in [cuprum_ptx::Target::Sm80, cuprum_ptx::Target::Sm90] {
                    cuprum_ptx::write_module(&module, target).map_err(|e| Failure {
                        what: format!("the PTX writer ({})", target.name()),
                        detail: e.to_string(),
                    })?;
                }
            }
        }
        Ok(expected)
    }

    /// A report of this case for a person: seed, launch, the IR and what failed.
    pub fn describe(&self, failure: &dyn fmt::Display) -> String {
        format!(
            "seed {}: {failure}\nlaunch: {} block(s) of {} threads\nIR:\n{}",
            self.seed,
            self.program.grid,
            self.program.block,
            cuprum_ir::print_module(&cuprum_ir::Module {
                kernels: vec![self.kernel.clone()],
            })
        )
    }
}
