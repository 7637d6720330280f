//! The built `cargo-cuprum` binary, run as cargo runs it (`cargo-cuprum cuprum ...`): `doctor`
//! on this machine, `emit` on a crate made for the test, and `new` followed by `cargo run`,
//! `cargo test`, `cargo cuprum test --both` and `run` in the scaffolded project.
//!
//! The scaffolded project builds cuprum and its dependencies once, in a target folder shared
//! by every run of this test (`CARGO_TARGET_TMPDIR/scaffold-target`), so only the first run on
//! a machine pays for that build (a minute or two on two cores).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_cargo-cuprum");

/// A fresh folder for one test (removed when dropped).
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "cargo-cuprum-test-{}-{test}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cuprum(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.arg("cuprum").args(args).current_dir(dir);
    command
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn has_gpu() -> bool {
    cuprum_runtime::diagnostics::diagnose().gpu_count() > 0
}

#[test]
fn doctor_reports_this_machine() {
    let dir = TempDir::new("doctor");
    let out = cuprum(&dir.0, &["doctor"])
        .env("CUPRUM_CACHE", "on")
        .env("CUPRUM_CACHE_DIR", dir.0.join("cache"))
        .env_remove("CUPRUM_DEVICE")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    eprintln!("{stdout}{stderr}");
    assert!(stdout.contains("emulator  available"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "{} (from CUPRUM_CACHE_DIR): writable",
            dir.0.join("cache").display()
        )),
        "{stdout}"
    );
    if has_gpu() {
        assert!(stdout.contains("GPU 0"), "{stdout}");
    } else {
        // No GPU is said plainly, and is not a failure: the emulator serves.
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("No GPU on this machine"), "{stdout}");
        assert!(
            stdout.contains("kernels run on the CPU emulator"),
            "{stdout}"
        );
        assert!(stdout.trim_end().ends_with("no problems found"), "{stdout}");
    }
}

#[test]
fn doctor_fails_on_an_unwritable_cache() {
    let dir = TempDir::new("doctor-bad-cache");
    let file = dir.0.join("not-a-folder");
    std::fs::write(&file, b"x").unwrap();
    let out = cuprum(&dir.0, &["doctor"])
        .env("CUPRUM_CACHE", "on")
        .env("CUPRUM_CACHE_DIR", file.join("cache"))
        .env("CUPRUM_DEVICE", "emu")
        .output()
        .unwrap();
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("problem: the compile cache folder") && stdout.contains("not writable"),
        "{stdout}"
    );
}

const GOOD: &str = r#"//! Kernels for the emit test.
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::cuda_module;

#[cuda_module]
pub mod kernels {
    use super::*;

    #[kernel]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) {
            *out = a[i.get()] + b[i.get()];
        }
    }

    #[kernel]
    pub fn fill(v: u32, mut o: DisjointSlice<u32>) {
        if let Some(x) = o.get_mut(thread::index_1d()) {
            *x = v;
        }
    }

    #[kernel]
    pub fn generic_fill<T: Copy>(v: T, mut o: DisjointSlice<T>) {
        if let Some(x) = o.get_mut(thread::index_1d()) {
            *x = v;
        }
    }
}
"#;

const BAD: &str = r#"//! A kernel outside the subset.
#[cuda_module]
mod kernels {
    #[kernel]
    pub fn bad(mut o: DisjointSlice<u32>) {
        let s = String::new();
    }
}
"#;

/// A package whose library declares `mod gpu;` (in `src/gpu.rs`), with an example holding a
/// broken module and a fixture under `tests/ui` that no target includes.
fn emit_fixture(dir: &Path) {
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Cargo.toml",
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    );
    write("src/lib.rs", "//! Fixture.\npub mod gpu;\n");
    write("src/gpu.rs", GOOD);
    write("tests/ui/broken.rs", BAD);
}

#[test]
fn emit_prints_ir_and_ptx_without_building() {
    let dir = TempDir::new("emit");
    emit_fixture(&dir.0);
    let out = cuprum(&dir.0, &["emit", "--target", "sm_80"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("// ===== src/gpu.rs:6: mod kernels (kernels: vecadd, fill) ====="));
    assert!(stdout.contains("// ----- IR -----") && stdout.contains("kernel vecadd("));
    assert!(stdout.contains(".target sm_80") && stdout.contains(".entry fill"));
    // The fixture under tests/ui belongs to no target: not read.
    assert!(
        !stdout.contains("bad") && !stderr.contains("broken.rs"),
        "{stderr}"
    );
    assert!(
        stderr.contains("src/gpu.rs:25: kernel `generic_fill` is generic"),
        "{stderr}"
    );

    let out = cuprum(&dir.0, &["emit", "--ptx", "--kernel", "fill"])
        .output()
        .unwrap();
    let (stdout, _) = text(&out);
    assert!(out.status.success());
    assert!(stdout.contains(".target sm_90") && stdout.contains(".entry fill"));
    assert!(!stdout.contains(".entry vecadd") && !stdout.contains("// ----- IR"));

    let out = cuprum(&dir.0, &["emit", "--kernel", "nope"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no kernel named `nope`") && stderr.contains("fill, generic_fill, vecadd")
    );

    // A module outside the subset: the error points at the code, and the command fails.
    let out = cuprum(&dir.0, &["emit", "tests/ui/broken.rs"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: tests/ui/broken.rs:6:"), "{stderr}");
}

const GENERIC: &str = r#"//! Generic kernels for the emit test.
use cuprum::simt::{DisjointSlice, kernel, thread};
use cuprum::cuda_module;

#[cuda_module]
pub mod kernels {
    use super::*;

    #[kernel]
    pub fn fill(v: u32, mut o: DisjointSlice<u32>) {
        if let Some(x) = o.get_mut(thread::index_1d()) {
            *x = v;
        }
    }

    #[kernel]
    pub fn scaled_window<T: Copy + core::ops::Add<Output = T> + core::ops::Mul<Output = T>, const W: usize>(
        a: T,
        x: &[T],
        mut y: DisjointSlice<T>,
    ) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            let mut acc = x[i.get()];
            for k in 1..W {
                acc = acc + x[(i.get() + k) % x.len()];
            }
            *out = a * acc;
        }
    }
}
"#;

fn generic_fixture(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"generic\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), GENERIC).unwrap();
}

/// `emit` run in `dir`: (succeeded, stdout, stderr).
fn emit(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = cuprum(dir, &[&["emit"][..], args].concat())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    (out.status.success(), stdout, stderr)
}

#[test]
fn emit_prints_a_named_specialization_of_a_generic_kernel() {
    let dir = TempDir::new("emit-generic");
    generic_fixture(&dir.0);
    let (ok, f32_ptx, stderr) = emit(&dir.0, &["--ptx", "--kernel", "scaled_window::<f32, 3>"]);
    assert!(ok, "{stderr}");
    assert!(
        f32_ptx.contains(
            "// ===== src/lib.rs:6: mod kernels (kernel: scaled_window::<f32, 3>, entry \
             scaled_window__f32_3) ====="
        ),
        "{f32_ptx}"
    );
    assert!(
        f32_ptx.contains(".entry scaled_window__f32_3("),
        "{f32_ptx}"
    );
    assert!(f32_ptx.contains(".param .f32 scaled_window__f32_3_param_0"));
    assert!(
        f32_ptx.contains("add.f32") || f32_ptx.contains("add.rn.f32"),
        "{f32_ptx}"
    );
    // Only that kernel: not `fill`, no IR.
    assert!(!f32_ptx.contains(".entry fill") && !f32_ptx.contains("// ----- IR"));

    let (ok, u32_ptx, stderr) = emit(&dir.0, &["--ptx", "--kernel", "scaled_window::<u32, 3>"]);
    assert!(ok, "{stderr}");
    assert!(
        u32_ptx.contains(".entry scaled_window__u32_3("),
        "{u32_ptx}"
    );
    assert!(u32_ptx.contains(".param .u32 scaled_window__u32_3_param_0"));
    assert!(!u32_ptx.contains(".f32"), "{u32_ptx}");
    assert_ne!(f32_ptx, u32_ptx);

    // The named spelling is the same specialization; the IR is printed too by default.
    let (ok, named, stderr) = emit(
        &dir.0,
        &["--kernel", "scaled_window", "--specialize", "W=3,T=u32"],
    );
    assert!(ok, "{stderr}");
    assert!(named.contains("// ----- IR -----") && named.contains("kernel scaled_window__u32_3("));
    assert!(named.contains(u32_ptx.split("// ----- PTX (sm_90) -----").nth(1).unwrap()));

    // The optimizer runs as in the runtime: the 3-element window is unrolled, so the PTX
    // differs from the front end's own (`--no-opt`).
    let (ok, raw, stderr) = emit(
        &dir.0,
        &["--ptx", "--no-opt", "--kernel", "scaled_window::<u32, 3>"],
    );
    assert!(ok, "{stderr}");
    assert_ne!(raw, u32_ptx);

    // Without --kernel, the generic kernel is noted with how to name a specialization.
    let (ok, _, stderr) = emit(&dir.0, &[]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(
            "kernel `scaled_window` is generic over <T, const W: usize>: emit one \
             specialization with --kernel 'scaled_window::<f32, 4>'"
        ),
        "{stderr}"
    );
}

#[test]
fn emit_refuses_bad_specializations_with_what_the_kernel_takes() {
    let dir = TempDir::new("emit-generic-bad");
    generic_fixture(&dir.0);
    let takes = "kernel `scaled_window` takes <T, const W: usize>; name a specialization as \
                 --kernel 'scaled_window::<f32, 4>' or --kernel scaled_window --specialize \
                 T=f32,W=4";
    for (args, want) in [
        (
            &["--kernel", "scaled_window"][..],
            "error: src/lib.rs:17: kernel `scaled_window` is generic over <T, const W: usize>: \
             it has code only per specialization; name one with --kernel \
             'scaled_window::<f32, 4>' or --kernel scaled_window --specialize T=f32,W=4",
        ),
        (
            &["--kernel", "scaled_window::<f32>"][..],
            "1 generic argument(s) given (`f32`), 2 expected",
        ),
        (
            &["--kernel", "scaled_window::<f33, 3>"][..],
            "`T` = `f33` is not a scalar type kernels take; use one of bool, i8",
        ),
        (
            &["--kernel", "scaled_window", "--specialize", "T=f32,W=-2"][..],
            "`W` is `const W: usize`: -2 is out of its range",
        ),
        (
            &["--kernel", "scaled_window", "--specialize", "T=f32,N=2"][..],
            "no generic parameter `N`",
        ),
        (
            &["--kernel", "scaled_window::<bool, 2>"][..],
            "kernel `scaled_window` does not compile as `scaled_window::<bool, 2>`: \
             arithmetic on `bool`",
        ),
        (
            &["--kernel", "fill::<u32>"][..],
            "src/lib.rs:10: kernel `fill` is not generic: drop the specialization",
        ),
        (
            &[
                "--kernel",
                "scaled_window::<f32, 3>",
                "--specialize",
                "T=f32,W=3",
            ][..],
            "already names a specialization",
        ),
    ] {
        let (ok, stdout, stderr) = emit(&dir.0, args);
        assert!(!ok, "{args:?} succeeded:\n{stdout}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(!stdout.contains(".entry"), "{args:?}: {stdout}");
        if want.contains("argument(s) given")
            || want.contains("scalar type")
            || want.contains("out of its range")
            || want.contains("no generic parameter")
        {
            assert!(stderr.contains(takes), "{args:?}: {stderr}");
        }
    }
    // --specialize belongs to --kernel: a usage error, before anything is read.
    let out = cuprum(&dir.0, &["emit", "--specialize", "T=f32"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The target folder every run of [`new_project_runs_and_tests_on_the_emulator`] shares.
fn scaffold_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("scaffold-target")
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command
        .env("CARGO_TARGET_DIR", scaffold_target())
        .env("CUPRUM_DEVICE", "emu");
    command
}

#[test]
fn new_project_runs_and_tests_on_the_emulator() {
    let dir = TempDir::new("new");
    let out = cuprum(&dir.0, &["new", "gpu-demo"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Created `gpu-demo`"), "{stdout}");
    let project = dir.0.join("gpu-demo");
    for file in [
        "Cargo.toml",
        "Cargo.lock",
        "src/lib.rs",
        "src/main.rs",
        "tests/vecadd.rs",
    ] {
        assert!(project.join(file).is_file(), "{file} missing");
    }
    // A second `new` at the same place refuses to overwrite.
    let again = cuprum(&dir.0, &["new", "gpu-demo"]).output().unwrap();
    assert!(!again.status.success());

    let started = std::time::Instant::now();
    let out = cargo().arg("run").current_dir(&project).output().unwrap();
    let (stdout, stderr) = text(&out);
    eprintln!("cargo run: {:.1} s", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("PASSED: all 100000 elements correct (Emulator)"),
        "{stdout}"
    );

    let out = cargo().arg("test").current_dir(&project).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("test vecadd_matches_the_cpu ... ok"),
        "{stdout}"
    );

    // `cargo cuprum test --both` in the project: the emulator, then the GPU if there is one.
    let out = cuprum(&project, &["test", "--both"])
        .env("CARGO_TARGET_DIR", scaffold_target())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("emulator: passed"), "{stdout}");
    if !has_gpu() {
        assert!(
            stdout.contains("GPU:      not run: no GPU on this machine"),
            "{stdout}"
        );
    }

    let out = cuprum(&project, &["run", "--device", "emu", "--", "--quiet"])
        .env("CARGO_TARGET_DIR", scaffold_target())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("PASSED"), "{stdout}");

    let out = cuprum(&project, &["emit", "--ir"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("src/lib.rs:13: mod kernels (kernel: vecadd)"),
        "{stdout}"
    );
}
