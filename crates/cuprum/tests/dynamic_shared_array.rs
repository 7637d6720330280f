//! cuda-oxide's raw dynamic shared memory (issue 14): `DynamicSharedArray::<T, ALIGN>::get()`,
//! `::offset(bytes)` and `::get_raw()` as `*mut` pointers dereferenced inside `unsafe`,
//! partitioned by byte offsets, with the start aligned as the kernel asks (also after static
//! shared arrays). Against plain Rust on random data, over poisoned outputs.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::{DisjointSlice, DynamicSharedArray, SharedArray, cuda_module, kernel, thread};
use cuprum::{BackendKind, DeviceBuffer, LaunchConfig};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

#[cuda_module]
mod kernels {
    use super::*;

    /// Two arrays of `blockDim.x` floats side by side (the second `bytes_b` bytes in),
    /// each thread reading its neighbours' elements after the barrier.
    #[kernel]
    pub fn neighbours(a: &[f32], b: &[f32], bytes_b: u32, mut out: DisjointSlice<f32>) {
        let sa: *mut f32 = DynamicSharedArray::<f32>::get();
        let sb: *mut f32 = DynamicSharedArray::<f32>::offset(bytes_b as usize);
        let tid = thread::threadIdx_x() as usize;
        let n = thread::blockDim_x() as usize;
        let gid = thread::index_1d().get();
        unsafe {
            *sa.add(tid) = a[gid];
            sb.add(tid).write(b[gid]);
        }
        thread::sync_threads();
        let left = (tid + n - 1) % n;
        let right = (tid + 1) % n;
        if let Some(o) = out.get_mut(thread::index_1d()) {
            *o = unsafe { *sa.add(right) - sb.add(left).read() };
        }
    }

    /// Bytes through `get_raw`, and the start's alignment after a static shared array of
    /// 12 bytes: `out[i]` is the byte the right neighbour stored, plus 1000 if the start of
    /// dynamic shared memory is not a multiple of 256.
    #[kernel]
    pub fn aligned_bytes(x: &[u32], mut out: DisjointSlice<u32>) {
        static mut PAD: SharedArray<f32, 3> = SharedArray::UNINIT;
        let raw: *mut u8 = DynamicSharedArray::<u8, 256>::get_raw();
        let words: *mut u32 = DynamicSharedArray::<u32>::offset(1024);
        let tid = thread::threadIdx_x() as usize;
        let n = thread::blockDim_x() as usize;
        let gid = thread::index_1d().get();
        unsafe {
            if tid < 3 {
                PAD[tid] = 1.0;
            }
            *raw.add(tid) = (x[gid] & 0xff) as u8;
            *words.add(tid) = x[gid] >> 8;
        }
        thread::sync_threads();
        let misaligned = (raw as u64) % 256 != 0;
        let right = (tid + 1) % n;
        if let Some(o) = out.get_mut(thread::index_1d()) {
            let byte = unsafe { *raw.add(right) } as u32;
            let word = unsafe { *words.add(right) };
            *o = byte + (word << 8) + if misaligned { 1000 } else { 0 };
        }
    }
}

fn config(blocks: u32, threads: u32, shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: shared,
    }
}

#[test]
fn partitions_by_byte_offsets_read_after_a_barrier() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("dynamic_shared_array_partitions");
    let (blocks, threads) = (7u32, 128u32);
    let n = (blocks * threads) as usize;
    let a: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let b: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let (da, db) = (
        DeviceBuffer::from_host(&stream, &a).unwrap(),
        DeviceBuffer::from_host(&stream, &b).unwrap(),
    );
    let module = kernels::load(ctx).unwrap();
    // The second array right after the first, then with a gap.
    for bytes_b in [threads * 4, threads * 4 + 64] {
        let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
        let shared = bytes_b + threads * 4;
        unsafe {
            module.neighbours(
                &stream,
                config(blocks, threads, shared),
                &da,
                &db,
                bytes_b,
                &mut out,
            )
        }
        .unwrap();
        let t = threads as usize;
        let want: Vec<f32> = (0..n)
            .map(|g| {
                let (block, tid) = (g / t, g % t);
                let right = block * t + (tid + 1) % t;
                let left = block * t + (tid + t - 1) % t;
                a[right] - b[left]
            })
            .collect();
        assert_same(
            &format!("offset {bytes_b}"),
            &out.to_host_vec(&stream).unwrap(),
            &want,
        );
    }
}

#[test]
fn raw_bytes_and_an_alignment_past_static_arrays() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("dynamic_shared_array_alignment");
    let (blocks, threads) = (5u32, 256u32);
    let n = (blocks * threads) as usize;
    let x: Vec<u32> = random(&mut rng, n, 0, u32::MAX);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let module = kernels::load(ctx).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(n)).unwrap();
    unsafe {
        module.aligned_bytes(
            &stream,
            config(blocks, threads, 1024 + threads * 4),
            &dx,
            &mut out,
        )
    }
    .unwrap();
    let t = threads as usize;
    let want: Vec<u32> = (0..n).map(|g| x[(g / t) * t + (g % t + 1) % t]).collect();
    assert_same("bytes and words", &out.to_host_vec(&stream).unwrap(), &want);
    if ctx.backend() == BackendKind::Cuda {
        // The region is declared 16-byte aligned (what the driver's linker keeps) and the
        // kernel rounds its start up to 256 bytes into padding the launch adds
        // (`Kernel::dyn_shared_padding`); the data above shows the start is aligned.
        let ptx = module.ptx().unwrap_or_default();
        assert!(ptx.contains(".align 16 .b8 $cuprum_dsmem[]"), "{ptx}");
        assert!(ptx.contains("0xFFFFFF00"), "{ptx}");
    }
}
