//! Hopper-only device intrinsics in SIMT kernels: they run on the emulator and on compute
//! capability 9.0, and loading them for an older GPU is a typed error, not wrong code.

mod common;

use common::{assert_same, ctx, random_u32};
use cuprum::simt::{DisjointSlice, SharedArray, fence_proxy_async, kernel, launch_contract};
use cuprum::simt::{sync_threads, thread};
use cuprum::{BackendKind, DeviceBuffer, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    /// Each thread writes its slot of a shared tile, fences the async proxy (as before a
    /// bulk copy of the tile would start), and after the barrier reads its mirror's slot.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn mirror_through_shared(x: &[u32], mut out: DisjointSlice<u32>) {
        let tile = SharedArray::<u32, 128>::uninit();
        let t = thread::threadIdx_x() as usize;
        let i = thread::index_1d();
        unsafe { tile.set(t, x[i.get()] ^ 0x5A5A_5A5A) };
        fence_proxy_async();
        sync_threads();
        if let Some(o) = out.get_mut(i) {
            *o = unsafe { tile.get(127 - t) };
        }
    }
}

#[test]
fn a_shared_tile_fenced_for_the_async_proxy() -> cuprum::Result<()> {
    let ctx = ctx();
    let module = kernels::load(ctx);
    if ctx.backend() == BackendKind::Cuda && ctx.limits().compute_capability.0 < 9 {
        match module {
            Err(e) => assert!(e.to_string().contains("fence.proxy.async"), "{e}"),
            Ok(_) => panic!("a module with fence.proxy.async loaded below compute capability 9.0"),
        }
        return Ok(());
    }
    let m = module?;
    let stream = ctx.default_stream();
    let n = 128 * 5;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![0xDEAD_BEEFu32; n])?;
    let prepared = m.prepare_mirror_through_shared(LaunchConfig1D::new(5, 128, 0))?;
    m.mirror_through_shared(&stream, &prepared, &dx, &mut out)?;
    let want: Vec<u32> = (0..n)
        .map(|i| x[i / 128 * 128 + 127 - i % 128] ^ 0x5A5A_5A5A)
        .collect();
    assert_same("mirrored", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
