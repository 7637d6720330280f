//! The launchers of a tile module accept the ways cuTile Rust programs call them (lazy
//! operations and values, owned, shared and borrowed tensors, scalars, generic element types,
//! explicit generics and grids, the combinators on their outputs), and each call computes
//! what it should.
use cuprum::tile::prelude::*;

#[cuprum::tile::module]
mod my_module {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn saxpy<const S: [i32; 2], T: ElementType>(
        y: &mut Tensor<T, S>,
        a: T,
        x: &Tensor<T, { [-1, -1] }>,
    ) {
        let tile_a = a.broadcast(y.shape());
        let tile_x = load_tile_like(x, y);
        let tile_y = y.load();
        y.store(tile_a * tile_x + tile_y);
    }

    #[cuprum::tile::entry(print_ir = true)]
    fn hello() {
        let pid: (i32, i32, i32) = get_tile_block_id();
        cuda_tile_print!("{}\n", pid.0);
    }

    /// Scales `x` by `k` into `out`.
    #[cuprum::tile::entry()]
    fn scale<const B: i32>(out: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>, k: f32) {
        out.store(load_tile_like(x, out) * k);
    }
}

// cuTile Rust's `async_saxpy`: generic over the element type, awaited.
async fn execute<T: DType + std::ops::Add<Output = T>>(size: usize) -> Result<Vec<T>, Error> {
    let a = <T as DType>::one() + <T as DType>::one();
    let x = api::arange(size).reshape(&[4, 8]);
    let y = api::arange(size).reshape(&[4, 8]);
    let y_host: Vec<T> = my_module::saxpy(y.partition([2, 4]), value(a), x)
        .first()
        .unpartition()
        .to_host_vec()
        .await?;
    let input: Vec<T> = api::arange(size).await?.to_host_vec().await?;
    let _ = input;
    Ok(y_host)
}

/// Runs a future to completion on this thread (the launch runs on its first poll).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn cutile_call_patterns_run_and_compute() -> Result<(), Error> {
    let awaited = block_on(execute::<f64>(32))?;
    let want: Vec<f64> = (0..32).map(|i| 3.0 * i as f64).collect();
    assert_eq!(
        awaited, want,
        "awaited saxpy: 2 * x + y with x = y = arange"
    );
    let device = Device::new(0)?;
    let stream = device.new_stream()?;

    let x: Arc<Tensor<f32>> = api::arange(32usize)
        .sync_on(&stream)?
        .reshape(&[4, 8])?
        .into();
    let y = api::ones::<f32>(&[4, 8]).partition([2, 4]);
    let (y, a, x2): (Partition<Tensor<f32>>, f32, Arc<Tensor<f32>>) =
        my_module::saxpy(y, 2.0, x.clone()).sync_on(&stream)?;
    let _ = (a, x2);
    let host: Vec<f32> = y.unpartition().to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = (0..32).map(|i| 2.0 * i as f32 + 1.0).collect();
    assert_eq!(host, want, "saxpy with a scalar and a shared input");

    let xs = api::arange::<f64>(32).reshape(&[4, 8]);
    let v: Vec<f64> = my_module::saxpy(api::zeros(&[4, 8]).partition([2, 4]), value(1.5f64), xs)
        .generics(vec!["2".to_string(), "4".to_string(), "f64".to_string()])
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&stream)?;
    let want: Vec<f64> = (0..32).map(|i| 1.5 * i as f64).collect();
    assert_eq!(v, want, "saxpy specialized by explicit generics");

    my_module::hello().grid((2, 2, 1)).sync_on(&stream)?;
    let () = my_module::hello().grid((1, 1, 1)).sync()?;

    let owned = api::ones::<f32>(&[100]).sync_on(&stream)?;
    let mut out = api::zeros::<f32>(&[100]).sync_on(&stream)?;
    let (_, back, k) = my_module::scale((&mut out).partition([32]), &owned, 3.0f32)
        .then(|(o, x, k)| my_module::scale(o, x, k))
        .sync_on(&stream)?;
    let _: (&Tensor<f32>, f32) = (back, k);
    let (o, _, _) = my_module::scale(api::zeros(&[10]).partition([4]), owned, 1.0f32).unzip();
    let scaled = o.unpartition().to_host_vec().sync_on(&stream)?;
    assert_eq!(
        scaled,
        vec![1.0f32; 10],
        "ones of a 100-element tensor scaled by 1 into 10"
    );
    assert_eq!(
        out.to_host_vec().sync_on(&stream)?,
        vec![3.0f32; 100],
        "scaled in place twice, from the same input"
    );
    Ok(())
}
