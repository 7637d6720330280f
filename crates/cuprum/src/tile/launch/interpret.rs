//! The emulator's second way to run a tile launch: the tile interpreter, on copies of the
//! emulated memory the launch's tensors live in (`Stream::run_on_host`).
//!
//! Emulating a lowered kernel runs every thread's every instruction, which a launch over
//! hundreds of megabytes (cuTile Rust's examples at their published sizes) would take hours
//! to do on a CPU; the interpreter computes whole tiles at once, `mma` at the CPU's FMA
//! speed. Both are defined to give the same bits (the interpreter is the tile IR's
//! definition, and the lowering is tested bit for bit against it), so the choice changes how
//! long a launch takes, never what it computes. `CUPRUM_TILE_EMULATION` chooses:
//!
//! * `auto` (the default): the interpreter when an argument tensor has more than
//!   [`AUTO_ELEMENTS`] elements, the lowered kernel otherwise (so tests at small sizes keep
//!   running what a GPU runs) and for `unsafe` entries' raw pointers (whose emulation
//!   reports races between scatters);
//! * `interpret`: the interpreter for every launch it can take;
//! * `lowered`: the lowered kernel always.
//!
//! A launch recorded into a graph is recorded as host work that each replay interprets again
//! (`Stream::host_work`). Launches whose written tensors share memory with another argument
//! (the interpreter writes each argument's copy back whole) always run the lowered kernel.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use cuprum_runtime::{BackendKind, HostRegion, HostWork, Stream};
use cuprum_tile_interp::{Arg, TensorArg, TensorData};
use cuprum_tile_ir::Constant;

use super::bind::{ArgDesc, TensorDesc};
use super::compile::Specialized;
use crate::tile::error::Error;

/// The environment variable that chooses how the emulator runs tile launches.
pub(crate) const EMULATION_ENV: &str = "CUPRUM_TILE_EMULATION";

/// Under `auto`, a launch with an argument tensor of more elements than this is interpreted.
pub(crate) const AUTO_ELEMENTS: usize = 1 << 20;

/// How the emulator runs tile launches (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Emulation {
    Auto,
    Interpret,
    Lowered,
}

/// The choice a value of `CUPRUM_TILE_EMULATION` makes (`None`: unset), or the value it
/// does not know.
fn parse_emulation(value: Option<&str>) -> Result<Emulation, String> {
    match value.map(str::trim) {
        None | Some("" | "auto") => Ok(Emulation::Auto),
        Some("interpret") => Ok(Emulation::Interpret),
        Some("lowered") => Ok(Emulation::Lowered),
        Some(other) => Err(other.to_owned()),
    }
}

/// The choice `CUPRUM_TILE_EMULATION` makes, read once; a value it does not know is an error
/// that names the three it does.
fn emulation() -> Result<Emulation, Error> {
    static CHOICE: OnceLock<Result<Emulation, String>> = OnceLock::new();
    CHOICE
        .get_or_init(|| parse_emulation(std::env::var(EMULATION_ENV).ok().as_deref()))
        .clone()
        .map_err(|value| Error::InvalidEmulation { value })
}

/// Tile launches the emulator has run in the tile interpreter in this process (what tests
/// of this route check it was taken).
static INTERPRETED: AtomicU64 = AtomicU64::new(0);

/// How many tile launches the emulator has run in the tile interpreter in this process.
pub fn interpreted_launches() -> u64 {
    INTERPRETED.load(Ordering::Relaxed)
}

/// Whether `stream`'s launch with `args` runs in the interpreter.
pub(crate) fn chosen(stream: &Stream, args: &[ArgDesc<'_>]) -> Result<bool, Error> {
    if stream.context().backend() != BackendKind::Emulator {
        return Ok(false);
    }
    let interpret = match emulation()? {
        Emulation::Lowered => false,
        Emulation::Interpret => true,
        // An `unsafe` entry's raw pointers stay with the lowered kernel, whose emulation
        // reports races between its scatters.
        Emulation::Auto => {
            !args.iter().any(|a| matches!(a, ArgDesc::Pointer { .. }))
                && args
                    .iter()
                    .filter_map(tensor_of)
                    .any(|t| t.shape.iter().product::<usize>() > AUTO_ELEMENTS)
        }
    };
    Ok(interpret && !shares_written_memory(args))
}

/// The tensor an argument is, if it is one.
fn tensor_of<'a>(arg: &'a ArgDesc<'a>) -> Option<&'a TensorDesc<'a>> {
    match arg {
        ArgDesc::Tensor { tensor, .. }
        | ArgDesc::Mapped { tensor, .. }
        | ArgDesc::Pointer { tensor } => Some(tensor),
        ArgDesc::RawPointer { .. } | ArgDesc::Scalar { .. } => None,
    }
}

/// Whether the interpreter writes `arg`'s tensor (a partitioned or mapped output, or a raw
/// pointer, which an `unsafe` entry may scatter through).
fn written(arg: &ArgDesc<'_>) -> bool {
    matches!(
        arg,
        ArgDesc::Tensor { tile: Some(_), .. } | ArgDesc::Mapped { .. } | ArgDesc::Pointer { .. }
    )
}

/// Whether a written argument's allocation is also another argument's.
fn shares_written_memory(args: &[ArgDesc<'_>]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        written(a)
            && tensor_of(a).is_some_and(|t| {
                args.iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .filter_map(|(_, b)| tensor_of(b))
                    .any(|u| u.address == t.address)
            })
    })
}

/// One argument as the interpreter takes it, owned (a recorded replay keeps it).
#[derive(Clone, Debug)]
enum Owned {
    Tensor {
        elem: cuprum_ir::ScalarType,
        shape: Vec<u64>,
        strides: Vec<i64>,
        offset: u64,
        write: bool,
    },
    Scalar(Constant),
}

/// A launch as the interpreter runs it: the specialized kernel, the grid and the arguments;
/// the tensors' bytes come from the copies of their allocations, one per tensor, in order.
struct Interpretation {
    kernel: Arc<Specialized>,
    grid: [u32; 3],
    args: Vec<Owned>,
}

impl Interpretation {
    /// Runs the launch on `copies`, writing the outputs' copies.
    fn run(
        &self,
        copies: &mut [Vec<u8>],
    ) -> Result<cuprum_tile_interp::Output, cuprum_tile_interp::InterpError> {
        let mut copies = copies.iter_mut();
        let mut args = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            args.push(match arg {
                Owned::Scalar(c) => Arg::Scalar(*c),
                Owned::Tensor {
                    elem,
                    shape,
                    strides,
                    offset,
                    write,
                } => {
                    // `launch` made one copy per tensor; an empty one stands in if not.
                    let bytes = copies.next().map_or(&mut [][..], |c| c.as_mut_slice());
                    Arg::Tensor(TensorArg {
                        elem: *elem,
                        shape: shape.clone(),
                        strides: strides.clone(),
                        offset: *offset,
                        data: if *write {
                            TensorData::Write(bytes)
                        } else {
                            TensorData::Read(bytes)
                        },
                    })
                }
            });
        }
        cuprum_tile_interp::run(&self.kernel.tile, &mut args, self.grid)
    }
}

/// Prints what an interpreted launch printed, as the emulator prints a kernel's `printf`s:
/// on stdout, when the launch ends.
fn print_output(output: &cuprum_tile_interp::Output) {
    let text = output.text();
    if !text.is_empty() {
        print!("{text}");
    }
}

/// Runs specialized `kernel` over `grid` with `args` in the tile interpreter, on `stream`:
/// each tensor's allocation copied out of the emulated memory, the written ones copied back.
/// On a graph's recording stream the launch is recorded, and each replay interprets it
/// again.
pub(crate) fn launch(
    kernel: &Arc<Specialized>,
    grid: (u32, u32, u32),
    stream: &Stream,
    args: &[ArgDesc<'_>],
) -> Result<(), Error> {
    let name = kernel.tile.name.clone();
    let mut regions = Vec::new();
    let mut owned = Vec::with_capacity(args.len());
    for arg in args {
        if let ArgDesc::Scalar { ty, bits } = *arg {
            owned.push(Owned::Scalar(Constant::new(ty, bits)));
            continue;
        }
        let Some(t) = tensor_of(arg) else {
            return Err(Error::Compile {
                kernel: name,
                specialization: String::new(),
                message: "a raw pointer was not placed in its allocation; this is a bug of \
                          the tile launch"
                    .to_owned(),
            });
        };
        let write = written(arg);
        regions.push(HostRegion {
            address: t.address,
            bytes: (t.alloc_len as u64).saturating_mul(u64::from(t.elem.size_bytes())),
            write,
        });
        owned.push(Owned::Tensor {
            elem: t.elem,
            shape: t.shape.iter().map(|&n| n as u64).collect(),
            strides: t
                .strides
                .iter()
                .map(|&s| i64::try_from(s).unwrap_or(i64::MAX))
                .collect(),
            offset: t.offset as u64,
            write,
        });
    }
    let interpretation = Interpretation {
        kernel: kernel.clone(),
        grid: [grid.0, grid.1, grid.2],
        args: owned,
    };
    if stream.is_recording() {
        let work: HostWork = Arc::new(move |copies: &mut [Vec<u8>]| {
            let output = interpretation.run(copies).map_err(|e| e.to_string())?;
            print_output(&output);
            Ok(())
        });
        // SAFETY: as below, for every replay: the graph holds the memory, and its replays
        // are ordered with other work on it like launches.
        unsafe { stream.host_work(&format!("tile kernel `{name}`"), regions, work) }?;
        INTERPRETED.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    let run = |copies: &mut [Vec<u8>]| {
        interpretation
            .run(copies)
            .map_err(|source| Error::Interpreted {
                kernel: name.clone(),
                source: Box::new(source),
            })
    };
    // SAFETY: the written regions are the allocations of partitioned and mapped outputs and
    // of raw pointers, which `bind::plan` checked no other argument shares and the launch
    // holds exclusively (the same promise the lowered kernel's launch relies on);
    // `shares_written_memory` kept the rest on the lowered route.
    let output = unsafe { stream.run_on_host(&regions, run) }?;
    INTERPRETED.fetch_add(1, Ordering::Relaxed);
    print_output(&output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three values, unset and empty as `auto`, spaces ignored; anything else refused.
    #[test]
    fn the_setting_reads_three_values() {
        assert_eq!(parse_emulation(None), Ok(Emulation::Auto));
        assert_eq!(parse_emulation(Some("")), Ok(Emulation::Auto));
        assert_eq!(parse_emulation(Some("auto")), Ok(Emulation::Auto));
        assert_eq!(
            parse_emulation(Some(" interpret ")),
            Ok(Emulation::Interpret)
        );
        assert_eq!(parse_emulation(Some("lowered")), Ok(Emulation::Lowered));
        assert_eq!(parse_emulation(Some("fast")), Err("fast".to_owned()));
        let message = Error::InvalidEmulation {
            value: "fast".to_owned(),
        }
        .to_string();
        assert!(
            message.contains("`fast`") && message.contains("`interpret`"),
            "{message}"
        );
    }
}
