//! The machine-readable lines of the benchmark examples: one JSON object per line, its
//! `"record"` field naming the kind, which `benches/report.py` reads (the peers in
//! `benches/peers/` print the same records). The human-readable lines and tables the
//! examples print stay beside them; the report reads only these.

#![allow(dead_code)]

use serde::Serialize;

/// One record line.
#[derive(Serialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record<'a> {
    /// A timed benchmark case: `ms` is the median of the timed launches; `bytes` and
    /// `flops` the work one launch counts (bytes moved to and from device memory, floating-
    /// point operations).
    Result {
        case: &'a str,
        #[serde(rename = "impl")]
        who: &'a str,
        size: &'a str,
        bytes: f64,
        flops: f64,
        ms: f64,
    },
    /// The compile and start-up latency of one case's kernels (`None`: not measured).
    Latency {
        case: &'a str,
        kernels: usize,
        ptx_bytes: usize,
        front_us: Option<f64>,
        opt_us: Option<f64>,
        ptx_us: Option<f64>,
        jit_ms: Option<f64>,
        cold_ms: Option<f64>,
        warm_ms: Option<f64>,
        names: Vec<&'a str>,
    },
    /// The start of one child process of the latency measurement.
    LatencyProcess {
        role: &'a str,
        context_ms: Option<f64>,
        first_load_ms: Option<f64>,
    },
    /// A latency number that is not what its column says, and why.
    LatencyWarning { case: &'a str, text: &'a str },
    /// The host's median time per launch of one `launch_overhead` case, in microseconds.
    LaunchOverhead { case: &'a str, us: f64 },
}

impl Record<'_> {
    /// Prints the record as one line of JSON.
    pub fn print(&self) {
        match serde_json::to_string(self) {
            Ok(line) => println!("{line}"),
            Err(e) => panic!("a record does not serialize: {e}"),
        }
    }
}

/// Prints the [`Record::Result`] of a cuprum case.
pub fn result(case: &str, size: &str, bytes: f64, flops: f64, ms: f64) {
    Record::Result {
        case,
        who: "cuprum",
        size,
        bytes,
        flops,
        ms,
    }
    .print();
}
