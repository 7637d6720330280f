//! Lazy device operations ([`DeviceOp`]) and the combinators that compose them, under
//! cuTile Rust's names (`cuda_async::device_operation`).
//!
//! A device operation describes work (allocate and fill a tensor, launch a kernel, copy to
//! the host) without doing it: nothing runs until [`DeviceOp::sync_on`] (or
//! [`DeviceOp::sync`], or `.await`) executes the whole composed operation on one stream, in
//! the order the composition gives, and then waits for the stream. Work on one stream runs in submission
//! order, and the runtime orders work of different streams where it shares a buffer, so a
//! composed operation never reads a tensor before the work that writes it.
//!
//! Composition: [`then`](DeviceOp::then) (the next operation, made from this one's output),
//! [`map`](DeviceOp::map) (a plain function of the output), [`zip!`](crate::tile::cuda_async::device_operation::zip)
//! (several operations, one tuple), `unzip` / `first` / `last` on tuple outputs
//! ([`Unzippable2`] and its siblings), [`shared`](DeviceOp::shared) (clonable, runs once,
//! output in an `Arc`), [`arc`](DeviceOp::arc), [`boxed`](DeviceOp::boxed), [`value`] (an
//! output already there). [`IntoDeviceOp`] lets launchers take both operations and plain
//! values.
//!
//! # `.await`
//!
//! Every operation is a future too ([`DeviceFuture`]), and awaiting one does not block the
//! executor's thread while the device works. The first poll executes the operation on its
//! stream, which submits its work and returns at once (as [`DeviceOp::execute`] does), then
//! records a `cuprum::Completion` at the end of the stream and returns `Pending`. The
//! runtime's one waiter thread per process asks the driver (`cuEventQuery`, which does not
//! wait) whether the work before each recorded completion has finished, and wakes the waker
//! that the future's last poll left; the next poll gives the output. Later polls before then
//! submit nothing again and only replace the waker. A kernel that faults on the GPU is the
//! future's `Err` (a `KernelFault` naming the kernel), as is a launch refused before
//! anything ran. Why a waiter thread and not a host function on the stream
//! (`cuLaunchHostFunc`): the runtime's `completion` module says.
//!
//! Copies between the host and the device do not block the first poll either (through
//! [`then`](DeviceOp::then), [`and_then_with_context`](DeviceOp::and_then_with_context),
//! [`map`](DeviceOp::map), `with_context` and `boxed`): they go through page-locked host
//! memory that the future owns (`cuprum_runtime::staged`). A copy to the device
//! (`from_host`, `copy_host_vec_to_device`) gives its tensor at once, for the next steps on
//! the stream, and the future keeps the copy's host memory until its completion; a copy to the
//! host at the end (`kernel(..).first().unpartition().to_host_vec().await`) gives its elements
//! when the completion says the copy has ended, and so do copies at the ends of the parts of
//! a [`zip!`] and a copy followed by [`map`](DeviceOp::map) (the function is applied once the
//! elements are there). What each operation leaves to finish is a [`Pending`] of its own
//! type, a tuple of its parts' for `zip!`, not a boxed closure, so a part whose output borrows
//! from the caller (a partition of a `&mut Tensor`) can wait beside a copy. What the first
//! poll still waits for: a copy to the host in the middle of a chain (the next step needs its
//! elements), and copies inside `shared`, which runs as [`execute`](DeviceOp::execute) does
//! (each copy finished before the call returns, so that host memory never outlives it). Kernel launches,
//! device-side copies and allocations do not wait. On the emulator every operation runs to completion when it is
//! submitted, so the first poll is ready.
//!
//! A future dropped while its work is running keeps its output (the tensors the work writes)
//! and waits for the work to end before dropping it, blocking the dropping thread: the output
//! may borrow from the caller, so it cannot be handed to another thread, and the device must
//! never use memory that has been given back. (Memory a dropped tensor frees is also ordered
//! after all earlier work by the runtime; the wait keeps that true of everything the output
//! owns.)

use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use cuprum_runtime::Completion;

use crate::tile::cuda_core::{Device, Stream};
use crate::tile::error::{Error, LaunchProblem};

/// Where an operation runs: the stream its work is submitted to.
#[derive(Clone)]
pub struct ExecutionContext {
    stream: Stream,
}

impl fmt::Debug for ExecutionContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutionContext")
            .field("stream", &self.stream)
            .finish()
    }
}

impl ExecutionContext {
    /// A context that submits to `stream`.
    pub fn new(stream: Stream) -> Self {
        Self { stream }
    }

    /// The stream work is submitted to.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The stream work is submitted to (cuTile Rust's name).
    pub fn get_cuda_stream(&self) -> &Stream {
        &self.stream
    }

    /// The context (device) of the stream.
    pub fn context(&self) -> &crate::CudaContext {
        self.stream.context()
    }

    /// The device's ordinal.
    pub fn get_device_id(&self) -> usize {
        self.stream.context().ordinal()
    }
}

/// An operation's output, or what gives it once the stream's work up to the operation has
/// completed: a copy to the host that the device may still be making
/// ([`DeviceOp::execute_deferred`]). `'s` is what the parts may borrow: an output that
/// borrows from the caller (a partition of a `&mut Tensor`) waits beside a copy without
/// being made `'static`.
#[doc(hidden)]
pub enum Deferred<'s, O> {
    /// The output.
    Ready(O),
    /// The output, usable on the stream now, and what must live until the stream's work has
    /// completed (the host memory a copy to the device reads; dropping it waits for the copy).
    Kept(O, Box<dyn Send>),
    /// Gives the output; to be called once the work has completed (it waits otherwise). The
    /// list is what must live until then too.
    After(
        Box<dyn FnOnce() -> Result<O, Error> + Send + 's>,
        Vec<Box<dyn Send>>,
    ),
}

impl<'s, O: Send + 's> Deferred<'s, O> {
    /// The output (waiting for a copy that has not ended).
    pub fn finish(self) -> Result<O, Error> {
        match self {
            Deferred::Ready(out) => Ok(out),
            Deferred::Kept(out, keep) => {
                drop(keep);
                Ok(out)
            }
            Deferred::After(finish, keep) => {
                let out = finish();
                drop(keep);
                out
            }
        }
    }

    /// The output now, with what must live until the work has completed (`None`: nothing);
    /// an output still on its way is finished first (it waits).
    fn now(self) -> Result<(O, KeepAlive), Error> {
        match self {
            Deferred::Ready(out) => Ok((out, None)),
            Deferred::Kept(out, keep) => Ok((out, Some(keep))),
            after @ Deferred::After(..) => Ok((after.finish()?, None)),
        }
    }

    /// Whether the output is still on its way.
    fn is_after(&self) -> bool {
        matches!(self, Deferred::After(..))
    }

    /// The output with `keep` also kept until the work has completed (`then`: the first
    /// step's kept memory beside the second step's output).
    fn keeping(self, keep: KeepAlive) -> Self {
        let Some(keep) = keep else {
            return self;
        };
        match self {
            Deferred::Ready(out) => Deferred::Kept(out, keep),
            Deferred::Kept(out, kept) => Deferred::Kept(out, Box::new((kept, keep))),
            Deferred::After(finish, mut kept) => {
                kept.push(keep);
                Deferred::After(finish, kept)
            }
        }
    }

    /// `f` applied to the output when it is there: at once, or once a copy has ended.
    fn map<P: Send + 's>(self, f: impl FnOnce(O) -> P + Send + 's) -> Deferred<'s, P> {
        match self {
            Deferred::Ready(out) => Deferred::Ready(f(out)),
            Deferred::Kept(out, keep) => Deferred::Kept(f(out), keep),
            Deferred::After(finish, keep) => {
                Deferred::After(Box::new(move || finish().map(f)), keep)
            }
        }
    }

    /// An output already there, kept with `keep` (`None`: nothing to keep).
    fn with_kept(out: O, keep: KeepAlive) -> Self {
        match keep {
            None => Deferred::Ready(out),
            Some(keep) => Deferred::Kept(out, keep),
        }
    }
}

/// What must live until the stream's work has completed (`None`: nothing).
#[doc(hidden)]
pub type KeepAlive = Option<Box<dyn Send>>;

/// Both of what must live until the work has completed.
fn join_kept(a: KeepAlive, b: KeepAlive) -> KeepAlive {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => Some(Box::new((a, b))),
    }
}

/// A lazy description of device work with an output. See the module docs.
///
/// Every operation can also be awaited (`op.await`, through [`DeviceFuture`]): the first
/// poll submits it to the default stream of device 0 (or the stream it was
/// [scheduled](Self::schedule) on) and the future is ready when the device has finished it,
/// without blocking the polling thread meanwhile (see the module docs).
pub trait DeviceOp:
    Send + Sized + IntoFuture<Output = Result<<Self as DeviceOp>::Output, Error>>
{
    /// What the operation gives when it has run.
    type Output: Send;

    /// Submits the operation's work to `ctx`'s stream and returns its output. The work may
    /// still be running on the device when this returns. Programs call
    /// [`sync_on`](Self::sync_on) or `.await` instead; an operation a program writes itself
    /// implements this (cuTile Rust's signature).
    ///
    /// # Safety
    /// The output may be memory the device is still writing: the caller does not read it on
    /// the host, or hand it to code that does, before the stream's work up to here has
    /// completed. (cuprum's runtime orders every later use of its buffers on the device after
    /// this work, and its own operations finish their copies to the host before returning;
    /// `unsafe` is cuTile Rust's contract, which operations written for it rely on.)
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<<Self as DeviceOp>::Output, Error>;

    /// As [`execute`](Self::execute), except that an output a copy to the host is still
    /// filling may come back as [`Deferred::After`], to be finished once the stream's work up
    /// to here has completed: what an awaited operation's first poll calls, so that it does
    /// not block (see the module docs). Operations without such a copy keep this default.
    ///
    /// # Safety
    /// As [`execute`](Self::execute).
    #[doc(hidden)]
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, <Self as DeviceOp>::Output>, Error>
    where
        Self: 's,
        <Self as DeviceOp>::Output: 's,
    {
        // SAFETY: the caller's contract.
        unsafe { self.execute(ctx) }.map(Deferred::Ready)
    }

    /// Runs on `stream` and waits until the stream's work has finished.
    fn sync_on(self, stream: &Stream) -> Result<<Self as DeviceOp>::Output, Error> {
        let ctx = ExecutionContext::new(stream.clone());
        // SAFETY: nothing sees the output before the stream's work has completed.
        let out = unsafe { self.execute(&ctx) }?;
        stream.synchronize()?;
        Ok(out)
    }

    /// Runs on the default stream of device 0 ([`Device::new`]`(0)`) and waits for it.
    fn sync(self) -> Result<<Self as DeviceOp>::Output, Error> {
        let stream = Device::new(0)?.default_stream();
        self.sync_on(&stream)
    }

    /// The operation `f` makes of this one's output, run after it on the same stream.
    fn then<B, F>(self, f: F) -> AndThen<Self, F, B>
    where
        B: DeviceOp,
        F: FnOnce(<Self as DeviceOp>::Output) -> B + Send,
    {
        AndThen {
            op: self,
            f,
            next: PhantomData,
        }
    }

    /// As [`then`](Self::then), `f` also given the execution context (the stream both run
    /// on).
    fn and_then_with_context<B, F>(self, f: F) -> AndThenWithContext<Self, F, B>
    where
        B: DeviceOp,
        F: FnOnce(&ExecutionContext, <Self as DeviceOp>::Output) -> B + Send,
    {
        AndThenWithContext {
            op: self,
            f,
            next: PhantomData,
        }
    }

    /// The operation as a future that runs it on a stream `policy` gives when first polled
    /// (see [`DeviceFuture`]).
    fn schedule(
        self,
        policy: &Arc<dyn SchedulingPolicy>,
    ) -> Result<DeviceFuture<<Self as DeviceOp>::Output, Self>, Error> {
        let stream = policy.next_stream()?;
        Ok(DeviceFuture::on(self, stream))
    }

    /// `f` applied to the output (no device work of its own).
    fn map<O, F>(self, f: F) -> Map<Self, F>
    where
        O: Send,
        F: FnOnce(<Self as DeviceOp>::Output) -> O + Send,
    {
        Map { op: self, f }
    }

    /// Calls `f` on the output (for debugging) and passes it on unchanged.
    fn inspect<F>(self, f: F) -> Inspect<Self, F>
    where
        F: FnOnce(&<Self as DeviceOp>::Output) + Send,
    {
        Inspect { op: self, f }
    }

    /// The output in an `Arc`.
    fn arc(self) -> ArcOp<Self> {
        ArcOp { op: self }
    }

    /// The operation behind a box, so that operations of different types with one output
    /// type fit in one collection.
    fn boxed(self) -> BoxedDeviceOp<<Self as DeviceOp>::Output>
    where
        Self: 'static,
        <Self as DeviceOp>::Output: 'static,
    {
        BoxedDeviceOp { op: Box::new(self) }
    }

    /// A clonable operation that runs this one at most once: the first clone executed runs
    /// it, and every clone gives the same output, in an `Arc`.
    fn shared(self) -> SharedDeviceOp<<Self as DeviceOp>::Output>
    where
        Self: 'static,
        <Self as DeviceOp>::Output: Sync,
    {
        SharedDeviceOp {
            // SAFETY (of the call): `SharedDeviceOp::execute`'s caller's contract, which
            // covers this work and its output.
            state: Arc::new(Mutex::new(SharedState::Pending(Box::new(
                move |ctx| unsafe { self.execute(ctx) },
            )))),
        }
    }
}

/// The future of an awaited operation (see [`DeviceOp`] and the module docs on `.await`).
///
/// Its first poll submits the operation to its stream (the default stream of device 0,
/// unless it was [scheduled](DeviceOp::schedule)), as [`execute`](DeviceOp::execute) does, and
/// records a [`Completion`] at the end of the stream; it returns the output when the device has
/// finished, and `Pending` until then, leaving the waker the runtime's waiter thread wakes.
/// Later polls submit nothing again. A failure (a refused launch, a kernel that faulted) is
/// the future's `Err`.
///
/// Kernels, device-side work and copies between the host and the device do not block the
/// first poll, except a copy to the host whose elements a later step needs (see the module
/// docs).
/// On the emulator, work is done when submitted, so the first poll is ready. Dropping the
/// future while its work runs blocks until the work has ended, so that nothing the work uses
/// is dropped before it.
///
/// The output type comes first, as in cuTile Rust (`DeviceFuture<Output, Op>`), so that an
/// operation a program writes can name its future in its own `IntoFuture` impl.
pub struct DeviceFuture<T: Send, D: DeviceOp<Output = T>> {
    state: FutureState<T, D>,
}

enum FutureState<T: Send, D> {
    /// Not polled yet: nothing has run.
    Unstarted { op: D, stream: Option<Stream> },
    /// Submitted; `output` is given out (finished) when `completion` is. Its lifetime is
    /// erased (see [`DeviceFuture::poll`]): it borrows at most what `D` does.
    Running {
        completion: Completion,
        output: Deferred<'static, T>,
    },
    /// Could not start: the error, for the first poll.
    Failed(Error),
    /// Its result was given out.
    Finished,
}

impl<T: Send, D: DeviceOp<Output = T>> DeviceFuture<T, D> {
    /// The future of `op`, run on the default stream of device 0.
    pub fn new(op: D) -> Self {
        Self {
            state: FutureState::Unstarted { op, stream: None },
        }
    }

    /// The future of `op`, run on `stream`.
    pub fn on(op: D, stream: Stream) -> Self {
        Self {
            state: FutureState::Unstarted {
                op,
                stream: Some(stream),
            },
        }
    }

    /// The future of `op`, run on the stream of `ctx` (cuTile Rust's name).
    pub fn scheduled(op: D, ctx: ExecutionContext) -> Self {
        Self::on(op, ctx.stream)
    }

    /// A future whose first poll gives `error` (an operation that could not be scheduled,
    /// cuTile Rust's name).
    pub fn failed(error: Error) -> Self {
        Self {
            state: FutureState::Failed(error),
        }
    }

    /// The future of work already submitted, whose output is `output` once `completion` is
    /// complete (for tests of the future's states on every backend).
    #[cfg(test)]
    fn running(completion: Completion, output: T) -> Self
    where
        T: 'static,
    {
        Self {
            state: FutureState::Running {
                completion,
                output: Deferred::Ready(output),
            },
        }
    }

    /// Gives `output` out, finished, once `completion` is complete; keeps both until then.
    fn poll_running(
        &mut self,
        completion: Completion,
        output: Deferred<'static, T>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, Error>> {
        match completion.poll_complete(cx) {
            // The work before `completion` has ended, so finishing does not wait.
            Poll::Ready(Ok(())) => Poll::Ready(output.finish()),
            // The work has ended (it failed): its buffers may go.
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
            Poll::Pending => {
                self.state = FutureState::Running { completion, output };
                Poll::Pending
            }
        }
    }
}

/// `deferred` with the lifetime of what it borrows erased, to be kept in a
/// [`DeviceFuture<T, D>`] until given out.
///
/// # Safety
/// `deferred` borrows only what an operation of type `D` borrows (its `execute_deferred`
/// made it, taking the operation by value, so it can hold nothing of a shorter life), and
/// the result is kept only inside a `DeviceFuture<T, D>`: that future's type names `D`, so
/// it cannot outlive anything `D` borrows (its `Drop` impl makes the borrow checker require
/// that those borrows outlive it), and it never gives the `'static` value out, only the
/// output `T`, whose type says what it borrows.
unsafe fn erase_lifetime<T: Send>(deferred: Deferred<'_, T>) -> Deferred<'static, T> {
    // SAFETY: the types differ only in a lifetime (same layout); see the function's contract.
    unsafe { std::mem::transmute::<Deferred<'_, T>, Deferred<'static, T>>(deferred) }
}

// The operation and its output are moved, never pinned, so the future may move.
impl<T: Send, D: DeviceOp<Output = T>> Unpin for DeviceFuture<T, D> {}

impl<T: Send, D: DeviceOp<Output = T>> Future for DeviceFuture<T, D> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match std::mem::replace(&mut this.state, FutureState::Finished) {
            FutureState::Unstarted { op, stream } => {
                let stream = match stream {
                    Some(stream) => stream,
                    None => match Device::new(0) {
                        Ok(device) => device.default_stream(),
                        Err(e) => return Poll::Ready(Err(e)),
                    },
                };
                let ctx = ExecutionContext::new(stream.clone());
                // SAFETY: the output is given out only once the stream's work up to here
                // has completed (below, or in a later poll).
                let output = match unsafe { op.execute_deferred(&ctx) } {
                    // SAFETY: made by `D`'s `execute_deferred` and kept in this future.
                    Ok(output) => unsafe { erase_lifetime(output) },
                    Err(e) => return Poll::Ready(Err(e)),
                };
                match stream.completion() {
                    Ok(completion) => this.poll_running(completion, output, cx),
                    // The work cannot be watched (no waiter thread, no event): wait for it
                    // here, so that its output is never given out or dropped early.
                    Err(_) => Poll::Ready(match stream.synchronize() {
                        Ok(()) => output.finish(),
                        Err(e) => Err(e.into()),
                    }),
                }
            }
            FutureState::Running { completion, output } => {
                this.poll_running(completion, output, cx)
            }
            FutureState::Failed(e) => Poll::Ready(Err(e)),
            FutureState::Finished => Poll::Ready(Err(Error::SharedOpFailed {
                message: "a device operation's future was polled after it completed".into(),
            })),
        }
    }
}

/// A future dropped while its work runs waits, blocking, for the work to end before its
/// output (the tensors the work writes, which may borrow from the caller) is dropped: the
/// device never uses memory that has been given back.
impl<T: Send, D: DeviceOp<Output = T>> Drop for DeviceFuture<T, D> {
    fn drop(&mut self) {
        if let FutureState::Running { completion, .. } = &self.state {
            // The outcome has nowhere to go; a fault is sticky and the next use reports it.
            let _ = completion.wait();
        }
    }
}

/// Implements `IntoFuture` (as [`DeviceFuture`]) for an operation type whose `DeviceOp`
/// impl has the generics and bounds given: `awaitable!([T: Send] Value<T> => T);`.
macro_rules! awaitable {
    ([$($gen:tt)*] $ty:ty => $out:ty $(, where $($bound:tt)+)?) => {
        impl<$($gen)*> ::std::future::IntoFuture for $ty $(where $($bound)+)? {
            type Output = Result<$out, $crate::tile::error::Error>;
            type IntoFuture = $crate::tile::op::DeviceFuture<$out, Self>;
            fn into_future(self) -> Self::IntoFuture {
                $crate::tile::op::DeviceFuture::new(self)
            }
        }
    };
}
pub(crate) use awaitable;

/// Values that launchers and combinators accept in place of an operation: every
/// [`DeviceOp`], and plain values (tensors, partitions, `Arc`s, scalars) as a [`Value`].
pub trait IntoDeviceOp<T: Send> {
    /// The operation.
    type Op: DeviceOp<Output = T>;
    /// Makes the operation.
    fn into_op(self) -> Self::Op;
}

impl<D: DeviceOp> IntoDeviceOp<<D as DeviceOp>::Output> for D {
    type Op = D;
    fn into_op(self) -> D {
        self
    }
}

impl<T: Send + Sync> IntoDeviceOp<Arc<T>> for Arc<T> {
    type Op = Value<Arc<T>>;
    fn into_op(self) -> Value<Arc<T>> {
        value(self)
    }
}

impl<T: Send + Sync> IntoDeviceOp<Arc<T>> for &Arc<T> {
    type Op = Value<Arc<T>>;
    fn into_op(self) -> Value<Arc<T>> {
        value(self.clone())
    }
}

macro_rules! scalar_values {
    ($($t:ty),*) => { $(
        impl IntoDeviceOp<$t> for $t {
            type Op = Value<$t>;
            fn into_op(self) -> Value<$t> {
                value(self)
            }
        }
    )* };
}

scalar_values!(
    bool,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    half::f16,
    half::bf16,
    cuprum_runtime::tf32
);

/// A host size (`usize`: tensor shapes, counts) given where a kernel takes an `i32` or `i64`
/// scalar, as cuTile Rust's programs pass sizes (its shapes are `i32`): converted when the
/// launch runs, a size the type cannot hold failing it with [`LaunchProblem::SizeRange`]
/// before anything runs.
#[derive(Clone, Debug)]
pub struct SizeArg<T> {
    size: usize,
    ty: std::marker::PhantomData<T>,
}

macro_rules! size_args {
    ($($t:ty => $s:ident),*) => { $(
        impl IntoDeviceOp<$t> for usize {
            type Op = SizeArg<$t>;
            fn into_op(self) -> SizeArg<$t> {
                SizeArg { size: self, ty: std::marker::PhantomData }
            }
        }

        impl DeviceOp for SizeArg<$t> {
            type Output = $t;
            unsafe fn execute(self, _ctx: &ExecutionContext) -> Result<$t, Error> {
                <$t>::try_from(self.size).map_err(|_| Error::InvalidLaunch {
                    kernel: "(a size argument)".into(),
                    problem: LaunchProblem::SizeRange {
                        value: self.size,
                        ty: cuprum_ir::ScalarType::$s,
                    },
                })
            }
        }
        awaitable!([] SizeArg<$t> => $t);
    )* };
}

size_args!(i32 => I32, i64 => I64);

/// An output that is already there: executing it does nothing.
#[derive(Clone, Debug)]
pub struct Value<T>(T);

impl<T> Value<T> {
    /// The operation whose output is `value`.
    pub fn new(value: T) -> Self {
        Self(value)
    }
}

/// The operation whose output is `x` (no device work).
pub fn value<T: Send>(x: T) -> Value<T> {
    Value(x)
}

impl<T: Send> DeviceOp for Value<T> {
    type Output = T;
    unsafe fn execute(self, _ctx: &ExecutionContext) -> Result<T, Error> {
        Ok(self.0)
    }
}
awaitable!([T: Send] Value<T> => T);

/// An operation made by a function of the execution context: what the constructors of
/// `api` and the combinators below are built from.
pub struct FromFn<F>(F);

/// The operation that runs `f` on the execution context when it is executed, its output
/// what `f` returns (cuprum's own building block; [`with_context`] is cuTile Rust's).
pub(crate) fn from_context<O, F>(f: F) -> FromFn<F>
where
    O: Send,
    F: FnOnce(&ExecutionContext) -> Result<O, Error> + Send,
{
    FromFn(f)
}

/// See [`with_context`].
///
/// `D`, the operation `F` makes, is part of the type (as a function's result, which asks
/// nothing of it) so that what the operation borrows is known to outlive it.
pub struct WithContext<F, D>(F, PhantomData<fn() -> D>);

/// The operation that, when executed, makes an operation with `f` from the execution
/// context (its stream, its device) and runs it there: cuTile Rust's `with_context`.
pub fn with_context<D, F>(f: F) -> WithContext<F, D>
where
    D: DeviceOp,
    F: FnOnce(&ExecutionContext) -> D + Send,
{
    WithContext(f, PhantomData)
}

impl<D, F> DeviceOp for WithContext<F, D>
where
    D: DeviceOp,
    F: FnOnce(&ExecutionContext) -> D + Send,
{
    type Output = <D as DeviceOp>::Output;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<<D as DeviceOp>::Output, Error> {
        // SAFETY: the caller's contract.
        unsafe { (self.0)(ctx).execute(ctx) }
    }
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, <D as DeviceOp>::Output>, Error>
    where
        Self: 's,
        <D as DeviceOp>::Output: 's,
    {
        // SAFETY: the caller's contract.
        unsafe { (self.0)(ctx).execute_deferred(ctx) }
    }
}
awaitable!([D, F] WithContext<F, D> => <D as DeviceOp>::Output, where D: DeviceOp, F: FnOnce(&ExecutionContext) -> D + Send);

impl<O, F> DeviceOp for FromFn<F>
where
    O: Send,
    F: FnOnce(&ExecutionContext) -> Result<O, Error> + Send,
{
    type Output = O;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<O, Error> {
        (self.0)(ctx)
    }
}
awaitable!([O, F] FromFn<F> => O, where O: Send, F: FnOnce(&ExecutionContext) -> Result<O, Error> + Send);

/// See [`DeviceOp::then`].
///
/// `B`, the operation `F` makes, is part of the type (see [`WithContext`]).
pub struct AndThen<A, F, B> {
    op: A,
    f: F,
    next: PhantomData<fn() -> B>,
}

impl<A, B, F> DeviceOp for AndThen<A, F, B>
where
    A: DeviceOp,
    B: DeviceOp,
    F: FnOnce(<A as DeviceOp>::Output) -> B + Send,
{
    type Output = <B as DeviceOp>::Output;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<<B as DeviceOp>::Output, Error> {
        // SAFETY: the caller's contract; the second step runs after the first on the stream.
        unsafe {
            let out = self.op.execute(ctx)?;
            (self.f)(out).execute(ctx)
        }
    }
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, <B as DeviceOp>::Output>, Error>
    where
        Self: 's,
        <B as DeviceOp>::Output: 's,
    {
        // SAFETY: the caller's contract; the first step's output is finished (`now`) before
        // the second step is made from it.
        unsafe {
            let (out, keep) = self.op.execute_deferred(ctx)?.now()?;
            Ok((self.f)(out).execute_deferred(ctx)?.keeping(keep))
        }
    }
}
awaitable!([A, B, F] AndThen<A, F, B> => <B as DeviceOp>::Output, where A: DeviceOp, B: DeviceOp, F: FnOnce(<A as DeviceOp>::Output) -> B + Send);

/// See [`DeviceOp::and_then_with_context`].
///
/// `B`, the operation `F` makes, is part of the type (see [`WithContext`]).
pub struct AndThenWithContext<A, F, B> {
    op: A,
    f: F,
    next: PhantomData<fn() -> B>,
}

impl<A, B, F> DeviceOp for AndThenWithContext<A, F, B>
where
    A: DeviceOp,
    B: DeviceOp,
    F: FnOnce(&ExecutionContext, <A as DeviceOp>::Output) -> B + Send,
{
    type Output = <B as DeviceOp>::Output;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<<B as DeviceOp>::Output, Error> {
        // SAFETY: as `AndThen`'s.
        unsafe {
            let out = self.op.execute(ctx)?;
            (self.f)(ctx, out).execute(ctx)
        }
    }
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, <B as DeviceOp>::Output>, Error>
    where
        Self: 's,
        <B as DeviceOp>::Output: 's,
    {
        // SAFETY: as `AndThen`'s.
        unsafe {
            let (out, keep) = self.op.execute_deferred(ctx)?.now()?;
            Ok((self.f)(ctx, out).execute_deferred(ctx)?.keeping(keep))
        }
    }
}
awaitable!([A, B, F] AndThenWithContext<A, F, B> => <B as DeviceOp>::Output, where A: DeviceOp, B: DeviceOp, F: FnOnce(&ExecutionContext, <A as DeviceOp>::Output) -> B + Send);

/// See [`DeviceOp::map`].
pub struct Map<A, F> {
    op: A,
    f: F,
}

impl<A, O, F> DeviceOp for Map<A, F>
where
    A: DeviceOp,
    O: Send,
    F: FnOnce(<A as DeviceOp>::Output) -> O + Send,
{
    type Output = O;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<O, Error> {
        // SAFETY: the caller's contract.
        Ok((self.f)(unsafe { self.op.execute(ctx) }?))
    }
    /// The function is applied when the output is there: at once, or, after a copy to the
    /// host, once the copy has ended (so that an awaited `to_host_vec().map(..)` does not
    /// block its first poll).
    unsafe fn execute_deferred<'s>(self, ctx: &ExecutionContext) -> Result<Deferred<'s, O>, Error>
    where
        Self: 's,
        O: 's,
    {
        // SAFETY: the caller's contract.
        Ok(unsafe { self.op.execute_deferred(ctx) }?.map(self.f))
    }
}
awaitable!([A, O, F] Map<A, F> => O, where A: DeviceOp, O: Send, F: FnOnce(<A as DeviceOp>::Output) -> O + Send);

/// See [`DeviceOp::inspect`].
pub struct Inspect<A, F> {
    op: A,
    f: F,
}

impl<A, F> DeviceOp for Inspect<A, F>
where
    A: DeviceOp,
    F: FnOnce(&<A as DeviceOp>::Output) + Send,
{
    type Output = <A as DeviceOp>::Output;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<<A as DeviceOp>::Output, Error> {
        // SAFETY: the caller's contract.
        let out = unsafe { self.op.execute(ctx) }?;
        (self.f)(&out);
        Ok(out)
    }
}
awaitable!([A, F] Inspect<A, F> => <A as DeviceOp>::Output, where A: DeviceOp, F: FnOnce(&<A as DeviceOp>::Output) + Send);

/// See [`DeviceOp::arc`].
pub struct ArcOp<A> {
    op: A,
}

impl<A: DeviceOp<Output: Sync>> DeviceOp for ArcOp<A> {
    type Output = Arc<<A as DeviceOp>::Output>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Arc<<A as DeviceOp>::Output>, Error> {
        // SAFETY: the caller's contract.
        Ok(Arc::new(unsafe { self.op.execute(ctx) }?))
    }
}
awaitable!([A: DeviceOp<Output: Sync>] ArcOp<A> => Arc<<A as DeviceOp>::Output>);

/// A type-erased operation (see [`DeviceOp::boxed`]).
pub struct BoxedDeviceOp<T: Send> {
    op: Box<dyn ErasedOp<T>>,
}

/// An operation behind a box, run either way ([`DeviceOp::execute`] or
/// [`DeviceOp::execute_deferred`]), so that boxing changes neither.
trait ErasedOp<T>: Send {
    /// # Safety
    /// As [`DeviceOp::execute`].
    unsafe fn run(self: Box<Self>, ctx: &ExecutionContext) -> Result<T, Error>;
    /// # Safety
    /// As [`DeviceOp::execute`].
    unsafe fn run_deferred(
        self: Box<Self>,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'static, T>, Error>;
}

impl<D> ErasedOp<<D as DeviceOp>::Output> for D
where
    D: DeviceOp + 'static,
    <D as DeviceOp>::Output: 'static,
{
    unsafe fn run(
        self: Box<Self>,
        ctx: &ExecutionContext,
    ) -> Result<<D as DeviceOp>::Output, Error> {
        // SAFETY: the caller's contract.
        unsafe { (*self).execute(ctx) }
    }
    unsafe fn run_deferred(
        self: Box<Self>,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'static, <D as DeviceOp>::Output>, Error> {
        // SAFETY: the caller's contract.
        unsafe { (*self).execute_deferred(ctx) }
    }
}

impl<T: Send> DeviceOp for BoxedDeviceOp<T> {
    type Output = T;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<T, Error> {
        // SAFETY: the caller's contract.
        unsafe { self.op.run(ctx) }
    }
    unsafe fn execute_deferred<'s>(self, ctx: &ExecutionContext) -> Result<Deferred<'s, T>, Error>
    where
        Self: 's,
        T: 's,
    {
        // SAFETY: the caller's contract.
        unsafe { self.op.run_deferred(ctx) }
    }
}
awaitable!([T: Send] BoxedDeviceOp<T> => T);

/// A list of boxed operations run in order on one stream; its output is theirs, in order
/// (cuTile Rust's `DeviceOpVec`).
pub struct DeviceOpVec<T: Send> {
    ops: Vec<BoxedDeviceOp<T>>,
}

impl<T: Send + 'static> DeviceOpVec<T> {
    /// No operations.
    pub fn empty() -> Self {
        Self { ops: Vec::new() }
    }

    /// No operations, with room for `capacity`.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            ops: Vec::with_capacity(capacity),
        }
    }

    /// These operations.
    pub fn new(ops: Vec<BoxedDeviceOp<T>>) -> Self {
        Self { ops }
    }

    /// Appends `op`.
    pub fn push<D: DeviceOp<Output = T> + 'static>(&mut self, op: D) {
        self.ops.push(op.boxed());
    }

    /// Removes and returns the operation at `index` (panics past the end, as `Vec::remove`).
    pub fn remove(&mut self, index: usize) -> BoxedDeviceOp<T> {
        self.ops.remove(index)
    }

    /// The last operation.
    pub fn last(&self) -> Option<&BoxedDeviceOp<T>> {
        self.ops.last()
    }

    /// How many operations there are.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

impl<T: Send + 'static> From<Vec<BoxedDeviceOp<T>>> for DeviceOpVec<T> {
    fn from(ops: Vec<BoxedDeviceOp<T>>) -> Self {
        Self::new(ops)
    }
}

impl<T: Send> DeviceOp for DeviceOpVec<T> {
    type Output = Vec<T>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Vec<T>, Error> {
        self.ops
            .into_iter()
            // SAFETY: the caller's contract; the operations run in order on the stream.
            .map(|op| unsafe { op.execute(ctx) })
            .collect()
    }
}
awaitable!([T: Send] DeviceOpVec<T> => Vec<T>);

/// An operation's work, type-erased.
type Run<T> = Box<dyn FnOnce(&ExecutionContext) -> Result<T, Error> + Send>;

enum SharedState<T> {
    /// Not run yet.
    Pending(Run<T>),
    /// Ran; every clone gets this.
    Done(Arc<T>),
    /// Ran and failed; the first caller got the error, later ones get its message.
    Failed(String),
}

/// A clonable operation that runs once (see [`DeviceOp::shared`]).
pub struct SharedDeviceOp<T> {
    state: Arc<Mutex<SharedState<T>>>,
}

impl<T> Clone for SharedDeviceOp<T> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

/// A shared operation whose output is `value` already (nothing runs).
pub fn shared<T: Send + Sync>(value: Arc<T>) -> SharedDeviceOp<T> {
    SharedDeviceOp {
        state: Arc::new(Mutex::new(SharedState::Done(value))),
    }
}

impl<T: Send + Sync> DeviceOp for SharedDeviceOp<T> {
    type Output = Arc<T>;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<Arc<T>, Error> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let run = match std::mem::replace(&mut *state, SharedState::Failed(String::new())) {
            SharedState::Done(v) => {
                *state = SharedState::Done(v.clone());
                return Ok(v);
            }
            SharedState::Failed(message) => {
                *state = SharedState::Failed(message.clone());
                return Err(Error::SharedOpFailed { message });
            }
            SharedState::Pending(run) => run,
        };
        match run(ctx) {
            Ok(v) => {
                let v = Arc::new(v);
                *state = SharedState::Done(v.clone());
                Ok(v)
            }
            Err(e) => {
                *state = SharedState::Failed(e.to_string());
                Err(e)
            }
        }
    }
}
awaitable!([T: Send + Sync] SharedDeviceOp<T> => Arc<T>);

/// `.unwrap_arc()` on operations whose output is an `Arc`: the value itself, when the `Arc`
/// has no other owner ([`Error::ArcShared`] otherwise).
pub trait DeviceOpUnwrapArc<T: Send + Sync>: DeviceOp<Output = Arc<T>> {
    /// See the trait docs.
    fn unwrap_arc(self) -> impl DeviceOp<Output = T> {
        self.then(|arc| {
            from_context(move |_| {
                let owners = Arc::strong_count(&arc);
                Arc::try_unwrap(arc).map_err(|_| Error::ArcShared {
                    what: "unwrap_arc",
                    owners,
                })
            })
        })
    }
}

impl<T: Send + Sync, D: DeviceOp<Output = Arc<T>>> DeviceOpUnwrapArc<T> for D {}

/// The operations several `unzip` branches share: the first branch executed runs the
/// operation, and each branch takes its own element of the output.
struct Gate<D, S> {
    state: Mutex<GateState<D, S>>,
}

enum GateState<D, S> {
    Pending(D),
    Ready(S),
    Failed(String),
}

impl<D: DeviceOp, S> Gate<D, S> {
    fn new(op: D) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(GateState::Pending(op)),
        })
    }

    /// Runs the operation if no branch has, splits its output into `S` with `split`, and
    /// takes this branch's element with `pick`.
    fn take<R>(
        &self,
        ctx: &ExecutionContext,
        split: fn(<D as DeviceOp>::Output) -> S,
        pick: fn(&mut S) -> Option<R>,
    ) -> Result<R, Error> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*state, GateState::Pending(_))
            && let GateState::Pending(op) =
                std::mem::replace(&mut *state, GateState::Failed(String::new()))
        {
            // SAFETY: `take`'s caller's contract (each branch's `execute`'s).
            match unsafe { op.execute(ctx) } {
                Ok(out) => *state = GateState::Ready(split(out)),
                Err(e) => {
                    *state = GateState::Failed(e.to_string());
                    return Err(e);
                }
            }
        }
        match &mut *state {
            GateState::Ready(slots) => pick(slots).ok_or_else(|| Error::SharedOpFailed {
                message: "an unzip branch was executed twice".into(),
            }),
            GateState::Failed(message) => Err(Error::SharedOpFailed {
                message: message.clone(),
            }),
            GateState::Pending(_) => Err(Error::SharedOpFailed {
                message: "an unzip gate lost its operation".into(),
            }),
        }
    }
}

/// Several operations as one whose output is the tuple of theirs, run in order
/// (see [`Zippable`] and `zip!`).
pub struct Zip<T>(T);

/// Tuples of operations that [`zip`](Zippable::zip) into one operation.
pub trait Zippable {
    /// The tuple of the outputs.
    type Output: Send;
    /// One operation running every element, first to last, giving the tuple of outputs.
    fn zip(self) -> Zip<Self>
    where
        Self: Sized,
    {
        Zip(self)
    }
    /// Runs every element in order.
    ///
    /// # Safety
    /// As [`DeviceOp::execute`].
    #[doc(hidden)]
    unsafe fn execute_all(self, ctx: &ExecutionContext) -> Result<Self::Output, Error>;
    /// Runs every element in order as an awaited operation's first poll does: each
    /// element's copy to the host may still be on its way.
    ///
    /// # Safety
    /// As [`DeviceOp::execute`].
    #[doc(hidden)]
    unsafe fn execute_all_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, Self::Output>, Error>
    where
        Self: 's,
        Self::Output: 's;
}

impl<T: Zippable + Send> DeviceOp for Zip<T> {
    type Output = T::Output;
    unsafe fn execute(self, ctx: &ExecutionContext) -> Result<T::Output, Error> {
        // SAFETY: the caller's contract.
        unsafe { self.0.execute_all(ctx) }
    }
    unsafe fn execute_deferred<'s>(
        self,
        ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, T::Output>, Error>
    where
        Self: 's,
        T::Output: 's,
    {
        // SAFETY: the caller's contract.
        unsafe { self.0.execute_all_deferred(ctx) }
    }
}
awaitable!([T: Zippable + Send] Zip<T> => T::Output);

impl Zippable for () {
    type Output = ();
    unsafe fn execute_all(self, _ctx: &ExecutionContext) -> Result<(), Error> {
        Ok(())
    }
    unsafe fn execute_all_deferred<'s>(
        self,
        _ctx: &ExecutionContext,
    ) -> Result<Deferred<'s, ()>, Error> {
        Ok(Deferred::Ready(()))
    }
}

/// Combines operations into one whose output is the tuple of theirs (run in order);
/// `zip!(a)` is `a` itself.
#[doc(hidden)]
#[macro_export]
macro_rules! __tile_zip {
    ($a:expr $(,)?) => {
        $a
    };
    ($($a:expr),+ $(,)?) => {
        $crate::tile::cuda_async::device_operation::Zippable::zip(($($a,)+))
    };
}

/// Splits a tuple-output operation into one operation per element (`unzip!(op)` is
/// `op.unzip()`).
#[doc(hidden)]
#[macro_export]
macro_rules! __tile_unzip {
    ($a:expr) => {
        $a.unzip()
    };
}

macro_rules! tuples {
    ($( $Unzip:ident: ($($T:ident $D:ident $i:tt),+) first $F:ident, last $L:ident $l:tt; )*) => { $(
        impl<$($D: DeviceOp),+> Zippable for ($($D,)+) {
            type Output = ($(<$D as DeviceOp>::Output,)+);
            unsafe fn execute_all(self, ctx: &ExecutionContext) -> Result<Self::Output, Error> {
                // SAFETY: the caller's contract; the elements run in order on the stream.
                unsafe { Ok(($(self.$i.execute(ctx)?,)+)) }
            }
            /// The elements' outputs: kept together while none is on its way, else
            /// finished in order once the work has completed.
            unsafe fn execute_all_deferred<'s>(
                self,
                ctx: &ExecutionContext,
            ) -> Result<Deferred<'s, Self::Output>, Error>
            where
                Self: 's,
                Self::Output: 's,
            {
                // SAFETY: the caller's contract; the elements run in order on the stream.
                let parts = unsafe { ($(self.$i.execute_deferred(ctx)?,)+) };
                if $(parts.$i.is_after())||+ {
                    return Ok(Deferred::After(
                        Box::new(move || Ok(($(parts.$i.finish()?,)+))),
                        Vec::new(),
                    ));
                }
                let mut kept = None;
                let out = ($({
                    let (out, keep) = parts.$i.now()?;
                    kept = join_kept(kept, keep);
                    out
                },)+);
                Ok(Deferred::with_kept(out, kept))
            }
        }

        /// `unzip`, `first` and `last` on operations with a tuple output of this size.
        pub trait $Unzip<$($T: Send),+>: DeviceOp<Output = ($($T,)+)> {
            /// One operation per element: the first of them executed runs this operation
            /// (once), and each gives its element.
            #[allow(clippy::type_complexity, non_snake_case)]
            fn unzip(self) -> ($(impl DeviceOp<Output = $T>,)+) {
                let split: fn(($($T,)+)) -> ($(Option<$T>,)+) = |($($T,)+)| ($(Some($T),)+);
                let gate = Gate::new(self);
                ($({
                    let gate = gate.clone();
                    from_context(move |ctx| gate.take(ctx, split, |slots| slots.$i.take()))
                },)+)
            }

            /// The first element of the output.
            fn first(self) -> impl DeviceOp<Output = $F> {
                self.map(|t| t.0)
            }

            /// The last element of the output.
            fn last(self) -> impl DeviceOp<Output = $L> {
                self.map(|t| t.$l)
            }
        }

        impl<$($T: Send,)+ Op: DeviceOp<Output = ($($T,)+)>> $Unzip<$($T),+> for Op {}
    )* };
}

tuples! {
    Unzippable1: (T0 D0 0) first T0, last T0 0;
    Unzippable2: (T0 D0 0, T1 D1 1) first T0, last T1 1;
    Unzippable3: (T0 D0 0, T1 D1 1, T2 D2 2) first T0, last T2 2;
    Unzippable4: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3) first T0, last T3 3;
    Unzippable5: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4) first T0, last T4 4;
    Unzippable6: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5) first T0, last T5 5;
    Unzippable7: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5, T6 D6 6)
        first T0, last T6 6;
    Unzippable8: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5, T6 D6 6, T7 D7 7)
        first T0, last T7 7;
    Unzippable9: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5, T6 D6 6, T7 D7 7,
        T8 D8 8) first T0, last T8 8;
    Unzippable10: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5, T6 D6 6, T7 D7 7,
        T8 D8 8, T9 D9 9) first T0, last T9 9;
    Unzippable11: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5, T6 D6 6, T7 D7 7,
        T8 D8 8, T9 D9 9, T10 D10 10) first T0, last T10 10;
    Unzippable12: (T0 D0 0, T1 D1 1, T2 D2 2, T3 D3 3, T4 D4 4, T5 D5 5, T6 D6 6, T7 D7 7,
        T8 D8 8, T9 D9 9, T10 D10 10, T11 D11 11) first T0, last T11 11;
}

/// Where scheduled operations run (cuTile Rust's `SchedulingPolicy`): each call gives the
/// stream for the next operation.
pub trait SchedulingPolicy: Send + Sync {
    /// The stream the next scheduled operation runs on.
    fn next_stream(&self) -> Result<Stream, Error>;
}

/// Streams of one device taken in turn (cuTile Rust's `StreamPoolRoundRobin`).
pub struct StreamPoolRoundRobin {
    streams: Vec<Stream>,
    next: std::sync::atomic::AtomicUsize,
}

impl StreamPoolRoundRobin {
    /// A pool of `num_streams` new streams of `device` (at least one).
    pub fn new(device: &Arc<Device>, num_streams: usize) -> Result<Self, Error> {
        let streams = (0..num_streams.max(1))
            .map(|_| device.new_stream().map(|s| (*s).clone()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            streams,
            next: std::sync::atomic::AtomicUsize::new(0),
        })
    }
}

impl SchedulingPolicy for StreamPoolRoundRobin {
    fn next_stream(&self) -> Result<Stream, Error> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.streams[i % self.streams.len()].clone())
    }
}

/// Every operation on one stream (cuTile Rust's `SingleStream`).
pub struct SingleStream {
    stream: Stream,
}

impl SingleStream {
    /// A policy with a new stream of `device`.
    pub fn new(device: &Arc<Device>) -> Result<Self, Error> {
        Ok(Self {
            stream: (*device.new_stream()?).clone(),
        })
    }

    /// The stream.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

impl SchedulingPolicy for SingleStream {
    fn next_stream(&self) -> Result<Stream, Error> {
        Ok(self.stream.clone())
    }
}

/// `f` of the default device's scheduling policy (device 0's, [`global_policy`]), as cuTile
/// Rust's `with_default_device_policy`: what an operation a program writes uses to schedule
/// itself in its `IntoFuture` impl.
pub fn with_default_device_policy<F, R>(f: F) -> Result<R, Error>
where
    F: FnOnce(&Arc<dyn SchedulingPolicy>) -> R,
{
    Ok(f(&global_policy(0)?))
}

/// The kernels of PTX text cuprum did not write, loaded on device `device_id` (cuTile Rust's
/// `load_module_from_ptx`; see [`Device::load_module_from_ptx_src`]).
pub fn load_module_from_ptx(
    ptx_src: &str,
    device_id: usize,
) -> Result<Arc<crate::tile::cuda_core::Module>, Error> {
    Device::new(device_id)?.load_module_from_ptx_src(ptx_src)
}

/// The policy of device `device_id` ([`Device::new`]): the device's default stream, on
/// which `.sync()` and `.await` run too, so that scheduled work and awaited work are
/// ordered as written.
pub fn global_policy(device_id: usize) -> Result<Arc<dyn SchedulingPolicy>, Error> {
    let device = Device::new(device_id)?;
    Ok(Arc::new(SingleStream {
        stream: device.default_stream(),
    }))
}

#[cfg(test)]
mod tests {
    //! The future's states on every backend: a manual completion stands for work that is
    //! still running on a device.

    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::task::{Wake, Waker};
    use std::time::{Duration, Instant};

    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter::default());
        (counter.clone(), Waker::from(counter))
    }

    fn count(c: &Counter) -> usize {
        c.0.load(Ordering::SeqCst)
    }

    fn poll<D: DeviceOp>(
        f: &mut DeviceFuture<<D as DeviceOp>::Output, D>,
        w: &Waker,
    ) -> Poll<Result<<D as DeviceOp>::Output, Error>> {
        Pin::new(f).poll(&mut Context::from_waker(w))
    }

    #[test]
    fn a_running_future_is_pending_until_its_work_completes() {
        let (completion, signal) = Completion::manual();
        let mut f = DeviceFuture::<Vec<u32>, Value<Vec<u32>>>::running(completion, vec![4, 5, 6]);
        let ((first, first_waker), (second, second_waker)) = (waker(), waker());
        assert!(poll(&mut f, &first_waker).is_pending());
        assert!(poll(&mut f, &second_waker).is_pending());
        assert_eq!((count(&first), count(&second)), (0, 0));
        signal.complete(Ok(()));
        assert_eq!(
            (count(&first), count(&second)),
            (0, 1),
            "the last poll's waker, and only it, is woken"
        );
        match poll(&mut f, &second_waker) {
            Poll::Ready(Ok(v)) => assert_eq!(v, [4, 5, 6]),
            other => panic!("not ready with the output: {:?}", other.map(|r| r.is_ok())),
        }
        assert!(matches!(
            poll(&mut f, &second_waker),
            Poll::Ready(Err(Error::SharedOpFailed { .. }))
        ));
    }

    #[test]
    fn work_that_fails_after_submission_is_the_futures_error() {
        let (completion, signal) = Completion::manual();
        let mut f = DeviceFuture::<u8, Value<u8>>::running(completion, 1);
        let (_, w) = waker();
        assert!(poll(&mut f, &w).is_pending());
        signal.complete(Err(crate::Error::Unsupported {
            what: "a fault stand-in".into(),
        }));
        match poll(&mut f, &w) {
            Poll::Ready(Err(Error::Runtime(e))) => {
                assert!(e.to_string().contains("a fault stand-in"), "{e}")
            }
            other => panic!("not the work's error: {:?}", other.map(|r| r.is_ok())),
        }
    }

    /// An output that records whether the work had ended when it was dropped.
    struct Witness {
        work_ended: Arc<AtomicBool>,
        dropped_after_work: Arc<AtomicBool>,
    }

    impl Drop for Witness {
        fn drop(&mut self) {
            let ended = self.work_ended.load(Ordering::SeqCst);
            self.dropped_after_work.store(ended, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_future_dropped_while_its_work_runs_keeps_the_output_until_the_work_ends() {
        let (completion, signal) = Completion::manual();
        let work_ended = Arc::new(AtomicBool::new(false));
        let dropped_after_work = Arc::new(AtomicBool::new(false));
        let mut f = DeviceFuture::<Witness, Value<Witness>>::running(
            completion,
            Witness {
                work_ended: work_ended.clone(),
                dropped_after_work: dropped_after_work.clone(),
            },
        );
        let (_, w) = waker();
        assert!(poll(&mut f, &w).is_pending());
        let ender = {
            let work_ended = work_ended.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                work_ended.store(true, Ordering::SeqCst);
                signal.complete(Ok(()));
            })
        };
        let start = Instant::now();
        drop(f);
        assert!(
            dropped_after_work.load(Ordering::SeqCst),
            "the output was dropped while the work ran"
        );
        assert!(start.elapsed() >= Duration::from_millis(40));
        ender
            .join()
            .unwrap_or_else(|_| panic!("the ending thread panicked"));
    }
}
