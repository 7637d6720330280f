//! Generic device structs in their natural form, each instantiation laid out and compiled
//! on its own: a Welford mean-variance accumulator `Welford<T>` merged by a generic block
//! reduction (f32 and f64) in a shared array of accumulators; a `Vec3<T>` with operator
//! impls inside `Body<T>`, in an n-body-like step over `&[Body<f32>]` (also staged through
//! a safe `SharedWrite<Body<f32>, 64>`); a const-generic
//! `Window<N>` stencil (two `N`); and a `Pair<A, B>` of mixed types in a slice. The structs
//! and their methods are ordinary Rust too, so each reference is computed with the same
//! struct on the host. Outputs start poisoned; every element is checked.

mod common;

use std::ops::{Add, AddAssign, Mul, Sub};

use common::{assert_same, blocks_for, ctx};
use cuprum::simt::{
    DisjointSlice, Num, SharedArray, SharedWrite, kernel, launch_contract, sync_threads, thread,
};
use cuprum::{DeviceBuffer, DeviceCopy, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::Poison;
use cuprum_testkit::random::{random, rng};

#[cuda_module]
mod kernels {
    use super::*;

    /// Welford's running count, mean and sum of squared deviations from the mean.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Welford<T> {
        pub count: T,
        pub mean: T,
        pub m2: T,
    }

    impl<T: Num> Welford<T> {
        pub fn new() -> Self {
            Self {
                count: T::ZERO,
                mean: T::ZERO,
                m2: T::ZERO,
            }
        }

        pub fn add(&mut self, x: T) {
            self.count += T::ONE;
            let delta = x - self.mean;
            self.mean += delta / self.count;
            self.m2 += delta * (x - self.mean);
        }

        /// Chan, Golub and LeVeque's merge of two partial results.
        pub fn merge(self, other: Self) -> Self {
            let count = self.count + other.count;
            if count == T::ZERO {
                return self;
            }
            let delta = other.mean - self.mean;
            Welford {
                count,
                mean: self.mean + delta * other.count / count,
                m2: self.m2 + other.m2 + delta * delta * self.count * other.count / count,
            }
        }

        pub fn variance(&self) -> T {
            if self.count > T::ONE {
                self.m2 / (self.count - T::ONE)
            } else {
                T::ZERO
            }
        }
    }

    /// Each block's statistics of its `per_thread * 128` elements: every thread accumulates
    /// a strided share, then the block merges its accumulators in a tree in shared memory.
    #[kernel]
    pub unsafe fn block_stats<T: Num>(x: &[T], per_thread: usize, out: &mut [Welford<T>]) {
        let mut partial = SharedArray::<Welford<T>, 128>::uninit();
        let tid = thread::threadIdx_x() as usize;
        let block = thread::blockIdx_x() as usize;
        let mut acc = Welford::new();
        for k in 0..per_thread {
            let i = (block * per_thread + k) * 128 + tid;
            if i < x.len() {
                acc.add(x[i]);
            }
        }
        partial[tid] = acc;
        sync_threads();
        let mut half = 64;
        while half > 0 {
            if tid < half {
                partial[tid] = partial[tid].merge(partial[tid + half]);
            }
            sync_threads();
            half /= 2;
        }
        if tid == 0 {
            out[block] = partial[0];
        }
    }

    /// Two accumulators merged (a generic helper taking and returning `Welford<T>`).
    pub fn merged<T: Num>(a: Welford<T>, b: Welford<T>) -> Welford<T> {
        a.merge(b)
    }

    /// The sample variance of `prior`'s, each block's and the next block's elements
    /// together (`prior` passed by value: one launch argument per field).
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn pair_variances<T: Num>(
        prior: Welford<T>,
        stats: &[Welford<T>],
        mut out: DisjointSlice<T>,
    ) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let k = i.get();
            let mut both: Welford<T> = Welford::new();
            both = merged(both, prior);
            both = merged(both, stats[k]);
            both = merged(both, stats[(k + 1) % stats.len()]);
            *o = both.variance();
        }
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Vec3<T> {
        pub x: T,
        pub y: T,
        pub z: T,
    }

    impl<T: Num> Vec3<T> {
        pub fn new(x: T, y: T, z: T) -> Self {
            Self { x, y, z }
        }

        pub fn zero() -> Self {
            Self::new(T::ZERO, T::ZERO, T::ZERO)
        }

        pub fn dot(self, o: Self) -> T {
            self.x * o.x + self.y * o.y + self.z * o.z
        }
    }

    impl<T: Num> Add for Vec3<T> {
        type Output = Self;
        fn add(self, o: Self) -> Self {
            Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
        }
    }

    impl<T: Num> Sub for Vec3<T> {
        type Output = Self;
        fn sub(self, o: Self) -> Self::Output {
            Vec3 {
                x: self.x - o.x,
                y: self.y - o.y,
                z: self.z - o.z,
            }
        }
    }

    impl<T: Num> Mul<T> for Vec3<T> {
        type Output = Self;
        fn mul(self, s: T) -> Self {
            Self {
                x: self.x * s,
                y: self.y * s,
                z: self.z * s,
            }
        }
    }

    impl<T: Num> AddAssign for Vec3<T> {
        fn add_assign(&mut self, o: Self) {
            self.x += o.x;
            self.y += o.y;
            self.z += o.z;
        }
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Body<T> {
        pub pos: Vec3<T>,
        pub vel: Vec3<T>,
        pub mass: T,
    }

    impl<T: Num> Body<T> {
        /// The body after `dt` under acceleration `acc`.
        pub fn advanced(&self, acc: Vec3<T>, dt: T) -> Body<T> {
            let vel = self.vel + acc * dt;
            Body {
                pos: self.pos + vel * dt,
                vel,
                mass: self.mass,
            }
        }
    }

    /// The pull of `other` on `me`, softened.
    pub fn pull(me: &Body<f32>, other: &Body<f32>, softening: f32) -> Vec3<f32> {
        let d = other.pos - me.pos;
        let inv = 1.0 / (d.dot(d) + softening).sqrt();
        d * (other.mass * inv * inv * inv)
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn nbody_step(
        bodies: &[Body<f32>],
        dt: f32,
        softening: f32,
        mut out: DisjointSlice<Body<f32>>,
    ) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let me = bodies[i.get()];
            let mut acc = Vec3::zero();
            for j in 0..bodies.len() {
                let other = bodies[j];
                acc += pull(&me, &other, softening);
            }
            *o = me.advanced(acc, dt);
        }
    }

    /// The same step with the bodies staged through shared memory, 64 at a time, in a safe
    /// phased array of `Body<f32>`.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn nbody_step_tiled(
        bodies: &[Body<f32>],
        dt: f32,
        softening: f32,
        mut out: DisjointSlice<Body<f32>>,
    ) {
        let i = thread::index_1d();
        let n = bodies.len();
        let me = bodies[i.get().min(n - 1)];
        let mut acc = Vec3::zero();
        let mut tile = SharedWrite::<Body<f32>, 64>::new();
        for start in (0..n).step_by(64) {
            for (j, slot) in tile.mine() {
                *slot = bodies[(start + j).min(n - 1)];
            }
            let staged = tile.sync();
            for j in 0..64 {
                if start + j < n {
                    let other = staged[j];
                    acc += pull(&me, &other, softening);
                }
            }
            tile = staged.sync();
        }
        if let Some(o) = out.get_mut(i) {
            *o = me.advanced(acc, dt);
        }
    }

    /// `N` consecutive values, weighted.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Window<const N: usize> {
        pub v: [f32; N],
    }

    impl<const N: usize> Window<N> {
        pub fn load(x: &[f32], start: usize) -> Self {
            let mut v = [0.0f32; N];
            for k in 0..N {
                v[k] = x[(start + k) % x.len()];
            }
            Self { v }
        }

        pub fn weighted(&self, w: &[f32]) -> f32 {
            let mut s = 0.0f32;
            for k in 0..N {
                s += self.v[k] * w[k];
            }
            s
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn stencil<const N: usize>(x: &[f32], w: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = y.get_mut(i) {
            let win = Window::<N>::load(x, i.get());
            // A copy: writing its array leaves `win`'s as it was.
            let mut edge = win;
            edge.v[0] = 0.0;
            *o = win.weighted(w) - edge.weighted(w);
        }
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    pub struct Pair<A, B> {
        pub a: A,
        pub b: B,
    }

    impl<A: Num, B: Num> Pair<A, B> {
        /// The pair the other way round, `a` scaled by `s` first.
        pub fn swapped(self, s: A) -> Pair<B, A> {
            Pair {
                a: self.b,
                b: self.a * s,
            }
        }
    }

    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn swap_pairs(p: &[Pair<f32, u32>], s: f32, mut out: DisjointSlice<Pair<u32, f32>>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let q = p[i.get()];
            let mut r = q.swapped(s);
            r.a += Pair::<u32, u32> { a: 1, b: 2 }.b;
            *o = r;
        }
    }
}

use kernels::{Body, Pair, Vec3, Welford, Window};

impl<T: Poison> Poison for Welford<T> {
    const POISON: Self = Welford {
        count: T::POISON,
        mean: T::POISON,
        m2: T::POISON,
    };
}

/// The kernel's blocks, on the host: the same accumulation and tree.
fn block_stats_reference<T: Num>(x: &[T], per_thread: usize, blocks: usize) -> Vec<Welford<T>> {
    (0..blocks)
        .map(|block| {
            let mut partial: Vec<Welford<T>> = (0..128)
                .map(|tid| {
                    let mut acc = Welford::new();
                    for k in 0..per_thread {
                        let i = (block * per_thread + k) * 128 + tid;
                        if i < x.len() {
                            acc.add(x[i]);
                        }
                    }
                    acc
                })
                .collect();
            let mut half = 64;
            while half > 0 {
                for tid in 0..half {
                    partial[tid] = partial[tid].merge(partial[tid + half]);
                }
                half /= 2;
            }
            partial[0]
        })
        .collect()
}

fn check_welford<T>(m: &kernels::Module, x: &[T], per_thread: usize) -> cuprum::Result<()>
where
    T: Num + Poison + std::fmt::Debug,
{
    let stream = ctx().default_stream();
    let blocks = x.len().div_ceil(per_thread * 128);
    let dx = DeviceBuffer::from_host(&stream, x)?;
    let mut stats = DeviceBuffer::from_host(&stream, &vec![Welford::<T>::POISON; blocks])?;
    let config = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: 128 threads per block, as the kernel's shared array and tree assume; thread 0
    // of each block writes its block's element.
    unsafe { m.block_stats::<T>(&stream, config, &dx, per_thread, &mut stats)? };
    let want = block_stats_reference(x, per_thread, blocks);
    assert_same("block_stats", &stats.to_host_vec(&stream)?, &want);

    let mut vars = DeviceBuffer::from_host(&stream, &vec![T::POISON; blocks])?;
    let prepared =
        m.prepare_pair_variances(LaunchConfig1D::new(blocks_for(blocks, 128), 128, 0))?;
    let mut prior = Welford::new();
    for &v in &x[..x.len().min(5)] {
        prior.add(v);
    }
    m.pair_variances::<T>(&stream, &prepared, prior, &stats, &mut vars)?;
    let want_vars: Vec<T> = (0..blocks)
        .map(|k| {
            let both = kernels::merged(Welford::new(), prior);
            let both = kernels::merged(both, want[k]);
            kernels::merged(both, want[(k + 1) % blocks]).variance()
        })
        .collect();
    assert_same("pair_variances", &vars.to_host_vec(&stream)?, &want_vars);
    Ok(())
}

#[test]
fn welford_accumulators_reduce_per_block_for_f32_and_f64() -> cuprum::Result<()> {
    let m = kernels::load(ctx())?;
    let mut rng = rng("welford");
    check_welford(&m, &random(&mut rng, 5000, -50.0f32, 50.0), 4)?;
    check_welford(&m, &random(&mut rng, 3001, -1e3f64, 1e3), 3)?;
    check_welford(&m, &random(&mut rng, 100, 0.0f32, 1.0), 1)?;
    Ok(())
}

fn random_vec3(rng: &mut rand::rngs::StdRng, lo: f32, hi: f32) -> Vec3<f32> {
    let v = random(rng, 3, lo, hi);
    Vec3::new(v[0], v[1], v[2])
}

#[test]
fn vec3_operators_in_an_nbody_step() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("nbody_step");
    let n = 300;
    let bodies: Vec<Body<f32>> = (0..n)
        .map(|_| Body {
            pos: random_vec3(&mut rng, -10.0, 10.0),
            vel: random_vec3(&mut rng, -1.0, 1.0),
            mass: random(&mut rng, 1, 0.5f32, 2.0)[0],
        })
        .collect();
    let (dt, softening) = (0.01f32, 0.1f32);
    let poison = Body {
        pos: Vec3::new(f32::POISON, f32::POISON, f32::POISON),
        vel: Vec3::new(f32::POISON, f32::POISON, f32::POISON),
        mass: f32::POISON,
    };
    let db = DeviceBuffer::from_host(&stream, &bodies)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![poison; n])?;
    let mut tiled = DeviceBuffer::from_host(&stream, &vec![poison; n])?;
    let config = LaunchConfig1D::new(blocks_for(n, 64), 64, 0);
    let prepared = m.prepare_nbody_step(config)?;
    m.nbody_step(&stream, &prepared, &db, dt, softening, &mut out)?;
    let prepared = m.prepare_nbody_step_tiled(config)?;
    m.nbody_step_tiled(&stream, &prepared, &db, dt, softening, &mut tiled)?;
    let want: Vec<Body<f32>> = bodies
        .iter()
        .map(|me| {
            let mut acc = Vec3::zero();
            for other in &bodies {
                acc += kernels::pull(me, other, softening);
            }
            me.advanced(acc, dt)
        })
        .collect();
    assert_same("nbody_step", &out.to_host_vec(&stream)?, &want);
    assert_same("nbody_step_tiled", &tiled.to_host_vec(&stream)?, &want);
    Ok(())
}

fn check_stencil<const N: usize>(m: &kernels::Module, x: &[f32], w: &[f32]) -> cuprum::Result<()> {
    let stream = ctx().default_stream();
    let n = x.len();
    let dx = DeviceBuffer::from_host(&stream, x)?;
    let dw = DeviceBuffer::from_host(&stream, w)?;
    let mut y = DeviceBuffer::from_host(&stream, &vec![f32::POISON; n])?;
    let prepared = m.prepare_stencil(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?;
    m.stencil::<N>(&stream, &prepared, &dx, &dw, &mut y)?;
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let win = Window::<N>::load(x, i);
            let mut edge = win;
            edge.v[0] = 0.0;
            win.weighted(w) - edge.weighted(w)
        })
        .collect();
    assert_same(&format!("stencil N = {N}"), &y.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn const_generic_window_stencils_for_two_widths() -> cuprum::Result<()> {
    let m = kernels::load(ctx())?;
    let mut rng = rng("stencil");
    let x = random(&mut rng, 1000, -10.0f32, 10.0);
    check_stencil::<3>(&m, &x, &random(&mut rng, 3, 0.0f32, 1.0))?;
    check_stencil::<7>(&m, &x, &random(&mut rng, 7, -1.0f32, 1.0))?;
    Ok(())
}

#[test]
fn pairs_of_mixed_types_in_slices() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("swap_pairs");
    let n = 1500;
    let a = random(&mut rng, n, -100.0f32, 100.0);
    let b = random(&mut rng, n, 0u32, 1 << 30);
    let pairs: Vec<Pair<f32, u32>> = a.iter().zip(&b).map(|(&a, &b)| Pair { a, b }).collect();
    let s = 1.5f32;
    let poison = Pair {
        a: u32::POISON,
        b: f32::POISON,
    };
    let dp = DeviceBuffer::from_host(&stream, &pairs)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![poison; n])?;
    let prepared = m.prepare_swap_pairs(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?;
    m.swap_pairs(&stream, &prepared, &dp, s, &mut out)?;
    let want: Vec<Pair<u32, f32>> = pairs
        .iter()
        .map(|q| {
            let mut r = q.swapped(s);
            r.a += Pair::<u32, u32> { a: 1, b: 2 }.b;
            r
        })
        .collect();
    assert_same("swap_pairs", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
