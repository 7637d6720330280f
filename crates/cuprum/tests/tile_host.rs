//! The tile track's host side without kernels: the `api` constructors, tensors and their
//! views, partitions, the lazy device operations and their combinators, and that nothing
//! runs before `.sync_on` / `.sync` (counted with the context's allocation and launch
//! counters). Each test opens its own context, so the counters are its own.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use cuprum::CudaContext;
use cuprum::tile::cuda_async::device_operation::{shared, value, with_context, zip};
use cuprum::tile::error::{Error, TensorError};
use cuprum::tile::half::{bf16, f16};
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::{assert_same, ok};
use cuprum_testkit::random::{random, rng};
use std::future::IntoFuture;

/// A fresh context (its own counters) on the backend `CUPRUM_DEVICE` selects, and a stream.
fn fresh() -> (CudaContext, Stream) {
    let ctx = ok(CudaContext::new(0));
    let stream = ok(ctx.new_stream());
    (ctx, stream)
}

#[test]
fn constructors_make_the_tensors_they_say() {
    let (_ctx, s) = fresh();
    let z = ok(api::zeros::<f32>(&[3, 5]).sync_on(&s));
    assert_eq!(
        (z.shape(), z.strides(), z.offset()),
        (&[3, 5][..], &[5, 1][..], 0)
    );
    assert_eq!((z.size(), z.num_bytes(), z.rank()), (15, 60, 2));
    assert!(z.is_contiguous());
    assert_same("zeros", &ok(z.to_host_vec().sync_on(&s)), &[0.0f32; 15]);

    let o = ok(api::ones::<f16>(&[4, 2, 3]).sync_on(&s));
    assert_eq!(o.strides(), &[6, 3, 1]);
    assert_same(
        "ones f16",
        &ok(o.to_host_vec().sync_on(&s)),
        &[f16::ONE; 24],
    );

    let f = ok(api::full(-7i32, &[9]).sync_on(&s));
    assert_same("full", &ok(f.to_host_vec().sync_on(&s)), &[-7; 9]);

    // arange converts each index with Rust's `as`.
    let a = ok(api::arange::<u8>(300).sync_on(&s));
    let want: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    assert_same("arange u8", &ok(a.to_host_vec().sync_on(&s)), &want);
    let a = ok(api::arange::<bf16>(5).sync_on(&s));
    let want: Vec<bf16> = (0..5).map(|i| bf16::from_f32(i as f32)).collect();
    assert_same("arange bf16", &ok(a.to_host_vec().sync_on(&s)), &want);

    let mut r = rng("constructors_make_the_tensors_they_say");
    let data: Vec<f64> = random(&mut r, 6 * 7, -1e6, 1e6);
    let t = ok(api::from_host(&data, &[6, 7]).sync_on(&s));
    assert_eq!(t.shape(), &[6, 7]);
    assert_same("from_host", &ok(t.to_host_vec().sync_on(&s)), &data);
    let v = Arc::new(data.clone());
    let t = ok(api::copy_host_vec_to_device(&v).sync_on(&s));
    assert_eq!(t.shape(), &[42]);
    let t = Arc::new(t);
    assert_same(
        "copy_device_to_host_vec",
        &ok(api::copy_device_to_host_vec(&t).sync_on(&s)),
        &data,
    );

    // Rank 0 is one element.
    let scalar = ok(api::full(3u64, &[]).sync_on(&s));
    assert_eq!((scalar.size(), scalar.rank()), (1, 0));
    assert_same("rank 0", &ok(scalar.to_host_vec().sync_on(&s)), &[3u64]);

    match api::from_host(&data, &[6, 6]).sync_on(&s) {
        Err(Error::Tensor(TensorError::HostLength { len: 42, shape })) => {
            assert_eq!(shape, [6, 6])
        }
        other => panic!("expected a host length error, got {other:?}"),
    }
    match api::zeros::<f32>(&[usize::MAX, 2]).sync_on(&s) {
        Err(Error::Tensor(TensorError::TooLarge { .. })) => {}
        other => panic!("expected a size error, got {other:?}"),
    }
}

#[test]
fn nothing_runs_before_sync() {
    let (ctx, s) = fresh();
    let ran = Arc::new(AtomicUsize::new(0));
    let seen = ran.clone();
    let op = api::zeros::<f32>(&[1000])
        .partition([128])
        .unpartition()
        .then(|t| t.dup())
        .inspect(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .map(|t| (t.size(), t))
        .then(|(n, t)| zip!(value(n), api::ones::<i16>(&[n]), t.to_host_vec()));
    assert_eq!(
        ctx.stats().allocations,
        0,
        "an operation allocated when it was made"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a closure ran before sync");
    let (n, ones, zeros) = ok(op.sync_on(&s));
    // zeros, its dup and ones: three allocations, each once.
    assert_eq!(ctx.stats().allocations, 3);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(n, 1000);
    assert_same("ones", &ok(ones.to_host_vec().sync_on(&s)), &[1i16; 1000]);
    assert_same("zeros", &zeros, &[0.0f32; 1000]);
    assert_eq!(ctx.stats().launches, 0);
}

#[test]
fn reshape_dup_and_shared_views() {
    let (ctx, s) = fresh();
    let mut r = rng("reshape_dup_and_shared_views");
    let data: Vec<i32> = random(&mut r, 24, i32::MIN, i32::MAX);
    let t = ok(api::from_host(&data, &[24]).sync_on(&s));
    let t = ok(t.reshape(&[2, 3, 4]));
    assert_eq!((t.shape(), t.strides()), (&[2, 3, 4][..], &[12, 4, 1][..]));
    match t.reshape(&[5, 5]) {
        Err(Error::Tensor(TensorError::ReshapeCount { from, to })) => {
            assert_eq!((from, to), (vec![2, 3, 4], vec![5, 5]))
        }
        other => panic!("expected a reshape count error, got {other:?}"),
    }

    // A reshape of an `Arc` shares the allocation: nothing is allocated.
    let shared_t: Arc<Tensor<i32>> = ok(api::from_host(&data, &[4, 6]).sync_on(&s)).into();
    let before = ctx.stats().allocations;
    let view = ok((&shared_t).reshape(&[6, 4]));
    assert_eq!(ctx.stats().allocations, before);
    assert_eq!(view.shape(), &[6, 4]);
    assert_same("shared view", &ok((&view).to_host_vec().sync_on(&s)), &data);

    // dup copies into a new allocation.
    let copy = ok(view.dup().sync_on(&s));
    assert_eq!(ctx.stats().allocations, before + 1);
    assert_eq!(copy.shape(), &[6, 4]);
    assert_same("dup", &ok(copy.to_host_vec().sync_on(&s)), &data);

    // `reshape` on an operation fails when it runs, not when it is made.
    let bad = api::arange::<f32>(10).reshape(&[3, 3]);
    assert!(matches!(
        bad.sync_on(&s),
        Err(Error::Tensor(TensorError::ReshapeCount { .. }))
    ));
    let good = api::arange::<f32>(12).reshape(&[3, 4]);
    let good = ok(good.sync_on(&s));
    assert_eq!(good.shape(), &[3, 4]);
    let shared_op = api::arange::<f32>(12).arc().reshape(&[2, 6]);
    assert_eq!(ok(shared_op.sync_on(&s)).shape(), &[2, 6]);
}

#[test]
fn partitions_and_their_grids() {
    let (_ctx, s) = fresh();
    let p = ok(api::zeros::<f32>(&[1000]).partition([128]).sync_on(&s));
    assert_eq!(p.partition_shape(), &[128]);
    assert_eq!(ok_grid(&p), (8, 1, 1));
    let p = ok(api::zeros::<f32>(&[37, 50, 3]).sync_on(&s)).partition([8, 16, 2]);
    assert_eq!(ok_grid(&p), (5, 4, 2));
    let t = p.unpartition();
    assert_eq!(t.shape(), &[37, 50, 3]);
    let p = t.partition([8, 16]);
    assert!(p.grid().is_err(), "a partition of another rank has no grid");
    let mut t = p.unpartition();
    {
        let borrowed = (&mut t).partition([1, 1, 1]);
        assert_eq!(ok_grid(&borrowed), (37, 50, 3));
    }
    let four = ok(api::zeros::<f32>(&[2, 2, 2, 2]).sync_on(&s)).partition([1, 1, 1, 1]);
    assert!(four.grid().is_err(), "a grid has at most three axes");

    // `try_partition` needs the only owner.
    let a: Arc<Tensor<f32>> = t.into();
    let b = a.clone();
    match a.try_partition([4, 4, 1]) {
        Err(Error::ArcShared { owners: 2, .. }) => {}
        other => panic!("expected a shared-Arc error, got {other:?}"),
    }
    let p = ok(b.try_partition([4, 4, 1]));
    assert_eq!(p.partition_shape(), &[4, 4, 1]);
}

fn ok_grid<T: cuprum::tile::tensor::PartitionTarget>(
    p: &cuprum::tile::tensor::Partition<T>,
) -> (u32, u32, u32) {
    match p.grid() {
        Ok(g) => g,
        Err(e) => panic!("no grid: {e}"),
    }
}

#[test]
fn combinators_run_each_operation_once() {
    let (ctx, s) = fresh();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let counted = move |n: usize| {
        let counter = counter.clone();
        with_context(move |_ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            api::full(n as u32, &[n])
        })
    };

    // unzip: the tuple's operation runs once, whichever branch runs first.
    let (a, b, c) = zip!(counted(3), counted(4), value(7u8)).unzip();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let c = ok(c.sync_on(&s));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let b = ok(b.sync_on(&s));
    let a = ok(a.sync_on(&s));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "unzip ran its operation twice"
    );
    assert_eq!((a.size(), b.size(), c), (3, 4, 7));

    // shared: every clone gets the same Arc, the operation runs once.
    let x = counted(5).shared();
    let (x1, x2) = ok(zip!(x.clone(), x).sync_on(&s));
    assert!(Arc::ptr_eq(&x1, &x2));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_same("shared", &ok(x1.to_host_vec().sync_on(&s)), &[5u32; 5]);

    // first, last, map, then, boxed, arc, value, shared(arc).
    let first = ok(zip!(value(1i8), value(2i16), value(3i32))
        .first()
        .sync_on(&s));
    let last = ok(zip!(value(1i8), value(2i16), value(3i32))
        .last()
        .sync_on(&s));
    assert_eq!((first, last), (1, 3));
    let (single,) = zip!(value(9u64)).map(|v| (v,)).unzip();
    assert_eq!(ok(single.sync_on(&s)), 9);
    let boxed: Vec<BoxedDeviceOp<u32>> =
        vec![value(1u32).boxed(), value(2u32).map(|v| v * 10).boxed()];
    let got: Vec<u32> = boxed.into_iter().map(|op| ok(op.sync_on(&s))).collect();
    assert_eq!(got, [1, 20]);
    let arc = ok(value(4.5f64).arc().sync_on(&s));
    assert_eq!(*arc, 4.5);
    let again = ok(shared(arc.clone()).sync_on(&s));
    assert!(Arc::ptr_eq(&arc, &again));

    // unwrap_arc needs the only owner.
    match shared(arc.clone()).unwrap_arc().sync_on(&s) {
        Err(Error::ArcShared {
            what: "unwrap_arc", ..
        }) => {}
        other => panic!("expected a shared-Arc error, got {other:?}"),
    }
    drop(again);
    let only = Arc::new(3u8);
    assert_eq!(ok(value(only).unwrap_arc().sync_on(&s)), 3);
    assert_eq!(ctx.stats().launches, 0);
}

#[test]
fn errors_stop_a_chain_and_reach_every_sharer() {
    let (_ctx, s) = fresh();
    let ran_after = Arc::new(AtomicUsize::new(0));
    let seen = ran_after.clone();
    let chain = api::arange::<f32>(10).reshape(&[4, 4]).map(move |t| {
        seen.fetch_add(1, Ordering::SeqCst);
        t
    });
    assert!(matches!(chain.sync_on(&s), Err(Error::Tensor(_))));
    assert_eq!(
        ran_after.load(Ordering::SeqCst),
        0,
        "a chain went on after an error"
    );

    let failing = api::arange::<f32>(10).reshape(&[3]).shared();
    let first = failing.clone().sync_on(&s);
    assert!(matches!(
        first,
        Err(Error::Tensor(TensorError::ReshapeCount { .. }))
    ));
    match failing.sync_on(&s) {
        Err(Error::SharedOpFailed { message }) => assert!(message.contains("reshape"), "{message}"),
        other => panic!("expected the shared failure, got {other:?}"),
    }
    let (l, r) = zip!(api::arange::<f32>(2).reshape(&[3]), value(1u8)).unzip();
    assert!(matches!(r.sync_on(&s), Err(Error::Tensor(_))));
    assert!(matches!(l.sync_on(&s), Err(Error::SharedOpFailed { .. })));
}

#[test]
fn sync_runs_on_device_zero() {
    let device = ok(Device::new(0));
    assert!(
        Arc::ptr_eq(&device, &ok(Device::new(0))),
        "device 0 is shared"
    );
    let t = ok(api::arange::<i64>(6).sync());
    assert!(t.context().same_context(device.context()));
    assert_same("sync", &ok(t.to_host_vec().sync()), &[0i64, 1, 2, 3, 4, 5]);
    let stream = ok(device.new_stream());
    assert_same(
        "sync_on an Arc<Stream>",
        &ok(api::full(2i64, &[2]).to_host_vec().sync_on(&stream)),
        &[2, 2],
    );
}

/// Polls `f` on this thread until it is ready.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn operations_can_be_awaited() {
    let mut r = rng("operations_can_be_awaited");
    let data: Vec<i32> = random(&mut r, 12, -1000, 1000);
    let pending = api::from_host(&data, &[12]).reshape(&[3, 4]);
    let (shape, host, n) = ok(block_on(async move {
        let t: Arc<Tensor<i32>> = pending.await?.into();
        let shape = t.shape().to_vec();
        let (host, n) = zip!((&t).to_host_vec(), value(7u8)).await?;
        let n = value(n).map(|n| n + 1).await?;
        Ok::<_, Error>((shape, host, n))
    }));
    assert_eq!((shape, n), (vec![3, 4], 8));
    assert_same("awaited", &host, &data);
    // Errors come out of the future too.
    assert!(matches!(
        block_on(api::arange::<f32>(3).reshape(&[2]).into_future()),
        Err(Error::Tensor(TensorError::ReshapeCount { .. }))
    ));
}
