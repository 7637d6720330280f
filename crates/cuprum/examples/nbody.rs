//! All-pairs n-body integration step (cuda-samples' `integrateBodies`), in cuprum: checked
//! bit for bit against the CPU and (on a GPU) timed against its CUDA C++ peer
//! `benches/peers/nbody.cu`.
//!
//! Bodies are float4s `[x, y, z, mass]`. Each block of 256 threads stages the bodies in
//! tiles of 256 in shared memory (each thread loads the one it owns), every thread adds the
//! pull of the whole tile on its own body, and the tile moves on; then each thread updates
//! its body's velocity and position. The kernel is safe: the tile is a phased shared array,
//! and each thread writes only its own body. The last tile is padded with massless bodies.
//! 65536 bodies on the GPU (4.3 billion interactions, 20 flops each as cuda-samples counts
//! them); a few hundred on the emulator.

use cuprum::simt::{DisjointSlice, SharedWrite, kernel, launch_bounds, launch_contract, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, LaunchConfig1D, cuda_module};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "common/record.rs"]
mod record;
#[path = "common/size.rs"]
mod size;
#[path = "common/timing.rs"]
mod timing;
use timing::median_ms;

#[cuda_module]
mod kernels {
    use super::*;

    /// Bodies per shared tile, and threads per block.
    pub const TILE: usize = 256;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn integrate_bodies(
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        dt: f32,
        damping: f32,
        softening_sq: f32,
        mut new_pos: DisjointSlice<[f32; 4]>,
        mut new_vel: DisjointSlice<[f32; 4]>,
    ) {
        let i = thread::index_1d();
        let n = pos.len();
        let me = if i.get() < n {
            pos[i.get()]
        } else {
            [0.0f32; 4]
        };
        let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
        let mut shared_pos = SharedWrite::<[f32; 4], TILE>::new();
        for tile0 in (0..n).step_by(TILE) {
            for (j, slot) in shared_pos.mine() {
                let g = tile0 + j;
                *slot = if g < n { pos[g] } else { [0.0f32; 4] };
            }
            let tile = shared_pos.sync();
            for j in 0..TILE {
                let other = tile[j];
                let rx = other[0] - me[0];
                let ry = other[1] - me[1];
                let rz = other[2] - me[2];
                // Fused multiply-adds where nvcc contracts the CUDA source's (`mul_add` is
                // one rounding, as `fma.rn`).
                let dist_sqr = rz.mul_add(rz, ry.mul_add(ry, rx * rx)) + softening_sq;
                let inv_dist = 1.0 / dist_sqr.sqrt();
                let s = other[3] * (inv_dist * inv_dist * inv_dist);
                ax = rx.mul_add(s, ax);
                ay = ry.mul_add(s, ay);
                az = rz.mul_add(s, az);
            }
            shared_pos = tile.sync();
        }
        if let Some(p_out) = new_pos.get_mut(i) {
            if let Some(v_out) = new_vel.get_mut(i) {
                let v = vel[i.get()];
                let nv = [
                    (v[0] + ax * dt) * damping,
                    (v[1] + ay * dt) * damping,
                    (v[2] + az * dt) * damping,
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
}

/// The step's constants, as cuda-samples' defaults.
const DT: f32 = 0.016;
const DAMPING: f32 = 1.0;
const SOFTENING_SQ: f32 = 0.01;

/// Body `i`'s new position and velocity, summing the pulls in the kernel's order.
fn reference(pos: &[[f32; 4]], vel: &[[f32; 4]], i: usize) -> ([f32; 4], [f32; 4]) {
    let me = pos[i];
    let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
    for other in pos {
        let (rx, ry, rz) = (other[0] - me[0], other[1] - me[1], other[2] - me[2]);
        let dist_sqr = rz.mul_add(rz, ry.mul_add(ry, rx * rx)) + SOFTENING_SQ;
        let inv_dist = 1.0 / dist_sqr.sqrt();
        let s = other[3] * (inv_dist * inv_dist * inv_dist);
        ax = rx.mul_add(s, ax);
        ay = ry.mul_add(s, ay);
        az = rz.mul_add(s, az);
    }
    let v = vel[i];
    let nv = [
        (v[0] + ax * DT) * DAMPING,
        (v[1] + ay * DT) * DAMPING,
        (v[2] + az * DT) * DAMPING,
        v[3],
    ];
    let np = [
        me[0] + nv[0] * DT,
        me[1] + nv[1] * DT,
        me[2] + nv[2] * DT,
        me[3],
    ];
    (np, nv)
}

/// One step of `n` random bodies: checks `checked` bodies (spread over all of them) bit for
/// bit, and times the step over `reps` launches when `reps > 0`.
fn run(
    ctx: &CudaContext,
    module: &kernels::Module,
    rng: &mut SmallRng,
    n: usize,
    checked: usize,
    reps: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let pos: Vec<[f32; 4]> = (0..n)
        .map(|_| {
            [
                rng.random_range(-100.0f32..100.0),
                rng.random_range(-100.0f32..100.0),
                rng.random_range(-100.0f32..100.0),
                rng.random_range(0.5f32..2.0),
            ]
        })
        .collect();
    let vel: Vec<[f32; 4]> = (0..n)
        .map(|_| {
            [
                rng.random_range(-1.0f32..1.0),
                rng.random_range(-1.0f32..1.0),
                rng.random_range(-1.0f32..1.0),
                0.0,
            ]
        })
        .collect();
    let dpos = DeviceBuffer::from_host(&stream, &pos)?;
    let dvel = DeviceBuffer::from_host(&stream, &vel)?;
    // Poisoned, so a body the kernel fails to write cannot pass the check.
    let mut npos = DeviceBuffer::from_host(&stream, &vec![[f32::NAN; 4]; n])?;
    let mut nvel = DeviceBuffer::from_host(&stream, &vec![[f32::NAN; 4]; n])?;
    let prepared = module.prepare_integrate_bodies(LaunchConfig1D::for_len(n, 256))?;
    let mut launch = || {
        module.integrate_bodies(
            &stream,
            &prepared,
            &dpos,
            &dvel,
            DT,
            DAMPING,
            SOFTENING_SQ,
            &mut npos,
            &mut nvel,
        )
    };
    launch()?;
    let ms = if reps > 0 {
        Some(median_ms(&stream, 2, reps, &mut launch)?)
    } else {
        None
    };
    let (got_pos, got_vel) = (npos.to_host_vec(&stream)?, nvel.to_host_vec(&stream)?);
    let step = (n / checked.max(1)).max(1);
    for i in (0..n).step_by(step) {
        let (want_pos, want_vel) = reference(&pos, &vel, i);
        let same =
            |a: &[f32; 4], b: &[f32; 4]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
        if !same(&got_pos[i], &want_pos) || !same(&got_vel[i], &want_vel) {
            eprintln!(
                "FAILED: nbody of {n} on {}: body {i} is at {:?} moving {:?}, want {:?} moving {:?}",
                ctx.backend(),
                got_pos[i],
                got_vel[i],
                want_pos,
                want_vel
            );
            std::process::exit(1);
        }
    }
    if let Some(ms) = ms {
        let flops = 20.0 * (n as f64) * (n as f64);
        println!(
            "cuprum nbody {n} bodies median {ms:.4} ms {:.1} GFLOP/s ({:.2} billion interactions/s)",
            flops / (ms * 1e6),
            (n as f64) * (n as f64) / (ms * 1e6)
        );
        record::result("nbody", &n.to_string(), 0.0, flops, ms);
    }
    println!(
        "PASSED: nbody of {n} bodies on {}, {} bodies checked bit for bit",
        ctx.backend(),
        n.div_ceil(step)
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = CudaContext::new(0)?;
    let module = kernels::load(&ctx)?;
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    if size::benchmark_sizes(ctx.backend() == BackendKind::Cuda) {
        run(&ctx, &module, &mut rng, 1000, 1000, 0)?; // a partial last tile
        run(&ctx, &module, &mut rng, 65536, 64, 20)?;
    } else {
        run(&ctx, &module, &mut rng, 300, 300, 0)?;
        run(&ctx, &module, &mut rng, 256, 256, 0)?;
    }
    Ok(())
}
