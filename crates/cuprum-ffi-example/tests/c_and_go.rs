//! The example's C ABI from other languages: `c/main.c` built with the system's C compiler
//! and `go/main.go` built with Go through cgo, both against the `cdylib` this crate builds and
//! the committed header, then run (on the backend `CUPRUM_DEVICE` selects: the emulator in
//! CI). Each program checks every element against its own arithmetic and the error path,
//! and prints PASSED. A missing `cc` or `go` skips its case with a note, unless
//! `CUPRUM_REQUIRE_FFI_TOOLCHAINS=1` (CI sets it) makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// The folder with `libcuprum_ffi_example.so`: the test binary's own (`target/<profile>/deps`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe.parent().expect("the test's folder").to_path_buf();
    let lib = dir.join(format!(
        "{}cuprum_ffi_example{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(lib.exists(), "the cdylib is not at {}", lib.display());
    dir
}

/// Whether `tool` runs; when it does not, the case is skipped unless toolchains are required.
fn have(tool: &str, version_arg: &str) -> bool {
    let found = Command::new(tool)
        .arg(version_arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CUPRUM_REQUIRE_FFI_TOOLCHAINS").as_deref() != Ok("1"),
            "`{tool}` is needed (CUPRUM_REQUIRE_FFI_TOOLCHAINS=1): install it (Debian: gcc, golang-go)"
        );
        eprintln!(
            "note: `{tool}` not found: skipped (set CUPRUM_REQUIRE_FFI_TOOLCHAINS=1 to fail)"
        );
    }
    found
}

/// Runs `cmd`, panicking with its output unless it succeeds; returns its stdout.
fn run(mut cmd: Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A command running the built program `exe` with the library from `lib`: `cargo test` puts
/// `target/<profile>` on the library path, whose copy of the library may be an older build
/// (`cargo build` leaves one there), and the path comes before the program's rpath.
fn program(exe: &Path, lib: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib);
    cmd
}

/// A scratch folder for one case's builds, next to the test binary.
fn scratch(name: &str, lib: &Path) -> PathBuf {
    let dir = lib.join(format!("ffi-{name}"));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

#[test]
fn a_c_program_calls_the_kernels() {
    if !have("cc", "--version") {
        return;
    }
    let lib = library_dir();
    let exe = scratch("c", &lib).join("saxpy");
    let mut cc = Command::new("cc");
    cc.args([
        "-std=c11",
        "-O2",
        "-Wall",
        "-Werror",
        "-ffp-contract=off",
        "-I",
    ])
    .arg(Path::new(CRATE).join("include"))
    .arg(Path::new(CRATE).join("c/main.c"))
    .arg("-L")
    .arg(&lib)
    .arg("-lcuprum_ffi_example")
    .arg(format!("-Wl,-rpath,{}", lib.display()))
    .arg("-o")
    .arg(&exe);
    run(cc, "cc c/main.c");
    let out = run(program(&exe, &lib), "the C program");
    assert!(out.contains("PASSED"), "{out}");
}

#[test]
fn a_go_program_calls_the_kernels_through_cgo() {
    if !have("go", "version") {
        return;
    }
    let lib = library_dir();
    let dir = scratch("go", &lib);
    let exe = dir.join("saxpy");
    let mut go = Command::new("go");
    go.current_dir(Path::new(CRATE).join("go"))
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".")
        .env("CGO_ENABLED", "1")
        .env(
            "CGO_CFLAGS",
            format!("-I{}", Path::new(CRATE).join("include").display()),
        )
        .env(
            "CGO_LDFLAGS",
            format!("-L{0} -lcuprum_ffi_example -Wl,-rpath,{0}", lib.display()),
        )
        .env("GOCACHE", dir.join("cache"))
        .env("GOPATH", dir.join("path"))
        .env("GOFLAGS", "-mod=mod");
    run(go, "go build");
    let out = run(program(&exe, &lib), "the Go program");
    assert!(out.contains("PASSED"), "{out}");
}
