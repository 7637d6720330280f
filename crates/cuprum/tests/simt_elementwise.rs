//! vecadd and saxpy, the SPEC's first kernels, against plain-Rust references on random data at
//! every size in `common::SIZES`, on whichever backend `CUPRUM_DEVICE` selects; and `1.0 / x`,
//! which the PTX writer emits as the correctly rounded reciprocal, bit for bit Rust's.

mod common;

use common::{SIZES, assert_same, blocks_for, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn reciprocals(
        x: &[f32],
        y: &[f64],
        mut rx: DisjointSlice<f32>,
        mut ry: DisjointSlice<f64>,
    ) {
        let i = thread::index_1d();
        if let Some(o) = rx.get_mut(i) {
            *o = 1.0 / x[i.get()];
        }
        if let Some(o) = ry.get_mut(i) {
            *o = 1.0 / y[i.get()];
        }
    }

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = c.get_mut(i) {
            *out = a[i.get()] + b[i.get()];
        }
    }

    #[kernel]
    #[launch_bounds(128)]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn saxpy(alpha: f32, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let raw = i.get();
        if let Some(out) = y.get_mut(i) {
            *out = alpha * x[raw] + *out;
        }
    }
}

#[test]
fn vecadd_matches_reference_at_every_size() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    for n in SIZES {
        let (a, b) = (random_f32(n), random_f32(n));
        let da = DeviceBuffer::from_host(&stream, &a)?;
        let db = DeviceBuffer::from_host(&stream, &b)?;
        let mut dc = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
        let prepared = module.prepare_vecadd(LaunchConfig1D::new(blocks_for(n, 256), 256, 0))?;
        module.vecadd(&stream, &prepared, &da, &db, &mut dc)?;
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_same(&format!("vecadd n={n}"), &dc.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn saxpy_matches_reference_at_every_size() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    for n in SIZES {
        let (x, y) = (random_f32(n), random_f32(n));
        let alpha = random_f32(1)[0];
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut dy = DeviceBuffer::from_host(&stream, &y)?;
        let prepared = module.prepare_saxpy(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?;
        module.saxpy(&stream, &prepared, alpha, &dx, &mut dy)?;
        // Two roundings, as the kernel's separate `*` and `+` (cuprum never contracts to fma).
        let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| alpha * x + y).collect();
        assert_same(&format!("saxpy n={n}"), &dy.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn extra_blocks_past_the_end_write_nothing() -> cuprum::Result<()> {
    // More threads than elements: the `get_mut` branch must keep the rest out, and the
    // elements that exist must still all be written.
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    let n = 1000;
    let (a, b) = (random_f32(n), random_f32(n));
    let da = DeviceBuffer::from_host(&stream, &a)?;
    let db = DeviceBuffer::from_host(&stream, &b)?;
    let mut dc = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let prepared = module.prepare_vecadd(LaunchConfig1D::new(17, 256, 0))?;
    module.vecadd(&stream, &prepared, &da, &db, &mut dc)?;
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_same("vecadd with spare blocks", &dc.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn the_module_compiles_to_valid_ir() -> cuprum::Result<()> {
    let ir = kernels::ir()?;
    cuprum::ir::validate_module(&ir).map_err(|e| cuprum::Error::Compile {
        kernel: "kernels".into(),
        message: e.to_string(),
    })?;
    let names: Vec<&str> = ir.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["reciprocals", "vecadd", "saxpy"]);
    Ok(())
}

/// `1.0 / x` (an `rcp.rn` on the GPU) is Rust's `1.0 / x` bit for bit: random magnitudes over
/// every binade, subnormals, zeros, infinities and NaNs.
#[test]
fn reciprocals_are_correctly_rounded() -> cuprum::Result<()> {
    use cuprum_testkit::poison::poisoned;
    use cuprum_testkit::random::{random, rng};
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("reciprocals");
    let n = 4096;
    let mut x: Vec<f32> = random::<u32>(&mut rng, n, 0, u32::MAX)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    let mut y: Vec<f64> = random::<u64>(&mut rng, n, 0, u64::MAX)
        .into_iter()
        .map(f64::from_bits)
        .collect();
    let f32_specials = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-45,
        -3e-39,
        f32::MAX,
    ];
    let f64_specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
        -2e-308,
        f64::MAX,
    ];
    x[..f32_specials.len()].copy_from_slice(&f32_specials);
    y[..f64_specials.len()].copy_from_slice(&f64_specials);
    let (dx, dy) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &y)?,
    );
    let mut rx = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n))?;
    let mut ry = DeviceBuffer::from_host(&stream, &poisoned::<f64>(n))?;
    let module = kernels::load(ctx)?;
    unsafe {
        module.reciprocals(
            &stream,
            LaunchConfig1D::new(blocks_for(n, 128), 128, 0),
            &dx,
            &dy,
            &mut rx,
            &mut ry,
        )
    }?;
    let (gx, gy) = (rx.to_host_vec(&stream)?, ry.to_host_vec(&stream)?);
    for i in 0..n {
        let (wx, wy) = (1.0 / x[i], 1.0 / y[i]);
        assert!(
            gx[i].to_bits() == wx.to_bits() || (wx.is_nan() && gx[i].is_nan()),
            "1 / {:e} ({:#010x}): got {:e}, want {:e}",
            x[i],
            x[i].to_bits(),
            gx[i],
            wx
        );
        assert!(
            gy[i].to_bits() == wy.to_bits() || (wy.is_nan() && gy[i].is_nan()),
            "1 / {:e}: got {:e}, want {:e}",
            y[i],
            gy[i],
            wy
        );
    }
    if let Some(ptx) = module.ptx() {
        assert!(
            ptx.contains("rcp.rn.f32") && ptx.contains("rcp.rn.f64"),
            "{ptx}"
        );
    }
    Ok(())
}
