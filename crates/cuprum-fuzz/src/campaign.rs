//! A fuzzing campaign: thousands of seeds, their kernels run on a device in modules of many
//! kernels, each result held to the host reference, and the host's own comparisons (the
//! emulator before and after the optimizer) done alongside on every core.
//!
//! The device is any `cuprum_runtime` context: a GPU, or the runtime's emulator (which makes
//! the GPU run's every step testable without one: the only thing a GPU adds is the GPU). The
//! device runs each seed's optimized kernel for even seeds and its unoptimized kernel for
//! odd ones (both with [`Options::both`]), so the PTX writer sees the IR of both.
//!
//! Every mismatch becomes a [`Report`] with the seed, the IR and the first differing
//! elements, the first few shrunk to a small program ([`crate::reduce`]).

use std::time::{Duration, Instant};

use cuprum_ir::Kernel;
use cuprum_runtime::CudaContext;
use rayon::prelude::*;

use crate::program::Program;
use crate::{Case, Config, Fault, Inputs, Outcome, compare, device, emulate, lower, reduce};

/// Candidate programs one shrink of a host failure may try.
const HOST_SHRINK_BUDGET: usize = 3000;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Seeds to run.
    pub count: u64,
    /// The first seed.
    pub seed: u64,
    /// Kernels per device module.
    pub per_module: usize,
    /// Run both the optimized and the unoptimized kernel of every seed on the device.
    pub both: bool,
    /// How many device mismatches to shrink (each costs up to [`Options::shrink_budget`]
    /// device runs).
    pub shrink: usize,
    /// Device runs one shrink may use.
    pub shrink_budget: usize,
    /// Modules the driver compiles at once, each on its own thread.
    pub jit_threads: usize,
    /// Stop starting new modules after this long (the summary then says so).
    pub time_limit: Option<Duration>,
    /// The generator's settings.
    pub cfg: Config,
    /// Applied to every kernel before it goes to the device: a planted bug, for testing
    /// that mismatches are found, reported and shrunk. `None` in real runs.
    pub device_mutation: Option<fn(&mut Kernel)>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            count: 10_000,
            seed: 0,
            per_module: 150,
            both: false,
            shrink: 2,
            shrink_budget: 300,
            jit_threads: 4,
            time_limit: None,
            device_mutation: None,
            cfg: Config::gpu(),
        }
    }
}

/// One mismatch, for a person.
#[derive(Clone, Debug)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Which comparison failed.
    pub what: String,
    /// The seed, the difference, the IR, and the shrunk program if there is one.
    pub text: String,
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds generated.
    pub kernels: u64,
    /// Kernel launches compared on the device.
    pub device_launches: u64,
    /// Threads of those launches.
    pub threads: u64,
    /// Modules loaded on the device.
    pub modules: u64,
    /// Time in module loads and launches on the device.
    pub device_time: Duration,
    /// Every mismatch.
    pub mismatches: Vec<Report>,
    /// Whether the time limit stopped the run before every seed ran.
    pub incomplete: bool,
}

impl Summary {
    /// The last line a run prints: `fuzz: N kernels, T threads, M mismatches`.
    pub fn line(&self) -> String {
        format!(
            "fuzz: {} kernels, {} threads, {} mismatches{}",
            self.kernels,
            self.threads,
            self.mismatches.len(),
            if self.incomplete {
                " (incomplete: time limit)"
            } else {
                ""
            }
        )
    }
}

/// Which of a case's kernels the device runs: `true` for the optimized one.
fn device_versions(seed: u64, both: bool) -> Vec<bool> {
    if both {
        vec![true, false]
    } else {
        vec![seed.is_multiple_of(2)]
    }
}

fn version_name(optimized: bool) -> &'static str {
    if optimized {
        "optimized"
    } else {
        "unoptimized"
    }
}

/// The host's comparisons of one case: the reference must accept the program, the emulator
/// must agree with it before and after the optimizer, the PTX writer must accept both.
/// Returns the reference outcome and the mismatches.
fn host_check(case: &Case) -> (Outcome, Option<Report>) {
    match case.check_on_host(true) {
        Ok(expected) => (expected, None),
        Err(f) => {
            let what = f.what.clone();
            let fails = |p: &Program| {
                case.with_program(p).is_some_and(
                    |small| matches!(small.check_on_host(true), Err(g) if g.what == what),
                )
            };
            let small = reduce::reduce(&case.program, HOST_SHRINK_BUDGET, fails);
            let report = Report {
                seed: case.seed,
                what: f.what.clone(),
                text: format!(
                    "{}\n{}",
                    case.describe(&f),
                    shrunk_text(&small, &case.program)
                ),
            };
            (case.reference(), Some(report))
        }
    }
}

fn shrunk_text(small: &Program, original: &Program) -> String {
    if reduce::size(small) >= reduce::size(original) {
        return String::new();
    }
    match lower::lower(small) {
        Ok(k) => format!(
            "shrunk to {} statements:\n{}",
            reduce::size(small),
            cuprum_ir::print_kernel(&k)
        ),
        Err(e) => e.to_string(),
    }
}

/// Shrinks a device mismatch: candidates run on the device one at a time, up to `budget`.
fn shrink_on_device(
    ctx: &CudaContext,
    case: &Case,
    optimized: bool,
    budget: usize,
    mutation: Option<fn(&mut Kernel)>,
) -> String {
    let fails = |p: &Program| {
        let Ok(mut kernel) = lower::lower(p) else {
            return false;
        };
        if optimized {
            cuprum_opt::optimize_kernel(&mut kernel);
        }
        if let Some(mutate) = mutation {
            mutate(&mut kernel);
        }
        let expected = crate::reference::run(p, &case.inputs);
        if matches!(expected, Err(Fault::Invalid(_))) {
            return false;
        }
        let got = match device::run_batch(ctx, vec![kernel], &[(p, &case.inputs)]) {
            Ok(mut o) => o
                .pop()
                .unwrap_or_else(|| Err(Fault::Invalid("no outcome".into()))),
            Err(_) => return false,
        };
        compare(p, &expected, &got).is_err()
    };
    let small = reduce::reduce(&case.program, budget, fails);
    shrunk_text(&small, &case.program)
}

/// The device's launches of one module: which case, optimized or not.
struct ModuleRuns {
    runs: Vec<(usize, bool)>,
}

impl ModuleRuns {
    fn kernels(&self, cases: &[Case], mutation: Option<fn(&mut Kernel)>) -> Vec<Kernel> {
        self.runs
            .iter()
            .map(|&(i, optimized)| {
                let c = &cases[i];
                let mut k = if optimized {
                    c.optimized.clone()
                } else {
                    c.kernel.clone()
                };
                k.name = format!("{}_{}", k.name, version_name(optimized));
                if let Some(mutate) = mutation {
                    mutate(&mut k);
                }
                k
            })
            .collect()
    }
}

/// Runs the campaign on `ctx`; `log` receives progress lines and every report as it is
/// found. Seeds go in waves of [`Options::jit_threads`] modules: the modules of a wave are
/// compiled by the driver on that many threads at once while the host checks run on every
/// core, then launched one module after another.
pub fn run(ctx: &CudaContext, opts: &Options, log: &mut dyn FnMut(&str)) -> Summary {
    let mut summary = Summary::default();
    let per_module = opts.per_module.max(1);
    let threads = opts.jit_threads.max(1);
    let end = opts.seed + opts.count;
    let wave = (per_module * threads) as u64;
    let started = Instant::now();
    let mut shrunk = 0;
    let mut next = opts.seed;
    while next < end {
        if opts.time_limit.is_some_and(|t| started.elapsed() > t) {
            summary.incomplete = true;
            log(&format!(
                "time limit reached after {} of {} kernels",
                summary.kernels, opts.count
            ));
            break;
        }
        let (first, last) = (next, (next + wave).min(end));
        next = last;
        let made: Vec<Result<Case, Report>> = (first..last)
            .into_par_iter()
            .map(|seed| {
                Case::new(seed, &opts.cfg).map_err(|e| Report {
                    seed,
                    what: "lowering".into(),
                    text: format!("seed {seed}: {e}"),
                })
            })
            .collect();
        summary.kernels += made.len() as u64;
        let mut cases = Vec::with_capacity(made.len());
        for c in made {
            match c {
                Ok(c) => cases.push(c),
                Err(r) => {
                    log(&r.text);
                    summary.mismatches.push(r);
                }
            }
        }
        let modules: Vec<ModuleRuns> = (0..cases.len())
            .collect::<Vec<_>>()
            .chunks(per_module)
            .map(|chunk| ModuleRuns {
                runs: chunk
                    .iter()
                    .flat_map(|&i| {
                        device_versions(cases[i].seed, opts.both)
                            .into_iter()
                            .map(move |v| (i, v))
                    })
                    .collect(),
            })
            .collect();
        // The driver compiles the wave's modules on their own threads while every core
        // checks the host side.
        let wave_started = Instant::now();
        let (loaded, checked, host_time) = std::thread::scope(|scope| {
            let handles: Vec<_> = modules
                .iter()
                .map(|m| {
                    let kernels = m.kernels(&cases, opts.device_mutation);
                    scope.spawn(move || device::load(ctx, kernels))
                })
                .collect();
            let checked: Vec<(Outcome, Option<Report>)> =
                cases.par_iter().map(host_check).collect();
            let host_time = wave_started.elapsed();
            let loaded: Vec<_> = handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(cuprum_runtime::Error::ModuleLoad {
                            message: "the loading thread panicked".into(),
                            log: String::new(),
                        })
                    })
                })
                .collect();
            (loaded, checked, host_time)
        });
        // Until the last module is compiled (and the host checks are done).
        let load_time = wave_started.elapsed();
        let (expected, host): (Vec<Outcome>, Vec<Option<Report>>) = checked.into_iter().unzip();
        for r in host.into_iter().flatten() {
            log(&r.text);
            summary.mismatches.push(r);
        }
        let launch_started = Instant::now();
        for (m, module) in modules.iter().zip(loaded) {
            summary.modules += 1;
            let pairs: Vec<(&Program, &Inputs)> = m
                .runs
                .iter()
                .map(|&(i, _)| (&cases[i].program, &cases[i].inputs))
                .collect();
            let outcomes = module.and_then(|module| device::launch_all(ctx, &module, &pairs));
            let outcomes = match outcomes {
                Ok(o) => o,
                Err(e) => {
                    let seeds: Vec<u64> = m.runs.iter().map(|&(i, _)| cases[i].seed).collect();
                    let r = Report {
                        seed: seeds.first().copied().unwrap_or(first),
                        what: "device module".into(),
                        text: format!(
                            "the module of seeds {:?}..={:?} failed on the device: {e}",
                            seeds.first(),
                            seeds.last()
                        ),
                    };
                    log(&r.text);
                    summary.mismatches.push(r);
                    continue;
                }
            };
            for (&(i, optimized), got) in m.runs.iter().zip(&outcomes) {
                let c = &cases[i];
                summary.device_launches += 1;
                summary.threads += u64::from(c.program.threads());
                if matches!(expected[i], Err(Fault::Invalid(_))) {
                    // Reported by the host checks: the program itself is broken.
                    continue;
                }
                let Err(mismatch) = compare(&c.program, &expected[i], got) else {
                    continue;
                };
                let what = format!("device ({}) vs reference", version_name(optimized));
                // Whether the emulator agrees with the reference on this kernel: then the
                // difference is the PTX writer's or the GPU's.
                let kernel = if optimized { &c.optimized } else { &c.kernel };
                let emu = emulate(kernel, &c.program, &c.inputs);
                let emu_agrees = compare(&c.program, &expected[i], &emu).is_ok();
                let mut text = format!(
                    "{}\n(the emulator {} the reference on this kernel)",
                    describe_kernel(c, kernel, &what, &mismatch),
                    if emu_agrees {
                        "agrees with"
                    } else {
                        "differs from"
                    },
                );
                if shrunk < opts.shrink {
                    shrunk += 1;
                    text.push('\n');
                    text.push_str(&shrink_on_device(
                        ctx,
                        c,
                        optimized,
                        opts.shrink_budget,
                        opts.device_mutation,
                    ));
                }
                let r = Report {
                    seed: c.seed,
                    what,
                    text,
                };
                log(&r.text);
                summary.mismatches.push(r);
            }
        }
        let launch_time = launch_started.elapsed();
        summary.device_time += load_time + launch_time;
        log(&format!(
            "seeds {first}..{last}: {} modules compiled and host checks done in {:.1} s \
             (host checks alone {:.1} s), launched in {:.1} s; {} kernels, {} mismatches so \
             far, {:.1} s",
            modules.len(),
            load_time.as_secs_f64(),
            host_time.as_secs_f64(),
            launch_time.as_secs_f64(),
            summary.kernels,
            summary.mismatches.len(),
            started.elapsed().as_secs_f64()
        ));
    }
    summary
}

fn describe_kernel(case: &Case, kernel: &Kernel, what: &str, m: &crate::Mismatch) -> String {
    format!(
        "seed {}: {what}: {m}\nlaunch: {} block(s) of {} threads\nIR:\n{}",
        case.seed,
        case.program.grid,
        case.program.block,
        cuprum_ir::print_module(&cuprum_ir::Module {
            kernels: vec![kernel.clone()],
        })
    )
}
