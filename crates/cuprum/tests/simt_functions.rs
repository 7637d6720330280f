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

    pub fn array_sum(v: [f32; 4]) -> f32 {
        v[0] + v[1] + v[2] + v[3]
    }

    pub fn min_max(a: i32, b: i32) -> (i32, i32) {
        if a < b { (a, b) } else { (b, a) }
    }

    /// Local arrays indexed at run time (a small sort), arrays passed by value, tuples.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn aggregates(
        x: &[f32],
        ints: &[i32],
        mut y: DisjointSlice<f32>,
        mut z: DisjointSlice<i32>,
    ) {
        let i = thread::index_1d();
        let k = i.get();
        if let Some(o) = y.get_mut(i) {
            let mut w = [0.0; 4];
            for j in 0..4 {
                w[j] = x[(k + j) % x.len()];
            }
            // Bubble sort, indices computed at run time.
            for a in 0..4 {
                for b in 0..3 - a {
                    if w[b] > w[b + 1] {
                        let t = w[b];
                        w[b] = w[b + 1];
                        w[b + 1] = t;
                    }
                }
            }
            let copy = w;
            w[0] = 100.0;
            *o = array_sum(copy) * 2.0 + w[0] + copy[3] - w.len() as f32;
        }
        if let Some(o) = z.get_mut(i) {
            let (lo, hi) = min_max(ints[k], ints[(k + 1) % ints.len()]);
            let mut pair = (lo, hi);
            pair.0 += 1;
            let (a, b) = pair;
            let table = [3, 1, 4, 1, 5, 9, 2, 6];
            *o = a.wrapping_sub(b).wrapping_add(table[(hi & 7) as usize]) ^ pair.1;
        }
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
fn local_arrays_and_tuples() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 1000;
    let x = random_f32(n);
    let ints = random_i32(n);
    let (dx, di) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &ints)?,
    );
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    let mut z = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    let config = LaunchConfig1D::new(blocks_for(n, 64), 64, 0);
    m.aggregates(
        &stream,
        &m.prepare_aggregates(config)?,
        &dx,
        &di,
        &mut y,
        &mut z,
    )?;
    let want_y: Vec<f32> = (0..n)
        .map(|k| {
            let mut w: [f32; 4] = std::array::from_fn(|j| x[(k + j) % n]);
            w.sort_by(f32::total_cmp);
            kernels::array_sum(w) * 2.0 + 100.0 + w[3] - 4.0
        })
        .collect();
    let want_z: Vec<i32> = (0..n)
        .map(|k| {
            let (lo, hi) = kernels::min_max(ints[k], ints[(k + 1) % n]);
            let table = [3, 1, 4, 1, 5, 9, 2, 6];
            (lo + 1)
                .wrapping_sub(hi)
                .wrapping_add(table[(hi & 7) as usize])
                ^ hi
        })
        .collect();
    assert_same("arrays", &y.to_host_vec(&stream)?, &want_y);
    assert_same("tuples", &z.to_host_vec(&stream)?, &want_z);
    Ok(())
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
