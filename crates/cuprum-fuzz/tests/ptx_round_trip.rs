//! The PTX writer and the PTX importer against each other, without a GPU: random kernels
//! (the fuzzer's programs, before and after `cuprum-opt`) are written as PTX for sm_80 and
//! sm_90, imported back into the IR by `cuprum-ptx-import`, run on the emulator and held to
//! the host reference. A mismatch is a bug of the writer's PTX (what it means as PTX
//! differs from the IR it came from) or of the importer (what it makes of PTX differs from
//! what the PTX ISA says); either way the emulator would not run foreign PTX as a GPU does.
//! Kernels the importer refuses (instructions it does not model) are counted, and must stay
//! a small share.

use cuprum_fuzz::*;
use rayon::prelude::*;

/// Kernels per run (`CUPRUM_ROUND_TRIP_CASES` for a longer campaign).
fn cases() -> u64 {
    std::env::var("CUPRUM_ROUND_TRIP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// What one kernel's round trip gave: `None` where the importer refused the PTX (with its
/// message), else the comparison with the reference.
fn round_trip(
    case: &Case,
    kernel: &cuprum_ir::Kernel,
    target: cuprum_ptx::Target,
) -> Result<Result<(), String>, String> {
    let module = cuprum_ir::Module {
        kernels: vec![kernel.clone()],
    };
    let ptx = cuprum_ptx::write_module(&module, target).map_err(|e| format!("writer: {e}"))?;
    let imported = match cuprum_ptx_import::import(&ptx) {
        Ok(m) => m,
        Err(e) => return Err(e.message),
    };
    let expected = case.reference();
    let got = emulate_as(
        &imported.kernels[0],
        &case.program,
        &case.inputs,
        SliceArgs::AddressAndLength,
    );
    // A trap stops the kernel on both sides; the PTX's `trap` does not say why.
    if let (Err(Fault::Trap(_)), Err(Fault::Invalid(m))) = (&expected, &got)
        && m.contains("trap")
    {
        return Ok(Ok(()));
    }
    Ok(compare(&case.program, &expected, &got)
        .map_err(|m| format!("seed {} ({}): {m}\nPTX:\n{ptx}", case.seed, target.name())))
}

#[test]
fn random_kernels_mean_the_same_after_a_trip_through_ptx() {
    let cfg = Config::ci();
    let results: Vec<Result<Result<(), String>, String>> = (0..cases())
        .into_par_iter()
        .flat_map_iter(|seed| {
            let case = match Case::new(seed, &cfg) {
                Ok(c) => c,
                Err(e) => panic!("seed {seed}: {e}"),
            };
            let mut out = Vec::new();
            for kernel in [&case.kernel, &case.optimized] {
                for target in [cuprum_ptx::Target::Sm80, cuprum_ptx::Target::Sm90] {
                    out.push(round_trip(&case, kernel, target));
                }
            }
            out
        })
        .collect();
    let mismatches: Vec<&String> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().and_then(|c| c.as_ref().err()))
        .collect();
    let refused = results.iter().filter(|r| r.is_err()).count();
    let mut why = std::collections::BTreeMap::<String, usize>::new();
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        *why.entry(r.chars().take(70).collect()).or_default() += 1;
    }
    eprintln!(
        "{} round trips: {} imported and compared, {refused} refused: {why:#?}",
        results.len(),
        results.len() - refused
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es); the first: {}",
        mismatches.len(),
        mismatches[0]
    );
    assert!(
        refused * 5 <= results.len(),
        "the importer refused {refused} of {} kernels the PTX writer wrote: {why:#?}",
        results.len()
    );
}
