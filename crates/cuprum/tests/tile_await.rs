//! `.await` on device operations: the first poll submits the work and returns without
//! waiting for the device, the waker is woken when the device has finished, later polls
//! submit nothing again, several operations awaited together on one thread all complete with
//! the right results, and a future dropped while its work runs leaves the stream usable.
//!
//! On a GPU the work of these tests is long enough that the first poll must find it still
//! running; on the emulator work is done when submitted, so there the first poll is ready.
//! The pending path is also covered on every backend by the unit tests of `tile::op` and of
//! the runtime's `completion` module.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use cuprum::tile::cuda_async::device_future::DeviceFuture;
use cuprum::tile::cuda_async::device_operation::{BoxedDeviceOp, value, zip};
use cuprum::tile::cuda_async::scheduling_policies::{SchedulingPolicy, StreamPoolRoundRobin};
use cuprum::tile::prelude::*;
use cuprum::{BackendKind, CudaContext};
use cuprum_testkit::compare::assert_same;
use cuprum_testkit::random::{random, rng};

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn scale<const B: i32>(out: &mut Tensor<f32, { [B] }>, x: &Tensor<f32, { [-1] }>, k: f32) {
        out.store(load_tile_like(x, out) * k);
    }

    #[cuprum::tile::entry()]
    fn add<const B: i32>(
        out: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        out.store(load_tile_like(x, out) + load_tile_like(y, out));
    }

    #[cuprum::tile::entry()]
    fn mul<const B: i32>(
        out: &mut Tensor<f32, { [B] }>,
        x: &Tensor<f32, { [-1] }>,
        y: &Tensor<f32, { [-1] }>,
    ) {
        out.store(load_tile_like(x, out) * load_tile_like(y, out));
    }
}

/// Whether device 0 is a GPU (where work takes long enough to be seen running).
fn on_gpu() -> Result<bool, Error> {
    Ok(Device::new(0)?.context().backend() == BackendKind::Cuda)
}

/// Elements of the tensors: enough on a GPU that a few launches take a millisecond.
fn len(gpu: bool) -> usize {
    if gpu { (1 << 24) + 37 } else { 4096 + 37 }
}

#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker that counts its wakes.
fn counting() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter::default());
    (counter.clone(), Waker::from(counter))
}

fn count(c: &Counter) -> usize {
    c.0.load(Ordering::SeqCst)
}

fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// Waits (up to a minute) until `f` holds, without polling anything.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// `rounds` launches on a ping-pong of `x` and `spare`, each multiplying by 2, -0.5 or 3 in
/// turn: gives the result and the other tensor.
fn chain(
    x: Tensor<f32>,
    spare: Tensor<f32>,
    rounds: usize,
) -> BoxedDeviceOp<(Tensor<f32>, Tensor<f32>)> {
    let mut op = value((spare, x)).boxed();
    for round in 0..rounds {
        let k = factor(round);
        op = op
            .then(move |(spare, from)| {
                kernels::scale(spare.partition([256]), from, k)
                    .map(|(out, from, _)| (from, out.unpartition()))
            })
            .boxed();
    }
    op.map(|(spare, result)| (result, spare)).boxed()
}

fn factor(round: usize) -> f32 {
    [2.0, -0.5, 3.0][round % 3]
}

/// What [`chain`] computes from `x` in `rounds` rounds, in the same order of operations.
fn chain_reference(x: &[f32], rounds: usize) -> Vec<f32> {
    x.iter()
        .map(|&v| (0..rounds).fold(v, |acc, r| acc * factor(r)))
        .collect()
}

/// A tensor of `n` NaNs.
fn poisoned(n: usize, stream: &Stream) -> Result<Tensor<f32>, Error> {
    api::full(f32::NAN, &[n]).sync_on(stream)
}

#[tokio::test(flavor = "current_thread")]
async fn operations_awaited_together_on_one_thread_all_complete() -> Result<(), Error> {
    let gpu = on_gpu()?;
    let device = Device::new(0)?;
    let n = len(gpu);
    let mut r = rng("operations_awaited_together_on_one_thread_all_complete");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let hy: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x: Arc<Tensor<f32>> = api::from_host(&hx, &[n]).await?.into();
    let y: Arc<Tensor<f32>> = api::from_host(&hy, &[n]).await?.into();
    let policy: Arc<dyn SchedulingPolicy> = Arc::new(StreamPoolRoundRobin::new(&device, 3)?);
    let stream = device.default_stream();
    let [o1, o2, o3, spare] = [(); 4].map(|()| poisoned(n, &stream));
    let scaled = kernels::scale(o1?.partition([256]), x.clone(), 2.5f32)
        .first()
        .unpartition()
        .schedule(&policy)?;
    let sum = kernels::add(o2?.partition([256]), x.clone(), y.clone())
        .first()
        .unpartition()
        .schedule(&policy)?;
    // One of them copies its result to the host within the operation.
    let product = kernels::mul(o3?.partition([256]), x.clone(), y.clone())
        .first()
        .unpartition()
        .to_host_vec()
        .schedule(&policy)?;
    // And one runs on device 0's default stream, as a plain `.await` does.
    let long = chain(x.dup().await?, spare?, 7).into_future();
    let (scaled, sum, product, long) = tokio::join!(scaled, sum, product, long);
    let (scaled, sum, product, (long, _)) = (scaled?, sum?, product?, long?);

    let want: Vec<f32> = hx.iter().map(|v| v * 2.5).collect();
    assert_same("x * 2.5", &scaled.to_host_vec().await?, &want);
    let want: Vec<f32> = hx.iter().zip(&hy).map(|(a, b)| a + b).collect();
    assert_same("x + y", &sum.to_host_vec().await?, &want);
    let want: Vec<f32> = hx.iter().zip(&hy).map(|(a, b)| a * b).collect();
    assert_same("x * y", &product, &want);
    assert_same(
        "seven rounds",
        &long.to_host_vec().await?,
        &chain_reference(&hx, 7),
    );
    Ok(())
}

#[test]
fn the_first_poll_submits_the_work_and_does_not_wait_for_the_device() -> Result<(), Error> {
    let gpu = on_gpu()?;
    // A context of its own, so that its launch counter counts only this test's launches.
    let device = Device::from_context(CudaContext::new(0)?);
    let ctx = device.context();
    let stream = device.new_stream()?;
    let n = len(gpu);
    let rounds = if gpu { 30 } else { 3 };
    let mut r = rng("the_first_poll_submits_the_work_and_does_not_wait_for_the_device");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    // Compile the kernel first, so that the first poll below only submits launches.
    let _ = chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, 1).sync_on(&stream)?;
    let op = chain(x, poisoned(n, &stream)?, rounds);

    let mut future = DeviceFuture::on(op, (*stream).clone());
    let before = ctx.stats().launches;
    let (first, first_waker) = counting();
    let first_poll = poll_once(&mut future, &first_waker);
    let submitted = ctx.stats().launches - before;
    assert_eq!(
        submitted, rounds as u64,
        "the first poll submits every launch"
    );
    let (out, _) = match first_poll {
        Poll::Ready(result) => {
            assert!(
                !gpu,
                "on a GPU, {rounds} launches over {n} elements cannot have finished when the \
                 first poll returns: it waited for the device"
            );
            result?
        }
        Poll::Pending => {
            // A later poll before the work is done only replaces the waker.
            let (second, second_waker) = counting();
            let result = match poll_once(&mut future, &second_waker) {
                Poll::Ready(result) => result,
                Poll::Pending => {
                    eventually("the waker of the last poll is woken", || count(&second) > 0);
                    assert_eq!(count(&first), 0, "the replaced waker was woken");
                    match poll_once(&mut future, &second_waker) {
                        Poll::Ready(result) => result,
                        Poll::Pending => panic!("woken, but not ready"),
                    }
                }
            };
            assert_eq!(
                ctx.stats().launches - before,
                rounds as u64,
                "a later poll submitted the work again"
            );
            result?
        }
    };
    assert_same(
        "the chain's output",
        &out.to_host_vec().sync_on(&stream)?,
        &chain_reference(&hx, rounds),
    );
    // A finished future gives nothing again, and runs nothing again.
    let after = ctx.stats().launches;
    assert!(matches!(
        poll_once(&mut future, &first_waker),
        Poll::Ready(Err(_))
    ));
    assert_eq!(ctx.stats().launches, after);
    Ok(())
}

#[test]
fn a_future_dropped_while_its_work_runs_leaves_the_stream_usable() -> Result<(), Error> {
    let gpu = on_gpu()?;
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let n = len(gpu);
    let mut r = rng("a_future_dropped_while_its_work_runs_leaves_the_stream_usable");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    let mut written = poisoned(n, &stream)?;
    let _ = chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, 1).sync_on(&stream)?;
    {
        // A long chain whose tensors the future owns, then a launch that writes a tensor the
        // caller owns.
        let rounds = if gpu { 30 } else { 2 };
        let op = zip!(
            chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, rounds),
            kernels::scale((&mut written).partition([256]), &x, 3.0f32)
        );
        let mut future = DeviceFuture::on(op, (*stream).clone());
        let (_, waker) = counting();
        let polled = poll_once(&mut future, &waker);
        if gpu {
            assert!(polled.is_pending(), "the work was done at the first poll");
        }
        drop(future);
    }
    stream.synchronize()?;
    let want: Vec<f32> = hx.iter().map(|v| v * 3.0).collect();
    assert_same(
        "the dropped future's work",
        &(&written).to_host_vec().sync_on(&stream)?,
        &want,
    );
    // Later work on the stream runs.
    let later = kernels::add(api::full(f32::NAN, &[n]).partition([128]), &x, &written)
        .first()
        .unpartition()
        .to_host_vec();
    let later = DeviceFuture::on(later, (*stream).clone());
    let got = futures_block_on(later)?;
    let want: Vec<f32> = hx.iter().map(|v| v + v * 3.0).collect();
    assert_same("later work", &got, &want);
    Ok(())
}

/// Runs `f` on this thread, sleeping until its waker is woken.
fn futures_block_on<F: Future + Unpin>(mut f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    loop {
        match poll_once(&mut f, &waker) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

#[test]
fn awaited_values_need_no_device_work() -> Result<(), Error> {
    let (host, n) = futures_block_on(zip!(value(vec![1u8, 2]), value(3u8)).into_future())?;
    assert_eq!((host, n), (vec![1, 2], 3));
    Ok(())
}

/// A copy to the host at the end of an awaited chain does not block the first poll: on a GPU
/// the poll returns while the launches before the copy still run, and the elements come once
/// the copy has ended; a future dropped while its copy runs waits for it, and the stream goes
/// on. (On the emulator the work is done at the first poll.)
#[test]
fn a_copy_to_the_host_at_the_end_does_not_block_the_first_poll() -> Result<(), Error> {
    let gpu = on_gpu()?;
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let n = len(gpu);
    let rounds = if gpu { 30 } else { 3 };
    let mut r = rng("a_copy_to_the_host_at_the_end_does_not_block_the_first_poll");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    // Compile the kernel first, so that the first poll below only submits work.
    let _ = chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, 1).sync_on(&stream)?;
    let want = chain_reference(&hx, rounds);
    let read = |x: Tensor<f32>| -> Result<_, Error> {
        Ok(chain(x, poisoned(n, &stream)?, rounds).then(|(result, _spare)| result.to_host_vec()))
    };

    let mut future = DeviceFuture::on(read(x.dup().sync_on(&stream)?)?, (*stream).clone());
    let (_, waker) = counting();
    let got = match poll_once(&mut future, &waker) {
        Poll::Ready(result) => {
            assert!(
                !gpu,
                "on a GPU the first poll returned the elements: it waited for {rounds} launches \
                 over {n} elements and the copy"
            );
            result?
        }
        Poll::Pending => futures_block_on(future)?,
    };
    assert_same("the awaited copy", &got, &want);

    // Dropped while the launches and the copy run: it waits for the copy; the stream is fine.
    let mut dropped = DeviceFuture::on(read(x.dup().sync_on(&stream)?)?, (*stream).clone());
    let polled = poll_once(&mut dropped, &waker);
    if gpu {
        assert!(polled.is_pending(), "the work was done at the first poll");
    }
    drop(dropped);
    let again = DeviceFuture::on(read(x)?, (*stream).clone());
    assert_same(
        "a copy after a dropped one",
        &futures_block_on(again)?,
        &want,
    );
    Ok(())
}

/// A copy to the device through page-locked memory returns before it has run: queued behind
/// 30 launches on a GPU, `from_host_pending` gives its buffer while the copy has not ended;
/// the buffer still holds the data the stream saw. And an awaited chain with a copy to the
/// device in the middle (`then`, `map`) and one to the host at the end gives the same elements
/// as plain Rust, on every backend.
#[test]
fn copies_to_the_device_under_await_return_before_they_run() -> Result<(), Error> {
    let gpu = on_gpu()?;
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let n = len(gpu);
    let rounds = if gpu { 30 } else { 3 };
    let mut r = rng("copies_to_the_device_under_await_return_before_they_run");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let hy: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    let _ = chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, 1).sync_on(&stream)?;

    // Queued behind the launches, the copy has not run when `from_host_pending` returns.
    let ctx = ExecutionContext::new((*stream).clone());
    // SAFETY: the chain's tensors are read on the host only through later operations on
    // the stream.
    let (busy, _spare) =
        unsafe { chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, rounds).execute(&ctx) }?;
    let (buffer, copying) = cuprum::DeviceBuffer::from_host_pending(&stream, &hy)?;
    if gpu {
        assert!(
            !copying.is_complete(),
            "the copy to the device had ended when it returned: it waited for {rounds} launches"
        );
    }
    assert_same("the pending copy", &buffer.to_host_vec(&stream)?, &hy);
    copying.wait()?;
    assert_same(
        "the launches before it",
        &busy.to_host_vec().sync_on(&stream)?,
        &chain_reference(&hx, rounds),
    );

    // x * 2 ... (the chain), then + y copied in the middle, then read back.
    let hy2 = hy.clone();
    let op = chain(x, poisoned(n, &stream)?, rounds)
        .then(move |(result, _spare)| api::from_host(&hy2, &[n]).map(move |y| (result, y)))
        .then(move |(result, y)| {
            kernels::add(api::full(f32::NAN, &[n]).partition([128]), result, y)
                .first()
                .unpartition()
                .to_host_vec()
        });
    let got = futures_block_on(DeviceFuture::on(op, (*stream).clone()))?;
    let want: Vec<f32> = chain_reference(&hx, rounds)
        .iter()
        .zip(&hy)
        .map(|(a, b)| a + b)
        .collect();
    assert_same("the awaited chain", &got, &want);
    Ok(())
}

/// `zip!` of copies to the host, beside a launch whose output borrows a tensor of the caller
/// (a partition of `&mut out`), and a copy to the host with `map` after it: the first poll
/// returns while the launches before the copies still run (on a GPU), and the future gives
/// every element of each part once they have ended; the borrowed tensor then holds the
/// launch's result.
#[test]
fn zipped_and_mapped_copies_to_the_host_do_not_block_the_first_poll() -> Result<(), Error> {
    let gpu = on_gpu()?;
    let device = Device::new(0)?;
    let stream = device.new_stream()?;
    let n = len(gpu);
    let rounds = if gpu { 30 } else { 3 };
    let mut r = rng("zipped_and_mapped_copies_to_the_host_do_not_block_the_first_poll");
    let hx: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let hy: Vec<f32> = random(&mut r, n, -100.0, 100.0);
    let x = api::from_host(&hx, &[n]).sync_on(&stream)?;
    let y = api::from_host(&hy, &[n]).sync_on(&stream)?;
    let _ = chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, 1).sync_on(&stream)?;
    let mut out = poisoned(n, &stream)?;

    let op = zip!(
        chain(x.dup().sync_on(&stream)?, poisoned(n, &stream)?, rounds)
            .then(|(result, _spare)| result.to_host_vec()),
        kernels::scale((&mut out).partition([128]), &y, -2.0),
        y.dup().then(|y| y.to_host_vec()).map(|v: Vec<f32>| {
            let sum: f64 = v.iter().map(|&e| f64::from(e)).sum();
            (v, sum)
        }),
    );
    let (chained, launched, (copied, sum)) = {
        let mut future = DeviceFuture::on(op, (*stream).clone());
        let (_, waker) = counting();
        match poll_once(&mut future, &waker) {
            Poll::Ready(result) => {
                assert!(
                    !gpu,
                    "on a GPU the first poll returned: it waited for {rounds} launches over \
                     {n} elements and the copies"
                );
                result?
            }
            Poll::Pending => futures_block_on(future)?,
        }
    };
    assert_same(
        "the zipped chain's copy",
        &chained,
        &chain_reference(&hx, rounds),
    );
    assert_same("the zipped mapped copy", &copied, &hy);
    let want_sum: f64 = hy.iter().map(|&e| f64::from(e)).sum();
    assert_eq!(sum.to_bits(), want_sum.to_bits(), "the mapped copy's sum");
    drop(launched);
    let want: Vec<f32> = hy.iter().map(|&v| v * -2.0).collect();
    assert_same(
        "the borrowed output",
        &out.to_host_vec().sync_on(&stream)?,
        &want,
    );
    Ok(())
}
