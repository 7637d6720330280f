//! cuprum's PTX importer: PTX text that cuprum did not write (hand-written, or nvcc's output
//! for plain kernels) as cuprum's kernel IR, so that the CPU emulator runs it as it runs
//! cuprum's own kernels, with its checks (every access inside a live allocation, races,
//! barriers). The runtime's external modules (`Module::from_ptx`) load PTX through it on the
//! emulator; on a GPU the driver compiles the PTX itself.
//!
//! # What it reads
//!
//! `.entry` kernels with scalar and pointer parameters (`.u32`, `.f32`, `.u64 .ptr`, ...),
//! `.reg` declarations, static and dynamic (`.extern .shared`) shared arrays, a thread's
//! `.local` arrays (nvcc's stack, addressed as `.local`), labels and
//! branches, and the instructions of plain kernels: `ld`/`st` (`.param`, `.global` and
//! generic as global, `.shared`, `.local`; scalar and `.v2`/`.v4`; cache qualifiers
//! ignored), `mov`
//! (also packing and unpacking `{a, b}`),
//! `cvta.to.global`, integer and float `add`, `sub`, `mul` (`.lo`, `.hi`, `.wide`), `mad`,
//! `fma`, `div`, `rem`, `min`, `max`, `neg`, `abs`, `and`, `or`, `xor`, `not`, `shl`, `shr`,
//! `popc`, `clz`, `brev`, `copysign`, `setp` (every comparison, `p|q`, `.and`/`.or`/`.xor`),
//! `selp`, `cvt` (to integers in every rounding; `.rz` from integers and `f64`), `add.rz`,
//! `sqrt`, `rsqrt`, `rcp`, `ex2`, `lg2`, `sin`, `cos`, `tanh`, `bar.sync 0`, `membar`/`fence`,
//! `atom` and `red` (`.add`, `.min`, `.max`, `.exch`, `.cas`, `.and`, `.or`, `.xor`),
//! `shfl.sync` and `vote.sync` (member mask `-1`, or a register taken to name the lanes that
//! execute together; a shuffle's `p` result too), `trap`, `ret` and `exit`, each under an
//! optional guard (`@p`, `@!p`); predicate operands may be negated (`!p`). The special registers `%tid`,
//! `%ntid`, `%ctaid`, `%nctaid` (`.x`, `.y`, `.z`), `%laneid` and `WARP_SZ`.
//!
//! Everything else is refused with an [`ImportError`] naming the line and what is missing
//! (device functions, generic addresses of local or shared memory, constant and global
//! variables, warp operations over part of a warp, textures, tensor-core instructions,
//! directed rounding but `.rz` additions and conversions):
//! nothing is run that the importer does not model.
//!
//! # Semantics
//!
//! Each register is an IR variable holding its bits; an instruction reads its operands as
//! its type (reinterpreting, or truncating and zero-extending bits as PTX does for
//! registers wider or narrower than the type), computes as the PTX ISA defines, and writes
//! its result's bits. Where the ISA leaves a result unspecified, it is made definite: an
//! integer division by zero gives all ones (`rem`: the dividend), `MIN / -1` wraps. Shifts
//! clamp their amount at the width, as PTX does. `.ftz` flushes `f32` subnormal inputs and
//! results to zeros of their sign, `.sat` clamps float results to `[0, 1]` (NaN to 0). The
//! approximate instructions (`.approx`: `rcp`, `sqrt`, `rsqrt`, `ex2`, `lg2`, `sin`, `cos`,
//! `tanh`, `div.approx`/`div.full`) compute the correctly rounded result, which lies within
//! the ISA's error bounds of what a GPU computes: results of such kernels may differ from
//! the GPU's in their last bits. A `trap` stops the kernel with a typed error naming its line.
//!
//! The importer is held to the PTX writer: random kernels of the fuzzer, written as PTX and
//! imported back, give the host reference's results (`cuprum-fuzz`'s `ptx_round_trip` test;
//! every kernel the writer makes imports).
//!
//! Control flow: the basic blocks become one loop; each pass runs, for the lanes at it, the
//! first block (in an order where no block can be reached from one after it but through a
//! loop's back edge, and every block of a loop comes before the blocks it exits to) that a
//! lane of the warp is at, found with votes; a branch sets the lanes' block counter. So
//! lanes that branch apart wait for each other where their paths join and at a loop's exit,
//! which is where a GPU reconverges them, and a `bar.sync` that every thread reaches in CUDA
//! is reached by each whole warp together here too (an irreducible graph keeps the text's
//! order). A kernel without branches is emitted straight.

#![warn(missing_docs)]

mod lower;
mod order;
mod syntax;

/// Why PTX could not be imported: the line and what was wrong or is not modelled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("PTX line {line}: {message}")]
pub struct ImportError {
    /// The line of the PTX text (1 is the first).
    pub line: usize,
    /// What was wrong, or what the importer does not model.
    pub message: String,
}

impl ImportError {
    fn new(line: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            message: message.into(),
        }
    }
}

/// The kernels (`.entry`s) of `ptx` as a kernel IR module, validated.
pub fn import(ptx: &str) -> Result<cuprum_ir::Module, ImportError> {
    let parsed = syntax::parse(ptx)?;
    let kernels = parsed
        .entries
        .iter()
        .map(|e| lower::kernel(e, &parsed.shared))
        .collect::<Result<Vec<_>, _>>()?;
    let module = cuprum_ir::Module { kernels };
    cuprum_ir::validate_module(&module).map_err(|e| {
        ImportError::new(
            1,
            format!("the imported kernels are not valid IR ({e}); this is a bug of the importer"),
        )
    })?;
    Ok(module)
}
