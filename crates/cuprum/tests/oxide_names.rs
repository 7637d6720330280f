//! cuda-oxide's names for cuprum's operations, in programs written as cuda-oxide's examples
//! write them (issue 14): `LaunchConfig { grid_dim, block_dim, shared_mem_bytes }` and
//! `LaunchConfig::for_num_elems`, `ctx.load_module_from_file(..)` + `kernels::from_module(..)`,
//! `stream.as_ref()`, `ctx.compute_capability()`, CUDA's register names (`threadIdx_x`, ...),
//! `thread::sync_threads`, `static mut` shared arrays in kernel bodies,
//! `DisjointSlice::get_unchecked_mut`, `ThreadIndex1D::in_bounds`, and the warp operations
//! under their cuda-oxide names (typed and `_sync` shuffles, votes, lane masks, elections,
//! `redux_sync_*`, typed reductions), with integer bit counts, and the runtime-width 2-D index
//! space (`DisjointSlice<T, Runtime2DIndex>`, `RowWidth`). Every kernel runs against a
//! plain-Rust reference on fresh random inputs, over outputs poisoned first, and every
//! element is checked.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::{
    DisjointSlice, SharedArray, cuda_module, device, gpu_printf, kernel, launch_contract, thread,
    warp,
};
use cuprum::{DeviceBuffer, Error, LaunchConfig, LaunchConfig1D, LaunchConfig2D};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// Results per thread of `warp_match`: an element type's array length may name a constant
/// of the parent module, as cuda-oxide's `f16x2_arith` writes `DisjointSlice<[u32; NUM_OPS]>`.
const MATCH_RESULTS: usize = 4;

/// A helper beside the module, marked `#[device]` as cuda-oxide's `helper_fn` example does:
/// the module's kernels call it.
#[device]
fn plus_one_twice(x: f32) -> f32 {
    2.0 * x + 1.0
}

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let idx_raw = idx.get();
        if let Some(c_elem) = c.get_mut(idx) {
            *c_elem = a[idx_raw] + b[idx_raw];
        }
    }

    /// Each thread stages its element in a 256-slot `static mut` shared array and writes its
    /// neighbour's (as cuda-oxide's `sharedmem` example does), plus its block and thread
    /// numbers through CUDA's register names.
    #[kernel]
    pub fn neighbours(data: &[f32], mut out: DisjointSlice<f32>, mut ids: DisjointSlice<u32>) {
        static mut TILE: SharedArray<f32, 256> = SharedArray::UNINIT;
        let tid = thread::threadIdx_x() as usize;
        let gid = thread::index_1d().get();
        unsafe {
            TILE[tid] = data[gid];
        }
        thread::sync_threads();
        if gid == 0 {
            gpu_printf!("neighbours: {} blocks\n", thread::gridDim_x());
        }
        let next = (tid + 1) % thread::blockDim_x() as usize;
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = unsafe { TILE[next] };
        }
        if let Some(o) = ids.get_mut(thread::index_1d()) {
            *o = thread::gridDim_x() * 1_000_000
                + thread::blockIdx_x() * 1000
                + thread::threadIdx_x();
        }
    }

    /// Raw pointers from `cu_deviceptr() as *mut T`, as cuda-oxide's `hello_constant`.
    #[kernel]
    pub unsafe fn scale_raw(x: *const f32, out: *mut f32, n: usize) {
        let i = thread::index_1d().get();
        if i < n {
            unsafe { *out.add(i) = plus_one_twice(*x.add(i)) };
        }
    }

    /// One sum and one maximum per warp of 45-thread blocks (the second warp has 13 lanes),
    /// into slices over cuda-oxide's warp index space.
    #[kernel]
    pub fn warp_partials(
        input: &[f32],
        mut sums: DisjointSlice<f32, thread::WarpIndex>,
        mut maxima: DisjointSlice<f32, thread::WarpIndex>,
    ) {
        let gid = thread::index_1d().get();
        let v = if gid < input.len() { input[gid] } else { 0.0 };
        let total = warp::reduce_sum_f32_partial(v, warp::live_lanes_1d());
        let most = warp::reduce_max_f32_partial(v, warp::live_lanes_1d());
        if let Some(w) = thread::warp_index()
            && let Some(slot) = sums.get_mut(w)
        {
            *slot = total;
        }
        if let Some(w) = thread::warp_index()
            && let Some(slot) = maxima.get_mut(w)
        {
            *slot = most;
        }
    }

    /// cuda-oxide's contract keys: 32-bit coordinates, and relations between the arguments
    /// that every launch checks on the host first.
    #[kernel]
    #[launch_contract(
        domain = 1,
        coordinates = u32,
        block = (128, 1, 1),
        requires = (input.len() >= n * stride, output.len() >= n),
    )]
    pub fn strided_scale(n: usize, stride: usize, input: &[f32], mut output: DisjointSlice<f32>) {
        let index = thread::index_1d();
        let i = index.get();
        if i < n
            && let Some(out) = output.get_mut(index)
        {
            *out = input[i * stride] * 2.0;
        }
    }

    /// An `unsafe` kernel with a whole contract (as cuda-oxide's `warp_sums`): `prepare_*`
    /// checks a configuration, and the launch taking it is `unsafe`.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub unsafe fn doubled_in_place(x: &mut [f32]) {
        let i = thread::index_1d().get();
        if i < x.len() {
            x[i] *= 2.0;
        }
    }

    /// `div_ceil` on unsigned integers (cuda-oxide's `warp_sums` sizes its grid with it), and
    /// on constants.
    #[kernel]
    pub fn ceilings(x: &[u32], y: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()].div_ceil(y[i.get()]) + 7u32.div_ceil(2);
        }
    }

    /// `get_unchecked_mut` on a slice of 16-byte elements: element `at`, written by thread 0.
    #[kernel]
    pub unsafe fn unchecked_aggregate(mut out: DisjointSlice<[f32; 4]>, at: usize) {
        if thread::index_1d().get() == 0 {
            let e = unsafe { out.get_unchecked_mut(at) };
            e[0] = 1.0;
            e[1] = 2.0;
            e[2] = 3.0;
            e[3] = at as f32;
        }
    }

    /// A contract that asks for 256 bytes of dynamic shared memory.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1), dynamic_shared = 256)]
    pub fn needs_dynamic_shared(mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = i.get() as u32;
        }
    }

    /// A helper that takes a closure, as cuda-oxide's `generic` example's `apply_unary`.
    fn apply<T, F>(f: F, x: T) -> T
    where
        F: FnOnce(T) -> T,
    {
        f(x)
    }

    /// Closures, as cuda-oxide's `generic` example writes them: one capturing the kernel's
    /// scalars, one capturing a variable that changes afterwards (a `move` closure keeps the
    /// value it captured), and one calling the other.
    #[kernel]
    pub fn closures<T: Copy + core::ops::Add<Output = T> + core::ops::Mul<Output = T>>(
        input: &[T],
        mut output: DisjointSlice<T>,
        scale: T,
        bias: T,
    ) {
        // A helper nested in the kernel body, generic, called with a turbofish.
        fn identity<U: Copy>(value: U) -> U {
            value
        }
        let transform = move |x: T| identity::<T>((x + bias) * scale);
        let mut offset = bias;
        let shift = move |x: T| x + offset;
        offset = offset * scale;
        let both = |x: T| apply(shift, transform(x)) + offset;
        let i = thread::index_1d();
        if let Some(o) = output.get_mut(i) {
            *o = both(input[i.get()]);
        }
    }

    /// `match_any_sync` / `match_all_sync` (32- and 64-bit): which lanes share a value.
    #[kernel]
    pub fn warp_match(x: &[u32], mut out: DisjointSlice<[u32; MATCH_RESULTS]>) {
        let i = thread::index_1d();
        let v = x[i.get()];
        let wide = (v as u64) << 40 | 7;
        let any = warp::match_any_sync(0xFFFF_FFFF, v);
        let all = warp::match_all_sync(0xFFFF_FFFF, v);
        let any64 = warp::match_any_i64_sync(warp::active_mask(), wide);
        let all64 = warp::match_all_i64_sync(0xFFFF_FFFF, wide);
        if let Some(o) = out.get_mut(i) {
            *o = [any, all, any64, all64];
        }
    }

    /// Every warp operation under its cuda-oxide name; eight results per thread, written with
    /// `get_unchecked_mut` at `8 * i + k`.
    #[kernel]
    pub unsafe fn warp_names(x: &[u32], f: &[f32], mut out: DisjointSlice<u32>, n: usize) {
        let i = thread::index_1d();
        if !i.in_bounds(n) {
            return;
        }
        let v = x[i.get()];
        let lane = warp::lane_id();
        let odd = warp::ballot_sync(0xFFFF_FFFF, v % 2 == 1);
        let sum = warp::reduce_sum_f32(f[i.get()]);
        let down = warp::shuffle_down_f32_sync(u32::MAX, f[i.get()], 1);
        let masks = warp::lanemask_lt() ^ (warp::lanemask_ge() << 1) ^ warp::lanemask_eq();
        let (leader, elected) = warp::elect_sync(warp::active_mask());
        let counts =
            v.count_ones() + (v.leading_zeros() << 8) + ((v as u64).trailing_zeros() << 16);
        let base = 8 * i.get();
        unsafe {
            *out.get_unchecked_mut(base) = odd ^ warp::popc(v > 1000);
            *out.get_unchecked_mut(base + 1) = sum.to_bits();
            *out.get_unchecked_mut(base + 2) = down.to_bits() ^ warp::shuffle_xor_u32(v, 3);
            *out.get_unchecked_mut(base + 3) = masks ^ lane;
            *out.get_unchecked_mut(base + 4) = leader + if elected { 100 } else { 0 };
            *out.get_unchecked_mut(base + 5) =
                warp::redux_sync_add(0xFFFF_FFFF, v) ^ warp::redux_sync_max_u32(0xFFFF_FFFF, v);
            *out.get_unchecked_mut(base + 6) = warp::redux_sync_min_u32(0xFFFF_FFFF, v)
                ^ warp::redux_sync_and(0xFFFF_FFFF, v)
                ^ warp::redux_sync_or(0xFFFF_FFFF, v)
                ^ warp::redux_sync_xor(0xFFFF_FFFF, v);
            *out.get_unchecked_mut(base + 7) = counts
                + if warp::all_sync(0xFFFF_FFFF, v > 0) {
                    1 << 24
                } else {
                    0
                }
                + if warp::any_sync(0xFFFF_FFFF, v == 7) {
                    1 << 25
                } else {
                    0
                };
        }
    }

    /// cuda-oxide's naive GEMM, `C = alpha * A * B + beta * C`: one thread per element of C
    /// in the runtime-width 2-D index space, launched without a contract (so `unsafe`).
    #[kernel]
    pub fn sgemm_naive(
        m: u32,
        n: u32,
        k: u32,
        alpha: f32,
        a: &[f32],
        b: &[f32],
        beta: f32,
        mut c: DisjointSlice<f32, thread::Runtime2DIndex>,
    ) {
        let row = thread::index_2d_row();
        let col = thread::index_2d_col();
        if let Some(c_idx) = thread::index_2d_runtime(&c) {
            if row < m as usize {
                let (n, k) = (n as usize, k as usize);
                let mut sum = 0.0f32;
                let mut i = 0usize;
                while i < k {
                    sum += a[row * k + i] * b[i * n + col];
                    i += 1;
                }
                if let Some(e) = c.get_mut(c_idx) {
                    *e = alpha * sum + beta * *e;
                }
            }
        }
    }

    /// The index space in a let chain, under a launch contract (a safe launch); the index's
    /// own `row()` and `col()`, and the slice's `row_width()`.
    #[kernel]
    #[launch_contract(domain = 2, block = (16, 8, 1))]
    pub fn label_cells(x: &[f32], rows: usize, mut c: DisjointSlice<f32, thread::Runtime2DIndex>) {
        let width = c.row_width();
        if let Some(i) = thread::index_2d_runtime(&c)
            && i.row() < rows
            && let Some(e) = c.get_mut(i)
        {
            *e = (i.row() * 1000 + i.col()) as f32 + x[i.col()] + width as f32 * 1e6;
        }
    }
}

#[test]
fn vecadd_in_cuda_oxide_shape() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (major, minor) = ctx.compute_capability().expect("compute capability");
    assert!(major >= 8 && minor < 10, "{major}.{minor}");
    let mut rng = rng("vecadd_in_cuda_oxide_shape");
    const N: usize = 1000;
    let a_host: Vec<f32> = random(&mut rng, N, -100.0, 100.0);
    let b_host: Vec<f32> = random(&mut rng, N, -100.0, 100.0);
    let a_dev = DeviceBuffer::from_host(&stream, &a_host).unwrap();
    let b_dev = DeviceBuffer::from_host(&stream, &b_host).unwrap();
    let mut c_dev = DeviceBuffer::from_host(&stream, &poisoned::<f32>(N)).unwrap();
    let module = ctx.load_module_from_file("vecadd.ptx").unwrap();
    let module = kernels::from_module(module).expect("typed module");
    #[allow(unused_unsafe)]
    unsafe {
        module.vecadd(
            stream.as_ref(),
            LaunchConfig::for_num_elems(N as u32),
            &a_dev,
            &b_dev,
            &mut c_dev,
        )
    }
    .expect("launch");
    let want: Vec<f32> = a_host.iter().zip(&b_host).map(|(a, b)| a + b).collect();
    assert_same("vecadd", &c_dev.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn static_mut_shared_arrays_and_cuda_register_names() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("static_mut_shared_arrays_and_cuda_register_names");
    const BLOCKS: usize = 3;
    let n = BLOCKS * 256;
    let data: Vec<f32> = random(&mut rng, n, -1.0, 1.0);
    let d = DeviceBuffer::from_host(&stream, &data).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    let mut ids = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    let cfg = LaunchConfig {
        grid_dim: (BLOCKS as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: one thread per element, 256 per block, as the kernel's shared array assumes.
    unsafe { module.neighbours(stream.as_ref(), cfg, &d, &mut out, &mut ids) }.unwrap();
    let want: Vec<f32> = (0..n)
        .map(|g| data[g / 256 * 256 + (g % 256 + 1) % 256])
        .collect();
    assert_same("neighbours", &out.to_host_vec(&stream).unwrap(), &want);
    let want_ids: Vec<u32> = (0..n as u32)
        .map(|g| BLOCKS as u32 * 1_000_000 + g / 256 * 1000 + g % 256)
        .collect();
    assert_same("ids", &ids.to_host_vec(&stream).unwrap(), &want_ids);
}

/// What `warp_names` writes, from each warp's 32 inputs (a warp past `n` writes nothing;
/// the input fills whole warps).
fn warp_names_reference(x: &[u32], f: &[f32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(8 * x.len());
    for (xs, fs) in x.chunks(32).zip(f.chunks(32)) {
        let odd = xs
            .iter()
            .enumerate()
            .fold(0u32, |m, (l, v)| m | (u32::from(v % 2 == 1) << l));
        let big = xs.iter().filter(|&&v| v > 1000).count() as u32;
        // The butterfly's order: pairs at distance 16, then 8, 4, 2, 1.
        let mut partial: Vec<f32> = fs.to_vec();
        for m in [16usize, 8, 4, 2, 1] {
            partial = (0..32).map(|l| partial[l] + partial[l ^ m]).collect();
        }
        let all = xs.iter().all(|&v| v > 0);
        let any = xs.contains(&7);
        let sum: u32 = xs.iter().fold(0u32, |s, &v| s.wrapping_add(v));
        let max = *xs.iter().max().unwrap();
        let min = *xs.iter().min().unwrap();
        let and = xs.iter().fold(u32::MAX, |s, &v| s & v);
        let or = xs.iter().fold(0, |s, &v| s | v);
        let xor = xs.iter().fold(0, |s, &v| s ^ v);
        for l in 0..32usize {
            let v = xs[l];
            let down = if l < 31 { fs[l + 1] } else { fs[l] };
            let lt = (1u32 << l) - 1;
            let eq = 1u32 << l;
            let masks = lt ^ ((!lt) << 1) ^ eq;
            let counts =
                v.count_ones() + (v.leading_zeros() << 8) + ((v as u64).trailing_zeros() << 16);
            out.extend([
                odd ^ big,
                partial[l].to_bits(),
                down.to_bits() ^ xs[l ^ 3],
                masks ^ l as u32,
                if l == 0 { 100 } else { 0 },
                sum ^ max,
                min ^ and ^ or ^ xor,
                counts + if all { 1 << 24 } else { 0 } + if any { 1 << 25 } else { 0 },
            ]);
        }
    }
    out
}

#[test]
fn warp_operations_under_cuda_oxide_names() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("warp_operations_under_cuda_oxide_names");
    let n = 4 * 32;
    let mut x: Vec<u32> = random(&mut rng, n, 0, 3000);
    // Zero (whose bit counts are the width), sevens, and one warp where every value is
    // positive.
    x[5] = 0;
    x[40] = 7;
    for v in &mut x[64..96] {
        *v = (*v).max(1);
    }
    let f: Vec<f32> = random(&mut rng, n, -10.0, 10.0);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let df = DeviceBuffer::from_host(&stream, &f).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(8 * n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    let cfg = LaunchConfig2D::new((2, 1), (64, 1), 0);
    // SAFETY: thread i writes only elements 8i..8i+8 of the 8n outputs.
    unsafe { module.warp_names(&stream, cfg, &dx, &df, &mut out, n) }.unwrap();
    assert_same(
        "warp_names",
        &out.to_host_vec(&stream).unwrap(),
        &warp_names_reference(&x, &f),
    );
}

#[test]
fn raw_pointers_from_device_addresses() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("raw_pointers_from_device_addresses");
    let n = 777;
    let x: Vec<f32> = random(&mut rng, n, -50.0, 50.0);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    // SAFETY: thread i < n reads x[i] and writes out[i], both in bounds; no two threads
    // share an element.
    unsafe {
        module.scale_raw(
            &stream,
            LaunchConfig::for_num_elems(n as u32),
            dx.cu_deviceptr() as *const f32,
            out.cu_deviceptr() as *mut f32,
            n,
        )
    }
    .unwrap();
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
    assert_same("scale_raw", &out.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn partial_warp_reductions_into_the_warp_index_space() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("partial_warp_reductions_into_the_warp_index_space");
    const BLOCK: usize = 45;
    const BLOCKS: usize = 7;
    let n = BLOCK * BLOCKS - 10; // the last block's second warp is shorter still in data
    // Small integers: every order of summation gives the same f32.
    let input: Vec<f32> = random::<i32>(&mut rng, n, -100, 100)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let warps = BLOCKS * 2;
    let dinput = DeviceBuffer::from_host(&stream, &input).unwrap();
    let mut sums = DeviceBuffer::from_host(&stream, &poisoned::<f32>(warps)).unwrap();
    let mut maxima = DeviceBuffer::from_host(&stream, &poisoned::<f32>(warps)).unwrap();
    let module = kernels::load(ctx).unwrap();
    let cfg = LaunchConfig {
        grid_dim: (BLOCKS as u32, 1, 1),
        block_dim: (BLOCK as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the kernel reads `input` in bounds and writes one element per warp.
    unsafe { module.warp_partials(&stream, cfg, &dinput, &mut sums, &mut maxima) }.unwrap();
    let value = |g: usize| input.get(g).copied().unwrap_or(0.0);
    let (mut want_sums, mut want_max) = (Vec::new(), Vec::new());
    for b in 0..BLOCKS {
        for (lo, hi) in [(0, 32), (32, BLOCK)] {
            let lanes = (lo..hi).map(|t| value(b * BLOCK + t));
            want_sums.push(lanes.clone().sum::<f32>());
            want_max.push(lanes.fold(f32::NEG_INFINITY, f32::max));
        }
    }
    assert_same("sums", &sums.to_host_vec(&stream).unwrap(), &want_sums);
    assert_same("maxima", &maxima.to_host_vec(&stream).unwrap(), &want_max);
}

#[test]
fn contract_requires_relations_and_dynamic_shared_memory() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("contract_requires_relations_and_dynamic_shared_memory");
    let (n, stride) = (300usize, 3usize);
    let input: Vec<f32> = random(&mut rng, n * stride, -10.0, 10.0);
    let dinput = DeviceBuffer::from_host(&stream, &input).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    let prepared = module
        .prepare_strided_scale(LaunchConfig1D::for_len(n, 128))
        .unwrap();
    module
        .strided_scale(&stream, &prepared, n, stride, &dinput, &mut out)
        .unwrap();
    let want: Vec<f32> = (0..n).map(|i| input[i * stride] * 2.0).collect();
    assert_same("strided_scale", &out.to_host_vec(&stream).unwrap(), &want);

    // One element short of n * stride: refused on the host, and nothing ran.
    let short = DeviceBuffer::from_host(&stream, &input[..n * stride - 1]).unwrap();
    let mut untouched = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    let refused = module.strided_scale(&stream, &prepared, n, stride, &short, &mut untouched);
    match refused {
        Err(Error::InvalidLaunch { kernel, reason }) => {
            assert_eq!(kernel, "strided_scale");
            assert!(reason.contains("input.len() >= n * stride"), "{reason}");
            assert!(
                reason.contains("= 899") && reason.contains("= 900"),
                "{reason}"
            );
        }
        other => panic!("expected InvalidLaunch, got {other:?}"),
    }
    let still: Vec<u32> = untouched
        .to_host_vec(&stream)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let poison: Vec<u32> = poisoned::<f32>(n).iter().map(|v| v.to_bits()).collect();
    assert_eq!(still, poison, "a refused launch wrote its output");
    // A stride so large that n * stride overflows u64 fails the relation too.
    assert!(matches!(
        module.strided_scale(&stream, &prepared, n, usize::MAX, &dinput, &mut out),
        Err(Error::InvalidLaunch { .. })
    ));

    // dynamic_shared = 256: a launch with less is refused by prepare.
    let few = module.prepare_needs_dynamic_shared(LaunchConfig1D::new(2, 64, 128));
    assert!(
        matches!(&few, Err(Error::InvalidLaunch { reason, .. }) if reason.contains("dynamic_shared = 256")),
        "{few:?}"
    );
    let enough = module
        .prepare_needs_dynamic_shared(LaunchConfig1D::new(2, 64, 256))
        .unwrap();
    let mut ids = DeviceBuffer::from_host(&stream, &poisoned::<u32>(128)).unwrap();
    module
        .needs_dynamic_shared(&stream, &enough, &mut ids)
        .unwrap();
    let want_ids: Vec<u32> = (0..128).collect();
    assert_same(
        "needs_dynamic_shared",
        &ids.to_host_vec(&stream).unwrap(),
        &want_ids,
    );
}

#[test]
fn closures_capture_when_made() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("closures_capture_when_made");
    let n = 1000;
    let input: Vec<i32> = random(&mut rng, n, -1000, 1000);
    let (scale, bias) = (3i32, -7i32);
    let dinput = DeviceBuffer::from_host(&stream, &input).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<i32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    // SAFETY: one thread per element; each writes its own.
    unsafe {
        module.closures::<i32>(
            &stream,
            LaunchConfig::for_num_elems(n as u32),
            &dinput,
            &mut out,
            scale,
            bias,
        )
    }
    .unwrap();
    let want: Vec<i32> = input
        .iter()
        .map(|&x| (x + bias) * scale + bias + bias * scale)
        .collect();
    assert_same("closures", &out.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn warp_match_groups_lanes_by_value() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("warp_match_groups_lanes_by_value");
    let n = 3 * 32;
    // Four values per warp in the first two warps; one value in the third.
    let mut x: Vec<u32> = random(&mut rng, n, 0, 4);
    for v in &mut x[64..] {
        *v = 9;
    }
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &vec![[0xDEAD_BEEFu32; 4]; n]).unwrap();
    let module = kernels::load(ctx).unwrap();
    // SAFETY: one thread per element of whole warps; each writes its own.
    unsafe { module.warp_match(&stream, LaunchConfig1D::new(1, n as u32, 0), &dx, &mut out) }
        .unwrap();
    let mut want = Vec::with_capacity(n);
    for warp in x.chunks(32) {
        let same = |v: u32| {
            warp.iter()
                .enumerate()
                .filter(|&(_, &w)| w == v)
                .fold(0u32, |m, (l, _)| m | 1 << l)
        };
        let all = if warp.iter().all(|&w| w == warp[0]) {
            u32::MAX
        } else {
            0
        };
        for &v in warp {
            want.push([same(v), all, same(v), all]);
        }
    }
    assert_same("warp_match", &out.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn unsafe_kernels_with_a_whole_contract_are_prepared() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("unsafe_kernels_with_a_whole_contract_are_prepared");
    let n = 500;
    let x: Vec<f32> = random(&mut rng, n, -5.0, 5.0);
    let mut dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let module = kernels::load(ctx).unwrap();
    // A 2-D grid breaks the declared 1-D domain: prepare refuses it.
    let two_d = LaunchConfig {
        grid_dim: (8, 2, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    let refused = module.prepare_doubled_in_place(two_d);
    assert!(
        matches!(&refused, Err(Error::InvalidLaunch { reason, .. }) if reason.contains("1-dimensional")),
        "{refused:?}"
    );
    let prepared = module
        .prepare_doubled_in_place(LaunchConfig1D::for_len(n, 64))
        .unwrap();
    // SAFETY: each thread doubles only its own element.
    unsafe { module.doubled_in_place(&stream, &prepared, &mut dx) }.unwrap();
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_same("doubled", &dx.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn div_ceil_rounds_up() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("div_ceil_rounds_up");
    let n = 600;
    let mut x: Vec<u32> = random(&mut rng, n, 0, 10_000);
    let mut y: Vec<u32> = random(&mut rng, n, 1, 50);
    // The largest dividend (a divisor above 1, so that `+ 4` cannot overflow) and zero.
    x[0] = u32::MAX;
    y[0] = 3;
    x[1] = 0;
    let (dx, dy) = (
        DeviceBuffer::from_host(&stream, &x).unwrap(),
        DeviceBuffer::from_host(&stream, &y).unwrap(),
    );
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    let module = kernels::load(ctx).unwrap();
    // SAFETY: one thread per element; each writes its own.
    unsafe {
        module.ceilings(
            &stream,
            LaunchConfig::for_num_elems(n as u32),
            &dx,
            &dy,
            &mut out,
        )
    }
    .unwrap();
    let want: Vec<u32> = x.iter().zip(&y).map(|(a, b)| a.div_ceil(*b) + 4).collect();
    assert_same("div_ceil", &out.to_host_vec(&stream).unwrap(), &want);
}

#[test]
fn get_unchecked_mut_still_checks_the_element_count() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let module = kernels::load(ctx).unwrap();
    let poison = [f32::NAN; 4];
    let mut out = DeviceBuffer::from_host(&stream, &[poison; 4]).unwrap();
    let one = LaunchConfig1D::new(1, 32, 0);
    // SAFETY: only thread 0 writes, one element.
    unsafe { module.unchecked_aggregate(&stream, one, &mut out, 3) }.unwrap();
    let got = out.to_host_vec(&stream).unwrap();
    assert_eq!(got[3], [1.0, 2.0, 3.0, 3.0]);
    assert!(got[..3].iter().flatten().all(|v| v.is_nan()));
    // Element 5 is past the 4 elements (though below their 64 bytes): its bounds check stops
    // it, naming the call. Only on the emulator: a trap on the GPU leaves the CUDA context
    // unusable for the other tests of this binary.
    if ctx.backend() != cuprum::BackendKind::Emulator {
        return;
    }
    let mut fresh = DeviceBuffer::from_host(&stream, &[poison; 4]).unwrap();
    // SAFETY: as above; the index is out of bounds on purpose, and the check stops it.
    let past = unsafe { module.unchecked_aggregate(&stream, one, &mut fresh, 5) }
        .and_then(|()| stream.synchronize());
    let message = format!("{past:?}");
    assert!(
        past.is_err() && message.contains("get_unchecked_mut(at)"),
        "an index past the elements was not stopped by its bounds check: {message}"
    );
}

/// cuda-oxide's `gemm` (row width bound with `RowWidth`) and a let-chain kernel of the same
/// index space: every element of C against plain Rust, the allocation's tail (past `m * n`)
/// still poisoned, a grid wider and taller than the matrix.
#[test]
fn runtime_width_2d_index_space() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("runtime_width_2d_index_space");
    let (m, n, k) = (37usize, 45usize, 19usize);
    let a: Vec<f32> = random(&mut rng, m * k, -1.0, 1.0);
    let b: Vec<f32> = random(&mut rng, k * n, -1.0, 1.0);
    let c0: Vec<f32> = random(&mut rng, m * n, -1.0, 1.0);
    let tail = poisoned::<f32>(11);
    let mut c_init = c0.clone();
    c_init.extend_from_slice(&tail);
    let (da, db) = (
        DeviceBuffer::from_host(&stream, &a).unwrap(),
        DeviceBuffer::from_host(&stream, &b).unwrap(),
    );
    let mut dc = DeviceBuffer::from_host(&stream, &c_init).unwrap();
    let module = kernels::load(ctx).unwrap();
    let (alpha, beta) = (1.5f32, -0.5f32);
    let cfg = LaunchConfig {
        grid_dim: ((n as u32).div_ceil(16), (m as u32).div_ceil(16) + 1, 1),
        block_dim: (16, 16, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: a 2-D launch (one layer along z): each thread writes only its own element.
    unsafe {
        module.sgemm_naive(
            stream.as_ref(),
            cfg,
            m as u32,
            n as u32,
            k as u32,
            alpha,
            &da,
            &db,
            beta,
            cuprum::RowWidth::new(&mut dc, n as u32),
        )
    }
    .unwrap();
    let got = dc.to_host_vec(&stream).unwrap();
    for r in 0..m {
        for col in 0..n {
            let mut sum = 0.0f32;
            for i in 0..k {
                sum += a[r * k + i] * b[i * n + col];
            }
            let want = alpha * sum + beta * c0[r * n + col];
            let g = got[r * n + col];
            assert!(
                (g - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "c[{r}][{col}] = {g}, want {want}"
            );
        }
    }
    assert_same("the tail past m * n", &got[m * n..], &tail);

    let (rows, width) = (21usize, 30usize);
    let x: Vec<f32> = random(&mut rng, width, 0.0, 1.0);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let len = rows * width + 40;
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(len)).unwrap();
    let prepared = module
        .prepare_label_cells(LaunchConfig2D::new((3, 4), (16, 8), 0))
        .unwrap();
    module
        .label_cells(
            &stream,
            &prepared,
            &dx,
            rows,
            cuprum::RowWidth::new(&mut out, width as u32),
        )
        .unwrap();
    let mut want = poisoned::<f32>(len);
    for r in 0..rows {
        for col in 0..width {
            want[r * width + col] = (r * 1000 + col) as f32 + x[col] + width as f32 * 1e6;
        }
    }
    assert_same("label_cells", &out.to_host_vec(&stream).unwrap(), &want);
}
