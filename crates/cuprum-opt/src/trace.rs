//! Tracing the pass pipeline for whoever debugs a pass: with `CUPRUM_OPT_TRACE` set, each
//! pass's time and whether it changed the kernel, and optionally the IR after each pass that
//! did, go to stderr.
//!
//! `CUPRUM_OPT_TRACE=time` prints one line per pass; `CUPRUM_OPT_TRACE=ir` also prints the IR
//! before the passes and after every pass that changed it. Either may end in `:NAME` to trace
//! only kernels whose name contains `NAME` (`ir:sgemm`). Tracing never changes what the
//! passes do.

use std::sync::OnceLock;

/// What to print about the passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Also print the IR after each pass that changed the kernel.
    pub ir: bool,
    /// Trace only kernels whose name contains this.
    pub kernel: Option<String>,
}

impl Trace {
    /// Parses a `CUPRUM_OPT_TRACE` value: `time` or `ir`, optionally `:NAME`; `None` for an
    /// empty value, `0`, `off` or anything else unknown.
    pub fn parse(value: &str) -> Option<Trace> {
        let (mode, kernel) = match value.split_once(':') {
            Some((m, k)) => (m, Some(k.to_string()).filter(|k| !k.is_empty())),
            None => (value, None),
        };
        let ir = match mode.trim() {
            "time" | "1" => false,
            "ir" => true,
            _ => return None,
        };
        Some(Trace { ir, kernel })
    }

    /// The trace the environment asks for (read once per process).
    pub fn from_env() -> Option<&'static Trace> {
        static TRACE: OnceLock<Option<Trace>> = OnceLock::new();
        TRACE
            .get_or_init(|| {
                std::env::var("CUPRUM_OPT_TRACE")
                    .ok()
                    .and_then(|v| Trace::parse(&v))
            })
            .as_ref()
    }

    /// Whether kernel `name` is traced.
    pub fn wants(&self, name: &str) -> bool {
        self.kernel.as_deref().is_none_or(|k| name.contains(k))
    }
}
