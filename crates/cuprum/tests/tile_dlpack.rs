//! Tile tensors to and from DLPack (`Tensor::into_dlpack`, `Tensor::from_dlpack`), on the
//! backend `CUPRUM_DEVICE` selects: shape, strides and flags of the export, every element of
//! the round trip, and a view sharing its allocation exported read-only.

use std::sync::Arc;

use cuprum::CudaContext;
use cuprum::interop::dlpack::dlpark::DlpackFlags;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};

#[test]
fn tile_tensors_round_trip_through_dlpack() {
    let ctx = ok(CudaContext::new(0));
    let s = ok(ctx.new_stream());
    let mut r = rng("tile_tensors_round_trip_through_dlpack");
    let data: Vec<f32> = random(&mut r, 4 * 6, -1e3, 1e3);
    let t = ok(api::from_host(&data, &[4, 6]).sync_on(&s));
    let dl = ok(t.into_dlpack(&s));
    {
        let view = ok(dl.validate());
        assert_eq!(view.shape(), &[4, 6]);
        assert_eq!(view.strides(), Some(&[6i64, 1][..]));
        assert!(!dl.flags().contains(DlpackFlags::READ_ONLY));
    }
    let back: Tensor<f32> = ok(Tensor::from_dlpack(&s, dl));
    assert_eq!(back.shape(), &[4, 6]);
    assert_same("round trip", &ok(back.to_host_vec().sync_on(&s)), &data);

    // A view of a shared allocation: exported read-only, with its own shape.
    let shared: Arc<Tensor<f32>> = ok(api::from_host(&data, &[4, 6]).sync_on(&s)).into();
    let view = match Arc::try_unwrap(ok((&shared).reshape(&[6, 4]))) {
        Ok(v) => v,
        Err(_) => panic!("a fresh view has one owner"),
    };
    let dl = ok(view.into_dlpack(&s));
    assert!(dl.flags().contains(DlpackFlags::READ_ONLY));
    assert_eq!(ok(dl.validate()).shape(), &[6, 4]);
    match ctx.backend() {
        // A read-only GPU tensor is not wrapped as a (writable) buffer.
        cuprum::BackendKind::Cuda => {
            assert!(Tensor::<f32>::from_dlpack(&s, dl).is_err());
        }
        // The emulator's export is a host copy, imported by copying.
        cuprum::BackendKind::Emulator => {
            let back: Tensor<f32> = ok(Tensor::from_dlpack(&s, dl));
            assert_same("shared view", &ok(back.to_host_vec().sync_on(&s)), &data);
        }
    }
    // The wrong element type is refused.
    let t = ok(api::from_host(&data, &[24]).sync_on(&s));
    let dl = ok(t.into_dlpack(&s));
    assert!(Tensor::<i32>::from_dlpack(&s, dl).is_err());
}
