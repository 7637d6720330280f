//! The optimizer's vector accesses (`vectorize`) end to end: a grid-stride kernel that reads
//! and writes four consecutive `f32` per step, written with scalar indexing, against a Rust
//! reference on random data at lengths that are and are not multiples of 4 (outputs poisoned,
//! every element checked), and its PTX, which must use 16-byte loads and stores.

mod common;

use common::{assert_same, ctx, random_f32};
use cuprum::simt::{kernel, launch_bounds, thread};
use cuprum::{DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    /// c = a + b, four elements per step (the `vecadd_gridstride` of the benchmarks); the
    /// first threads do the tail.
    #[kernel]
    #[launch_bounds(256)]
    pub unsafe fn add4(a: &[f32], b: &[f32], c: &mut [f32]) {
        let n = c.len();
        let n4 = n / 4;
        let stride = (thread::gridDim_x() * thread::blockDim_x()) as usize;
        let first = thread::index_1d().get();
        let mut i = first;
        while i < n4 {
            let j = 4 * i;
            let s0 = a[j] + b[j];
            let s1 = a[j + 1] + b[j + 1];
            let s2 = a[j + 2] + b[j + 2];
            let s3 = a[j + 3] + b[j + 3];
            c[j] = s0;
            c[j + 1] = s1;
            c[j + 2] = s2;
            c[j + 3] = s3;
            i += stride;
        }
        if first < n - 4 * n4 {
            let j = 4 * n4 + first;
            c[j] = a[j] + b[j];
        }
    }
}

#[test]
fn four_wide_grid_stride_add_matches_reference() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx)?;
    for n in [1usize, 3, 4, 5, 8, 255, 1000, 4096 + 2, (1 << 16) + 3] {
        let (a, b) = (random_f32(n), random_f32(n));
        let da = DeviceBuffer::from_host(&stream, &a)?;
        let db = DeviceBuffer::from_host(&stream, &b)?;
        let mut dc = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
        // Few blocks: most threads loop several times.
        let config = LaunchConfig1D::new(3, 256, 0);
        // SAFETY: each element of c is written by exactly one thread; a and b are read only.
        unsafe { module.add4(&stream, config, &da, &db, &mut dc)? };
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        assert_same(&format!("add4 n={n}"), &dc.to_host_vec(&stream)?, &want);
    }
    Ok(())
}

#[test]
fn four_wide_add_uses_16_byte_accesses() -> Result<(), Box<dyn std::error::Error>> {
    let ir = kernels::ir()?;
    let ptx = cuprum_ptx::write_module(&ir, cuprum_ptx::Target::Sm90)?;
    // a and b are read-only slices: the non-coherent path.
    assert_eq!(ptx.matches("ld.global.nc.v4.f32").count(), 2, "{ptx}");
    assert_eq!(ptx.matches("st.global.v4.f32").count(), 1, "{ptx}");
    Ok(())
}
