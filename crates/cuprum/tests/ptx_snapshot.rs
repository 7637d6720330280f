//! The PTX of vecadd, kept as a snapshot so every change to code generation shows up in
//! review. `CUPRUM_BLESS=1 cargo test --test ptx_snapshot` rewrites the snapshot.
//! Where `ptxas` is available (CI installs it), the PTX must also assemble.

use cuprum::cuda_module;
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum_ptx::Target;

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) {
            *out = a[i.get()] + b[i.get()];
        }
    }
}

/// The snapshots, embedded at build time so the test binary also runs away from the source tree.
const SNAPSHOTS: [(Target, &str); 2] = [
    (Target::Sm80, include_str!("snapshots/vecadd.sm_80.ptx")),
    (Target::Sm90, include_str!("snapshots/vecadd.sm_90.ptx")),
];

#[test]
fn vecadd_ptx_matches_the_snapshot() -> Result<(), Box<dyn std::error::Error>> {
    let ir = kernels::ir()?;
    for (target, expected) in SNAPSHOTS {
        let ptx = cuprum_ptx::write_module(&ir, target)?;
        if std::env::var_os("CUPRUM_BLESS").is_some() {
            let path = format!(
                "{}/tests/snapshots/vecadd.{}.ptx",
                env!("CARGO_MANIFEST_DIR"),
                target.name()
            );
            std::fs::write(&path, &ptx)?;
            continue;
        }
        assert!(
            ptx == expected,
            "PTX for {} changed; review and bless with CUPRUM_BLESS=1.\n--- new ---\n{ptx}",
            target.name()
        );
        if let Err(e) = cuprum_testkit::ptxas::check(&ptx, target.name()) {
            panic!("ptxas rejected vecadd for {}: {e}", target.name());
        }
    }
    Ok(())
}
