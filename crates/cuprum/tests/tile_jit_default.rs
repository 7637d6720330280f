//! The tile JIT cache's default store: with no `jit_cache::enable`/`disable` call, a
//! process's compiled specializations are kept in the compile cache's `tile-jit` folder, and a
//! second process takes them from there instead of lowering and optimizing again. The second
//! process is this test binary run again (one test, alone in its binary, since the folder
//! comes from the environment, read once per process).

use std::process::Command;

use cuprum::tile::jit_cache;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn scaled_sum<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        z.store(load_tile_like(x, z) * 3.0f32 + load_tile_like(y, z));
    }
}

/// Set in the child process: what it must find (`hit`).
const ROLE: &str = "CUPRUM_TEST_JIT_DEFAULT_ROLE";

/// Launches `scaled_sum` on 1000 random elements (ragged for the tile of 128) and checks
/// every element.
fn launch_and_check() {
    let n = 1000;
    let mut r = rng("tile_jit_default");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let hy: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let stream = ok(Device::new(0).and_then(|d| d.new_stream()));
    let x = ok(api::from_host(&hx, &[n]).sync_on(&stream));
    let y = ok(api::from_host(&hy, &[n]).sync_on(&stream));
    let mut z = ok(api::full(f32::NAN, &[n]).sync_on(&stream));
    ok(kernels::scaled_sum((&mut z).partition([128]), &x, &y).sync_on(&stream));
    let got = ok(z.to_host_vec().sync_on(&stream));
    let want: Vec<f32> = hx.iter().zip(&hy).map(|(a, b)| a * 3.0 + b).collect();
    assert_same("scaled_sum", &got, &want);
}

#[test]
fn a_second_process_takes_the_compiled_kernel_from_the_default_store() {
    if std::env::var_os(ROLE).is_some() {
        // The child: the first process's entry is in the store.
        launch_and_check();
        assert_eq!(
            jit_cache::jit_disk_hit_count(),
            1,
            "the child found no entry"
        );
        assert_eq!(
            jit_cache::jit_backend_compile_count(),
            0,
            "the child compiled"
        );
        return;
    }
    let dir = ok(tempfile::tempdir());
    // SAFETY: set before any thread of this process reads the environment's cache settings
    // (this is the binary's only test, and it has started nothing yet).
    unsafe { std::env::set_var("CUPRUM_CACHE_DIR", dir.path()) };
    assert!(jit_cache::is_enabled(), "the default store is off");
    launch_and_check();
    let stats = jit_cache::stats();
    assert_eq!((stats.misses, stats.puts), (1, 1), "{stats:?}");
    let kept = ok(std::fs::read_dir(dir.path().join("tile-jit"))).count();
    assert_eq!(kept, 1, "entries in the store");

    let exe = ok(std::env::current_exe());
    let out = ok(Command::new(exe)
        .args([
            "--exact",
            "a_second_process_takes_the_compiled_kernel_from_the_default_store",
            "--nocapture",
        ])
        .env(ROLE, "hit")
        .env("CUPRUM_CACHE_DIR", dir.path())
        .output());
    assert!(
        out.status.success(),
        "the second process failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));

    // Chosen off, nothing is kept.
    jit_cache::disable();
    assert!(!jit_cache::is_enabled());
}
