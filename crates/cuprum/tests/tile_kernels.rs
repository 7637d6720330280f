//! Tile kernels end to end: `#[cuprum::tile::module]` (front end at `cargo build`, embedded
//! tile IR) and the launch path (specialize, lower, optimize, load, launch) on the backend
//! `CUPRUM_DEVICE` selects, with results compared element by element to plain Rust on fresh
//! random inputs, outputs poisoned first.
//!
//! Built only with `--features tile-kernels` until the tile front end and lowering land (the
//! stub front end refuses every module); the integrator removes the gate.

use cuprum::tile::error::LaunchProblem;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        z: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        let tile_x = load_tile_like(x, z);
        let tile_y = load_tile_like(y, z);
        z.store(tile_x + tile_y);
    }

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

    #[cuprum::tile::entry()]
    fn scale<const B: i32>(out: &mut Tensor<f32, { [B] }>, k: f32, x: &Tensor<f32, { [-1] }>) {
        out.store(load_tile_like(x, out) * k);
    }

    #[cuprum::tile::entry()]
    fn softmax<const BM: i32, const BN: i32>(
        y: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        let tile_x: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let tile_x_max: Tile<f32, { [BM] }> = reduce_max(tile_x, 1i32);
        let tile_x_max: Tile<f32, { [BM, BN] }> =
            tile_x_max.reshape(const_shape![BM, 1]).broadcast(y.shape());
        let num: Tile<f32, { [BM, BN] }> = exp(tile_x - tile_x_max);
        let denom: Tile<f32, { [BM] }> = reduce_sum(num, 1);
        let denom = denom.reshape(const_shape![BM, 1]).broadcast(y.shape());
        y.store(num / denom);
    }

    #[cuprum::tile::entry()]
    fn hello() {
        let pids: (i32, i32, i32) = get_tile_block_id();
        let npids: (i32, i32, i32) = get_num_tile_blocks();
        cuda_tile_print!(
            "tile <{}, {}> of <{}, {}>\n",
            pids.0,
            pids.1,
            npids.0,
            npids.1
        );
    }
}

fn stream() -> Stream {
    ok(Device::new(0)).default_stream()
}

const POISON: f32 = f32::from_bits(0x7FC0_DEAD);

#[test]
fn add_is_elementwise_at_every_size() {
    let s = stream();
    let mut r = rng("add_is_elementwise_at_every_size");
    for n in [1, 127, 128, 1000, 1024, (1 << 16) + 3] {
        let x: Vec<f32> = random(&mut r, n, -100.0, 100.0);
        let y: Vec<f32> = random(&mut r, n, -100.0, 100.0);
        let z = api::from_host(&vec![POISON; n], &[n]).partition([128]);
        let got = ok(
            kernels::add(z, api::from_host(&x, &[n]), api::from_host(&y, &[n]))
                .first()
                .unpartition()
                .to_host_vec()
                .sync_on(&s),
        );
        let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        assert_same(&format!("add n={n}"), &got, &want);
    }
}

fn saxpy_in<T>(s: &Stream, x: Vec<T>, y: Vec<T>, a: T, reference: impl Fn(T, T) -> T)
where
    T: DType + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    let (m, n) = (37, 50);
    let x_t: Arc<Tensor<T>> = ok(api::from_host(&x, &[m, n]).sync_on(s)).into();
    let y_t = ok(api::from_host(&y, &[m, n]).sync_on(s)).partition([8, 16]);
    let (y_t, a_back, x_back) = ok(kernels::saxpy(y_t, a, x_t.clone()).sync_on(s));
    assert!(a_back == a && Arc::ptr_eq(&x_back, &x_t));
    let got = ok(y_t.unpartition().to_host_vec().sync_on(s));
    let want: Vec<T> = x.iter().zip(&y).map(|(&x, &y)| reference(x, y)).collect();
    assert_same("saxpy", &got, &want);
}

#[test]
fn saxpy_is_generic_over_its_tile_and_element_type() {
    let s = stream();
    let mut r = rng("saxpy_is_generic_over_its_tile_and_element_type");
    let (x, y): (Vec<f32>, Vec<f32>) = (
        random(&mut r, 37 * 50, -10.0, 10.0),
        random(&mut r, 37 * 50, -10.0, 10.0),
    );
    saxpy_in(&s, x, y, 1.5f32, |x, y| 1.5 * x + y);
    let (x, y): (Vec<f64>, Vec<f64>) = (
        random(&mut r, 37 * 50, -10.0, 10.0),
        random(&mut r, 37 * 50, -10.0, 10.0),
    );
    saxpy_in(&s, x, y, -2.25f64, |x, y| -2.25 * x + y);

    // `.generics(..)` in source order (S[0], S[1], T) must agree with the arguments.
    let launch = || {
        kernels::saxpy(
            api::zeros::<f32>(&[4, 8]).partition([2, 4]),
            1.0f32,
            api::ones::<f32>(&[4, 8]),
        )
    };
    let (y, ..) = ok(launch().generics(["2", "4", "f32"]).sync_on(&s));
    assert_same(
        "generics",
        &ok(y.unpartition().to_host_vec().sync_on(&s)),
        &[1.0; 32],
    );
    match launch().generics(["4", "4", "f32"]).sync_on(&s) {
        Err(Error::InvalidLaunch {
            problem: LaunchProblem::GenericConflict { name, .. },
            ..
        }) => assert_eq!(name, "S[0]"),
        other => panic!("expected a generic conflict, got {other:?}"),
    }
}

#[test]
fn scalars_and_borrowed_outputs() {
    let s = stream();
    let mut r = rng("scalars_and_borrowed_outputs");
    let n = 1000;
    let x: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let k: f32 = random(&mut r, 1, -3.0, 3.0)[0];
    let x_t = ok(api::from_host(&x, &[n]).sync_on(&s));
    let mut out = ok(api::full(POISON, &[n]).sync_on(&s));
    let (_, k_back, _) = ok(kernels::scale((&mut out).partition([256]), k, &x_t).sync_on(&s));
    assert_eq!(k_back, k);
    let want: Vec<f32> = x.iter().map(|x| x * k).collect();
    assert_same("scale", &ok((&out).to_host_vec().sync_on(&s)), &want);
}

#[test]
fn softmax_rows_match_the_reference() {
    let s = stream();
    let mut r = rng("softmax_rows_match_the_reference");
    let (m, n) = (64, 32);
    let x: Vec<f32> = random(&mut r, m * n, -5.0, 5.0);
    let y = api::full(POISON, &[m, n]).partition([4, n]);
    let got = ok(kernels::softmax(y, api::from_host(&x, &[m, n]))
        .first()
        .unpartition()
        .to_host_vec()
        .sync_on(&s));
    for row in 0..m {
        let xs = &x[row * n..(row + 1) * n];
        let max = xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = xs.iter().map(|v| (v - max).exp()).sum();
        for (j, v) in xs.iter().enumerate() {
            let want = (v - max).exp() / sum;
            let g = got[row * n + j];
            // exp is approximate on the GPU and sums run in an unspecified order.
            assert!(
                (g - want).abs() <= 1e-5 + 1e-4 * want.abs(),
                "softmax[{row}][{j}] = {g}, want {want}"
            );
        }
    }
}

#[test]
fn a_kernel_without_outputs_runs_on_the_grid_given() {
    let s = stream();
    ok(kernels::hello().grid((2, 2, 1)).sync_on(&s));
    match kernels::hello().sync_on(&s) {
        Err(Error::InvalidLaunch {
            problem: LaunchProblem::NoGrid,
            ..
        }) => {}
        other => panic!("expected a missing grid, got {other:?}"),
    }
}

#[test]
fn a_partition_that_does_not_fit_is_refused() {
    let s = stream();
    let launch = kernels::softmax(
        api::zeros::<f32>(&[8, 8]).partition([4]),
        api::ones::<f32>(&[8, 8]),
    );
    match launch.sync_on(&s) {
        Err(Error::InvalidLaunch {
            kernel,
            problem: LaunchProblem::PartitionRank { .. },
        }) => assert_eq!(kernel, "softmax"),
        other => panic!("expected a partition rank error, got {other:?}"),
    }
}

/// cuTile Rust's `async_add`: two launches chained lazily, awaited once.
#[test]
fn chained_launches_can_be_awaited() {
    let len = 32;
    let launch = kernels::add(
        api::zeros(&[len]).partition([2]),
        api::arange(len),
        api::ones(&[len]),
    )
    .then(|(z, x, y)| kernels::add(z, x, y))
    .first()
    .unpartition()
    .to_host_vec();
    let mut fut = std::pin::pin!(std::future::IntoFuture::into_future(launch));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let got = loop {
        if let std::task::Poll::Ready(v) = std::future::Future::poll(fut.as_mut(), &mut cx) {
            break ok(v);
        }
    };
    let want: Vec<f32> = (0..len).map(|i| i as f32 + 1.0).collect();
    assert_same("async add", &got, &want);
}
