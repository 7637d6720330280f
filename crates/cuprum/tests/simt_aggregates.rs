//! Arrays and structs as elements of device memory: `&[[f32; 4]]` and
//! `DisjointSlice<[f32; 4]>` (CUDA's float4 bodies of nbody's `integrateBodies`), slices of
//! nested `#[repr(C)]` structs written field by field through `get_mut`, a shared
//! `SharedArray<[f32; 17], 16>` tile indexed `tile[r][c]` (cuda-samples'
//! `transposeNoBankConflicts`), and a generic `SharedArray<T, N>` block reduction. Every
//! output starts poisoned and every element is checked against plain Rust.

mod common;

use common::{assert_same, blocks_for, ctx, integrate_bodies_reference};
use cuprum::simt::{
    DisjointSlice, Num, SharedArray, kernel, launch_contract, sync_threads, thread,
};
use cuprum::{DeviceBuffer, DeviceCopy, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::Poison;
use cuprum_testkit::random::{random, rng};

#[cuda_module]
mod kernels {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct V3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Particle {
        pub pos: V3,
        pub vel: V3,
    }

    /// nbody's `integrateBodies`: bodies are `[x, y, z, mass]`, velocities `[vx, vy, vz, _]`.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn integrate_bodies(
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        dt: f32,
        damping: f32,
        softening: f32,
        mut new_pos: DisjointSlice<[f32; 4]>,
        mut new_vel: DisjointSlice<[f32; 4]>,
    ) {
        let i = thread::index_1d();
        if let Some(p_out) = new_pos.get_mut(i) {
            if let Some(v_out) = new_vel.get_mut(i) {
                let me = pos[i.get()];
                let mut acc = [0.0f32; 3];
                for j in 0..pos.len() {
                    let other = pos[j];
                    let dx = other[0] - me[0];
                    let dy = other[1] - me[1];
                    let dz = other[2] - me[2];
                    let d2 = dx * dx + dy * dy + dz * dz + softening;
                    let inv = 1.0 / d2.sqrt();
                    let s = other[3] * inv * inv * inv;
                    acc[0] += dx * s;
                    acc[1] += dy * s;
                    acc[2] += dz * s;
                }
                let v = vel[i.get()];
                let nv = [
                    (v[0] + acc[0] * dt) * damping,
                    (v[1] + acc[1] * dt) * damping,
                    (v[2] + acc[2] * dt) * damping,
                    v[3],
                ];
                *v_out = nv;
                *p_out = [
                    me[0] + nv[0] * dt,
                    me[1] + nv[1] * dt,
                    me[2] + nv[2] * dt,
                    me[3],
                ];
            }
        }
    }

    /// A float4 element read whole and written whole: one 16-byte load and one 16-byte store.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn scale4(x: &[[f32; 4]], k: f32, mut y: DisjointSlice<[f32; 4]>) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            let v = x[i.get()];
            *out = [v[0] * k, v[1] * k, v[2] * k, v[3] * k];
        }
    }

    /// `scale4` through the output patterns: a grid-stride loop over float4 elements, and
    /// two consecutive float4 elements per thread.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn scale4_strided(x: &[[f32; 4]], k: f32, mut y: DisjointSlice<[f32; 4]>) {
        for (i, out) in y.grid_stride_mut() {
            let v = x[i];
            *out = [v[0] * k, v[1] * k, v[2] * k, v[3] * k];
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn scale4_pairs(x: &[[f32; 4]], k: f32, mut y: DisjointSlice<[f32; 4]>) {
        let i = thread::index_1d();
        for (j, out) in y.chunk_mut::<2>(i) {
            let v = x[2 * i.get() + j];
            *out = [v[0] * k, v[1] * k, v[2] * k, v[3] * k];
        }
    }

    /// One time step of particles under gravity, written whole and then field by field.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn step_particles(ps: &[Particle], dt: f32, mut out: DisjointSlice<Particle>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let p = ps[i.get()];
            *o = p;
            o.vel.y = p.vel.y - 9.8 * dt;
            o.pos.x += p.vel.x * dt;
            o.pos.y += o.vel.y * dt;
            o.pos.z = ps[i.get()].pos.z + ps[i.get()].vel.z * dt;
            let v = o.vel;
            o.vel = V3 { x: v.x * 0.5, ..v };
        }
    }

    /// cuda-samples' `transposeNoBankConflicts`: a 16 x 16 tile padded to 17 columns.
    #[kernel]
    pub unsafe fn transpose_padded(a: &[f32], rows: usize, cols: usize, t: &mut [f32]) {
        let mut tile = SharedArray::<[f32; 17], 16>::uninit();
        let tx = thread::threadIdx_x() as usize;
        let ty = thread::threadIdx_y() as usize;
        let bx = thread::blockIdx_x() as usize * 16;
        let by = thread::blockIdx_y() as usize * 16;
        if bx + tx < cols && by + ty < rows {
            tile[ty][tx] = a[(by + ty) * cols + bx + tx];
        }
        sync_threads();
        let (ox, oy) = (by + tx, bx + ty);
        if ox < rows && oy < cols {
            t[oy * rows + ox] = tile[tx][ty];
        }
    }

    /// Each block's sum of its `N` elements (a tree in a generic `SharedArray<T, N>`).
    #[kernel]
    pub unsafe fn block_sum<T: Num, const N: usize>(x: &[T], sums: &mut [T]) {
        let mut s = SharedArray::<T, N>::uninit();
        let tid = thread::threadIdx_x() as usize;
        let i = thread::blockIdx_x() as usize * N + tid;
        s[tid] = if i < x.len() { x[i] } else { T::ZERO };
        sync_threads();
        let mut half = N / 2;
        while half > 0 {
            if tid < half {
                s[tid] = s[tid] + s[tid + half];
            }
            sync_threads();
            half /= 2;
        }
        if tid == 0 {
            sums[thread::blockIdx_x() as usize] = s[0];
        }
    }
}

use kernels::{Particle, V3};

fn nan4() -> [f32; 4] {
    [f32::POISON; 4]
}

#[test]
fn integrate_bodies_reads_and_writes_float4_elements() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("integrate_bodies");
    let n = 300;
    let flat = random(&mut rng, n * 4, -10.0f32, 10.0);
    let pos: Vec<[f32; 4]> = flat
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3].abs() + 0.5])
        .collect();
    let flat = random(&mut rng, n * 4, -1.0f32, 1.0);
    let vel: Vec<[f32; 4]> = flat.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
    let (dt, damping, softening) = (0.01f32, 0.995f32, 0.1f32);
    let dpos = DeviceBuffer::from_host(&stream, &pos)?;
    let dvel = DeviceBuffer::from_host(&stream, &vel)?;
    let mut npos = DeviceBuffer::from_host(&stream, &vec![nan4(); n])?;
    let mut nvel = DeviceBuffer::from_host(&stream, &vec![nan4(); n])?;
    let prepared = m.prepare_integrate_bodies(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?;
    m.integrate_bodies(
        &stream, &prepared, &dpos, &dvel, dt, damping, softening, &mut npos, &mut nvel,
    )?;
    let (want_pos, want_vel) = integrate_bodies_reference(&pos, &vel, dt, damping, softening);
    assert_same("new velocities", &nvel.to_host_vec(&stream)?, &want_vel);
    assert_same("new positions", &npos.to_host_vec(&stream)?, &want_pos);
    Ok(())
}

#[test]
fn particles_update_nested_struct_elements_field_by_field() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("step_particles");
    for n in [1usize, 63, 1000] {
        let f = random(&mut rng, n * 6, -50.0f32, 50.0);
        let ps: Vec<Particle> = f
            .chunks(6)
            .map(|c| Particle {
                pos: V3 {
                    x: c[0],
                    y: c[1],
                    z: c[2],
                },
                vel: V3 {
                    x: c[3],
                    y: c[4],
                    z: c[5],
                },
            })
            .collect();
        let poison = V3 {
            x: f32::POISON,
            y: f32::POISON,
            z: f32::POISON,
        };
        let dps = DeviceBuffer::from_host(&stream, &ps)?;
        let mut out = DeviceBuffer::from_host(
            &stream,
            &vec![
                Particle {
                    pos: poison,
                    vel: poison
                };
                n
            ],
        )?;
        let dt = 0.02f32;
        let prepared = m.prepare_step_particles(LaunchConfig1D::new(blocks_for(n, 64), 64, 0))?;
        m.step_particles(&stream, &prepared, &dps, dt, &mut out)?;
        let want: Vec<Particle> = ps
            .iter()
            .map(|p| {
                let vy = p.vel.y - 9.8 * dt;
                Particle {
                    pos: V3 {
                        x: p.pos.x + p.vel.x * dt,
                        y: p.pos.y + vy * dt,
                        z: p.pos.z + p.vel.z * dt,
                    },
                    vel: V3 {
                        x: p.vel.x * 0.5,
                        y: vy,
                        z: p.vel.z,
                    },
                }
            })
            .collect();
        assert_same(
            &format!("particles (n = {n})"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn transpose_through_a_padded_two_dimensional_shared_tile() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("transpose_padded");
    for (rows, cols) in [(16usize, 16usize), (37, 50), (1, 70)] {
        let a = random(&mut rng, rows * cols, -100.0f32, 100.0);
        let da = DeviceBuffer::from_host(&stream, &a)?;
        let mut dt = DeviceBuffer::from_host(&stream, &vec![f32::POISON; rows * cols])?;
        let config = LaunchConfig {
            grid_dim: (cols.div_ceil(16) as u32, rows.div_ceil(16) as u32, 1),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the grid covers `a`; each thread writes its own element of `t`.
        unsafe { m.transpose_padded(&stream, config, &da, rows, cols, &mut dt)? };
        let mut want = vec![0.0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                want[c * rows + r] = a[r * cols + c];
            }
        }
        assert_same(
            &format!("transpose {rows}x{cols}"),
            &dt.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

fn check_block_sum<T, const N: usize>(m: &kernels::Module, x: &[T]) -> cuprum::Result<()>
where
    T: Num + Poison + PartialEq + std::fmt::Debug + std::ops::Add<Output = T> + Default,
{
    let stream = ctx().default_stream();
    let blocks = x.len().div_ceil(N);
    let dx = DeviceBuffer::from_host(&stream, x)?;
    let mut sums = DeviceBuffer::from_host(&stream, &vec![T::POISON; blocks])?;
    let config = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (N as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: one thread per element of a block; thread 0 of each block writes its sum.
    unsafe { m.block_sum::<T, N>(&stream, config, &dx, &mut sums)? };
    let want: Vec<T> = x
        .chunks(N)
        .map(|c| {
            // The kernel's tree order: pairs `half` apart, halving.
            let mut s: Vec<T> = (0..N)
                .map(|k| c.get(k).copied().unwrap_or_default())
                .collect();
            let mut half = N / 2;
            while half > 0 {
                for t in 0..half {
                    s[t] = s[t] + s[t + half];
                }
                half /= 2;
            }
            s[0]
        })
        .collect();
    assert_same(
        std::any::type_name::<T>(),
        &sums.to_host_vec(&stream)?,
        &want,
    );
    Ok(())
}

#[test]
fn generic_shared_array_block_sums_for_four_element_types() -> cuprum::Result<()> {
    let m = kernels::load(ctx())?;
    let mut rng = rng("block_sum");
    check_block_sum::<f32, 128>(&m, &random(&mut rng, 1000, -100.0f32, 100.0))?;
    check_block_sum::<f64, 64>(&m, &random(&mut rng, 777, -100.0f64, 100.0))?;
    check_block_sum::<i32, 256>(&m, &random(&mut rng, 1500, -1000i32, 1000))?;
    check_block_sum::<u32, 32>(&m, &random(&mut rng, 100, 0u32, 100_000))?;
    Ok(())
}

#[test]
fn float4_elements_scale_and_use_16_byte_accesses() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("scale4");
    for n in [1usize, 129, 5000] {
        let f = random(&mut rng, n * 4, -100.0f32, 100.0);
        let x: Vec<[f32; 4]> = f.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut dy = DeviceBuffer::from_host(&stream, &vec![nan4(); n])?;
        let prepared = m.prepare_scale4(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?;
        m.scale4(&stream, &prepared, &dx, 1.5, &mut dy)?;
        let want: Vec<[f32; 4]> = x.iter().map(|v| v.map(|e| e * 1.5)).collect();
        assert_same(&format!("scale4 n={n}"), &dy.to_host_vec(&stream)?, &want);
    }
    // The element load and store are one vector access each, as CUDA's float4 is.
    let ir = kernels::ir()?;
    let ptx = cuprum_ptx::write_module(&ir, cuprum_ptx::Target::Sm90)?;
    let start = ptx.find(".entry scale4").ok_or("no scale4 entry")?;
    let body = &ptx[start..];
    let body = &body[..body[1..].find(".entry").map_or(body.len(), |e| e + 1)];
    assert_eq!(body.matches("ld.global.nc.v4.f32").count(), 1, "{body}");
    assert_eq!(body.matches("st.global.v4.f32").count(), 1, "{body}");
    assert!(!body.contains("ld.global.nc.f32"), "{body}");
    Ok(())
}

#[test]
fn float4_elements_through_the_grid_stride_and_chunk_patterns() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("scale4_patterns");
    for n in [1usize, 257, 3001] {
        let f = random(&mut rng, n * 4, -100.0f32, 100.0);
        let x: Vec<[f32; 4]> = f.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
        let k = -0.75f32;
        let want: Vec<[f32; 4]> = x.iter().map(|v| v.map(|e| e * k)).collect();
        let dx = DeviceBuffer::from_host(&stream, &x)?;

        let mut dy = DeviceBuffer::from_host(&stream, &vec![nan4(); n])?;
        let p = m.prepare_scale4_strided(LaunchConfig1D::new(2, 128, 0))?;
        m.scale4_strided(&stream, &p, &dx, k, &mut dy)?;
        assert_same(
            &format!("scale4_strided n={n}"),
            &dy.to_host_vec(&stream)?,
            &want,
        );

        let mut dy = DeviceBuffer::from_host(&stream, &vec![nan4(); n])?;
        let threads = n.div_ceil(2);
        let p = m.prepare_scale4_pairs(LaunchConfig1D::new(blocks_for(threads, 128), 128, 0))?;
        m.scale4_pairs(&stream, &p, &dx, k, &mut dy)?;
        assert_same(
            &format!("scale4_pairs n={n}"),
            &dy.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}
