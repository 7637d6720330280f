//! A tile kernel that traps (a failed `cuda_tile_assert!`) makes an awaited operation's
//! future return an error, not panic or hang: on a GPU the launch succeeds and the fault is
//! seen when the runtime's waiter finds the work ended, on the emulator when the kernel runs.
//! Alone in its test binary: on a GPU the trap leaves the CUDA context unusable, as CUDA
//! specifies.

use cuprum::tile::prelude::*;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn checked_scale<const B: i32>(
        out: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        k: f32,
    ) {
        cuda_tile_assert!(k >= 0.0, "k must not be negative");
        out.store(load_tile_like(x, out) * k);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_kernel_that_traps_is_the_awaited_futures_error() -> Result<(), Error> {
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32 - 500.0).collect();
    // A good launch first: the kernel works, so the failure below is the trap's.
    let good = kernels::checked_scale(
        api::full(f32::NAN, &[n]).partition([128]),
        api::from_host(&x, &[n]),
        2.0f32,
    )
    .first()
    .unpartition()
    .to_host_vec()
    .await?;
    assert_eq!(good, x.iter().map(|v| v * 2.0).collect::<Vec<f32>>());

    let trapped = kernels::checked_scale(
        api::full(f32::NAN, &[n]).partition([128]),
        api::from_host(&x, &[n]),
        -1.0f32,
    )
    .first()
    .unpartition()
    .await;
    match trapped {
        Err(Error::Runtime(cuprum::Error::Emulator { kernel, source })) => {
            assert_eq!(kernel, "checked_scale");
            let text = source.to_string();
            assert!(text.contains("k must not be negative"), "{text}");
        }
        Err(Error::Runtime(cuprum::Error::KernelFault { kernel, .. })) => {
            assert_eq!(kernel, "checked_scale");
        }
        Err(other) => panic!("not the kernel's fault: {other}"),
        Ok(_) => panic!("the trap went unnoticed"),
    }
    Ok(())
}
