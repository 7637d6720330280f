//! cudarc interop (`cuprum::interop::cudarc`): a cuprum kernel on cudarc's context, streams and
//! slices, borrowed and moved both ways, compared element by element with a host reference
//! (outputs poisoned first). On a GPU (`CUPRUM_DEVICE=cuda`, or `auto` with one present);
//! without one, the entry points are checked to be typed errors and the rest is skipped with
//! a message.

mod common;

use common::{assert_same, blocks_for, random_f32};
use cuprum::interop::cudarc::{self as ic, driver};
use cuprum::simt::{DisjointSlice, kernel, launch_bounds, launch_contract, thread};
use cuprum::{BackendKind, CudaContext, DeviceBuffer, Error, LaunchConfig1D, cuda_module};

#[cuda_module]
mod kernels {
    use super::*;

    #[kernel]
    #[launch_bounds(256)]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = alpha * x[i.get()] + y[i.get()];
        }
    }
}

fn saxpy_reference(alpha: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| alpha * x + y).collect()
}

/// The GPU context, or `None` (with the reason printed) where the tests run on the emulator.
fn gpu() -> Option<CudaContext> {
    match CudaContext::new(0) {
        Ok(ctx) if ctx.backend() == BackendKind::Cuda => Some(ctx),
        Ok(_) => {
            println!("skipped: no GPU (the emulator runs; cudarc needs the CUDA driver)");
            None
        }
        Err(e) => {
            println!("skipped: no device ({e})");
            None
        }
    }
}

#[test]
fn cudarc_entry_points_are_typed_errors_on_the_emulator() {
    let emu = CudaContext::emulator();
    match ic::cudarc_context(&emu) {
        Err(Error::Unsupported { what }) => assert!(what.contains("emulator"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    let stream = emu.default_stream();
    assert!(stream.raw_cuda_stream().is_none());
    let buffer = DeviceBuffer::from_host(&stream, &[1.0f32, 2.0]).expect("emulator buffer");
    assert!(matches!(
        buffer.into_raw_parts(&stream),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn a_cuprum_kernel_runs_on_cudarc_streams_and_slices() -> cuprum::Result<()> {
    let Some(ctx) = gpu() else { return Ok(()) };
    let cudarc_ctx = ic::cudarc_context(&ctx)?;
    // The other way too: a cuprum context on cudarc's.
    let ours = ic::context(&cudarc_ctx)?;
    assert_eq!(ours.raw_cuda_context(), ctx.raw_cuda_context());
    let ctx = ours;
    let module = kernels::load(&ctx)?;
    let cudarc_stream = cudarc_ctx.new_stream().map_err(|e| Error::Unsupported {
        what: e.to_string(),
    })?;
    let stream = ic::stream(&ctx, &cudarc_stream)?;
    assert_eq!(
        stream.raw_cuda_stream(),
        Some(cudarc_stream.cu_stream().cast())
    );
    let cudarc_err = |e: driver::DriverError| Error::Unsupported {
        what: format!("cudarc: {e}"),
    };
    for n in [1usize, 1000, (1 << 20) + 3] {
        let (x, y) = (random_f32(n), random_f32(n));
        let alpha = 1.5f32;
        let want = saxpy_reference(alpha, &x, &y);
        let dx = cudarc_stream.clone_htod(&x).map_err(cudarc_err)?;
        let dy = cudarc_stream.clone_htod(&y).map_err(cudarc_err)?;
        let mut dout = cudarc_stream
            .clone_htod(&vec![f32::NAN; n])
            .map_err(cudarc_err)?;
        let prepared = module.prepare_saxpy(LaunchConfig1D::new(blocks_for(n, 256), 256, 0))?;
        // Borrowed slices as kernel arguments, on cudarc's stream.
        {
            let bx = ic::borrow(&stream, &dx)?;
            let by = ic::borrow(&stream, &dy)?;
            let mut bout = ic::borrow_mut(&stream, &mut dout)?;
            module.saxpy(&stream, &prepared, alpha, &bx, &by, &mut bout)?;
        }
        // cudarc reads the result after the borrow (its events order it).
        let got = cudarc_stream.clone_dtoh(&dout).map_err(cudarc_err)?;
        assert_same(&format!("saxpy on borrowed slices n={n}"), &got, &want);

        // Moved into cuprum, used on another cuprum stream, moved back to cudarc.
        let other = ctx.new_stream()?;
        let bx = ic::from_slice(&ctx, dx)?;
        let by = ic::from_slice(&ctx, dy)?;
        assert_eq!(bx.foreign_origin(), Some(ic::ORIGIN));
        let mut out = DeviceBuffer::from_host(&other, &vec![f32::NAN; n])?;
        module.saxpy(&other, &prepared, alpha, &bx, &by, &mut out)?;
        assert_same(
            &format!("saxpy on moved slices n={n}"),
            &out.to_host_vec(&other)?,
            &want,
        );
        let out_slice = ic::into_slice(out, &cudarc_stream)?;
        let got = cudarc_stream.clone_dtoh(&out_slice).map_err(cudarc_err)?;
        assert_same(&format!("cuprum buffer as a CudaSlice n={n}"), &got, &want);
        // A slice that came from cudarc goes back too; the rest are freed by cuprum.
        let x_again = ic::into_slice(bx, &cudarc_stream)?;
        assert_same(
            &format!("round trip n={n}"),
            &cudarc_stream.clone_dtoh(&x_again).map_err(cudarc_err)?,
            &x,
        );
        drop(by);
    }
    cudarc_stream.synchronize().map_err(cudarc_err)?;
    Ok(())
}

#[test]
fn borrowed_slices_cannot_be_recorded_into_graphs() -> cuprum::Result<()> {
    let Some(ctx) = gpu() else { return Ok(()) };
    let cudarc_ctx = ic::cudarc_context(&ctx)?;
    let cudarc_stream = cudarc_ctx.new_stream().map_err(|e| Error::Unsupported {
        what: e.to_string(),
    })?;
    let stream = ic::stream(&ctx, &cudarc_stream)?;
    let src = cudarc_stream
        .clone_htod(&[1.0f32; 256])
        .map_err(|e| Error::Unsupported {
            what: e.to_string(),
        })?;
    let borrowed = ic::borrow(&stream, &src)?;
    let mut dst = DeviceBuffer::<f32>::zeroed(&stream, 256)?;
    let captured = cuprum::Graph::capture(&ctx, |rec| dst.copy_from_device(rec, &borrowed));
    match captured {
        Err(Error::Unsupported { what }) => assert!(what.contains("borrowed"), "{what}"),
        Err(other) => panic!("expected Unsupported, got {other}"),
        Ok(_) => panic!("a graph recorded borrowed memory"),
    }
    Ok(())
}
