//! Device buffers on the backend `CUPRUM_DEVICE` selects: round trips of several element
//! types and sizes with random data, zero fill, length checks, device-to-device copies, and
//! the allocation counter.

mod common;

use common::{ctx, rng};
use cuprum_runtime::{DeviceBuffer, DeviceCopy, Error};
use half::{bf16, f16};
use rand::Rng;
use rand::rngs::StdRng;

const SIZES: [usize; 4] = [0, 1, 1000, (1 << 20) + 3];

fn round_trip<T: DeviceCopy + PartialEq + std::fmt::Debug>(
    name: &str,
    mut gen_value: impl FnMut(&mut StdRng) -> T,
) {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng(name);
    for len in SIZES {
        let data: Vec<T> = (0..len).map(|_| gen_value(&mut rng)).collect();
        let buf = DeviceBuffer::from_host(&stream, &data).unwrap();
        assert_eq!(buf.len(), len);
        assert_eq!(buf.is_empty(), len == 0);
        assert_eq!(buf.size_bytes(), len * size_of::<T>());
        let back = buf.to_host_vec(&stream).unwrap();
        assert!(back == data, "{name}: round trip of {len} elements differs");

        // Overwrite with fresh data through copy_from_host, read through copy_to_host.
        let mut buf = buf;
        let fresh: Vec<T> = (0..len).map(|_| gen_value(&mut rng)).collect();
        buf.copy_from_host(&stream, &fresh).unwrap();
        let mut out = fresh.clone();
        if let Some(first) = out.first_mut() {
            *first = gen_value(&mut rng);
        }
        buf.copy_to_host(&stream, &mut out).unwrap();
        assert!(
            out == fresh,
            "{name}: copy_from_host/copy_to_host of {len} differs"
        );
    }
}

#[test]
fn round_trip_u8() {
    round_trip("u8", |r| r.random::<u8>());
}

#[test]
fn round_trip_i32() {
    round_trip("i32", |r| r.random::<i32>());
}

#[test]
fn round_trip_u64() {
    round_trip("u64", |r| r.random::<u64>());
}

#[test]
fn round_trip_f32_bits() {
    // Compare bit patterns (NaNs included) by moving u32s through an f32 buffer.
    round_trip("f32", |r| f32::from_bits(r.random::<u32>()).to_bits());
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("f32 values");
    let data: Vec<f32> = (0..4099).map(|_| rng.random_range(-1e6..1e6)).collect();
    let buf = DeviceBuffer::from_host(&stream, &data).unwrap();
    assert_eq!(buf.to_host_vec(&stream).unwrap(), data);
}

#[test]
fn round_trip_f64() {
    round_trip("f64", |r| r.random_range(-1e300..1e300));
}

#[test]
fn round_trip_half_types() {
    round_trip("f16", |r| f16::from_f32(r.random_range(-1000.0..1000.0)));
    round_trip("bf16", |r| bf16::from_f32(r.random_range(-1e30..1e30)));
}

#[test]
fn round_trip_bool_and_arrays() {
    round_trip("bool", |r| r.random::<bool>());
    round_trip("[f32; 3]", |r| [r.random::<f32>(), r.random(), r.random()]);
    round_trip("[u16; 5]", |r| r.random::<[u16; 5]>());
}

#[test]
fn zeroed_is_all_zero() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    for len in SIZES {
        let buf = DeviceBuffer::<u32>::zeroed(&stream, len).unwrap();
        let host = buf.to_host_vec(&stream).unwrap();
        assert_eq!(host.len(), len);
        assert!(
            host.iter().all(|&v| v == 0),
            "zeroed({len}) has nonzero data"
        );
        let buf = DeviceBuffer::<f64>::zeroed(&stream, len).unwrap();
        assert!(buf.to_host_vec(&stream).unwrap().iter().all(|&v| v == 0.0));
    }
    // Reusing memory: a zeroed buffer after a freed non-zero one is still zero.
    let big = DeviceBuffer::from_host(&stream, &vec![0xFFu8; 1 << 16]).unwrap();
    drop(big);
    let z = DeviceBuffer::<u8>::zeroed(&stream, 1 << 16).unwrap();
    assert!(z.to_host_vec(&stream).unwrap().iter().all(|&v| v == 0));
}

#[test]
fn length_mismatch_is_an_error() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut buf = DeviceBuffer::from_host(&stream, &[1u32, 2, 3]).unwrap();
    match buf.copy_from_host(&stream, &[1, 2]) {
        Err(Error::LengthMismatch {
            expected, actual, ..
        }) => {
            assert_eq!((expected, actual), (3, 2));
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    let mut out = [0u32; 4];
    match buf.copy_to_host(&stream, &mut out) {
        Err(Error::LengthMismatch {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (3, 4)),
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    let other = DeviceBuffer::from_host(&stream, &[0u32; 5]).unwrap();
    assert!(matches!(
        buf.copy_from_device(&stream, &other),
        Err(Error::LengthMismatch { .. })
    ));
    // The failed copies changed nothing.
    assert_eq!(buf.to_host_vec(&stream).unwrap(), vec![1, 2, 3]);
    let message = buf.copy_from_host(&stream, &[]).unwrap_err().to_string();
    assert!(message.contains("expected 3"), "{message}");
}

#[test]
fn device_to_device_copy() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("d2d");
    for len in SIZES {
        let data: Vec<i64> = (0..len).map(|_| rng.random()).collect();
        let src = DeviceBuffer::from_host(&stream, &data).unwrap();
        let mut dst = DeviceBuffer::<i64>::zeroed(&stream, len).unwrap();
        dst.copy_from_device(&stream, &src).unwrap();
        drop(src);
        assert_eq!(dst.to_host_vec(&stream).unwrap(), data);
    }
}

#[test]
fn buffers_of_another_context_are_refused() {
    let a = ctx();
    let b = ctx();
    let stream_b = b.default_stream();
    let buf = DeviceBuffer::from_host(&a.default_stream(), &[1u8, 2, 3]).unwrap();
    assert!(matches!(
        buf.to_host_vec(&stream_b),
        Err(Error::ContextMismatch)
    ));
    assert!(matches!(
        DeviceBuffer::<u8>::from_host(&stream_b, &[1]).map(|x| x.len()),
        Ok(1)
    ));
}

#[test]
fn non_default_stream_and_allocation_counter() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    assert!(!stream.is_default());
    assert!(ctx.default_stream().is_default());
    let before = ctx.stats().allocations;
    let data: Vec<u16> = (0..5000).map(|i| i as u16).collect();
    let buf = DeviceBuffer::from_host(&stream, &data).unwrap();
    let empty = DeviceBuffer::<u16>::from_host(&stream, &[]).unwrap();
    assert_eq!(empty.device_address(), 0);
    assert_ne!(buf.device_address(), 0);
    // Stats are per context; other tests use other contexts.
    assert_eq!(ctx.stats().allocations, before + 1);
    // Read back on the default stream after writing on the new one.
    assert_eq!(buf.to_host_vec(&ctx.default_stream()).unwrap(), data);
    stream.synchronize().unwrap();
    ctx.synchronize().unwrap();
    assert!(buf.context().same_context(&ctx));
}

#[test]
fn many_allocations_are_freed() {
    // A smoke test of Drop: allocate, use and drop buffers in a loop.
    let ctx = ctx();
    let stream = ctx.default_stream();
    let before = ctx.stats().allocations;
    for round in 0..16u32 {
        let buf = DeviceBuffer::<u8>::zeroed(&stream, 16 << 20).unwrap();
        assert_eq!(buf.len(), 16 << 20);
        if round % 4 == 0 {
            assert!(buf.to_host_vec(&stream).unwrap().iter().all(|&b| b == 0));
        }
    }
    assert_eq!(ctx.stats().allocations, before + 16);
}

#[test]
fn one_context_from_many_threads() {
    let ctx = ctx();
    let shared = DeviceBuffer::from_host(&ctx.default_stream(), &[7u32; 1024]).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let ctx = ctx.clone();
            let shared = &shared;
            scope.spawn(move || {
                let stream = ctx.new_stream().unwrap();
                for round in 0..8u32 {
                    let data: Vec<u32> = (0..4096).map(|i| i ^ (t << 20) ^ round).collect();
                    let buf = DeviceBuffer::from_host(&stream, &data).unwrap();
                    assert_eq!(buf.to_host_vec(&stream).unwrap(), data);
                }
                assert_eq!(shared.to_host_vec(&stream).unwrap(), vec![7; 1024]);
            });
        }
    });
}
