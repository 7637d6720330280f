//! Literals in device code take the values rustc gives them: a suffixed float literal is
//! rounded once, from its digits, in its own type; an integer literal cast to a float is
//! rounded once, from the integer (a module constant here, which the front end folds). (Through `f64` both can round twice.) Each kernel scales
//! random inputs by such constants and is compared bit for bit with the same expression on
//! the host.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    /// 2^60 + 2^36 + 1: above an f32 midpoint by 1, which f64 cannot hold.
    pub const BIG: i64 = 1152921573326323713;

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    #[allow(clippy::excessive_precision)]
    pub fn scale_by_literals(
        x: &[f32],
        mut near_tie: DisjointSlice<f32>,
        mut big: DisjointSlice<f32>,
    ) {
        let i = thread::index_1d();
        let v = x[i.get() % x.len()];
        // Just below the midpoint of two f32 values; exactly on it once rounded to f64.
        if let Some(out) = near_tie.get_mut(i) {
            *out = v * 1.00000017881393432617187499f32;
        }
        if let Some(out) = big.get_mut(i) {
            *out = v + BIG as f32;
        }
    }
}

#[test]
#[allow(clippy::excessive_precision)]
fn literals_round_once_as_rustc_rounds_them() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 3000);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_f32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut near_tie = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let mut big = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let config = LaunchConfig1D::new(blocks_for(n, 128), 128, 0);
    m.scale_by_literals(
        &stream,
        &m.prepare_scale_by_literals(config)?,
        &dx,
        &mut near_tie,
        &mut big,
    )?;
    let tie = 1.00000017881393432617187499f32;
    let large = kernels::BIG as f32;
    // The constants themselves: rounded once (through f64 they would be one ulp higher).
    assert_eq!(tie.to_bits(), 0x3f80_0001);
    assert_ne!(
        (1.00000017881393432617187499f64 as f32).to_bits(),
        tie.to_bits()
    );
    assert_ne!(
        (1152921573326323713i64 as f64 as f32).to_bits(),
        large.to_bits()
    );
    let want_tie: Vec<f32> = x.iter().map(|&v| v * tie).collect();
    let want_big: Vec<f32> = x.iter().map(|&v| v + large).collect();
    assert_same(
        "v * 1.000000178...f32",
        &near_tie.to_host_vec(&stream)?,
        &want_tie,
    );
    assert_same(
        "v + (2^60 + 2^36 + 1) as f32",
        &big.to_host_vec(&stream)?,
        &want_big,
    );
    Ok(())
}
