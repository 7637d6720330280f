//! Random tile programs run three ways: the interpreter, the lowered kernel on the device
//! (`CudaContext::new(0)`: the emulator here, also before the optimizer; the GPU through
//! `gpu-pack`), compared element by element. The seeds are fixed, so every run checks the
//! same programs; `CUPRUM_TILE_FUZZ_SEED=<n>` starts them elsewhere (the first seed is
//! printed). A failing program is shrunk before it is reported.

mod common;

use std::collections::BTreeSet;

use common::{ctx, on_gpu};
use cuprum_testkit::poison;
use cuprum_tile_fuzz::generate::{Config, coverage};
use cuprum_tile_fuzz::shrink::shrink;
use cuprum_tile_fuzz::{Case, check_batch, generate};

/// The first seed, from `CUPRUM_TILE_FUZZ_SEED` or fixed.
fn first_seed(default: u64) -> u64 {
    let seed = std::env::var("CUPRUM_TILE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default);
    eprintln!("tile fuzz: first seed {seed} (CUPRUM_TILE_FUZZ_SEED replaces it)");
    seed
}

/// Generates `count` programs from `first` with `cfg` and checks them in batches of
/// `batch`; every failure is shrunk and reported.
fn campaign(name: &str, first: u64, count: u64, batch: usize, cfg: &Config) {
    let seeds: Vec<u64> = (first..first + count).collect();
    let mut failures = Vec::new();
    for chunk in seeds.chunks(batch) {
        let cases: Vec<Case> = chunk
            .iter()
            .map(|&s| generate(s, cfg).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        for (case, result) in cases.iter().zip(check_batch(ctx(), &cases)) {
            let Err(failure) = result else {
                continue;
            };
            let small = shrink(case, |c| {
                c.check(ctx()).err().is_some_and(|f| f.what == failure.what)
            });
            let why = small.check(ctx()).err().unwrap_or(failure);
            failures.push(small.report(&why));
        }
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {count} random tile programs failed on {} (shrunk):\n\n{}",
        failures.len(),
        ctx().backend(),
        failures.join("\n\n")
    );
}

/// On the emulator a token campaign: in a dev build the optimizer (with its debug checks
/// after every pass) takes about 0.1 s per kernel, so 100 programs cost about ten seconds on
/// two cores; the `tile_fuzz` example runs thousands in release. On a GPU, a thousand.
#[test]
fn random_programs_agree_three_ways() {
    let (count, batch) = if on_gpu() { (1000, 250) } else { (100, 50) };
    let first = first_seed(0x7117_0000);
    campaign(
        "small programs",
        first,
        count,
        batch,
        &Config::ci(poison::BYTE),
    );
}

#[test]
fn larger_random_programs_agree_three_ways() {
    let (count, batch) = if on_gpu() { (200, 100) } else { (10, 10) };
    let first = first_seed(0x7117_8000);
    campaign(
        "larger programs",
        first,
        count,
        batch,
        &Config::large(poison::BYTE),
    );
}

/// The generator makes the same case from the same seed, and other cases from others.
#[test]
fn the_generator_is_deterministic() {
    let cfg = Config::ci(poison::BYTE);
    for seed in 0..20u64 {
        let (a, b) = (generate(seed, &cfg), generate(seed, &cfg));
        let (a, b) = (
            a.unwrap_or_else(|e| panic!("{e}")),
            b.unwrap_or_else(|e| panic!("{e}")),
        );
        // As text: a NaN literal is not equal to itself.
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "seed {seed}");
    }
    let one = generate(1, &cfg).unwrap_or_else(|e| panic!("{e}"));
    let two = generate(2, &cfg).unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(format!("{:?}", one.kernel), format!("{:?}", two.kernel));
}

/// Over the seeds the suite runs, the programs use every operation, statement, reduction,
/// element type and tile rank the generator knows, and the launches every kind of view: a
/// generator that silently stopped making one would weaken the suite unseen.
#[test]
fn the_random_programs_cover_the_tile_ir() {
    let cfg = Config::ci(poison::BYTE);
    let mut seen = BTreeSet::new();
    for seed in 0x7117_0000..0x7117_0000 + 300u64 {
        let case = generate(seed, &cfg).unwrap_or_else(|e| panic!("{e}"));
        seen.extend(coverage(&case));
    }
    let missing: Vec<&str> = cuprum_tile_fuzz::generate::COVERED
        .iter()
        .copied()
        .filter(|k| !seen.contains(k))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}
