//! Finding and running NVIDIA's `ptxas`, so that tests can check that generated PTX
//! assembles for every target (`sm_80`, `sm_90`: the name `cuprum_ptx::Target::name` gives).
//!
//! `ptxas` is not needed to use cuprum (the driver assembles PTX at load time); it is a test
//! tool, so it lives here rather than in the PTX writer. It is looked up in `CUPRUM_PTXAS`, then on `PATH`, then in the Python wheel
//! `nvidia-cuda-nvcc` (`pip install nvidia-cuda-nvcc`). Tests call [`check`]: when `ptxas` is
//! missing it passes with a notice, unless `CUPRUM_REQUIRE_PTXAS=1` (CI sets it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The `ptxas` executable, if one can be found (looked up once per process).
pub fn find() -> Option<PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND.get_or_init(locate).clone()
}

fn locate() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CUPRUM_PTXAS") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let exe = if cfg!(windows) { "ptxas.exe" } else { "ptxas" };
    if let Some(paths) = std::env::var_os("PATH")
        && let Some(p) = std::env::split_paths(&paths)
            .map(|dir| dir.join(exe))
            .find(|p| p.is_file())
    {
        return Some(p);
    }
    from_python_wheel(exe)
}

/// Asks Python where the `nvidia` namespace package lives and looks for the wheel's `ptxas`
/// (`nvidia/cu13/bin` for CUDA 13 wheels, `nvidia/cuda_nvcc/bin` for CUDA 12 ones).
fn from_python_wheel(exe: &str) -> Option<PathBuf> {
    const SCRIPT: &str = "import nvidia\nfor p in nvidia.__path__: print(p)";
    for python in ["python3", "python"] {
        let Ok(out) = Command::new(python).args(["-c", SCRIPT]).output() else {
            continue;
        };
        if !out.status.success() {
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        for root in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            for sub in ["cu13/bin", "cuda_nvcc/bin", "cu12/bin"] {
                let p = Path::new(root).join(sub).join(exe);
                if p.is_file() {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// Assembles `ptx` for `arch` with `ptxas`; `Err` carries ptxas's messages (or why it could
/// not run). Warnings do not fail.
pub fn assemble(ptx: &str, arch: &str) -> Result<(), String> {
    assemble_with_messages(ptx, arch).map(drop)
}

/// The test policy of [`check`], returning what ptxas printed when it assembled `ptx`
/// (warnings such as C7510 "wgmma serialized" or C7508 "setmaxnreg ignored"), or `None`
/// when ptxas is not available and not required.
pub fn check_messages(ptx: &str, arch: &str) -> Result<Option<String>, String> {
    check(ptx, arch)?;
    if find().is_none() {
        return Ok(None);
    }
    assemble_with_messages(ptx, arch).map(Some)
}

/// [`assemble`], returning ptxas's output (its warnings) on success.
pub fn assemble_with_messages(ptx: &str, arch: &str) -> Result<String, String> {
    assemble_with_options(ptx, arch, &[])
}

/// [`assemble_with_messages`] with more ptxas options (`-c`: relocatable code, as the
/// driver's linker compiles its inputs).
pub fn assemble_with_options(ptx: &str, arch: &str, options: &[&str]) -> Result<String, String> {
    let ptxas =
        find().ok_or("ptxas not found (set CUPRUM_PTXAS or pip install nvidia-cuda-nvcc)")?;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stem = std::env::temp_dir().join(format!("cuprum-ptxas-{}-{n}", std::process::id()));
    let (input, output) = (stem.with_extension("ptx"), stem.with_extension("cubin"));
    std::fs::write(&input, ptx).map_err(|e| format!("writing {}: {e}", input.display()))?;
    let result = Command::new(&ptxas)
        .arg(format!("-arch={arch}"))
        .args(options)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    let out = result.map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    if out.status.success() {
        Ok(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ))
    } else {
        Err(format!(
            "ptxas -arch={arch} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        ))
    }
}

/// The test policy: assembles `ptx` for `arch` when `ptxas` is available; without it,
/// passes with a notice on stderr, unless `CUPRUM_REQUIRE_PTXAS=1`, where that is an error.
pub fn check(ptx: &str, arch: &str) -> Result<(), String> {
    if find().is_none() {
        if std::env::var("CUPRUM_REQUIRE_PTXAS").is_ok_and(|v| v == "1") {
            return Err("CUPRUM_REQUIRE_PTXAS=1 but ptxas was not found".into());
        }
        static NOTICE: OnceLock<()> = OnceLock::new();
        NOTICE.get_or_init(|| {
            eprintln!(
                "note: ptxas not found; generated PTX is not assembled (see cuprum_testkit::ptxas)"
            );
        });
        return Ok(());
    }
    assemble(ptx, arch)
}
