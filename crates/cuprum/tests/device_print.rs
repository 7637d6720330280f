//! `println!` in device code: CUDA's `vprintf` on the GPU, the same text from the emulator.
//! On the emulator the text is captured and compared line by line with what Rust's own
//! `format!` gives for the same values; on a GPU the launch must simply succeed (the driver
//! writes the text to the process's stdout).

mod common;

use common::ctx;
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{BackendKind, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_contract(domain = 1, block = (4, 1, 1))]
    pub fn report(x: &[f32], big: u64, mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let k = i.get();
        let v = x[k];
        let id = k as i32 - 2;
        println!(
            "thread {} of block {}: v={:.3} id={:>4} big={} hex={:x} 100%",
            k,
            thread::blockIdx_x(),
            v,
            id,
            big,
            k as u32 + 250
        );
        if let Some(o) = out.get_mut(i) {
            *o = id;
        }
    }
}

#[test]
fn println_prints_what_rust_would() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = [1.5f32, -2.25, 3.125, 1e-3, 7.0, 8.5, -0.0, 42.0];
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &[i32::MIN; 8])?;
    let big = u64::MAX - 5;
    let prepared = m.prepare_report(LaunchConfig1D::new(2, 4, 0))?;
    let mut launch = || {
        m.report(&stream, &prepared, &dx, big, &mut out)
            .and_then(|()| stream.synchronize())
    };
    if ctx.backend() != BackendKind::Emulator {
        return launch(); // the driver prints; the test checks the launch works
    }
    let (result, text) = cuprum_emu::capture_prints(launch);
    result?;
    let mut got: Vec<&str> = text.lines().collect();
    got.sort_unstable();
    let mut want: Vec<String> = (0..8)
        .map(|k| {
            format!(
                "thread {k} of block {}: v={:.3} id={:>4} big={big} hex={:x} 100%",
                k / 4,
                x[k],
                k as i32 - 2,
                k as u32 + 250
            )
        })
        .collect();
    want.sort_unstable();
    assert_eq!(got, want);
    Ok(())
}
