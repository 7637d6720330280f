//! `println!` in device code: CUDA's `vprintf` on the GPU, the same text from the emulator.
//! On the emulator the text is captured and compared line by line with what Rust's own
//! `format!` gives for the same values; on a GPU the launch must simply succeed (the driver
//! writes the text to the process's stdout).

mod common;

use common::ctx;
use cuprum::simt::{DisjointSlice, gpu_printf, kernel, launch_contract, thread};
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

    /// cuda-oxide's `gpu_printf!`: C's specs in braces, and the argument count as its value.
    #[kernel]
    #[launch_contract(domain = 1, block = (4, 1, 1))]
    pub fn c_specs(x: &[f32], mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let k = i.get();
        let n = k as i32 * 37 - 50;
        let u = k as u32 * 4099 + 7;
        let wide = u64::MAX - k as u64;
        let count = gpu_printf!(
            "k={} [{:-6}] [{:+}] [{: }] [{:05}] {:#x} {:X} {:#o} {:x} {:.2f} [{:8.3f}] {:e}\n",
            k,
            n,
            n,
            n,
            u,
            u,
            u,
            u,
            wide,
            x[k],
            x[k],
            1250.0f32
        );
        if let Some(o) = out.get_mut(i) {
            *o = count + gpu_printf!("");
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

#[test]
fn gpu_printf_takes_c_specs_and_counts_its_arguments() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = [1.5f32, -2.255, 3.125, 1e-3];
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &[i32::MIN; 4])?;
    let prepared = m.prepare_c_specs(LaunchConfig1D::new(1, 4, 0))?;
    let mut launch = || {
        m.c_specs(&stream, &prepared, &dx, &mut out)
            .and_then(|()| stream.synchronize())
    };
    if ctx.backend() != BackendKind::Emulator {
        launch()?; // the driver prints; the count is checked below
    } else {
        let (result, text) = cuprum_emu::capture_prints(launch);
        result?;
        let mut got: Vec<&str> = text.lines().collect();
        got.sort_unstable();
        let mut want: Vec<String> = (0..4usize)
            .map(|k| {
                let n = k as i32 * 37 - 50;
                let u = k as u32 * 4099 + 7;
                let space = if n >= 0 { format!(" {n}") } else { n.to_string() };
                format!(
                    // C's `%#o` prefixes a 0 (Rust's `{:#o}` writes `0o`).
                    "k={k} [{n:<6}] [{n:+}] [{space}] [{u:05}] {u:#x} {u:X} 0{u:o} {:x} {:.2} [{:8.3}] 1.250000e+03",
                    u64::MAX - k as u64,
                    x[k],
                    x[k]
                )
            })
            .collect();
        want.sort_unstable();
        assert_eq!(got, want);
    }
    assert_eq!(out.to_host_vec(&stream)?, vec![12; 4]);
    Ok(())
}
