//! `cargo cuprum run` and `cargo cuprum test`: cargo, with `CUPRUM_DEVICE` set for the child
//! process, and `test --both` running the suite on the emulator and then on the GPU.
//!
//! Nothing is built here: cargo builds and runs, this only chooses the backend and reports.
//! The cargo binary is the one that ran us (`$CARGO`), else `cargo` from `PATH`.

use std::ffi::OsString;
use std::process::{Command, ExitCode};

use cuprum_runtime::DEVICE_ENV_VAR;
use cuprum_runtime::diagnostics::{self, GpuStatus};

use crate::cli::{DeviceArg, RunArgs, TestArgs};

/// The cargo to run: `$CARGO` (set by cargo for its subcommands), else `cargo`.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"))
}

/// The child command `cargo <subcommand> [--release] <args>`, with `CUPRUM_DEVICE` set when
/// `device` is given.
pub fn cargo_command(
    subcommand: &str,
    device: Option<DeviceArg>,
    release: bool,
    args: &[OsString],
) -> Command {
    let mut command = Command::new(cargo());
    command.arg(subcommand);
    if release {
        command.arg("--release");
    }
    command.args(args);
    if let Some(device) = device {
        command.env(DEVICE_ENV_VAR, device.env_value());
    }
    command
}

/// Runs `command` and says whether it succeeded.
fn status(mut command: Command) -> Result<bool, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    command
        .status()
        .map(|s| s.success())
        .map_err(|e| format!("could not run {program}: {e}"))
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `cargo cuprum run`.
pub fn run(args: &RunArgs) -> Result<ExitCode, String> {
    status(cargo_command("run", args.device, args.release, &args.args)).map(exit)
}

/// Why there is no GPU to test on, or `None` when there is one.
pub fn no_gpu_reason(gpus: &GpuStatus) -> Option<String> {
    match gpus {
        GpuStatus::Found(list) if !list.is_empty() => None,
        GpuStatus::Found(_) => Some("the driver lists no device".to_owned()),
        GpuStatus::NoDriver => Some("no NVIDIA driver library, libcuda, was found".to_owned()),
        GpuStatus::NoDevice { detail } => Some(format!("the driver sees no device: {detail}")),
        GpuStatus::Failed { detail } => Some(format!("the driver does not work: {detail}")),
    }
}

/// `cargo cuprum test`: one run, or with `--both` the emulator then the GPU.
pub fn test(args: &TestArgs) -> Result<ExitCode, String> {
    if !args.both {
        return status(cargo_command("test", args.device, args.release, &args.args)).map(exit);
    }
    eprintln!("cargo cuprum: testing on the CPU emulator ({DEVICE_ENV_VAR}=emu)");
    let emu_ok = status(cargo_command(
        "test",
        Some(DeviceArg::Emu),
        args.release,
        &args.args,
    ))?;
    let gpu = match no_gpu_reason(&diagnostics::gpus()) {
        Some(reason) => Err(reason),
        None => {
            eprintln!("cargo cuprum: testing on the GPU ({DEVICE_ENV_VAR}=cuda)");
            Ok(status(cargo_command(
                "test",
                Some(DeviceArg::Cuda),
                args.release,
                &args.args,
            ))?)
        }
    };
    let verdict = |ok: bool| if ok { "passed" } else { "FAILED" };
    println!("\ncargo cuprum test --both:");
    println!("  emulator: {}", verdict(emu_ok));
    let gpu_ok = match gpu {
        Ok(ok) => {
            println!("  GPU:      {}", verdict(ok));
            ok
        }
        Err(reason) => {
            println!(
                "  GPU:      not run: no GPU on this machine ({reason}); only the emulator ran"
            );
            true
        }
    };
    Ok(exit(emu_ok && gpu_ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_gets_the_device_and_the_arguments() {
        let args = [OsString::from("-p"), OsString::from("x")];
        let command = cargo_command("test", Some(DeviceArg::Emu), true, &args);
        let argv: Vec<_> = command.get_args().collect();
        assert_eq!(argv, ["test", "--release", "-p", "x"]);
        let envs: Vec<_> = command.get_envs().collect();
        assert_eq!(
            envs,
            [(
                std::ffi::OsStr::new(DEVICE_ENV_VAR),
                Some(std::ffi::OsStr::new("emu"))
            )]
        );
        let command = cargo_command("run", None, false, &[]);
        assert_eq!(command.get_envs().count(), 0);
    }

    #[test]
    fn no_gpu_is_explained() {
        assert!(
            no_gpu_reason(&GpuStatus::NoDriver).is_some_and(|r| r.contains("no NVIDIA driver"))
        );
        assert!(no_gpu_reason(&GpuStatus::Found(vec![])).is_some());
    }
}
