//! The command line's grammar (clap derive): every command, option and its help text.
//!
//! Kept apart from what the commands do so that `--help` reads as a whole and parsing is
//! tested without running anything. Cargo runs a subcommand `cargo-X` as `cargo-X X args`;
//! [`Cli::parse_from_cargo`] drops that repeated `cuprum`, so the binary also works when run
//! directly (`cargo-cuprum doctor`).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// `cargo cuprum`: scaffold, check, inspect and run cuprum GPU kernel projects.
#[derive(Debug, Parser)]
#[command(name = "cargo-cuprum", bin_name = "cargo cuprum", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses `args` as the process received them (program name first), with or without the
    /// `cuprum` that cargo inserts after it.
    pub fn parse_from_cargo<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        if args.get(1).is_some_and(|a| a == "cuprum") {
            args.remove(1);
        }
        Self::try_parse_from(args)
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new project with a GPU kernel, a program that prints PASSED and a test.
    New(NewArgs),
    /// Report the driver, GPUs, emulator and compile cache; fail on a real problem.
    Doctor,
    /// Print the IR and/or PTX of a crate's kernels, without building the crate.
    Emit(EmitArgs),
    /// `cargo run` on a chosen backend.
    Run(RunArgs),
    /// `cargo test` on a chosen backend, or on the emulator and then the GPU (`--both`).
    Test(TestArgs),
}

/// `cargo cuprum new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The package name (also the folder name, unless --dir is given).
    pub name: String,
    /// Create the project in this folder instead of ./NAME (it must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Depend on cuprum through this path to its `crates/cuprum` folder [default: the cuprum
    /// repository this cargo-cuprum was built from].
    #[arg(long, value_name = "PATH", conflicts_with = "cuprum_version")]
    pub cuprum_path: Option<PathBuf>,
    /// Depend on this version of cuprum from the registry instead of a path.
    #[arg(long, value_name = "VERSION")]
    pub cuprum_version: Option<String>,
}

/// A PTX target for `emit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// Ampere (A100, RTX 30xx) and newer.
    #[value(name = "sm_80")]
    Sm80,
    /// Hopper (H100, H200).
    #[value(name = "sm_90")]
    Sm90,
    /// Hopper with its architecture-specific instructions (`wgmma`, `setmaxnreg`): tile
    /// kernels lowered as a launch on an H100 or H200 lowers them.
    #[value(name = "sm_90a")]
    Sm90a,
}

impl TargetArg {
    /// The PTX writer's target.
    pub fn target(self) -> cuprum_ptx::Target {
        match self {
            Self::Sm80 => cuprum_ptx::Target::Sm80,
            Self::Sm90 => cuprum_ptx::Target::Sm90,
            Self::Sm90a => cuprum_ptx::Target::Sm90a,
        }
    }
}

/// `cargo cuprum emit`.
#[derive(Debug, Args)]
#[command(
    after_help = "Generic kernels have code only per specialization: name one with \
    --kernel 'scale::<f32, 4>' (arguments in declaration order) or with --kernel scale \
    --specialize T=f32,N=4. Without one, `emit` says which parameters the kernel takes."
)]
pub struct EmitArgs {
    /// Only this kernel, by its function name; for a generic kernel, one specialization,
    /// written as in Rust: `NAME::<f32, 4>`.
    #[arg(long, value_name = "NAME[::<ARGS>]")]
    pub kernel: Option<String>,
    /// The specialization of the generic kernel named by --kernel, by parameter name:
    /// `T=f32,N=4` (types: bool, i8..i64, u8..u64, f16, bf16, f32, f64; consts: integers,
    /// true/false).
    #[arg(long, value_name = "PARAM=VALUE,...", requires = "kernel")]
    pub specialize: Option<String>,
    /// Print the front end's IR and its PTX as they are, before the optimizer passes that the
    /// runtime runs on every module.
    #[arg(long)]
    pub no_opt: bool,
    /// Print the IR (with neither --ir nor --ptx, both are printed).
    #[arg(long)]
    pub ir: bool,
    /// Print the PTX (with neither --ir nor --ptx, both are printed).
    #[arg(long)]
    pub ptx: bool,
    /// The PTX target.
    #[arg(long, value_enum, default_value = "sm_90")]
    pub target: TargetArg,
    /// A package folder, a workspace folder or one `.rs` file [default: .].
    pub path: Option<PathBuf>,
}

/// Where kernels run (`CUPRUM_DEVICE` for the child process).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// A GPU when there is one, else the CPU emulator.
    Auto,
    /// The GPU; fail without one.
    Cuda,
    /// The CPU emulator.
    Emu,
}

impl DeviceArg {
    /// The `CUPRUM_DEVICE` value.
    pub fn env_value(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cuda => "cuda",
            Self::Emu => "emu",
        }
    }
}

/// `cargo cuprum run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Where kernels run [default: CUPRUM_DEVICE as set, else auto].
    #[arg(long, value_enum)]
    pub device: Option<DeviceArg>,
    /// Build with optimizations (`cargo run --release`).
    #[arg(long)]
    pub release: bool,
    /// Passed to `cargo run` unchanged (a second `--` reaches the program).
    #[arg(last = true, value_name = "CARGO_ARGS")]
    pub args: Vec<OsString>,
}

/// `cargo cuprum test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Where kernels run [default: CUPRUM_DEVICE as set, else auto].
    #[arg(long, value_enum, conflicts_with = "both")]
    pub device: Option<DeviceArg>,
    /// Run the suite on the emulator, then on the GPU if there is one, and report both.
    #[arg(long)]
    pub both: bool,
    /// Build with optimizations (`cargo test --release`).
    #[arg(long)]
    pub release: bool,
    /// Passed to `cargo test` unchanged (a second `--` reaches the test harness).
    #[arg(last = true, value_name = "CARGO_ARGS")]
    pub args: Vec<OsString>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_from_cargo(args.iter().copied())
    }

    #[test]
    fn cargo_style_and_direct_invocations_agree() {
        for args in [
            &["cargo-cuprum", "cuprum", "new", "demo"][..],
            &["cargo-cuprum", "new", "demo"][..],
        ] {
            match parse(args).map(|c| c.command) {
                Ok(Command::New(n)) => assert_eq!(n.name, "demo"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn options_parse() {
        match parse(&[
            "c", "cuprum", "emit", "--kernel", "k", "--target", "sm_80", "x.rs",
        ]) {
            Ok(Cli {
                command: Command::Emit(e),
            }) => {
                assert_eq!(e.kernel.as_deref(), Some("k"));
                assert_eq!(e.target, TargetArg::Sm80);
                assert_eq!(e.path, Some(PathBuf::from("x.rs")));
                assert!(!e.ir && !e.ptx);
            }
            other => panic!("{other:?}"),
        }
        match parse(&[
            "c",
            "cuprum",
            "test",
            "--both",
            "--",
            "-p",
            "x",
            "--",
            "--nocapture",
        ]) {
            Ok(Cli {
                command: Command::Test(t),
            }) => {
                assert!(t.both);
                assert_eq!(t.args, ["-p", "x", "--", "--nocapture"]);
            }
            other => panic!("{other:?}"),
        }
        match parse(&["c", "run", "--device", "emu", "--release"]) {
            Ok(Cli {
                command: Command::Run(r),
            }) => {
                assert_eq!(r.device, Some(DeviceArg::Emu));
                assert!(r.release && r.args.is_empty());
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["c", "test", "--both", "--device", "cuda"]).is_err());
        assert!(parse(&["c", "emit", "--target", "sm_70"]).is_err());
        match parse(&["c", "cuprum", "emit", "--target", "sm_90a"]) {
            Ok(Cli {
                command: Command::Emit(e),
            }) => assert_eq!(e.target.target(), cuprum_ptx::Target::Sm90a),
            other => panic!("{other:?}"),
        }
        // --specialize names the specialization of the kernel given by --kernel.
        assert!(parse(&["c", "emit", "--specialize", "T=f32"]).is_err());
        match parse(&[
            "c",
            "emit",
            "--kernel",
            "k",
            "--specialize",
            "T=f32",
            "--no-opt",
        ]) {
            Ok(Cli {
                command: Command::Emit(e),
            }) => {
                assert_eq!(e.specialize.as_deref(), Some("T=f32"));
                assert!(e.no_opt);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            parse(&[
                "c",
                "new",
                "x",
                "--cuprum-path",
                "p",
                "--cuprum-version",
                "1"
            ])
            .is_err()
        );
    }
}
