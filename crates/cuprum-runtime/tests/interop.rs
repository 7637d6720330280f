//! Foreign streams and memory (`foreign`), and DLPack export and import (`interop::dlpack`),
//! on the backend `CUPRUM_DEVICE` selects: on the emulator the raw-handle entry points are
//! typed errors and DLPack goes through host copies; on a GPU the same tests check that
//! DLPack is zero-copy and that foreign memory and streams join cuprum's ordering. (The
//! cudarc tests, which need kernels, are the facade's `tests/interop_cudarc.rs`.)

mod common;

use common::ctx;
use cuprum_runtime::interop::dlpack::dlpark::ffi::{DLDataType, DLDevice, DLDeviceType};
use cuprum_runtime::interop::dlpack::dlpark::{self, DlpackFlags};
use cuprum_runtime::{BackendKind, DeviceBuffer, Error, ForeignOwner, RawOwner, Stream};
use cuprum_testkit::random::{random_f32, random_i32};

/// A host tensor over `data` (kept alive by the tensor) with `shape`, `strides`, `device`.
fn host_tensor<T: Send + 'static>(
    data: Vec<T>,
    shape: &[i64],
    strides: &[i64],
    dtype: DLDataType,
    device: DLDevice,
) -> dlpark::versioned::Dlpack {
    let mut data = Box::new(data);
    let ptr = data.as_mut_ptr().cast();
    let mut init =
        match dlpark::metadata::Dynamic::new(shape.to_vec(), strides.to_vec()).initialize(data) {
            Ok(i) => i,
            Err(e) => panic!("test tensor: {e}"),
        };
    init.set_data(ptr).set_device(device).set_dtype(dtype);
    // SAFETY: the box keeps the data alive; shape and strides are stored in the tensor.
    unsafe { init.finish() }
}

#[test]
fn raw_handles_are_typed_errors_on_the_emulator() {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Emulator {
        println!("skipped: runs on the emulator (this is {})", ctx.backend());
        return;
    }
    let stream = ctx.default_stream();
    assert_eq!(stream.raw_cuda_stream(), None);
    assert_eq!(ctx.raw_cuda_context(), None);
    // SAFETY: refused before the handle is used.
    let wrapped = unsafe { Stream::from_raw_cuda(&ctx, std::ptr::null_mut(), None) };
    assert!(
        matches!(wrapped, Err(Error::Unsupported { .. })),
        "{wrapped:?}"
    );
    // SAFETY: refused before the address is used.
    let foreign = unsafe {
        DeviceBuffer::<f32>::from_raw_parts(&stream, 0x1000, 4, ForeignOwner::lent("test"))
    };
    assert!(
        matches!(foreign, Err(Error::Unsupported { .. })),
        "{foreign:?}"
    );
    let buffer = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).expect("buffer");
    let raw = buffer.into_raw_parts(&stream);
    assert!(matches!(raw, Err(Error::Unsupported { .. })), "{raw:?}");
    let cudarc = cuprum_runtime::interop::cudarc::cudarc_context(&ctx);
    match cudarc {
        Err(Error::Unsupported { what }) => assert!(what.contains("cudarc"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn dlpack_round_trip_keeps_every_element() -> cuprum_runtime::Result<()> {
    let ctx = ctx();
    let stream = ctx.new_stream()?;
    for (shape, n) in [
        (vec![1000usize], 1000),
        (vec![7, 13, 3], 273),
        (vec![0, 4], 0),
    ] {
        let host = random_f32(n);
        let buffer = DeviceBuffer::from_host(&stream, &host)?;
        let address = buffer.device_address();
        let tensor = buffer.into_dlpack(&shape, &stream)?;
        {
            let view = tensor.validate().expect("valid export");
            let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            assert_eq!(view.shape(), &dims[..]);
            assert!(view.dtype().matches(DLDataType::F32));
            match ctx.backend() {
                BackendKind::Cuda => {
                    assert_eq!(view.device(), DLDevice::cuda(0));
                    if n > 0 {
                        assert_eq!(view.data_ptr() as u64, address, "zero-copy export");
                    }
                }
                BackendKind::Emulator => {
                    assert_eq!(view.device(), DLDevice::CPU);
                    assert!(tensor.flags().contains(DlpackFlags::IS_COPIED));
                    // SAFETY: a host tensor of `n` f32s.
                    let seen = unsafe { view.cpu_slice::<f32>() }.expect("host data");
                    assert_eq!(seen, &host[..]);
                }
            }
        }
        let back = DeviceBuffer::<f32>::from_dlpack(&stream, tensor)?;
        assert_eq!(back.shape, shape);
        if ctx.backend() == BackendKind::Cuda && n > 0 {
            assert_eq!(back.buffer.device_address(), address, "zero-copy import");
        }
        // Poison a second buffer, copy through the imported one, check every element.
        let mut out = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
        out.copy_from_device(&stream, &back.buffer)?;
        assert_eq!(out.to_host_vec(&stream)?, host);
    }
    Ok(())
}

#[test]
fn legacy_dlpack_round_trip() -> cuprum_runtime::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let host = random_i32(4096);
    let tensor = DeviceBuffer::from_host(&stream, &host)?.into_dlpack_legacy(&[64, 64], &stream)?;
    let back = DeviceBuffer::<i32>::from_dlpack(&stream, tensor)?;
    assert_eq!(back.shape, [64, 64]);
    assert_eq!(back.buffer.to_host_vec(&stream)?, host);
    Ok(())
}

#[test]
fn dlpack_import_checks_type_shape_strides_and_device() -> cuprum_runtime::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let refused = |r: cuprum_runtime::Result<_>, needle: &str| match r {
        Err(Error::Dlpack { reason }) => assert!(reason.contains(needle), "{needle}: {reason}"),
        Err(other) => panic!("expected a DLPack error about {needle}, got {other}"),
        Ok(_) => panic!("expected a DLPack error about {needle}, got a buffer"),
    };
    // The wrong element type.
    let t = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4])?.into_dlpack(&[4], &stream)?;
    refused(
        DeviceBuffer::<f32>::from_dlpack(&stream, t).map(|_| ()),
        "element type uint32",
    );
    // A shape that does not fit the buffer, on export.
    let b = DeviceBuffer::from_host(&stream, &[1u32, 2, 3, 4])?;
    refused(b.into_dlpack(&[3], &stream).map(|_| ()), "does not have");
    // A transposed (column-major) host tensor: refused, a dense one with a free stride on a
    // dimension of one element: accepted.
    let data: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let t = host_tensor(
        data.clone(),
        &[2, 3],
        &[1, 2],
        DLDataType::F32,
        DLDevice::CPU,
    );
    refused(
        DeviceBuffer::<f32>::from_dlpack(&stream, t).map(|_| ()),
        "row-major",
    );
    let t = host_tensor(
        data.clone(),
        &[1, 6],
        &[99, 1],
        DLDataType::F32,
        DLDevice::CPU,
    );
    let imported = DeviceBuffer::<f32>::from_dlpack(&stream, t)?;
    assert_eq!(imported.buffer.to_host_vec(&stream)?, data);
    // Devices: another GPU's tensor, or a GPU tensor on the emulator, or a Metal tensor.
    let other_gpu = DLDevice {
        device_type: DLDeviceType::CUDA,
        device_id: 7,
    };
    let t = host_tensor(data.clone(), &[6], &[1], DLDataType::F32, other_gpu);
    let needle = match ctx.backend() {
        BackendKind::Cuda => "cuda:7",
        BackendKind::Emulator => "emulator",
    };
    refused(
        DeviceBuffer::<f32>::from_dlpack(&stream, t).map(|_| ()),
        needle,
    );
    let t = host_tensor(data, &[6], &[1], DLDataType::F32, DLDevice::metal(0));
    refused(
        DeviceBuffer::<f32>::from_dlpack(&stream, t).map(|_| ()),
        "metal:0",
    );
    Ok(())
}

#[test]
fn foreign_memory_is_ordered_and_released_on_the_gpu() -> cuprum_runtime::Result<()> {
    let ctx = ctx();
    if ctx.backend() != BackendKind::Cuda {
        println!("skipped: needs a GPU (CUPRUM_DEVICE=cuda)");
        return Ok(());
    }
    let home = ctx.new_stream()?;
    let other = ctx.new_stream()?;
    let host = random_f32(1 << 16);
    // cuprum's memory handed out, then taken back as foreign memory with a release.
    let raw = DeviceBuffer::from_host(&home, &host)?.into_raw_parts(&home)?;
    assert!(matches!(raw.owner, RawOwner::Cuprum));
    let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = released.clone();
    let owner = ForeignOwner::new("test", move || {
        flag.store(true, std::sync::atomic::Ordering::SeqCst)
    });
    // SAFETY: the allocation just handed out, of `host.len()` f32s, not freed by anyone else.
    let foreign =
        unsafe { DeviceBuffer::<f32>::from_raw_parts(&home, raw.address, raw.len, owner) }?;
    assert_eq!(foreign.foreign_origin(), Some("test"));
    // A second buffer over the same memory is refused.
    // SAFETY: refused before use.
    let twice = unsafe {
        DeviceBuffer::<f32>::from_raw_parts(&home, raw.address + 64, 4, ForeignOwner::lent("x"))
    };
    assert!(matches!(twice, Err(Error::Interop { .. })), "{twice:?}");
    // Used on another stream: ordered after the home stream's work.
    let mut copy = DeviceBuffer::from_host(&other, &vec![f32::NAN; host.len()])?;
    copy.copy_from_device(&other, &foreign)?;
    assert_eq!(copy.to_host_vec(&other)?, host);
    drop(foreign);
    assert!(
        released.load(std::sync::atomic::Ordering::SeqCst),
        "release ran"
    );
    // The owner (this test) frees it now, in the home stream's order.
    home.synchronize()?;
    let back = DeviceBuffer::<f32>::from_host(&home, &host)?;
    let raw2 = back.into_raw_parts(&home)?;
    for address in [raw.address, raw2.address] {
        // SAFETY: allocations from cuprum's `cuMemAllocAsync`, freed once.
        let freed = unsafe {
            cudarc::driver::result::free_async(
                address,
                home.raw_cuda_stream()
                    .unwrap_or(std::ptr::null_mut())
                    .cast(),
            )
        };
        assert!(freed.is_ok(), "{freed:?}");
    }
    home.synchronize()?;
    Ok(())
}

#[test]
fn a_foreign_non_blocking_stream_is_ordered_with_the_default_stream() -> cuprum_runtime::Result<()>
{
    let ctx = ctx();
    if ctx.backend() != BackendKind::Cuda {
        println!("skipped: needs a GPU (CUPRUM_DEVICE=cuda)");
        return Ok(());
    }
    let raw = match cudarc::driver::result::stream::create(
        cudarc::driver::result::stream::StreamKind::NonBlocking,
    ) {
        Ok(s) => s,
        Err(e) => panic!("cuStreamCreate: {e}"),
    };
    {
        // SAFETY: a live stream of the primary context (made current by the context), destroyed
        // below after the wrapper is gone.
        let foreign = unsafe { Stream::from_raw_cuda(&ctx, raw.cast(), None) }?;
        assert_eq!(foreign.raw_cuda_stream(), Some(raw.cast()));
        let default = ctx.default_stream();
        let n = 1 << 22;
        for round in 0..4u32 {
            // Written on the default stream without waiting (a device-side fill), read on the
            // non-blocking stream: the read must see it.
            let buffer = DeviceBuffer::<u32>::zeroed(&default, n)?;
            let mut out = DeviceBuffer::from_host(&foreign, &vec![round + 1; n])?;
            out.copy_from_device(&foreign, &buffer)?;
            assert!(
                out.to_host_vec(&foreign)?.iter().all(|&v| v == 0),
                "round {round}"
            );
        }
    }
    // SAFETY: created above, no wrapper left.
    let _ = unsafe { cudarc::driver::result::stream::destroy(raw) };
    Ok(())
}

/// Streams and buffers stay unwind-safe with foreign owners in them: programs and tests
/// catch panics around code that uses them (a test did, and stopped compiling once a stream
/// held another library's owner).
#[test]
fn streams_and_buffers_are_unwind_safe() {
    fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}
    unwind_safe::<cuprum_runtime::Stream>();
    unwind_safe::<cuprum_runtime::DeviceBuffer<f32>>();
    unwind_safe::<cuprum_runtime::CudaContext>();
}
