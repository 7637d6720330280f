//! Copies between devices of one process (`DeviceBuffer::copy_from_peer`) and whether
//! devices reach each other (`CudaContext::can_access_peer`), on emulated devices opened here:
//! fresh random data copied both ways into poisoned buffers, every element checked; work on
//! the source before the copy is seen; and the refusals (lengths, a stream of the source's
//! device).

use cuprum_runtime::{CudaContext, DeviceBuffer, Error};
use cuprum_testkit::random::{random, rng};

#[test]
fn buffers_are_copied_between_devices_both_ways() {
    let (a, b) = (CudaContext::emulator(), CudaContext::emulator());
    assert!(a.can_access_peer(&b).expect("a query") && b.can_access_peer(&a).expect("a query"));
    assert!(a.can_access_peer(&a).expect("a query"));
    let (sa, sb) = (a.new_stream().expect("s"), b.new_stream().expect("s"));
    let mut r = rng("peer_copies");
    let n = 4099;
    let data: Vec<u32> = random(&mut r, n, 0, u32::MAX);
    let on_a = DeviceBuffer::from_host(&sa, &data).expect("upload");
    let mut on_b = DeviceBuffer::from_host(&sb, &vec![0xDEAD_BEEFu32; n]).expect("upload");
    on_b.copy_from_peer(&sb, &on_a).expect("a to b");
    assert_eq!(on_b.to_host_vec(&sb).expect("download"), data);
    // Back, after the source changed on its own device.
    let changed: Vec<u32> = data.iter().map(|v| v ^ 0x5555_5555).collect();
    on_b.copy_from_host(&sb, &changed).expect("overwrite");
    let mut back = DeviceBuffer::from_host(&sa, &vec![0xDEAD_BEEFu32; n]).expect("upload");
    back.copy_from_peer(&sa, &on_b).expect("b to a");
    assert_eq!(back.to_host_vec(&sa).expect("download"), changed);
    // Within one device it is a plain copy.
    let mut same = DeviceBuffer::from_host(&sa, &vec![0u32; n]).expect("upload");
    same.copy_from_peer(&sa, &back).expect("a to a");
    assert_eq!(same.to_host_vec(&sa).expect("download"), changed);
}

#[test]
fn peer_copies_refuse_what_they_cannot_do() {
    let (a, b) = (CudaContext::emulator(), CudaContext::emulator());
    let (sa, sb) = (a.new_stream().expect("s"), b.new_stream().expect("s"));
    let src = DeviceBuffer::from_host(&sa, &[1u32; 10]).expect("upload");
    let mut short = DeviceBuffer::from_host(&sb, &[0u32; 9]).expect("upload");
    assert!(matches!(
        short.copy_from_peer(&sb, &src),
        Err(Error::LengthMismatch { .. })
    ));
    let mut dst = DeviceBuffer::from_host(&sb, &[0u32; 10]).expect("upload");
    // The stream must be of the destination's device.
    assert!(matches!(
        dst.copy_from_peer(&sa, &src),
        Err(Error::ContextMismatch)
    ));
    assert_eq!(dst.to_host_vec(&sb).expect("download"), vec![0; 10]);
}
