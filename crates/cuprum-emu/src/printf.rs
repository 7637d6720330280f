//! Device `printf` in the emulator: the sinks the text goes to. The text itself is
//! formatted by [`cuprum_ir::printf::format`], the one formatter of the IR's `printf` subset,
//! which the tile interpreter shares.
//!
//! Each executing lane's text is one unit: by default written to the process's stdout with
//! one lock held for the whole text, so prints of different threads never interleave
//! mid-text; inside [`capture_prints`], appended to the capture instead. GPU printf gives no
//! order between threads; the emulator prints in its execution order (warps of a block in
//! order between barriers, lanes in lane order, blocks in parallel).

use std::cell::RefCell;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

/// Where a launch's prints go.
#[derive(Clone, Debug, Default)]
pub(crate) enum Sink {
    /// The process's stdout, one lock per print.
    #[default]
    Stdout,
    /// A [`capture_prints`] buffer.
    Capture(Arc<Mutex<String>>),
}

impl Sink {
    /// The sink for a launch started on this thread now.
    pub(crate) fn current() -> Sink {
        CAPTURE.with(|c| c.borrow().clone().map_or(Sink::Stdout, Sink::Capture))
    }

    /// Writes one print's text as one unit.
    pub(crate) fn emit(&self, text: &str) {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                // Like the GPU's printf, a print that cannot be written is dropped.
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            Sink::Capture(buf) => buf.lock().unwrap_or_else(|e| e.into_inner()).push_str(text),
        }
    }
}

thread_local! {
    static CAPTURE: RefCell<Option<Arc<Mutex<String>>>> = const { RefCell::new(None) };
}

/// Restores the enclosing capture (or none) when a [`capture_prints`] ends, even by a panic.
struct Restore(Option<Arc<Mutex<String>>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CAPTURE.with(|c| *c.borrow_mut() = previous);
    }
}

/// Runs `f` and returns its result with everything that kernels launched on this thread
/// during `f` printed (device `printf`, `Stmt::Print`), instead of writing it to stdout.
/// Launches from other threads are not captured; captures nest (an inner capture takes its
/// launches' text, the outer one does not see it).
///
/// ```
/// let ((), text) = cuprum_emu::capture_prints(|| {
///     // launch kernels here
/// });
/// assert!(text.is_empty());
/// ```
pub fn capture_prints<R>(f: impl FnOnce() -> R) -> (R, String) {
    let buf = Arc::new(Mutex::new(String::new()));
    let previous = CAPTURE.with(|c| c.borrow_mut().replace(Arc::clone(&buf)));
    let restore = Restore(previous);
    let r = f();
    drop(restore);
    let text = std::mem::take(&mut *buf.lock().unwrap_or_else(|e| e.into_inner()));
    (r, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_nests_and_restores() {
        let ((), outer) = capture_prints(|| {
            Sink::current().emit("a");
            let ((), inner) = capture_prints(|| Sink::current().emit("b"));
            assert_eq!(inner, "b");
            Sink::current().emit("c");
        });
        assert_eq!(outer, "ac");
        assert!(matches!(Sink::current(), Sink::Stdout));
    }
}
