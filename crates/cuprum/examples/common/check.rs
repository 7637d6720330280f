//! What the tile examples share to check themselves: a seed (printed, so that a failure can
//! be replayed with `CUPRUM_SEED`), seeded random data, and an element-by-element
//! comparison with a plain-Rust reference.
#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The random generator of this run: seeded from `CUPRUM_SEED` when set, else from the
/// clock; the seed is printed.
pub fn rng(example: &str) -> StdRng {
    let seed = std::env::var("CUPRUM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    println!("{example}: seed {seed} (CUPRUM_SEED={seed} replays this run)");
    StdRng::seed_from_u64(seed)
}

/// `n` floats uniform in `[lo, hi)`.
pub fn uniform(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// Checks every element: `|got - want| <= abs + rel * |want|`. Says how many elements are
/// wrong and which is the first.
pub fn compare(what: &str, got: &[f32], want: &[f64], rel: f64, abs: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, want {}",
            got.len(),
            want.len()
        ));
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| {
            let (g, w) = (f64::from(got[i]), want[i]);
            // A NaN difference is wrong too.
            !matches!(
                (g - w).abs().partial_cmp(&(abs + rel * w.abs())),
                Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
            )
        })
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{what}: {} of {} elements wrong; element {i} is {}, want {}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        )),
    }
}

/// Ends the example: `PASSED` and success when `result` is `Ok`, else `FAILED` and the reason,
/// with a failing exit code.
pub fn finish(example: &str, result: Result<String, String>) {
    match result {
        Ok(summary) => println!("PASSED: {example}: {summary}"),
        Err(reason) => {
            eprintln!("FAILED: {example}: {reason}");
            std::process::exit(1);
        }
    }
}
