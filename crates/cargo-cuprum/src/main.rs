//! The `cargo-cuprum` binary, which cargo runs for `cargo cuprum ...`; all of the work is in
//! the library (`cargo_cuprum`), so that it can be tested and documented.

fn main() -> std::process::ExitCode {
    cargo_cuprum::main_with_args(std::env::args_os())
}
