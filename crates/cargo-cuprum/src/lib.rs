//! `cargo cuprum`: the command line of cuprum projects.
//!
//! | command | what it does |
//! |---|---|
//! | `cargo cuprum new NAME` | scaffolds a project whose `cargo run` prints `PASSED` and whose `cargo test` checks its kernel against a CPU reference ([`new`]) |
//! | `cargo cuprum doctor` | reports the driver, the GPUs, the emulator and the compile cache; exits non-zero on a real problem ([`doctor`]) |
//! | `cargo cuprum emit` | prints the IR and PTX of a crate's kernels without building it, a generic kernel's as one named specialization (`--kernel 'NAME::<ARGS>'`) ([`emit`], [`specialize`]) |
//! | `cargo cuprum run` / `test` | `cargo run` / `cargo test` on a chosen backend; `test --both` on the emulator and the GPU ([`run`]) |
//!
//! Installed with `cargo install --path crates/cargo-cuprum`, the binary `cargo-cuprum` is
//! what cargo runs for `cargo cuprum ...` (as `cargo-cuprum cuprum ...`). The binary is a thin
//! shell over this library: the probing behind `doctor` lives in
//! `cuprum_runtime::diagnostics`, the compiling behind `emit` in `cuprum_front`, `cuprum_opt`
//! and `cuprum_ptx` ([`specialize`] reads a generic kernel's specialization off the command
//! line); this crate parses arguments, finds files, writes files and starts cargo.
//!
//! ```
//! use cargo_cuprum::cli::{Cli, Command};
//!
//! // cargo runs `cargo-cuprum cuprum emit --ir`; the extra `cuprum` is dropped.
//! let cli = Cli::parse_from_cargo(["cargo-cuprum", "cuprum", "emit", "--ir"])?;
//! assert!(matches!(cli.command, Command::Emit(ref e) if e.ir && !e.ptx));
//! # Ok::<(), clap::Error>(())
//! ```

#![warn(missing_docs)]

pub mod cli;
pub mod doctor;
pub mod emit;
pub mod emit_tile;
pub mod new;
pub mod run;
pub mod specialize;

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs the command line `args` (as the process received them) and returns the exit code;
/// errors are printed on stderr.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::Cli::parse_from_cargo(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with success; usage errors to stderr.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one parsed command.
pub fn dispatch(command: cli::Command) -> Result<ExitCode, String> {
    match command {
        cli::Command::New(args) => new::run(&args),
        cli::Command::Doctor => Ok(doctor::run()),
        cli::Command::Emit(args) => emit::run(&args),
        cli::Command::Run(args) => run::run(&args),
        cli::Command::Test(args) => run::test(&args),
    }
}
