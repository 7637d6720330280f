//! What this machine offers cuprum, and what stands in its way: the driver, the GPUs, the
//! emulator and the compile cache. `cargo cuprum doctor` prints a [`Report`].
//!
//! The probing lives here, in the runtime, because only the runtime knows how it finds and
//! vets the driver (the same library, the same symbols), and so that it is tested like the rest
//! of the runtime; the command line only prints. Probing never panics and never fails: what
//! cannot be learned is reported as such. The judgement ([`Report::problems`]) is a pure
//! function of the facts, so each kind of problem is tested without the hardware that has it.
//!
//! ```
//! let report = cuprum_runtime::diagnostics::diagnose();
//! // The emulator is always there, so a machine without a GPU is not a problem in itself.
//! assert!(report.emulator.available);
//! println!("{report}");
//! ```

use std::fmt;
use std::path::PathBuf;

use crate::backend::cuda;
use crate::cache::{self, CacheLocation, CubinStore};
use crate::context::{DEVICE_ENV_VAR, DeviceSelection};
use crate::limits::DeviceLimits;

/// The oldest driver cuprum's PTX runs on: PTX ISA 8.0 needs a driver for CUDA 12.0.
pub const MIN_DRIVER_VERSION: DriverVersion = DriverVersion(12000);

/// The oldest GPU architecture cuprum writes code for: sm_80 (Ampere).
pub const MIN_COMPUTE_CAPABILITY: (u32, u32) = (8, 0);

/// A CUDA version as `cuDriverGetVersion` gives it: `1000 * major + 10 * minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriverVersion(pub u32);

impl DriverVersion {
    /// `12` for 12080.
    pub fn major(self) -> u32 {
        self.0 / 1000
    }

    /// `8` for 12080.
    pub fn minor(self) -> u32 {
        (self.0 % 1000) / 10
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

/// The driver library that was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    /// The name it was loaded by (`libcuda.so.1`).
    pub library: String,
    /// The file it came from, where the platform tells.
    pub path: Option<PathBuf>,
    /// The newest CUDA version it supports (`None`: it would not say).
    pub version: Option<DriverVersion>,
    /// Driver entry points cuprum needs that the library lacks.
    pub missing_symbols: Vec<String>,
}

/// Whether a driver library could be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverStatus {
    /// No library: the loader's explanation.
    Missing {
        /// What the loader said.
        detail: String,
    },
    /// A library was loaded.
    Found(DriverInfo),
}

/// One GPU the driver sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// Its ordinal (`CudaContext::new(ordinal)`).
    pub ordinal: usize,
    /// Its name, e.g. `NVIDIA H200`.
    pub name: String,
    /// `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Device memory in bytes.
    pub total_memory: u64,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
}

impl GpuInfo {
    fn from_limits(ordinal: usize, l: DeviceLimits) -> Self {
        Self {
            ordinal,
            name: l.name,
            compute_capability: l.compute_capability,
            total_memory: l.total_memory,
            multiprocessors: l.multiprocessor_count,
        }
    }

    /// The PTX target cuprum writes for this GPU (`"sm_80"`, `"sm_90"`), `None` below sm_80.
    pub fn target(&self) -> Option<&'static str> {
        let (major, minor) = self.compute_capability;
        cuprum_ptx::Target::from_compute_capability(major, minor).map(|t| t.name())
    }
}

/// What the driver says about GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuStatus {
    /// There is no usable driver, so no GPU can be reached.
    NoDriver,
    /// The driver works but sees no device (or is the toolkit's stub library).
    NoDevice {
        /// The driver's answer.
        detail: String,
    },
    /// The driver failed to initialize or to answer: a broken installation.
    Failed {
        /// The failing call and the driver's error.
        detail: String,
    },
    /// One or more GPUs.
    Found(Vec<GpuInfo>),
}

/// The CPU emulator, which is always available.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmulatorInfo {
    /// Always `true`: the emulator is part of the library.
    pub available: bool,
    /// The device name it reports.
    pub name: String,
    /// The compute capability whose limits it applies.
    pub compute_capability: (u32, u32),
    /// CPU threads it can spread blocks over.
    pub cpu_threads: usize,
}

/// The compile cache's folder and its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheStatus {
    /// Where the disk cache is (or why there is none).
    pub location: CacheLocation,
    /// Whether an entry can be written there (`None` when there is no folder).
    pub writable: Option<Result<(), String>>,
    /// Entries present.
    pub entries: usize,
    /// Their total size in bytes.
    pub bytes: u64,
}

/// Everything `cargo cuprum doctor` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The driver library.
    pub driver: DriverStatus,
    /// The GPUs.
    pub gpus: GpuStatus,
    /// The CPU emulator.
    pub emulator: EmulatorInfo,
    /// The compile cache.
    pub cache: CacheStatus,
    /// The value of `CUPRUM_DEVICE`, if set.
    pub device_env: Option<String>,
}

/// A real problem: something that makes cuprum fail or fall short on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The driver library lacks entry points cuprum calls.
    DriverIncomplete {
        /// The library's name.
        library: String,
        /// The missing symbols.
        missing: Vec<String>,
    },
    /// The driver is older than CUDA 12.0, so it cannot load PTX 8.0.
    DriverTooOld {
        /// Its version.
        version: DriverVersion,
    },
    /// The driver is there but failed to initialize or to list devices.
    DriverFailed {
        /// The failing call and the driver's error.
        detail: String,
    },
    /// A GPU below sm_80.
    GpuTooOld {
        /// Its ordinal.
        ordinal: usize,
        /// Its name.
        name: String,
        /// Its compute capability.
        compute_capability: (u32, u32),
    },
    /// The compile cache folder cannot be written.
    CacheUnwritable {
        /// The folder.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// `CUPRUM_DEVICE` holds something other than `auto`, `cuda` or `emu`.
    InvalidDeviceEnv {
        /// Its value.
        value: String,
    },
    /// `CUPRUM_DEVICE=cuda` on a machine where no GPU can be used.
    CudaRequestedWithoutGpu,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (min_major, min_minor) = MIN_COMPUTE_CAPABILITY;
        match self {
            Self::DriverIncomplete { library, missing } => write!(
                f,
                "the CUDA driver library {library} lacks {}: it is too old or damaged; install \
                 a current NVIDIA driver (CUDA {MIN_DRIVER_VERSION} or newer)",
                missing.join(", ")
            ),
            Self::DriverTooOld { version } => write!(
                f,
                "the NVIDIA driver supports CUDA {version}, but cuprum emits PTX 8.0, which needs \
                 a driver for CUDA {MIN_DRIVER_VERSION} or newer: update the driver (until then, \
                 CUPRUM_DEVICE=emu runs kernels on the CPU emulator)"
            ),
            Self::DriverFailed { detail } => write!(
                f,
                "the CUDA driver is installed but does not work: {detail}; check the driver \
                 installation (nvidia-smi should list the GPUs)"
            ),
            Self::GpuTooOld {
                ordinal,
                name,
                compute_capability: (major, minor),
            } => write!(
                f,
                "GPU {ordinal} ({name}) has compute capability {major}.{minor}; cuprum needs \
                 {min_major}.{min_minor} (sm_80, Ampere) or newer, so its kernels cannot run \
                 there (CUPRUM_DEVICE=emu uses the CPU emulator)"
            ),
            Self::CacheUnwritable { dir, reason } => write!(
                f,
                "the compile cache folder {} is not writable ({reason}): every process will \
                 compile its kernels again; set {} to a writable folder, or {}=off",
                dir.display(),
                cache::CACHE_DIR_ENV,
                cache::CACHE_ENV
            ),
            Self::InvalidDeviceEnv { value } => write!(
                f,
                "{DEVICE_ENV_VAR}=`{value}` is not valid: use auto, cuda or emu"
            ),
            Self::CudaRequestedWithoutGpu => write!(
                f,
                "{DEVICE_ENV_VAR}=cuda, but no GPU can be used here: every program will fail to \
                 open a device; unset it or use auto (GPU when present, else the emulator)"
            ),
        }
    }
}

impl Report {
    /// The real problems, in the order the report shows its facts. Empty on a machine without
    /// a GPU: the emulator serves there.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if let DriverStatus::Found(driver) = &self.driver {
            if !driver.missing_symbols.is_empty() {
                problems.push(Problem::DriverIncomplete {
                    library: driver.library.clone(),
                    missing: driver.missing_symbols.clone(),
                });
            }
            if let Some(version) = driver.version
                && version < MIN_DRIVER_VERSION
            {
                problems.push(Problem::DriverTooOld { version });
            }
        }
        match &self.gpus {
            GpuStatus::Failed { detail } => problems.push(Problem::DriverFailed {
                detail: detail.clone(),
            }),
            GpuStatus::Found(gpus) => {
                for gpu in gpus {
                    if gpu.compute_capability < MIN_COMPUTE_CAPABILITY {
                        problems.push(Problem::GpuTooOld {
                            ordinal: gpu.ordinal,
                            name: gpu.name.clone(),
                            compute_capability: gpu.compute_capability,
                        });
                    }
                }
            }
            GpuStatus::NoDriver | GpuStatus::NoDevice { .. } => {}
        }
        if let (Some(dir), Some(Err(reason))) = (self.cache.location.dir(), &self.cache.writable) {
            problems.push(Problem::CacheUnwritable {
                dir: dir.to_path_buf(),
                reason: reason.clone(),
            });
        }
        if let Some(value) = &self.device_env {
            match DeviceSelection::parse(value) {
                Err(_) => problems.push(Problem::InvalidDeviceEnv {
                    value: value.clone(),
                }),
                Ok(DeviceSelection::Cuda) if self.gpu_count() == 0 => {
                    problems.push(Problem::CudaRequestedWithoutGpu)
                }
                Ok(_) => {}
            }
        }
        problems
    }

    /// Whether nothing stands in cuprum's way.
    pub fn is_ok(&self) -> bool {
        self.problems().is_empty()
    }

    /// The GPUs the driver lists (0 without a driver or a device).
    pub fn gpu_count(&self) -> usize {
        match &self.gpus {
            GpuStatus::Found(gpus) => gpus.len(),
            _ => 0,
        }
    }

    /// Where kernels run by default: a sentence for people.
    pub fn backend_summary(&self) -> String {
        let setting = match &self.device_env {
            Some(v) => format!("{DEVICE_ENV_VAR}={v}"),
            None => format!("{DEVICE_ENV_VAR} unset (auto)"),
        };
        let gpu0 = match &self.gpus {
            GpuStatus::Found(gpus) => gpus.first(),
            _ => None,
        };
        let selection = self.device_env.as_deref().map(DeviceSelection::parse);
        let where_ = match (selection, gpu0) {
            (Some(Err(_)), _) => "programs stop with an invalid-selection error".to_owned(),
            (Some(Ok(DeviceSelection::Emulator)), _) => "kernels run on the CPU emulator".into(),
            (_, Some(gpu)) => format!("kernels run on GPU 0 ({})", gpu.name),
            (Some(Ok(DeviceSelection::Cuda)), None) => {
                "programs fail to open a GPU (there is none)".to_owned()
            }
            (_, None) => "kernels run on the CPU emulator (no GPU)".to_owned(),
        };
        format!("{setting}: {where_}")
    }
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

impl fmt::Display for Report {
    /// The text `cargo cuprum doctor` prints: one line per fact, then one per problem, then a
    /// verdict.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.driver {
            DriverStatus::Missing { detail } => writeln!(
                f,
                "driver    none: no NVIDIA driver library found ({detail})"
            )?,
            DriverStatus::Found(d) => {
                let path = d
                    .path
                    .as_ref()
                    .map(|p| format!(" at {}", p.display()))
                    .unwrap_or_default();
                let version = match d.version {
                    Some(v) => format!("CUDA {v} (cuDriverGetVersion {})", v.0),
                    None => "CUDA version unknown (cuDriverGetVersion failed)".to_owned(),
                };
                writeln!(f, "driver    {}{path}: {version}", d.library)?;
            }
        }
        match &self.gpus {
            GpuStatus::NoDriver => writeln!(f, "GPU       none: no driver, so no GPU")?,
            GpuStatus::NoDevice { detail } => {
                writeln!(f, "GPU       none: the driver sees no device ({detail})")?
            }
            GpuStatus::Failed { detail } => writeln!(f, "GPU       unknown: {detail}")?,
            GpuStatus::Found(gpus) => {
                for g in gpus {
                    let (major, minor) = g.compute_capability;
                    let target = g.target().unwrap_or("unsupported");
                    writeln!(
                        f,
                        "GPU {:<5} {}: compute capability {major}.{minor} ({target}), {}, {} SMs",
                        g.ordinal,
                        g.name,
                        human_bytes(g.total_memory),
                        g.multiprocessors
                    )?;
                }
            }
        }
        let (emu_major, emu_minor) = self.emulator.compute_capability;
        writeln!(
            f,
            "emulator  available: {} (limits of compute capability {emu_major}.{emu_minor}), {} \
             CPU thread(s)",
            self.emulator.name, self.emulator.cpu_threads
        )?;
        let c = &self.cache;
        match (&c.location, &c.writable) {
            (CacheLocation::Disabled, _) => writeln!(
                f,
                "cache     off ({}=off): the driver compiles at load, with its own JIT cache",
                cache::CACHE_ENV
            )?,
            (CacheLocation::Unknown, _) => writeln!(
                f,
                "cache     no folder (no home folder; set {})",
                cache::CACHE_DIR_ENV
            )?,
            (loc, writable) => {
                let source = match loc {
                    CacheLocation::FromEnv(_) => format!(" (from {})", cache::CACHE_DIR_ENV),
                    _ => " (default)".to_owned(),
                };
                let state = match writable {
                    Some(Ok(())) => format!(
                        "writable, {} entr{}, {}",
                        c.entries,
                        if c.entries == 1 { "y" } else { "ies" },
                        human_bytes(c.bytes)
                    ),
                    Some(Err(e)) => format!("NOT writable: {e}"),
                    None => "not checked".to_owned(),
                };
                let dir = loc
                    .dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                writeln!(f, "cache     {dir}{source}: {state}")?;
            }
        }
        writeln!(f, "backend   {}", self.backend_summary())?;
        let problems = self.problems();
        if !matches!(self.gpus, GpuStatus::Found(_)) {
            writeln!(
                f,
                "\nNo GPU on this machine: kernels run on the CPU emulator (programs and tests \
                 work; there is nothing GPU-specific to check)."
            )?;
        }
        if problems.is_empty() {
            write!(f, "\nno problems found")
        } else {
            writeln!(f)?;
            for p in &problems {
                writeln!(f, "problem: {p}")?;
            }
            write!(
                f,
                "{} problem{} found",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            )
        }
    }
}

/// What the driver says about GPUs (initializing the driver if there is one).
pub fn gpus() -> GpuStatus {
    match cuda::list_devices() {
        Ok(devices) if devices.is_empty() => GpuStatus::NoDevice {
            detail: "cuDeviceGetCount returned 0".to_owned(),
        },
        Ok(devices) => GpuStatus::Found(
            devices
                .into_iter()
                .enumerate()
                .map(|(i, l)| GpuInfo::from_limits(i, l))
                .collect(),
        ),
        Err(cuda::ListFailure::NoDriver) => GpuStatus::NoDriver,
        Err(cuda::ListFailure::NoDevice(detail)) => GpuStatus::NoDevice { detail },
        Err(cuda::ListFailure::Failed(detail)) => GpuStatus::Failed { detail },
    }
}

/// The driver library, as the runtime's probe found it.
pub fn driver() -> DriverStatus {
    match cuda::driver_facts() {
        Err(detail) => DriverStatus::Missing { detail },
        Ok(facts) => DriverStatus::Found(DriverInfo {
            library: facts.library,
            path: facts.path,
            version: facts.version.map(DriverVersion),
            missing_symbols: facts.missing.iter().map(|s| (*s).to_owned()).collect(),
        }),
    }
}

/// The compile cache as the environment configures it, checking that it can be written (this
/// creates the folder).
pub fn cache_status() -> CacheStatus {
    let location = cache::location();
    let (writable, entries, bytes) = match location.dir() {
        None => (None, 0, 0),
        Some(dir) => {
            let store = CubinStore::new(dir);
            let writable = store.check_writable().map_err(|e| e.to_string());
            let (entries, bytes) = store.usage().unwrap_or((0, 0));
            (Some(writable), entries, bytes)
        }
    };
    CacheStatus {
        location,
        writable,
        entries,
        bytes,
    }
}

/// The emulator's facts.
pub fn emulator() -> EmulatorInfo {
    let limits = DeviceLimits::emulator();
    EmulatorInfo {
        available: true,
        name: limits.name,
        compute_capability: limits.compute_capability,
        cpu_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Probes everything: driver, GPUs, emulator, cache, `CUPRUM_DEVICE`.
pub fn diagnose() -> Report {
    Report {
        driver: driver(),
        gpus: gpus(),
        emulator: emulator(),
        cache: cache_status(),
        device_env: std::env::var_os(DEVICE_ENV_VAR).map(|v| v.to_string_lossy().into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> Report {
        Report {
            driver: DriverStatus::Found(DriverInfo {
                library: "libcuda.so.1".into(),
                path: Some("/usr/lib/libcuda.so.570.1".into()),
                version: Some(DriverVersion(12080)),
                missing_symbols: vec![],
            }),
            gpus: GpuStatus::Found(vec![GpuInfo {
                ordinal: 0,
                name: "NVIDIA H200".into(),
                compute_capability: (9, 0),
                total_memory: 150 << 30,
                multiprocessors: 132,
            }]),
            emulator: emulator(),
            cache: CacheStatus {
                location: CacheLocation::FromEnv("/tmp/c".into()),
                writable: Some(Ok(())),
                entries: 2,
                bytes: 4096,
            },
            device_env: None,
        }
    }

    fn no_gpu() -> Report {
        Report {
            driver: DriverStatus::Missing {
                detail: "libcuda.so: cannot open".into(),
            },
            gpus: GpuStatus::NoDriver,
            ..healthy()
        }
    }

    #[test]
    fn a_healthy_machine_has_no_problem() {
        let r = healthy();
        assert_eq!(r.problems(), vec![]);
        let text = r.to_string();
        assert!(text.contains("CUDA 12.8"), "{text}");
        assert!(text.contains("NVIDIA H200: compute capability 9.0 (sm_90), 150.0 GiB"));
        assert!(text.contains("kernels run on GPU 0"), "{text}");
        assert!(text.ends_with("no problems found"), "{text}");
    }

    #[test]
    fn no_gpu_is_said_plainly_and_is_not_a_problem() {
        let r = no_gpu();
        assert!(r.is_ok());
        let text = r.to_string();
        assert!(text.contains("No GPU on this machine"), "{text}");
        assert!(text.contains("kernels run on the CPU emulator"), "{text}");
        let r = Report {
            gpus: GpuStatus::NoDevice {
                detail: "CUDA_ERROR_NO_DEVICE".into(),
            },
            ..healthy()
        };
        assert!(r.is_ok());
    }

    #[test]
    fn old_gpu_and_old_driver_are_problems() {
        let mut r = healthy();
        if let GpuStatus::Found(gpus) = &mut r.gpus {
            gpus.push(GpuInfo {
                ordinal: 1,
                name: "Tesla T4".into(),
                compute_capability: (7, 5),
                total_memory: 16 << 30,
                multiprocessors: 40,
            });
        }
        if let DriverStatus::Found(d) = &mut r.driver {
            d.version = Some(DriverVersion(11080));
        }
        let problems = r.problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            lines[0].contains("CUDA 11.8") && lines[0].contains("12.0"),
            "{lines:?}"
        );
        assert!(lines[1].contains("GPU 1 (Tesla T4)") && lines[1].contains("7.5"));
        assert!(r.to_string().contains("2 problems found"));
        assert!(r.to_string().contains("(unsupported)"));
    }

    #[test]
    fn broken_driver_and_cache_and_env_are_problems() {
        let r = Report {
            driver: DriverStatus::Found(DriverInfo {
                library: "libcuda.so.1".into(),
                path: None,
                version: None,
                missing_symbols: vec!["cuLinkCreate_v2".into()],
            }),
            gpus: GpuStatus::Failed {
                detail: "cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH".into(),
            },
            cache: CacheStatus {
                location: CacheLocation::FromEnv("/nope".into()),
                writable: Some(Err("read-only file system".into())),
                entries: 0,
                bytes: 0,
            },
            device_env: Some("cuda".into()),
            ..healthy()
        };
        let problems = r.problems();
        assert!(matches!(problems[0], Problem::DriverIncomplete { .. }));
        assert!(matches!(problems[1], Problem::DriverFailed { .. }));
        assert!(matches!(problems[2], Problem::CacheUnwritable { .. }));
        assert_eq!(problems[3], Problem::CudaRequestedWithoutGpu);
        assert!(problems[2].to_string().contains("/nope"));
        let r = Report {
            device_env: Some("quantum".into()),
            ..healthy()
        };
        assert_eq!(
            r.problems(),
            vec![Problem::InvalidDeviceEnv {
                value: "quantum".into()
            }]
        );
    }

    #[test]
    fn versions_print_as_cuda_does() {
        assert_eq!(DriverVersion(12080).to_string(), "12.8");
        assert_eq!(DriverVersion(12000).to_string(), "12.0");
        assert_eq!(DriverVersion(13010).to_string(), "13.1");
        assert!(DriverVersion(11080) < MIN_DRIVER_VERSION);
        assert_eq!(human_bytes(512), "512 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
