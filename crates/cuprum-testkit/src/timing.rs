//! The medians of the timing examples: event-timed runs of a launch ([`median_ms`]), and the
//! median of any measured values ([`median`]).
//!
//! This crate knows no stream type; an example implements [`EventClock`] for its stream
//! (cuprum's `Stream`, whose events are CUDA events on a GPU and host instants on the
//! emulator), so that what is measured stays the GPU time between two events.

use std::cmp::Ordering;
use std::time::Duration;

/// A stream whose work can be timed with events: what [`median_ms`] needs of one.
pub trait EventClock {
    /// A recorded point of the stream.
    type Event;
    /// What a stream operation fails with.
    type Error;
    /// Waits until all work submitted to the stream has finished.
    fn synchronize(&self) -> Result<(), Self::Error>;
    /// Records an event at the current end of the stream.
    fn record(&self) -> Result<Self::Event, Self::Error>;
    /// Waits until the work before `event` has finished.
    fn wait(&self, event: &Self::Event) -> Result<(), Self::Error>;
    /// Milliseconds from `start` to `end`.
    fn elapsed_ms(&self, start: &Self::Event, end: &Self::Event) -> Result<f32, Self::Error>;
}

/// How [`median_ms`] times a launch.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Untimed runs first (then the stream is synchronized).
    pub warmup: usize,
    /// Timed runs, each between two events; the median is reported.
    pub reps: usize,
    /// Whether each timed run is waited for before the next is submitted (`true`), or all are
    /// queued and waited for at the end (`false`, so the host's work for the next run overlaps
    /// the GPU's for this one).
    pub wait_each: bool,
}

impl Timing {
    /// `warmup` untimed runs, then `reps` timed ones, each waited for.
    pub fn new(warmup: usize, reps: usize) -> Self {
        Self {
            warmup,
            reps,
            wait_each: true,
        }
    }

    /// The same runs, queued without waiting between them.
    pub fn queued(self) -> Self {
        Self {
            wait_each: false,
            ..self
        }
    }
}

/// The median, in milliseconds, of `timing.reps` runs of `run` each timed between two events
/// on `clock`, after `timing.warmup` untimed runs. What a run returns is dropped after the
/// event that ends it is recorded (so a buffer it made is freed in stream order, after the
/// event). Panics when `timing.reps` is zero.
pub fn median_ms<C: EventClock, T>(
    clock: &C,
    timing: Timing,
    mut run: impl FnMut() -> Result<T, C::Error>,
) -> Result<f64, C::Error> {
    for _ in 0..timing.warmup {
        drop(run()?);
    }
    clock.synchronize()?;
    let mut times = Vec::with_capacity(timing.reps);
    let mut marks = Vec::new();
    for _ in 0..timing.reps {
        let start = clock.record()?;
        let out = run()?;
        let end = clock.record()?;
        drop(out);
        if timing.wait_each {
            clock.wait(&end)?;
            times.push(clock.elapsed_ms(&start, &end)?);
        } else {
            marks.push((start, end));
        }
    }
    if !timing.wait_each {
        clock.synchronize()?;
        for (start, end) in &marks {
            times.push(clock.elapsed_ms(start, end)?);
        }
    }
    match median(times) {
        Some(ms) => Ok(f64::from(ms)),
        None => panic!("median_ms: no timed runs (reps = 0)"),
    }
}

/// A measured value that sorts totally (floats by `total_cmp`, NaNs last).
pub trait Measure: Copy {
    /// The total order [`median`] sorts by.
    fn total(&self, other: &Self) -> Ordering;
}

impl Measure for f32 {
    fn total(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl Measure for f64 {
    fn total(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl Measure for Duration {
    fn total(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

/// The median of `values`: the middle one after sorting, the upper middle one of an even
/// count; `None` when there are none.
pub fn median<T: Measure>(mut values: Vec<T>) -> Option<T> {
    values.sort_by(T::total);
    values.get(values.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// A clock whose events are numbers; each run advances time by its index.
    #[derive(Default)]
    struct Fake {
        now: Cell<f32>,
        log: RefCell<Vec<&'static str>>,
    }

    impl EventClock for Fake {
        type Event = f32;
        type Error = ();
        fn synchronize(&self) -> Result<(), ()> {
            self.log.borrow_mut().push("sync");
            Ok(())
        }
        fn record(&self) -> Result<f32, ()> {
            self.log.borrow_mut().push("record");
            Ok(self.now.get())
        }
        fn wait(&self, _: &f32) -> Result<(), ()> {
            self.log.borrow_mut().push("wait");
            Ok(())
        }
        fn elapsed_ms(&self, start: &f32, end: &f32) -> Result<f32, ()> {
            Ok(end - start)
        }
    }

    #[test]
    fn the_median_of_the_timed_runs() {
        for timing in [Timing::new(2, 5), Timing::new(2, 5).queued()] {
            let clock = Fake::default();
            let mut k = 0.0;
            let ms = median_ms(&clock, timing, || {
                k += 1.0;
                // Runs 3..=7 are timed and take 9, 1, 5, 3, 7 ms.
                let took = [0.0, 0.0, 9.0, 1.0, 5.0, 3.0, 7.0][k as usize - 1];
                clock.now.set(clock.now.get() + took);
                clock.log.borrow_mut().push("run");
                Ok(())
            });
            assert_eq!(ms, Ok(5.0));
            let log = clock.log.borrow();
            assert_eq!(&log[..3], ["run", "run", "sync"]);
            let waits = log.iter().filter(|&&l| l == "wait").count();
            assert_eq!(waits, if timing.wait_each { 5 } else { 0 });
            assert_eq!(
                log.last(),
                Some(if timing.wait_each { &"wait" } else { &"sync" })
            );
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0f64, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0f32, 1.0, 3.0, 2.0]), Some(3.0));
        assert_eq!(median(Vec::<Duration>::new()), None);
        assert_eq!(median(vec![f64::NAN, 1.0, 2.0]), Some(2.0));
    }
}
