//! Generic kernels (type and const parameters), specialized and compiled at their first
//! launch and cached per specialization, and `unsafe` kernels over raw device pointers.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32, random_i32};
use cuprum::simt::{DevicePtr, DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;
    use std::ops::{Add, Mul};

    /// y = a * x + y for any numeric element type.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn axpy<T: Copy + Add<Output = T> + Mul<Output = T>>(
        a: T,
        x: &[T],
        mut y: DisjointSlice<T>,
    ) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            *out = a * x[i.get()] + *out;
        }
    }

    /// Sum of a window of `W` elements starting at each index (wrapping around).
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn window_sum<const W: usize>(x: &[i32], mut y: DisjointSlice<i32>) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            let mut acc = 0i32;
            for k in 0..W {
                acc = acc.wrapping_add(x[(i.get() + k) % x.len()]);
            }
            *out = acc;
        }
    }

    /// Five local arrays of `N` `f64`s, their lengths given by the const parameter: with
    /// `N = 16384` they need 640 KiB per thread, more than a GPU thread has.
    #[kernel]
    #[launch_contract(domain = 1, block = (32, 1, 1))]
    pub fn staged<const N: usize>(x: &[f64], mut y: DisjointSlice<f64>) {
        let i = thread::index_1d();
        let mut a = [0.0f64; N];
        let b = [1.0f64; N];
        let c = [2.0f64; N];
        let d = [3.0f64; N];
        let e = [4.0f64; N];
        for k in 0..N {
            a[k] = x[(i.get() + k) % x.len()];
        }
        if let Some(out) = y.get_mut(i) {
            *out = a[N - 1] * 2.0 + a[0] + b[N / 2] + c[1] + d[2] + e[N - 3];
        }
    }

    /// Reverses `n` elements from `src` into `dst` through raw pointers.
    #[kernel]
    pub unsafe fn reverse(src: *const f32, dst: *mut f32, n: usize) {
        let i = thread::index_1d().get();
        if i < n {
            let v = unsafe { *src.add(i) };
            unsafe { dst.add(n - 1 - i).write(v * 2.0) };
        }
    }
}

#[test]
fn a_generic_kernel_runs_for_each_element_type() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 1000;
    let prepared = m.prepare_axpy(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?;
    let (x, y) = (random_f32(n), random_f32(n));
    let (dx, mut dy) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &y)?,
    );
    m.axpy(&stream, &prepared, 1.5f32, &dx, &mut dy)?;
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 1.5 * x + y).collect();
    assert_same("axpy f32", &dy.to_host_vec(&stream)?, &want);

    let (xi, yi) = (random_i32(n), random_i32(n));
    let (dxi, mut dyi) = (
        DeviceBuffer::from_host(&stream, &xi)?,
        DeviceBuffer::from_host(&stream, &yi)?,
    );
    m.axpy(&stream, &prepared, -3i32, &dxi, &mut dyi)?;
    let want: Vec<i32> = xi
        .iter()
        .zip(&yi)
        .map(|(x, y)| (-3i32).wrapping_mul(*x).wrapping_add(*y))
        .collect();
    assert_same("axpy i32", &dyi.to_host_vec(&stream)?, &want);

    let xd: Vec<f64> = x.iter().map(|&v| v as f64 / 3.0).collect();
    let (dxd, mut dyd) = (
        DeviceBuffer::from_host(&stream, &xd)?,
        DeviceBuffer::from_host(&stream, &vec![0.25f64; n])?,
    );
    m.axpy(&stream, &prepared, 2.0f64, &dxd, &mut dyd)?;
    let want: Vec<f64> = xd.iter().map(|x| 2.0 * x + 0.25).collect();
    assert_same("axpy f64", &dyd.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn const_parameters_specialize_the_kernel() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 777;
    let x = random_i32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let config = LaunchConfig1D::new(blocks_for(n, 64), 64, 0);
    let window = |w: usize| -> Vec<i32> {
        (0..n)
            .map(|i| (0..w).fold(0i32, |a, k| a.wrapping_add(x[(i + k) % n])))
            .collect()
    };
    let mut y = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    m.window_sum::<3>(&stream, &m.prepare_window_sum(config)?, &dx, &mut y)?;
    assert_same("window 3", &y.to_host_vec(&stream)?, &window(3));
    m.window_sum::<17>(&stream, &m.prepare_window_sum(config)?, &dx, &mut y)?;
    assert_same("window 17", &y.to_host_vec(&stream)?, &window(17));
    Ok(())
}

/// The line of this file that holds `text`.
fn line_of(text: &str) -> usize {
    let source = include_str!("simt_generic.rs");
    match source.lines().position(|l| l.contains(text)) {
        Some(k) => k + 1,
        None => panic!("`{text}` is not in this file"),
    }
}

#[test]
fn a_specialization_past_the_local_memory_limit_is_a_compile_error() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 32;
    let x: Vec<f64> = random_f32(n).iter().map(|&v| f64::from(v)).collect();
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![f64::NAN; n])?;
    let prepared = m.prepare_staged(LaunchConfig1D::new(1, 32, 0))?;
    // 5 * 256 * 8 bytes fit.
    m.staged::<256>(&stream, &prepared, &dx, &mut y)?;
    let want: Vec<f64> = (0..n)
        .map(|i| x[(i + 255) % n] * 2.0 + x[i] + 1.0 + 2.0 + 3.0 + 4.0)
        .collect();
    assert_same("staged::<256>", &y.to_host_vec(&stream)?, &want);
    match m.staged::<16384>(&stream, &prepared, &dx, &mut y) {
        Err(cuprum::Error::Compile { kernel, message }) => {
            assert_eq!(kernel, "staged__16384");
            assert!(
                message.contains(&format!(
                    "kernel `staged` (with N = 16384) needs 640 KiB of local memory per thread \
                     for its arrays, more than the 512 KiB a GPU thread has; the largest: \
                     `a: [f64; 16384]`, 128 KiB at line {}",
                    line_of("let mut a = [0.0f64; N];")
                )),
                "{message}"
            );
        }
        Err(other) => panic!("expected a compile error, got: {other}"),
        Ok(()) => panic!("640 KiB of local arrays per thread went unnoticed"),
    }
    Ok(())
}

#[test]
fn unsafe_kernels_take_raw_device_pointers() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 1001;
    let x = random_f32(n);
    let src = DeviceBuffer::from_host(&stream, &x)?;
    let dst = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    // SAFETY: both buffers hold n elements and the kernel touches indices below n only.
    unsafe {
        m.reverse(
            &stream,
            LaunchConfig1D::new(blocks_for(n, 128), 128, 0),
            DevicePtr::of(&src),
            DevicePtr::of(&dst),
            n,
        )?;
    }
    let want: Vec<f32> = x.iter().rev().map(|v| v * 2.0).collect();
    assert_same("reverse", &dst.to_host_vec(&stream)?, &want);
    Ok(())
}

/// A specialization's run-time compile takes the file the macro recorded under
/// `CUPRUM_LINEINFO` (`__CUPRUM_LINE_FILE`): its IR then carries that file's lines, which
/// the PTX writer makes `.loc`s; without one it carries none.
#[test]
fn a_specialization_compiled_with_its_modules_file_carries_lines() {
    const SOURCE: &str = "mod kernels {\n    use super::*;\n    #[kernel]\n    pub fn twice<T: Copy + std::ops::Add<Output = T>>(x: &[T], mut y: DisjointSlice<T>) {\n        let i = thread::index_1d();\n        if let Some(out) = y.get_mut(i) {\n            *out = x[i.get()] + x[i.get()];\n        }\n    }\n}";
    let spec = cuprum::__private::Specialization {
        types: vec![("T".into(), cuprum::ir::ScalarType::F32)],
        consts: Vec::new(),
    };
    let compile = |file| {
        let ir = cuprum::__private::compile_specialized(SOURCE, file, "twice", &spec)
            .unwrap_or_else(|e| panic!("{e}"));
        cuprum::ir::print_module(&ir)
    };
    let with = compile(Some("/src/kernels.rs"));
    for line in [5, 6, 7] {
        assert!(
            with.contains(&format!("// /src/kernels.rs:{line}:0")),
            "line {line}:\n{with}"
        );
    }
    let without = compile(None);
    assert!(!without.contains("kernels.rs"), "{without}");
}
