//! Learning that a stream's work has completed without blocking a thread on it: a
//! [`Completion`] is a point at the end of a stream ([`Stream::completion`]) that can be
//! polled as a future, whose waker is woken when the device has finished the work before it.
//!
//! This module exists so that `.await` on device work (the tile track's `DeviceFuture`) can
//! return `Pending` and let its executor thread run other tasks while the GPU works.
//!
//! # Mechanism
//!
//! A completion on CUDA is an order mark (an event without timing, from the device's pool)
//! recorded at the end of the stream. One background thread per process, the *waiter*
//! (named `cuprum-completion`, started on first use), keeps the list of unfinished
//! completions and asks the driver about each with `cuEventQuery`, which does not wait. When
//! one has completed it stores the outcome and wakes the waker its last poll left; when one
//! failed (a kernel before it faulted), the outcome is the fault, as an [`Error`] that names
//! the kernel last launched on the stream. While completions are pending the waiter sleeps
//! between rounds, first yielding, then for 16 µs doubling to [`MAX_SLEEP`]; a new completion
//! wakes it at once. So a completion is seen at most about a quarter of a millisecond late,
//! and a long kernel costs the host a few thousand cheap queries a second.
//!
//! Why not `cuLaunchHostFunc` (a host function the stream calls when it reaches it)? A host
//! function is a node of the stream: work submitted after it waits until the host thread has
//! run it, so every awaited operation would put a host round trip between kernels; after a
//! fault the driver may never call it, so a future would hang instead of failing; and it must
//! not call CUDA, so it could not even drop the tensors it kept. Querying events leaves the
//! stream untouched and reports faults.
//!
//! On the emulator, work completes when it is submitted, so a completion is complete when it
//! is made and needs no thread.
//!
//! The waiter wakes wakers outside its locks, and nothing in it blocks on a stream, so a
//! waker may do anything (including dropping buffers, which calls the driver).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::backend::MarkHandle;
use crate::context::Stream;
use crate::error::{Error, Result};

/// The longest the waiter sleeps between two rounds of queries while work is pending.
pub const MAX_SLEEP: Duration = Duration::from_micros(256);

/// The first sleep after the yielding rounds; doubled each round up to [`MAX_SLEEP`].
const FIRST_SLEEP: Duration = Duration::from_micros(16);

/// Rounds in which the waiter only yields its time slice before it starts sleeping.
const YIELD_ROUNDS: u32 = 8;

/// A point at the end of a stream, complete when the device has finished the work submitted
/// to the stream before it (see the module docs). Poll it as a future (its output is the
/// work's outcome), ask [`is_complete`](Self::is_complete), or [`wait`](Self::wait) for it.
///
/// Dropping a pending completion is fine: the work goes on, and the waiter forgets it when
/// it ends.
///
/// ```
/// use cuprum_runtime::{CudaContext, DeviceBuffer};
///
/// # fn main() -> cuprum_runtime::Result<()> {
/// let ctx = CudaContext::new(0)?;
/// let stream = ctx.new_stream()?;
/// let a = DeviceBuffer::from_host(&stream, &[1u32, 2, 3])?;
/// let mut b = DeviceBuffer::<u32>::zeroed(&stream, 3)?;
/// b.copy_from_device(&stream, &a)?;
/// let done = stream.completion()?;
/// // In async code: `done.await?`; here, a blocking wait.
/// done.wait()?;
/// assert!(done.is_complete());
/// assert_eq!(b.to_host_vec(&stream)?, [1, 2, 3]);
/// # Ok(())
/// # }
/// ```
pub struct Completion {
    shared: Arc<Shared>,
}

impl fmt::Debug for Completion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl Stream {
    /// A [`Completion`] of the work submitted to this stream so far. On the emulator it is
    /// already complete; on CUDA the first one starts the process's waiter thread, which can
    /// fail ([`Error::HostThread`]).
    pub fn completion(&self) -> Result<Completion> {
        let ctx = self.context();
        let mark = ctx
            .inner
            .backend
            .order_mark(self.handle())
            .map_err(|f| ctx.fail(f, Some(self)))?;
        match mark {
            None => Ok(Completion::finished(Ok(()))),
            Some(mark) => {
                let completion = Completion::pending();
                waiter()?.watch(Watch {
                    probe: Box::new(MarkProbe {
                        stream: self.clone(),
                        mark,
                    }),
                    shared: completion.shared.clone(),
                });
                Ok(completion)
            }
        }
    }
}

impl Completion {
    fn pending() -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    outcome: Outcome::Pending,
                    waker: None,
                }),
                finished: Condvar::new(),
            }),
        }
    }

    fn finished(result: Result<()>) -> Self {
        let completion = Self::pending();
        completion.shared.finish(result);
        completion
    }

    /// A completion that the host completes by hand, through the [`CompletionSignal`]: for
    /// tests of code above the runtime that must see a pending completion on every backend.
    #[doc(hidden)]
    pub fn manual() -> (Completion, CompletionSignal) {
        let completion = Self::pending();
        let signal = CompletionSignal {
            shared: Some(completion.shared.clone()),
        };
        (completion, signal)
    }

    /// The work's outcome when it has completed (the first time: a failure is returned once,
    /// later calls get [`Error::AlreadyReported`]); otherwise `Pending`, and `cx`'s waker
    /// (replacing the one an earlier poll left) is woken when it completes.
    pub fn poll_complete(&self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let mut state = self.shared.lock();
        if let Outcome::Pending = state.outcome {
            match &mut state.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        Poll::Ready(state.outcome.take())
    }

    /// Whether the work has completed (successfully or not).
    pub fn is_complete(&self) -> bool {
        !matches!(self.shared.lock().outcome, Outcome::Pending)
    }

    /// Blocks the calling thread until the work has completed, and returns its outcome (as
    /// [`poll_complete`](Self::poll_complete) would).
    pub fn wait(&self) -> Result<()> {
        let mut state = self.shared.lock();
        while let Outcome::Pending = state.outcome {
            state = self
                .shared
                .finished
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        state.outcome.take()
    }
}

impl Future for Completion {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.poll_complete(cx)
    }
}

/// Completes a [`Completion::manual`] completion: with [`complete`](Self::complete), or with
/// an error when dropped without it.
#[doc(hidden)]
pub struct CompletionSignal {
    shared: Option<Arc<Shared>>,
}

impl CompletionSignal {
    /// Completes the completion with `result`, waking its waker.
    pub fn complete(mut self, result: Result<()>) {
        if let Some(shared) = self.shared.take() {
            shared.finish(result);
        }
    }
}

impl Drop for CompletionSignal {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.finish(Err(Error::Unsupported {
                what: "a manual completion whose signal was dropped without completing it".into(),
            }));
        }
    }
}

/// What a completion and the waiter share.
struct Shared {
    state: Mutex<State>,
    /// Notified when the outcome is set, for [`Completion::wait`].
    finished: Condvar,
}

struct State {
    outcome: Outcome,
    /// The waker of the last poll that found the work pending.
    waker: Option<Waker>,
}

enum Outcome {
    Pending,
    Succeeded,
    Failed(Error),
    /// Failed, and the error was returned; later asks get its message.
    Reported(String),
}

impl Outcome {
    /// The result of a completed outcome (callers check that it is not `Pending`), leaving a
    /// failure as reported.
    fn take(&mut self) -> Result<()> {
        match std::mem::replace(self, Outcome::Succeeded) {
            Outcome::Pending => {
                *self = Outcome::Pending;
                Ok(())
            }
            Outcome::Succeeded => Ok(()),
            Outcome::Failed(error) => {
                *self = Outcome::Reported(error.to_string());
                Err(error)
            }
            Outcome::Reported(message) => {
                *self = Outcome::Reported(message.clone());
                Err(Error::AlreadyReported { message })
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the outcome (once) and wakes whoever waits, outside the lock.
    fn finish(&self, result: Result<()>) {
        let waker = {
            let mut state = self.lock();
            if !matches!(state.outcome, Outcome::Pending) {
                return;
            }
            state.outcome = match result {
                Ok(()) => Outcome::Succeeded,
                Err(e) => Outcome::Failed(e),
            };
            state.waker.take()
        };
        self.finished.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// How the waiter learns that one completion's work has ended.
trait Probe: Send {
    /// `Ready` with the outcome when the work has ended; never waits.
    fn query(&self) -> Poll<Result<()>>;
}

/// A CUDA order mark at the end of a stream.
struct MarkProbe {
    /// The stream, whose last kernel a fault names (and which it keeps alive).
    stream: Stream,
    mark: MarkHandle,
}

impl Probe for MarkProbe {
    fn query(&self) -> Poll<Result<()>> {
        let ctx = self.stream.context();
        match ctx.inner.backend.mark_complete(&self.mark) {
            Ok(true) => Poll::Ready(Ok(())),
            Ok(false) => Poll::Pending,
            Err(f) => Poll::Ready(Err(ctx.fail(f, Some(&self.stream)))),
        }
    }
}

/// One completion the waiter watches.
struct Watch {
    probe: Box<dyn Probe>,
    shared: Arc<Shared>,
}

/// The process's waiter: the completions it watches, and how new ones wake it.
struct Waiter {
    queue: Mutex<Vec<Watch>>,
    arrived: Condvar,
}

/// The waiter, started on first use.
fn waiter() -> Result<&'static Waiter> {
    static WAITER: OnceLock<std::result::Result<&'static Waiter, String>> = OnceLock::new();
    WAITER
        .get_or_init(|| {
            let waiter: &'static Waiter = Box::leak(Box::new(Waiter {
                queue: Mutex::new(Vec::new()),
                arrived: Condvar::new(),
            }));
            std::thread::Builder::new()
                .name("cuprum-completion".into())
                .spawn(move || waiter.run())
                .map(|_| waiter)
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map(|w| *w)
        .map_err(|detail| Error::HostThread {
            purpose: "completion",
            detail: detail.clone(),
        })
}

impl Waiter {
    fn lock(&self) -> MutexGuard<'_, Vec<Watch>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn watch(&self, watch: Watch) {
        self.lock().push(watch);
        self.arrived.notify_one();
    }

    /// The waiter thread's loop (see the module docs); never returns.
    fn run(&self) {
        let mut idle_rounds = 0u32;
        loop {
            let batch = {
                let mut queue = self.lock();
                while queue.is_empty() {
                    idle_rounds = 0;
                    queue = self.arrived.wait(queue).unwrap_or_else(|e| e.into_inner());
                }
                std::mem::take(&mut *queue)
            };
            let (still, progressed) = poll_all(batch);
            let mut queue = self.lock();
            let arrivals = queue.len();
            // Keep the older completions first, so that they are asked first next round.
            let newer = std::mem::replace(&mut *queue, still);
            queue.extend(newer);
            if progressed || arrivals > 0 {
                idle_rounds = 0;
                continue;
            }
            if queue.is_empty() {
                continue;
            }
            idle_rounds = idle_rounds.saturating_add(1);
            match sleep_after(idle_rounds) {
                None => {
                    drop(queue);
                    std::thread::yield_now();
                }
                Some(pause) => {
                    // A new completion ends the sleep early.
                    let _ = self.arrived.wait_timeout(queue, pause);
                }
            }
        }
    }
}

/// Asks each of `batch` once; finishes the completed ones (waking their wakers) and returns
/// the others, and whether any completed.
fn poll_all(batch: Vec<Watch>) -> (Vec<Watch>, bool) {
    let mut still = Vec::with_capacity(batch.len());
    let mut progressed = false;
    for watch in batch {
        match watch.probe.query() {
            Poll::Pending => still.push(watch),
            Poll::Ready(result) => {
                progressed = true;
                // The probe (its event back to the pool, its stream) goes before the wake.
                let Watch { probe, shared } = watch;
                drop(probe);
                shared.finish(result);
            }
        }
    }
    (still, progressed)
}

/// How long the waiter sleeps after `idle_rounds` rounds in a row found nothing completed:
/// `None` to only yield.
fn sleep_after(idle_rounds: u32) -> Option<Duration> {
    if idle_rounds <= YIELD_ROUNDS {
        return None;
    }
    let doublings = (idle_rounds - YIELD_ROUNDS - 1).min(16);
    Some((FIRST_SLEEP * (1u32 << doublings)).min(MAX_SLEEP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::task::Wake;
    use std::time::Instant;

    /// A probe that completes when the test says.
    struct Flag {
        done: Arc<AtomicBool>,
        fail: bool,
    }

    impl Probe for Flag {
        fn query(&self) -> Poll<Result<()>> {
            if !self.done.load(Ordering::Acquire) {
                Poll::Pending
            } else if self.fail {
                Poll::Ready(Err(Error::Unsupported {
                    what: "the test's failing work".into(),
                }))
            } else {
                Poll::Ready(Ok(()))
            }
        }
    }

    /// A completion the waiter watches through a [`Flag`], and the flag.
    fn watched(fail: bool) -> (Completion, Arc<AtomicBool>) {
        let done = Arc::new(AtomicBool::new(false));
        let completion = Completion::pending();
        waiter().unwrap_or_else(|e| panic!("{e}")).watch(Watch {
            probe: Box::new(Flag {
                done: done.clone(),
                fail,
            }),
            shared: completion.shared.clone(),
        });
        (completion, done)
    }

    #[derive(Default)]
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn count(c: &Arc<Counter>) -> usize {
        c.0.load(Ordering::SeqCst)
    }

    /// Waits (up to 10 s) until `f` holds.
    fn eventually(what: &str, f: impl Fn() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_waiter_wakes_the_last_waker_when_the_work_ends() {
        let (completion, done) = watched(false);
        let (first, second) = (Arc::new(Counter::default()), Arc::new(Counter::default()));
        let first_waker = Waker::from(first.clone());
        let second_waker = Waker::from(second.clone());
        assert!(
            completion
                .poll_complete(&mut Context::from_waker(&first_waker))
                .is_pending()
        );
        // A later poll replaces the waker: only the newest is woken.
        assert!(
            completion
                .poll_complete(&mut Context::from_waker(&second_waker))
                .is_pending()
        );
        std::thread::sleep(Duration::from_millis(5));
        assert!(!completion.is_complete(), "completed before the work ended");
        assert_eq!((count(&first), count(&second)), (0, 0), "woken too early");
        done.store(true, Ordering::Release);
        eventually("the second waker is woken", || count(&second) == 1);
        assert_eq!(count(&first), 0, "the replaced waker was woken");
        assert!(completion.is_complete());
        let ready = completion.poll_complete(&mut Context::from_waker(&second_waker));
        assert!(matches!(ready, Poll::Ready(Ok(()))), "{ready:?}");
    }

    #[test]
    fn many_completions_end_in_any_order() {
        let watched: Vec<_> = (0..20).map(|_| watched(false)).collect();
        let counters: Vec<_> = watched
            .iter()
            .map(|(c, _)| {
                let counter = Arc::new(Counter::default());
                let waker = Waker::from(counter.clone());
                assert!(
                    c.poll_complete(&mut Context::from_waker(&waker))
                        .is_pending()
                );
                counter
            })
            .collect();
        // Complete the odd ones, newest first: the even ones must stay pending.
        for (_, done) in watched.iter().skip(1).step_by(2).rev() {
            done.store(true, Ordering::Release);
        }
        for (i, counter) in counters.iter().enumerate().skip(1).step_by(2) {
            eventually(&format!("completion {i} is woken"), || count(counter) == 1);
        }
        std::thread::sleep(Duration::from_millis(5));
        for (i, (c, _)) in watched.iter().enumerate().step_by(2) {
            assert!(!c.is_complete(), "completion {i} ended with the others");
        }
        for (_, done) in &watched {
            done.store(true, Ordering::Release);
        }
        for (c, _) in &watched {
            assert!(c.wait().is_ok());
        }
    }

    #[test]
    fn a_failure_is_the_outcome_once_and_then_named() {
        let (completion, done) = watched(true);
        done.store(true, Ordering::Release);
        let first = completion.wait();
        assert!(
            matches!(&first, Err(Error::Unsupported { what }) if what.contains("failing work")),
            "{first:?}"
        );
        let again = completion.wait();
        assert!(
            matches!(&again, Err(Error::AlreadyReported { message }) if message.contains("failing work")),
            "{again:?}"
        );
    }

    #[test]
    fn a_dropped_pending_completion_is_forgotten_when_its_work_ends() {
        let (completion, done) = watched(false);
        let shared = Arc::downgrade(&completion.shared);
        drop(completion);
        assert!(shared.upgrade().is_some(), "the waiter still watches it");
        done.store(true, Ordering::Release);
        eventually("the waiter lets it go", || shared.upgrade().is_none());
    }

    #[test]
    fn manual_completions_wake_and_fail_when_their_signal_is_dropped() {
        let (completion, signal) = Completion::manual();
        let counter = Arc::new(Counter::default());
        let waker = Waker::from(counter.clone());
        assert!(
            completion
                .poll_complete(&mut Context::from_waker(&waker))
                .is_pending()
        );
        signal.complete(Ok(()));
        assert_eq!(count(&counter), 1);
        assert!(completion.wait().is_ok());
        let (completion, signal) = Completion::manual();
        drop(signal);
        assert!(completion.wait().is_err());
    }

    #[test]
    fn the_waiter_backs_off_to_its_longest_sleep() {
        let sleeps: Vec<_> = (1..=YIELD_ROUNDS + 8).map(sleep_after).collect();
        assert!(sleeps[..YIELD_ROUNDS as usize].iter().all(Option::is_none));
        assert_eq!(sleeps[YIELD_ROUNDS as usize], Some(FIRST_SLEEP));
        assert_eq!(sleeps.last(), Some(&Some(MAX_SLEEP)));
        assert_eq!(sleep_after(u32::MAX), Some(MAX_SLEEP));
    }

    #[test]
    fn emulator_completions_are_complete_when_made() {
        let ctx = crate::CudaContext::emulator();
        let completion = ctx
            .new_stream()
            .and_then(|s| s.completion())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(completion.is_complete());
        assert!(
            completion
                .poll_complete(&mut Context::from_waker(Waker::noop()))
                .is_ready()
        );
    }
}
