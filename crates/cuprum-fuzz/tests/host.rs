//! The fuzzer in CI, without a GPU: random kernels held to the host reference on the
//! emulator (before and after the optimizer, and after each pass alone), the PTX writer
//! accepting every one of them (and ptxas assembling a sample when `CUPRUM_PTXAS` is set),
//! the trap path, the device batch runner on the runtime's emulator, and planted bugs that
//! the comparison must catch.

use cuprum_fuzz::program::{Node, Program, Stmt};
use cuprum_fuzz::stats::Coverage;
use cuprum_fuzz::*;
use cuprum_ir::{BinaryOp, Kernel, Op, ScalarType, Stmt as IrStmt};
use rayon::prelude::*;

/// Kernels per test run: a few hundred, which take seconds on two cores.
const CASES: u64 = 300;

fn case(seed: u64, cfg: &Config) -> Case {
    match Case::new(seed, cfg) {
        Ok(c) => c,
        Err(e) => panic!("seed {seed}: {e}"),
    }
}

/// A failing case, shrunk to the smallest program that still fails the same comparison.
fn shrunk_report(case: &Case, failure: &Failure) -> String {
    let fails = |p: &Program| {
        case.with_program(p).is_some_and(
            |small| matches!(small.check_on_host(false), Err(f) if f.what == failure.what),
        )
    };
    let small = reduce::reduce(&case.program, 1000, fails);
    let ir = lower::lower(&small).map_or_else(
        |e| e.to_string(),
        |k| cuprum_ir::print_kernel(&k).to_string(),
    );
    format!(
        "{}\nshrunk to {} statements:\n{ir}",
        case.describe(failure),
        reduce::size(&small)
    )
}

#[test]
fn the_emulator_matches_the_host_reference_before_and_after_the_optimizer() {
    let cfg = Config::ci();
    let start = std::time::Instant::now();
    let results: Vec<(u64, Option<String>, u32)> = (0..CASES)
        .into_par_iter()
        .map(|seed| {
            let c = case(seed, &cfg);
            match c.check_on_host(true) {
                Ok(_) => (seed, None, c.program.threads()),
                Err(f) => (seed, Some(shrunk_report(&c, &f)), 0),
            }
        })
        .collect();
    let threads: u64 = results.iter().map(|r| u64::from(r.2)).sum();
    eprintln!(
        "{CASES} kernels, {threads} threads, in {:?}",
        start.elapsed()
    );
    let failures: Vec<&String> = results.iter().filter_map(|r| r.1.as_ref()).collect();
    assert!(
        failures.is_empty(),
        "{} of {CASES} kernels differ; the first:\n{}",
        failures.len(),
        failures[0]
    );
}

#[test]
fn every_optimizer_pass_alone_keeps_the_reference_results() {
    let cfg = Config::ci();
    (0..20u64).into_par_iter().for_each(|seed| {
        let c = case(seed, &cfg);
        let expected = c.reference();
        for pass in cuprum_opt::PASSES {
            let mut k = c.kernel.clone();
            cuprum_opt::run_passes(&mut k, std::slice::from_ref(pass));
            let got = emulate(&k, &c.program, &c.inputs);
            if let Err(m) = compare(&c.program, &expected, &got) {
                panic!(
                    "pass `{}` alone changed the results: {}",
                    pass.name,
                    c.describe(&m)
                );
            }
        }
    });
}

#[test]
fn traps_happen_when_and_as_the_reference_says() {
    let cfg = Config {
        traps: true,
        ..Config::ci()
    };
    let outcomes: Vec<(Option<TrapClass>, u64)> = (1000..1100u64)
        .into_par_iter()
        .map(|seed| {
            let c = case(seed, &cfg);
            match c.check_on_host(false) {
                Ok(Err(Fault::Trap(t))) => (Some(t), seed),
                Ok(_) => (None, seed),
                Err(f) => panic!("{}", shrunk_report(&c, &f)),
            }
        })
        .collect();
    let count = |t: Option<TrapClass>| outcomes.iter().filter(|o| o.0 == t).count();
    let (bounds, zero, none) = (
        count(Some(TrapClass::Bounds)),
        count(Some(TrapClass::DivideByZero)),
        count(None),
    );
    eprintln!("traps: {bounds} bounds, {zero} division by zero, {none} none");
    assert!(
        bounds >= 5 && zero >= 5 && none >= 5,
        "the trap cases are not varied: {bounds} bounds, {zero} division, {none} none"
    );
}

/// Writes every kernel's PTX (done for all in the first test); with `CUPRUM_PTXAS` set,
/// also assembles two modules of eight seeds' kernels (optimized and not), for both targets.
#[test]
fn ptxas_assembles_a_sample_when_available() {
    if std::env::var_os("CUPRUM_PTXAS").is_none() {
        eprintln!("note: CUPRUM_PTXAS is not set; the PTX sample is not assembled");
        return;
    }
    let cfg = Config::gpu();
    (0..2u64).into_par_iter().for_each(|m| {
        let kernels: Vec<Kernel> = (m * 8..m * 8 + 8)
            .flat_map(|seed| {
                let c = case(seed, &cfg);
                [c.kernel, c.optimized]
            })
            .enumerate()
            .map(|(i, mut k)| {
                k.name = format!("{}_{i}", k.name);
                k
            })
            .collect();
        let module = cuprum_ir::Module { kernels };
        for target in [cuprum_ptx::Target::Sm80, cuprum_ptx::Target::Sm90] {
            let ptx = match cuprum_ptx::write_module(&module, target) {
                Ok(p) => p,
                Err(e) => panic!("module {m}: {e}"),
            };
            if let Err(e) = cuprum_testkit::ptxas::assemble(&ptx, target.name()) {
                panic!("module {m} ({}): {e}", target.name());
            }
        }
    });
}

#[test]
fn the_device_batch_runner_agrees_on_the_runtimes_emulator() {
    // The path the GPU run takes (one module, one allocation, many launches), here on
    // `CudaContext::emulator()`.
    let cfg = Config::ci();
    let ctx = cuprum_runtime::CudaContext::emulator();
    let cases: Vec<Case> = (500..530).map(|s| case(s, &cfg)).collect();
    let pairs: Vec<(&Program, &Inputs)> = cases.iter().map(|c| (&c.program, &c.inputs)).collect();
    let kernels = cases.iter().map(|c| c.optimized.clone()).collect();
    let outcomes = match device::run_batch(&ctx, kernels, &pairs) {
        Ok(o) => o,
        Err(e) => panic!("the batch failed: {e}"),
    };
    for (c, got) in cases.iter().zip(&outcomes) {
        let expected = c.reference();
        if let Err(m) = compare(&c.program, &expected, got) {
            panic!("{}", c.describe(&m));
        }
    }
}

#[test]
fn the_generator_covers_every_type_cast_and_construct() {
    let mut cov = Coverage::default();
    for seed in 0..1000 {
        cov.add(&generate(seed, &Config::ci(), "k"));
    }
    let mut missing = Vec::new();
    let mut need = |key: String| {
        if cov.get(&key) == 0 {
            missing.push(key);
        }
    };
    // `tf32` has no arithmetic for the fuzz language to compute in: its casts are checked by
    // `cuprum-emu`'s `every_cast_pair_matches_rust_as` and on the GPU by `cuprum-ptx`'s
    // `gpu_semantics`.
    let computed = || ScalarType::ALL.into_iter().filter(|t| t.has_arithmetic());
    for from in computed() {
        for to in computed() {
            if to != ScalarType::Bool && to != from {
                need(format!("cast {from} -> {to}"));
            }
        }
        need(format!("compare {from}"));
        need(format!("select {from}"));
        need(format!("shuffle {from}"));
    }
    for t in ScalarType::ALL.into_iter().filter(|t| t.is_int()) {
        for op in [
            "Add", "Sub", "Mul", "Div", "Rem", "And", "Or", "Xor", "Shl", "Shr", "Min", "Max",
        ] {
            need(format!("binary {op} {t}"));
        }
        need(format!("unary Neg {t}"));
        need(format!("unary Not {t}"));
    }
    for t in ScalarType::ALL.into_iter().filter(|t| t.is_float()) {
        for op in ["Add", "Sub", "Mul", "Div", "Rem", "Min", "Max"] {
            need(format!("binary {op} {t}"));
        }
        for op in ["Neg", "Abs", "Sqrt", "Floor", "Ceil", "Round", "Trunc"] {
            need(format!("unary {op} {t}"));
        }
        need(format!("muladd {t}"));
    }
    for key in [
        "shuffle Idx",
        "shuffle Up",
        "shuffle Down",
        "shuffle Xor",
        "vote All",
        "vote Any",
        "vote Ballot",
        "if",
        "loop",
        "break",
        "continue",
        "return",
        "barrier",
        "check",
        "load shared",
        "store shared",
        "load local",
        "store local",
        "shuffle in branch",
        "shuffle in loop",
        "vote in branch",
        "vote in loop",
        "vote after return",
        "barrier in branch",
        "barrier in loop",
        "barrier after return",
        "atomic in branch",
        "atomic in loop",
        "break in branch",
        "continue in loop",
        "loop in loop",
        "loop in branch",
        "if in branch",
        "atomic Exchange global",
        "atomic CompareExchange global",
    ] {
        need(key.to_string());
    }
    for op in ["Add", "Sub", "And", "Or", "Xor", "Min", "Max"] {
        need(format!("atomic {op} global"));
        need(format!("atomic {op} shared"));
    }
    for t in ["u32", "i32", "u64", "i64", "f32", "f64"] {
        need(format!("atomic {t}"));
    }
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

/// Replaces the first integer `Add` of `kernel` (at any depth) by `Sub`.
fn plant_sub_for_add(kernel: &mut Kernel) -> bool {
    fn go(stmts: &mut [IrStmt], values: &cuprum_ir::Arena<cuprum_ir::ValueDef>) -> bool {
        for s in stmts {
            match s {
                IrStmt::Def {
                    value,
                    op: op @ Op::Binary(BinaryOp::Add, ..),
                } if values[*value].ty.is_int() && values[*value].ty != ScalarType::U64 => {
                    if let Op::Binary(_, a, b) = *op {
                        *op = Op::Binary(BinaryOp::Sub, a, b);
                    }
                    return true;
                }
                IrStmt::If {
                    then, otherwise, ..
                } => {
                    let found = go(&mut then.stmts, values) || go(&mut otherwise.stmts, values);
                    if found {
                        return true;
                    }
                }
                IrStmt::Loop { body } => {
                    let found = go(&mut body.stmts, values);
                    if found {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
    let values = kernel.values.clone();
    go(&mut kernel.body.stmts, &values)
}

#[test]
fn a_planted_emulator_bug_is_caught_and_shrunk() {
    // What a wrong `Add` in a backend looks like: the comparison must see it in most
    // kernels, and the reducer must shrink one to a handful of statements.
    let cfg = Config::ci();
    let mut planted = 0;
    let mut caught = 0;
    let mut shrunk = None;
    for seed in 0..30 {
        let c = case(seed, &cfg);
        let mut broken = c.kernel.clone();
        if !plant_sub_for_add(&mut broken) {
            continue;
        }
        planted += 1;
        let expected = c.reference();
        let got = emulate(&broken, &c.program, &c.inputs);
        if compare(&c.program, &expected, &got).is_err() {
            caught += 1;
            if shrunk.is_none() {
                let fails = |p: &Program| {
                    let Ok(mut k) = lower::lower(p) else {
                        return false;
                    };
                    plant_sub_for_add(&mut k)
                        && reference::run(p, &c.inputs).is_ok()
                        && compare(p, &reference::run(p, &c.inputs), &emulate(&k, p, &c.inputs))
                            .is_err()
                };
                shrunk = Some(reduce::size(&reduce::reduce(&c.program, 2000, fails)));
            }
        }
    }
    assert!(planted >= 20, "only {planted} kernels had an integer Add");
    assert!(
        caught * 10 >= planted * 7,
        "a wrong Add went unnoticed in {} of {planted} kernels",
        planted - caught
    );
    let shrunk = shrunk.unwrap_or(usize::MAX);
    assert!(shrunk <= 25, "the reducer left {shrunk} statements");
}

#[test]
fn the_reference_rejects_what_the_ir_leaves_undefined() {
    // A shuffle under a thread-dependent branch reads from lanes that are not there: the
    // reference must refuse the program rather than make up a value (and so must the
    // emulator).
    use cuprum_ir::{CmpOp, Constant, ShuffleMode};
    use program::{Param, Place, Role, Source};
    let u32_ = ScalarType::U32;
    let program = Program {
        name: "divergent_shuffle".into(),
        block: 32,
        grid: 1,
        params: vec![Param::Buffer {
            elem: u32_,
            role: Role::Output { per_thread: 1 },
        }],
        shared: Vec::new(),
        locals: Vec::new(),
        vars: Vec::new(),
        types: vec![u32_, u32_, ScalarType::Bool, u32_, u32_],
        body: vec![
            Stmt::Def(0, Node::Source(Source::ThreadIdx)),
            Stmt::Def(1, Node::Const(Constant::u32(16))),
            Stmt::Def(2, Node::Compare(CmpOp::Lt, 0, 1)),
            Stmt::If {
                cond: 2,
                then: vec![
                    Stmt::Def(3, Node::Const(Constant::u32(31))),
                    Stmt::Def(4, Node::Shuffle(ShuffleMode::Idx, 0, 3)),
                    Stmt::Store {
                        place: Place::Buffer { param: 0, index: 0 },
                        value: 4,
                    },
                ],
                otherwise: Vec::new(),
            },
        ],
        declare_block: false,
    };
    let inputs = Inputs::random(&program, 1);
    assert!(
        matches!(reference::run(&program, &inputs), Err(Fault::Invalid(_))),
        "the reference accepted a shuffle from inactive lanes"
    );
    let kernel = match lower::lower(&program) {
        Ok(k) => k,
        Err(e) => panic!("{e}"),
    };
    assert!(matches!(
        emulate(&kernel, &program, &inputs),
        Err(Fault::Invalid(_))
    ));
}

#[test]
fn a_campaign_on_the_runtimes_emulator_compares_every_launch() {
    // What `gpu_fuzz --emu-only` does, small: waves of modules compiled on two threads.
    let opts = campaign::Options {
        count: 24,
        seed: 7000,
        per_module: 6,
        both: true,
        jit_threads: 2,
        cfg: Config::ci(),
        ..campaign::Options::default()
    };
    let ctx = cuprum_runtime::CudaContext::emulator();
    let mut lines = Vec::new();
    let summary = campaign::run(&ctx, &opts, &mut |l| lines.push(l.to_string()));
    assert!(
        summary.mismatches.is_empty(),
        "{}",
        summary.mismatches[0].text
    );
    assert_eq!(summary.kernels, 24);
    assert_eq!(summary.device_launches, 48, "both versions of every kernel");
    assert_eq!(summary.modules, 4);
    assert!(summary.threads >= 48 * 32);
    assert!(summary.line().starts_with("fuzz: 24 kernels, "));
    assert_eq!(lines.len(), 2, "one progress line per wave: {lines:?}");
}

fn planted_on_device(kernel: &mut Kernel) {
    plant_sub_for_add(kernel);
}

#[test]
fn a_campaign_reports_and_shrinks_a_planted_device_bug() {
    let opts = campaign::Options {
        count: 6,
        seed: 0,
        per_module: 6,
        jit_threads: 1,
        shrink: 1,
        shrink_budget: 400,
        cfg: Config::ci(),
        device_mutation: Some(planted_on_device),
        ..campaign::Options::default()
    };
    let ctx = cuprum_runtime::CudaContext::emulator();
    let summary = campaign::run(&ctx, &opts, &mut |_| {});
    assert!(
        summary.mismatches.len() >= 3,
        "a wrong Add on the device went unnoticed: {} mismatches",
        summary.mismatches.len()
    );
    let first = &summary.mismatches[0].text;
    for needle in [
        "seed ",
        "vs reference",
        "differ",
        "IR:",
        "kernel fuzz_",
        "the emulator agrees",
        "shrunk to ",
    ] {
        assert!(
            first.contains(needle),
            "the report lacks `{needle}`:\n{first}"
        );
    }
    assert!(
        summary
            .line()
            .ends_with(&format!("{} mismatches", summary.mismatches.len()))
    );
}

#[test]
fn seeds_that_once_failed_pass() {
    // Generator bugs the host reference caught, kept as regressions: (seed, settings, what
    // was wrong).
    let cases: [(u64, Config, &str); 1] = [(
        9860,
        Config::gpu(),
        "a warp reduction with Sub in a butterfly was taken as warp-uniform",
    )];
    for (seed, cfg, why) in cases {
        let c = case(seed, &cfg);
        if let Err(f) = c.check_on_host(true) {
            panic!("seed {seed} ({why}) fails again: {f}");
        }
    }
}

#[test]
fn a_buffer_element_stored_by_two_threads_makes_the_program_invalid() {
    // A shrunk program can lose the index that kept each thread on its own element; its
    // result is then the schedule's, and the shrinker must not take it for a real mismatch.
    use cuprum_fuzz::program::{Param, Place, Role, Source};
    let program = Program {
        name: "racy".into(),
        block: 32,
        grid: 2,
        params: vec![Param::Buffer {
            elem: ScalarType::U32,
            role: Role::Output { per_thread: 1 },
        }],
        shared: Vec::new(),
        locals: Vec::new(),
        vars: Vec::new(),
        types: vec![ScalarType::U32, ScalarType::U32],
        body: vec![
            Stmt::Def(0, Node::Const(cuprum_ir::Constant::new(ScalarType::U32, 0))),
            Stmt::Def(1, Node::Source(Source::ThreadIdx)),
            Stmt::Store {
                place: Place::Buffer { param: 0, index: 0 },
                value: 1,
            },
        ],
        declare_block: false,
    };
    let inputs = Inputs {
        scalars: vec![0],
        buffers: vec![vec![0xA5; 64 * 4]],
    };
    match reference::run(&program, &inputs) {
        Err(Fault::Invalid(what)) => assert!(what.contains("stored by threads 0 and 1"), "{what}"),
        other => panic!("a racy store was accepted: {other:?}"),
    }
}
