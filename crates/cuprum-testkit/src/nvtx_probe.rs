//! A fake NVTX tool for the tests of cuprum's NVTX ranges (`cuprum_runtime::nvtx`): the
//! source of a small injection library (`nvtx_probe/probe.rs`, carried in the test binary),
//! compiled into a `cdylib` with the `rustc` that built the tests, and a reader of the events
//! it logged.
//!
//! A test runs the work to check in a child process (the test binary itself, filtered to one
//! test) with `NVTX_INJECTION64_PATH` naming the probe and `NVTX_PROBE_LOG` a file, since a
//! process attaches to its NVTX tool once, on its first NVTX call: the protocol is exercised
//! end to end, through the variable, `dlopen` and the export tables, as under `nsys` or `ncu`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The probe's source (see its module comment for what it logs).
pub const SOURCE: &str = include_str!("../nvtx_probe/probe.rs");

/// The variable naming the file the probe logs to.
pub const LOG_ENV_VAR: &str = "NVTX_PROBE_LOG";

/// The variable naming a prebuilt probe, for a machine without `rustc` (the GPU check
/// carries one: `scripts/nvtx-gpu-check.sh`).
pub const PREBUILT_ENV_VAR: &str = "CUPRUM_NVTX_PROBE";

/// The probe compiled into `dir` as a shared library (or the prebuilt one
/// [`PREBUILT_ENV_VAR`] names); `Err` says why there is none (no `rustc`: a machine that runs
/// prebuilt test binaries only).
pub fn build(dir: &Path) -> Result<PathBuf, String> {
    if let Some(prebuilt) = std::env::var_os(PREBUILT_ENV_VAR) {
        let prebuilt = PathBuf::from(prebuilt);
        return if prebuilt.is_file() {
            Ok(prebuilt)
        } else {
            Err(format!(
                "{PREBUILT_ENV_VAR}={} is no file",
                prebuilt.display()
            ))
        };
    }
    let source = dir.join("nvtx_probe.rs");
    std::fs::write(&source, SOURCE).map_err(|e| format!("writing {}: {e}", source.display()))?;
    let library = dir.join(format!(
        "{}nvtx_probe{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "cdylib",
            "--crate-name",
        ])
        .arg("nvtx_probe")
        .arg("-o")
        .arg(&library)
        .arg(&source)
        .output()
        .map_err(|e| format!("running {}: {e}", rustc.to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!(
            "rustc failed on the NVTX probe:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(library)
}

/// One event the probe logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The tool attached; each module's table size (0 where refused).
    Init(Vec<u32>),
    /// `nvtxRangePushEx`: depth after the push, ARGB color, payload, name.
    Push {
        depth: i32,
        color: Option<u32>,
        payload: Option<u64>,
        name: String,
    },
    /// `nvtxRangePushA`: depth after the push, name.
    PushA { depth: i32, name: String },
    /// `nvtxRangePop`: depth after the pop.
    Pop { depth: i32 },
    /// `nvtxMarkEx`.
    Mark(String),
    /// A line the reader does not know (an init the probe refused, for one).
    Other(String),
}

impl Event {
    /// The name of a push (either kind).
    pub fn pushed_name(&self) -> Option<&str> {
        match self {
            Self::Push { name, .. } | Self::PushA { name, .. } => Some(name),
            _ => None,
        }
    }
}

fn parse(line: &str) -> Event {
    let other = || Event::Other(line.to_owned());
    let Some((word, rest)) = line.split_once(' ') else {
        return other();
    };
    match word {
        "init" => rest
            .split(' ')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_or_else(|_| other(), Event::Init),
        "push" => {
            let mut parts = rest.splitn(4, ' ');
            let (Some(depth), Some(color), Some(payload), Some(name)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return other();
            };
            let color = match color {
                "-" => None,
                c => match u32::from_str_radix(c, 16) {
                    Ok(c) => Some(c),
                    Err(_) => return other(),
                },
            };
            let payload = match payload {
                "-" => None,
                p => match p.parse() {
                    Ok(p) => Some(p),
                    Err(_) => return other(),
                },
            };
            depth.parse().map_or_else(
                |_| other(),
                |depth| Event::Push {
                    depth,
                    color,
                    payload,
                    name: name.to_owned(),
                },
            )
        }
        "pusha" => match rest.split_once(' ') {
            Some((depth, name)) => depth.parse().map_or_else(
                |_| other(),
                |depth| Event::PushA {
                    depth,
                    name: name.to_owned(),
                },
            ),
            None => other(),
        },
        "pop" => rest
            .parse()
            .map_or_else(|_| other(), |depth| Event::Pop { depth }),
        "mark" => Event::Mark(rest.to_owned()),
        _ => other(),
    }
}

/// The events in the probe's log at `path` (none if it was never written: no tool attached).
pub fn read_log(path: &Path) -> Vec<Event> {
    std::fs::read_to_string(path)
        .map(|text| text.lines().map(parse).collect())
        .unwrap_or_default()
}
