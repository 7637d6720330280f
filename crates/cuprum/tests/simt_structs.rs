//! User `Copy` structs in device code: as kernel parameters (passed field by field), as
//! locals (mutable too), built with struct expressions, passed to and returned from helpers.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Affine {
        pub scale: f32,
        pub shift: f32,
        pub clamp: u32,
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Stats {
        pub low: f32,
        pub high: f32,
    }

    pub fn apply(t: Affine, x: f32) -> f32 {
        (x * t.scale + t.shift).min(t.clamp as f32)
    }

    pub fn widen(s: Stats, x: f32) -> Stats {
        let mut out = s;
        if x < out.low {
            out.low = x;
        }
        if x > out.high {
            out.high = x;
        }
        out
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn transform(t: Affine, x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = y.get_mut(i) {
            let k = i.get();
            let mut s = Stats {
                low: x[k],
                high: x[k],
            };
            s = widen(s, x[(k + 1) % x.len()]);
            s = widen(s, apply(t, x[(k + 2) % x.len()]));
            let half = Affine { scale: 0.5, ..t };
            *o = s.high - s.low + apply(half, s.low);
        }
    }
}

use kernels::{Affine, Stats};

#[test]
fn structs_as_parameters_locals_and_helper_values() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 2000;
    let x = random_f32(n);
    let t = Affine {
        scale: 1.25,
        shift: -3.0,
        clamp: 50,
    };
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    m.transform(
        &stream,
        &m.prepare_transform(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?,
        t,
        &dx,
        &mut y,
    )?;
    let want: Vec<f32> = (0..n)
        .map(|k| {
            let mut s = Stats {
                low: x[k],
                high: x[k],
            };
            s = kernels::widen(s, x[(k + 1) % n]);
            s = kernels::widen(s, kernels::apply(t, x[(k + 2) % n]));
            let half = Affine { scale: 0.5, ..t };
            s.high - s.low + kernels::apply(half, s.low)
        })
        .collect();
    assert_same("structs", &y.to_host_vec(&stream)?, &want);
    Ok(())
}
