//! `cargo cuprum doctor`: prints what `cuprum_runtime::diagnostics` finds and turns its
//! verdict into the exit code. Nothing is probed here, so that the probing stays testable in
//! the runtime and identical to what programs see.

use std::process::ExitCode;

use cuprum_runtime::diagnostics;

/// Probes the machine, prints the report on stdout and returns success unless there is a real
/// problem (a GPU below sm_80, a driver older than CUDA 12.0, an unwritable cache folder...).
/// A machine without a GPU is not a problem: the emulator runs the kernels there.
pub fn run() -> ExitCode {
    let report = diagnostics::diagnose();
    println!("cuprum doctor\n\n{report}");
    if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
