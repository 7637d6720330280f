//! Device helper functions (generic or not, nested, with early `return`), checked against the
//! same functions run on the host: the helpers are plain Rust, so the reference *is* the code.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32, random_i32};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    const SCALE: f32 = 0.5;

    pub fn clamp_unit(x: f32) -> f32 {
        if x < -1.0 {
            return -1.0;
        }
        if x > 1.0 {
            return 1.0;
        }
        x
    }

    pub fn smooth(x: f32) -> f32 {
        let c = clamp_unit(x * SCALE);
        c * c * (3.0 - 2.0 * c)
    }

    pub fn largest<T: PartialOrd + Copy>(a: T, b: T, c: T) -> T {
        let mut m = a;
        if b > m {
            m = b;
        }
        if c > m {
            m = c;
        }
        m
    }

    pub fn count_steps(mut v: i32, limit: i32) -> i32 {
        let mut steps = 0;
        loop {
            if v <= limit || steps >= 50 {
                break;
            }
            v /= 2;
            steps += 1;
        }
        steps
    }

    pub fn sum_window(x: &[f32], start: usize, width: usize) -> f32 {
        let mut acc = 0.0;
        for k in start..(start + width).min(x.len()) {
            acc += x[k];
        }
        acc
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn apply(x: &[f32], ints: &[i32], mut y: DisjointSlice<f32>, mut z: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let k = i.get();
        if let Some(o) = y.get_mut(i) {
            *o = smooth(x[k]) + largest(x[k], -x[k], 0.25) + sum_window(x, k, 4);
        }
        if let Some(o) = z.get_mut(i) {
            *o = largest(ints[k], 7, -3) + count_steps(ints[k], 100);
        }
    }
}

#[test]
fn helpers_compute_what_they_compute_on_the_host() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 3001;
    let x: Vec<f32> = random_f32(n).iter().map(|v| v / 30.0).collect();
    let ints: Vec<i32> = random_i32(n).iter().map(|v| v % 100_000).collect();
    let (dx, di) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &ints)?,
    );
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let mut z = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    let config = LaunchConfig1D::new(blocks_for(n, 128), 128, 0);
    m.apply(&stream, &m.prepare_apply(config)?, &dx, &di, &mut y, &mut z)?;
    let want_y: Vec<f32> = (0..n)
        .map(|k| {
            kernels::smooth(x[k])
                + kernels::largest(x[k], -x[k], 0.25)
                + kernels::sum_window(&x, k, 4)
        })
        .collect();
    let want_z: Vec<i32> = ints
        .iter()
        .map(|&v| kernels::largest(v, 7, -3) + kernels::count_steps(v, 100))
        .collect();
    assert_same("float helpers", &y.to_host_vec(&stream)?, &want_y);
    assert_same("int helpers", &z.to_host_vec(&stream)?, &want_z);
    Ok(())
}
