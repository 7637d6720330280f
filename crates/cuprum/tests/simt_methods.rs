//! References passed to helpers (`&mut` to locals, to local-array elements, to shared-memory
//! elements and to struct fields; `&T` read through `*a` or auto-deref) and `impl` blocks of
//! the module's structs (methods with `self`, `&self`, `&mut self`, associated functions,
//! operator traits), as ported CUDA code uses them: a bitonic sort of each block's
//! shared-memory tile with a by-reference comparator (cuda-samples' `bitonicSortShared`) and
//! a particle update (`impl Particle { fn advance(&mut self, dt: f32) }`). The references are
//! the module's own helpers run on the host.

mod common;

use common::{assert_same, blocks_for, ctx};
use cuprum::simt::{DisjointSlice, SharedArray, kernel, launch_contract, sync_threads, thread};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, cuda_module};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};
use rand::Rng;

#[cuda_module]
mod kernels {
    use super::*;

    /// Elements per block's tile; two per thread.
    pub const SHARED_SIZE: usize = 256;

    /// cuda-samples' `Comparator`: orders two (key, value) pairs in direction `dir`
    /// (1: ascending), in place.
    pub fn comparator(
        key_a: &mut u32,
        val_a: &mut u32,
        key_b: &mut u32,
        val_b: &mut u32,
        dir: u32,
    ) {
        if (*key_a > *key_b) == (dir == 1) {
            let t = *key_a;
            *key_a = *key_b;
            *key_b = t;
            let t = *val_a;
            *val_a = *val_b;
            *val_b = t;
        }
    }

    /// cuda-samples' `bitonicSortShared`: sorts each block's `SHARED_SIZE` keys (with their
    /// values) in shared memory, ascending when `dir` is 1.
    #[kernel]
    pub unsafe fn bitonic_sort_shared(
        dst_key: &mut [u32],
        dst_val: &mut [u32],
        src_key: &[u32],
        src_val: &[u32],
        dir: u32,
    ) {
        let s_key = SharedArray::<u32, SHARED_SIZE>::uninit();
        let s_val = SharedArray::<u32, SHARED_SIZE>::uninit();
        let tid = thread::threadIdx_x() as usize;
        let base = thread::blockIdx_x() as usize * SHARED_SIZE;
        let half = SHARED_SIZE / 2;
        s_key.set(tid, src_key[base + tid]);
        s_val.set(tid, src_val[base + tid]);
        s_key.set(tid + half, src_key[base + tid + half]);
        s_val.set(tid + half, src_val[base + tid + half]);

        let mut size = 2;
        while size < SHARED_SIZE {
            // Bitonic merge: alternate directions make a bitonic sequence of each pair.
            let ddd = dir ^ if (tid & (size / 2)) != 0 { 1 } else { 0 };
            let mut stride = size / 2;
            while stride > 0 {
                sync_threads();
                let pos = 2 * tid - (tid & (stride - 1));
                comparator(
                    s_key.get_mut(pos),
                    s_val.get_mut(pos),
                    s_key.get_mut(pos + stride),
                    s_val.get_mut(pos + stride),
                    ddd,
                );
                stride >>= 1;
            }
            size <<= 1;
        }
        // The last merge, in the requested direction.
        let mut stride = half;
        while stride > 0 {
            sync_threads();
            let pos = 2 * tid - (tid & (stride - 1));
            comparator(
                s_key.get_mut(pos),
                s_val.get_mut(pos),
                s_key.get_mut(pos + stride),
                s_val.get_mut(pos + stride),
                dir,
            );
            stride >>= 1;
        }
        sync_threads();
        dst_key[base + tid] = s_key.get(tid);
        dst_val[base + tid] = s_val.get(tid);
        dst_key[base + tid + half] = s_key.get(tid + half);
        dst_val[base + tid + half] = s_val.get(tid + half);
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct V3 {
        pub x: f32,
        pub y: f32,
        pub z: f32,
    }

    impl V3 {
        pub fn new(x: f32, y: f32, z: f32) -> Self {
            Self { x, y, z }
        }

        pub fn zero() -> V3 {
            V3::new(0.0, 0.0, 0.0)
        }

        pub fn scaled(self, s: f32) -> V3 {
            Self::new(self.x * s, self.y * s, self.z * s)
        }

        pub fn dot(&self, o: &V3) -> f32 {
            self.x * o.x + self.y * o.y + self.z * o.z
        }

        pub fn add_scaled(&mut self, o: &V3, s: f32) {
            self.x += o.x * s;
            self.y += o.y * s;
            self.z += o.z * s;
        }
    }

    impl core::ops::Add for V3 {
        type Output = V3;
        fn add(self, o: V3) -> Self::Output {
            V3::new(self.x + o.x, self.y + o.y, self.z + o.z)
        }
    }

    impl core::ops::Neg for V3 {
        type Output = V3;
        fn neg(self) -> V3 {
            self.scaled(-1.0)
        }
    }

    impl core::ops::AddAssign for V3 {
        fn add_assign(&mut self, o: V3) {
            self.x += o.x;
            self.y += o.y;
            self.z += o.z;
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Particle {
        pub pos: V3,
        pub vel: V3,
        pub bounces: u32,
    }

    /// Gravity along `y`.
    pub const G: f32 = -9.8;

    impl Particle {
        pub fn new(pos: V3, vel: V3) -> Self {
            Particle {
                pos,
                vel,
                bounces: 0,
            }
        }

        /// One step of the NVIDIA blog's particle example: gravity, drag, a bounce on the
        /// floor `y = 0`.
        pub fn advance(&mut self, dt: f32) {
            self.vel.add_scaled(&V3::new(0.0, G, 0.0), dt);
            self.vel = self.vel.scaled(0.99);
            let step = self.vel.scaled(dt);
            self.pos += step;
            if self.pos.y < 0.0 {
                self.pos.y = -self.pos.y;
                reflect(&mut self.vel.y, 0.5);
                self.bounces += 1;
            }
        }

        pub fn energy(&self) -> f32 {
            0.5 * self.vel.dot(&self.vel) - G * self.pos.y
        }
    }

    /// Reverses a velocity component, keeping `keep` of it.
    pub fn reflect(v: &mut f32, keep: f32) {
        *v = -*v * keep;
    }

    /// `steps` steps of each particle; `out` holds position, velocity, energy and bounces.
    #[kernel]
    pub unsafe fn particles(pos: &[f32], vel: &[f32], steps: u32, dt: f32, out: &mut [f32]) {
        let i = thread::index_1d().get();
        if i < pos.len() / 3 {
            let mut p = Particle::new(
                V3::new(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]),
                V3 {
                    x: vel[3 * i],
                    ..V3::zero()
                } + V3::new(0.0, vel[3 * i + 1], vel[3 * i + 2]),
            );
            for _ in 0..steps {
                p.advance(dt);
            }
            Particle::advance(&mut p, dt);
            let back = -p.vel;
            out[8 * i] = p.pos.x;
            out[8 * i + 1] = p.pos.y;
            out[8 * i + 2] = p.pos.z;
            out[8 * i + 3] = back.x;
            out[8 * i + 4] = back.y;
            out[8 * i + 5] = back.z;
            out[8 * i + 6] = p.energy();
            out[8 * i + 7] = p.bounces as f32;
        }
    }

    /// Four particles per thread in a local array of structs: each advances through its
    /// `&mut self` method on `ps[k]`; a copy of the array is changed at a run-time index
    /// without changing the original; a local array of tuples is read at that index.
    #[kernel]
    pub unsafe fn particle_groups(pos: &[f32], pick: &[u32], steps: u32, dt: f32, out: &mut [f32]) {
        let i = thread::index_1d().get();
        if i < pick.len() {
            let mut ps = [Particle::new(V3::zero(), V3::zero()); 4];
            for k in 0..4 {
                let at = 12 * i + 3 * k;
                ps[k].pos = V3::new(pos[at], pos[at + 1], pos[at + 2]);
                ps[k].vel.x = pos[at + 2] - pos[at];
            }
            for _ in 0..steps {
                for k in 0..ps.len() {
                    ps[k].advance(dt);
                }
            }
            let mut copy = ps;
            let j = (pick[i] % 4) as usize;
            copy[j].pos.x = -1000.0;
            copy[j].bounces += 7;
            kick(&mut copy, (j + 1) % 4);
            let weights = [(1u32, 0.5f32), (2, 0.25), (3, 0.125), (4, 0.0625)];
            let (wk, wf) = weights[j];
            let chosen = ps[j];
            out[8 * i] = ps[0].pos.x
                + ps[1].pos.y
                + ps[2].pos.z
                + ps[3].vel.y
                + lowest(&copy)
                + lowest_of_copy(copy);
            out[8 * i + 1] = chosen.energy();
            out[8 * i + 2] = copy[j].pos.x;
            out[8 * i + 3] = ps[j].pos.x + copy[0].pos.y;
            out[8 * i + 4] = (copy[j].bounces + wk) as f32;
            out[8 * i + 5] = wf * chosen.vel.x;
            out[8 * i + 6] = ps.len() as f32;
            out[8 * i + 7] = ps[j].bounces as f32;
        }
    }

    /// Sends particle `k` up (a helper given the array by `&mut`).
    pub fn kick(ps: &mut [Particle; 4], k: usize) {
        ps[k].vel.y += 3.0;
        ps[k].advance(0.5);
    }

    /// The lowest height (a helper given the array by `&`).
    pub fn lowest(ps: &[Particle; 4]) -> f32 {
        let mut low = ps[0].pos.y;
        for k in 1..4 {
            low = low.min(ps[k].pos.y);
        }
        low
    }

    /// The same, from an array taken by value and changed there (the caller's stays).
    pub fn lowest_of_copy(mut ps: [Particle; 4]) -> f32 {
        ps[0].pos.y = 1.0e9;
        lowest(&ps)
    }

    /// Orders two values in place.
    pub fn order(a: &mut u32, b: &mut u32) {
        if *a > *b {
            let t = *a;
            *a = *b;
            *b = t;
        }
    }

    /// The larger of two values, compared through the references (auto-deref).
    pub fn larger(a: &u32, b: &u32) -> u32 {
        if a > b { *a } else { *b }
    }

    pub fn bump(a: &mut u32, by: &u32) {
        *a = a.wrapping_add(*by);
        *a ^= 0x5a5a;
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Pair {
        pub a: u32,
        pub b: u32,
    }

    impl Pair {
        pub fn swap(&mut self) {
            order(&mut self.b, &mut self.a);
        }

        pub fn mix(self) -> u32 {
            self.a.wrapping_mul(31).wrapping_add(self.b)
        }
    }

    /// `core::mem::swap` through two `&mut` parameters.
    pub fn exchange(a: &mut u32, b: &mut u32) {
        core::mem::swap(a, b);
    }

    /// `mem::swap` of locals, of local-array elements, of a local and an element, of two
    /// `let mut` structs, and through a helper's references, in every spelling; and
    /// `mem::replace` of a local and of a struct.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn swaps(x: &[u32], mut out: DisjointSlice<u32>) {
        use core::mem;
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let n = x.len();
            let k = i.get();
            let (mut a, mut b) = (x[k], x[(k + 1) % n]);
            if a > b {
                mem::swap(&mut a, &mut b);
            }
            let mut arr = [x[(k + 2) % n], x[(k + 3) % n], x[(k + 4) % n]];
            let mut c = x[(k + 5) % n];
            std::mem::swap(&mut arr[k % 3], &mut c);
            core::mem::swap(&mut a, &mut arr[2]);
            let mut p = Pair { a: arr[1], b };
            let mut q = Pair { a: b ^ 0xff, b: a };
            mem::swap(&mut p, &mut q);
            exchange(&mut q.a, &mut p.b);
            let old = core::mem::replace(&mut c, b ^ 3);
            let old_p = mem::replace(&mut p, Pair { a: old, b: c });
            *o = a
                .wrapping_add(old_p.mix().wrapping_mul(13))
                .wrapping_mul(7)
                .wrapping_add(c)
                .wrapping_add(arr[0] ^ arr[1].wrapping_mul(5))
                .wrapping_add(arr[2].wrapping_mul(3))
                .wrapping_add(p.mix().wrapping_mul(11))
                .wrapping_add(q.mix());
        }
    }

    /// Helpers taking `&mut` to locals, to local-array elements, to struct fields, and `&T`.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn references(x: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let n = x.len();
            let k = i.get();
            let mut lo = x[k];
            let mut hi = x[(k + 1) % n];
            order(&mut lo, &mut hi);
            let mut arr = [
                x[(k + 2) % n],
                x[(k + 3) % n],
                x[(k + 4) % n],
                x[(k + 5) % n],
            ];
            // One bubble pass: the largest element ends last.
            for j in 0..3 {
                let mut next = arr[j + 1];
                order(&mut arr[j], &mut next);
                arr[j + 1] = next;
            }
            bump(&mut arr[k % 3], &lo);
            let r = &mut hi;
            *r = r.wrapping_add(7);
            let top = larger(&arr[3], &hi);
            let mut p = Pair { a: lo, b: arr[1] };
            bump(&mut p.a, &p.b);
            p.swap();
            *o = top
                .wrapping_mul(3)
                .wrapping_add(p.mix())
                .wrapping_add(arr[0] ^ arr[2])
                .wrapping_add(hi);
        }
    }
}

/// Each block's tile sorted on the device against the same tiles sorted on the host, both
/// directions; keys are distinct within a tile, so the values' order is defined too.
#[test]
fn bitonic_sort_shared_sorts_each_tile_with_a_by_reference_comparator() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("bitonic_sort_shared");
    let tile = kernels::SHARED_SIZE;
    for dir in [1u32, 0] {
        let blocks = rng.random_range(1..9usize);
        let n = blocks * tile;
        let keys: Vec<u32> = random(&mut rng, n, 0u32, u32::MAX)
            .iter()
            .enumerate()
            .map(|(k, r)| (r & !0xff) | (k % tile) as u32)
            .collect();
        let vals: Vec<u32> = random(&mut rng, n, 0u32, u32::MAX);
        let dk = DeviceBuffer::from_host(&stream, &keys)?;
        let dv = DeviceBuffer::from_host(&stream, &vals)?;
        let mut ok = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        let mut ov = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: ((tile / 2) as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: each block reads and writes its own tile; the barriers order the tile.
        unsafe { m.bitonic_sort_shared(&stream, config, &mut ok, &mut ov, &dk, &dv, dir)? };
        let mut want_k = Vec::with_capacity(n);
        let mut want_v = Vec::with_capacity(n);
        for b in 0..blocks {
            let mut pairs: Vec<(u32, u32)> = (b * tile..(b + 1) * tile)
                .map(|k| (keys[k], vals[k]))
                .collect();
            pairs.sort_by_key(|p| p.0);
            if dir == 0 {
                pairs.reverse();
            }
            want_k.extend(pairs.iter().map(|p| p.0));
            want_v.extend(pairs.iter().map(|p| p.1));
        }
        assert_same(
            &format!("keys, dir {dir}"),
            &ok.to_host_vec(&stream)?,
            &want_k,
        );
        assert_same(
            &format!("values, dir {dir}"),
            &ov.to_host_vec(&stream)?,
            &want_v,
        );
    }
    Ok(())
}

/// `impl Particle { fn advance(&mut self, dt) }` with associated constructors, a `&self`
/// method, operator traits and `&mut` to a nested field, against the same methods on the host.
#[test]
fn particles_advance_through_mut_self_methods() -> cuprum::Result<()> {
    use kernels::{Particle, V3};
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("particles");
    let n = 1000;
    let pos = random(&mut rng, 3 * n, 0.0f32, 10.0);
    let vel = random(&mut rng, 3 * n, -5.0f32, 5.0);
    let (steps, dt) = (40u32, 0.01f32);
    let dp = DeviceBuffer::from_host(&stream, &pos)?;
    let dv = DeviceBuffer::from_host(&stream, &vel)?;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(8 * n))?;
    let config = LaunchConfig {
        grid_dim: (blocks_for(n, 128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: thread `i` alone writes `out[8 i..8 i + 8]`.
    unsafe { m.particles(&stream, config, &dp, &dv, steps, dt, &mut out)? };
    let mut want = Vec::with_capacity(8 * n);
    for i in 0..n {
        let mut p = Particle::new(
            V3::new(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]),
            V3::new(vel[3 * i], 0.0, 0.0) + V3::new(0.0, vel[3 * i + 1], vel[3 * i + 2]),
        );
        for _ in 0..=steps {
            p.advance(dt);
        }
        let back = -p.vel;
        want.extend([
            p.pos.x,
            p.pos.y,
            p.pos.z,
            back.x,
            back.y,
            back.z,
            p.energy(),
            p.bounces as f32,
        ]);
    }
    assert_same("particles", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

/// A local array of structs and one of tuples (`particle_groups`) against the same code on
/// the host: methods on elements, fields written at a run-time index, a copied array.
#[test]
fn local_arrays_of_structs_and_tuples() -> cuprum::Result<()> {
    use kernels::{Particle, V3};
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("particle_groups");
    let n = 500;
    let pos = random(&mut rng, 12 * n, 0.0f32, 10.0);
    let pick: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let (steps, dt) = (30u32, 0.01f32);
    let dp = DeviceBuffer::from_host(&stream, &pos)?;
    let dpick = DeviceBuffer::from_host(&stream, &pick)?;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(8 * n))?;
    let config = LaunchConfig {
        grid_dim: (blocks_for(n, 128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: thread `i` alone writes `out[8 i..8 i + 8]`.
    unsafe { m.particle_groups(&stream, config, &dp, &dpick, steps, dt, &mut out)? };
    let mut want = Vec::with_capacity(8 * n);
    for (i, &pick) in pick.iter().enumerate() {
        let mut ps = [Particle::new(V3::zero(), V3::zero()); 4];
        for (k, p) in ps.iter_mut().enumerate() {
            let at = 12 * i + 3 * k;
            p.pos = V3::new(pos[at], pos[at + 1], pos[at + 2]);
            p.vel.x = pos[at + 2] - pos[at];
        }
        for _ in 0..steps {
            for p in &mut ps {
                p.advance(dt);
            }
        }
        let mut copy = ps;
        let j = (pick % 4) as usize;
        copy[j].pos.x = -1000.0;
        copy[j].bounces += 7;
        kernels::kick(&mut copy, (j + 1) % 4);
        let weights = [(1u32, 0.5f32), (2, 0.25), (3, 0.125), (4, 0.0625)];
        let (wk, wf) = weights[j];
        let chosen = ps[j];
        want.extend([
            ps[0].pos.x
                + ps[1].pos.y
                + ps[2].pos.z
                + ps[3].vel.y
                + kernels::lowest(&copy)
                + kernels::lowest_of_copy(copy),
            chosen.energy(),
            copy[j].pos.x,
            ps[j].pos.x + copy[0].pos.y,
            (copy[j].bounces + wk) as f32,
            wf * chosen.vel.x,
            4.0,
            ps[j].bounces as f32,
        ]);
    }
    assert_same("particle_groups", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

/// Helpers given `&mut` to locals, local-array elements and fields, and `&` to values.
#[test]
fn helpers_update_locals_elements_and_fields_through_references() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("references");
    let n = rng.random_range(200..3000usize);
    let x = random(&mut rng, n, 0u32, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
    m.references(
        &stream,
        &m.prepare_references(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?,
        &dx,
        &mut out,
    )?;
    let want: Vec<u32> = (0..n)
        .map(|k| {
            let mut lo = x[k];
            let mut hi = x[(k + 1) % n];
            kernels::order(&mut lo, &mut hi);
            let mut arr = [
                x[(k + 2) % n],
                x[(k + 3) % n],
                x[(k + 4) % n],
                x[(k + 5) % n],
            ];
            for j in 0..3 {
                let mut next = arr[j + 1];
                kernels::order(&mut arr[j], &mut next);
                arr[j + 1] = next;
            }
            kernels::bump(&mut arr[k % 3], &lo);
            hi = hi.wrapping_add(7);
            let top = kernels::larger(&arr[3], &hi);
            let mut p = kernels::Pair { a: lo, b: arr[1] };
            kernels::bump(&mut p.a, &p.b);
            p.swap();
            top.wrapping_mul(3)
                .wrapping_add(p.mix())
                .wrapping_add(arr[0] ^ arr[2])
                .wrapping_add(hi)
        })
        .collect();
    assert_same("references", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

/// `mem::swap` and `mem::replace` on the device against the same code on the host.
#[test]
fn mem_swap_exchanges_locals_elements_and_structs() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut rng = rng("mem_swap");
    let n = rng.random_range(200..3000usize);
    let x = random(&mut rng, n, 0u32, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n))?;
    m.swaps(
        &stream,
        &m.prepare_swaps(LaunchConfig1D::new(blocks_for(n, 128), 128, 0))?,
        &dx,
        &mut out,
    )?;
    let want: Vec<u32> = (0..n)
        .map(|k| {
            let (mut a, mut b) = (x[k], x[(k + 1) % n]);
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            let mut arr = [x[(k + 2) % n], x[(k + 3) % n], x[(k + 4) % n]];
            let mut c = x[(k + 5) % n];
            std::mem::swap(&mut arr[k % 3], &mut c);
            std::mem::swap(&mut a, &mut arr[2]);
            let mut p = kernels::Pair { a: arr[1], b };
            let mut q = kernels::Pair { a: b ^ 0xff, b: a };
            std::mem::swap(&mut p, &mut q);
            kernels::exchange(&mut q.a, &mut p.b);
            let old = std::mem::replace(&mut c, b ^ 3);
            let old_p = std::mem::replace(&mut p, kernels::Pair { a: old, b: c });
            a.wrapping_add(old_p.mix().wrapping_mul(13))
                .wrapping_mul(7)
                .wrapping_add(c)
                .wrapping_add(arr[0] ^ arr[1].wrapping_mul(5))
                .wrapping_add(arr[2].wrapping_mul(3))
                .wrapping_add(p.mix().wrapping_mul(11))
                .wrapping_add(q.mix())
        })
        .collect();
    assert_same("swaps", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
