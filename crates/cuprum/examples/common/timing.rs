//! Event timing for the benchmark examples: cuprum's [`Stream`] as the clock of
//! `cuprum_testkit::timing`, whose one loop every example times its launches with (CUDA
//! events on a GPU; host instants on the emulator).

#![allow(dead_code)]

use cuprum::{Event, Result, Stream};
use cuprum_testkit::timing::{self, EventClock, Timing};

/// A stream timed by the events recorded on it.
pub struct Events<'a>(pub &'a Stream);

impl EventClock for Events<'_> {
    type Event = Event;
    type Error = cuprum::Error;
    fn synchronize(&self) -> Result<()> {
        self.0.synchronize()
    }
    fn record(&self) -> Result<Event> {
        self.0.record_event()
    }
    fn wait(&self, event: &Event) -> Result<()> {
        event.synchronize()
    }
    fn elapsed_ms(&self, start: &Event, end: &Event) -> Result<f32> {
        start.elapsed_ms(end)
    }
}

/// The median of `reps` event-timed runs of `launch`, after `warmup` untimed ones, in ms;
/// each run is waited for before the next one is launched.
pub fn median_ms(
    stream: &Stream,
    warmup: usize,
    reps: usize,
    launch: impl FnMut() -> Result<()>,
) -> Result<f64> {
    timing::median_ms(&Events(stream), Timing::new(warmup, reps), launch)
}

/// The median of `reps` event-timed runs of `launch`, after `warmup` untimed ones, in ms;
/// all runs are queued and waited for at the end, so the host's work for one run overlaps the
/// GPU's for the one before (as the PyTorch and Triton peers are timed: the figure is the
/// GPU's time per run, not the host's launch latency from an idle GPU).
pub fn median_ms_queued(
    stream: &Stream,
    warmup: usize,
    reps: usize,
    launch: impl FnMut() -> Result<()>,
) -> Result<f64> {
    timing::median_ms(&Events(stream), Timing::new(warmup, reps).queued(), launch)
}
