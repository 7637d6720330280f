//! Autotuning under cuTile Rust's names (its experimental `cutile::tune`): an [`Autotuner`]
//! visits candidate [`Config`]s (after its [`prune`](Autotuner::prune) predicates), asks
//! the program to set each up (pick the specialization, make the buffers, run its own
//! correctness gate) and times the launch it returns, with events on the stream; the
//! candidate with the least median time wins.
//!
//! A candidate whose setup or launch fails is recorded as [`TrialState::Invalid`] with its
//! error and the search goes on. Each candidate runs once untimed, then as many timed
//! repetitions as fit in about [`BenchOptions::rep_ms`] (between 3 and 100). Not here (yet):
//! cuTile Rust's trial logs and resumed searches, custom searchers, and its paired re-run of
//! the two finalists.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::tile::cuda_core::Stream;
use crate::tile::error::Error;

/// A parameter value of a [`Config`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParamValue {
    /// An integer (a block size, a number of stages).
    Int(i64),
    /// Text (a variant's name).
    Str(String),
}

/// One candidate: named parameters, and an id made from them (`k1=v1,k2=v2`, keys sorted,
/// text values quoted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The candidate's identity within its search (made by [`Config::new`]).
    pub id: String,
    /// The parameters, by name.
    pub params: BTreeMap<String, ParamValue>,
}

impl Config {
    /// The candidate with `params`.
    pub fn new<I, K>(params: I) -> Self
    where
        I: IntoIterator<Item = (K, ParamValue)>,
        K: Into<String>,
    {
        let params: BTreeMap<String, ParamValue> =
            params.into_iter().map(|(k, v)| (k.into(), v)).collect();
        let id = params
            .iter()
            .map(|(k, v)| match v {
                ParamValue::Int(i) => format!("{k}={i}"),
                ParamValue::Str(s) => format!("{k}={s:?}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        Self { id, params }
    }

    /// The integer parameter `key`.
    pub fn int(&self, key: &str) -> Option<i64> {
        match self.params.get(key) {
            Some(ParamValue::Int(i)) => Some(*i),
            _ => None,
        }
    }

    /// The text parameter `key`.
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.params.get(key) {
            Some(ParamValue::Str(s)) => Some(s),
            _ => None,
        }
    }
}

/// What visiting one candidate gave.
#[derive(Clone, Debug, PartialEq)]
pub enum TrialState {
    /// Set up and timed.
    Measured {
        /// The median time of one launch, in milliseconds.
        median_ms: f32,
        /// The least time of one launch.
        min_ms: f32,
        /// How many timed launches.
        reps: usize,
    },
    /// Its setup or a launch failed.
    Invalid {
        /// The error.
        reason: String,
    },
}

/// One candidate visited.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The candidate's [`Config::id`].
    pub config_id: String,
    /// What happened.
    pub state: TrialState,
}

impl Trial {
    /// The median time, when measured.
    pub fn median_ms(&self) -> Option<f32> {
        match self.state {
            TrialState::Measured { median_ms, .. } => Some(median_ms),
            TrialState::Invalid { .. } => None,
        }
    }
}

/// How each candidate is timed.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    /// About how long the timed repetitions of one candidate take, in milliseconds.
    pub rep_ms: f32,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self { rep_ms: 100.0 }
    }
}

/// The fewest and the most timed repetitions of a candidate.
const MIN_REPS: usize = 3;
const MAX_REPS: usize = 100;

/// What a search gives: every candidate visited, in order, and the winner.
#[derive(Clone, Debug)]
pub struct Output {
    /// The candidates visited.
    pub trials: Vec<Trial>,
    /// The measured candidate with the least median time.
    pub best: Option<Config>,
}

/// A predicate of [`Autotuner::prune`]: whether to keep a candidate.
type KeepPredicate = Box<dyn Fn(&Config) -> bool>;

/// A search over candidate configurations (see the module docs).
pub struct Autotuner {
    /// The search's name.
    pub name: String,
    configs: Vec<Config>,
    prune: Vec<KeepPredicate>,
    budget: Option<Duration>,
    bench: BenchOptions,
}

impl Autotuner {
    /// A search named `name`, with no candidates yet.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            configs: Vec::new(),
            prune: Vec::new(),
            budget: None,
            bench: BenchOptions::default(),
        }
    }

    /// The candidates, visited in this order.
    pub fn configs(mut self, configs: Vec<Config>) -> Self {
        self.configs = configs;
        self
    }

    /// Keeps only the candidates `keep` accepts (every predicate must).
    pub fn prune(mut self, keep: impl Fn(&Config) -> bool + 'static) -> Self {
        self.prune.push(Box::new(keep));
        self
    }

    /// Stops visiting candidates once the search has taken `budget`.
    pub fn budget(mut self, budget: Duration) -> Self {
        self.budget = Some(budget);
        self
    }

    /// How each candidate is timed.
    pub fn bench(mut self, bench: BenchOptions) -> Self {
        self.bench = bench;
        self
    }

    /// Visits every candidate left after pruning: `setup` makes its launch (or fails), the
    /// launch runs once untimed and is then timed on `stream`.
    pub fn run<S, F>(self, stream: &Arc<Stream>, mut setup: S) -> Result<Output, Error>
    where
        S: FnMut(&Arc<Stream>, &Config) -> Result<F, Error>,
        F: FnMut(&Arc<Stream>) -> Result<(), Error>,
    {
        let started = Instant::now();
        let mut trials = Vec::new();
        let mut best: Option<(f32, Config)> = None;
        for config in self
            .configs
            .into_iter()
            .filter(|c| self.prune.iter().all(|keep| keep(c)))
        {
            if self.budget.is_some_and(|b| started.elapsed() >= b) {
                break;
            }
            let state = match setup(stream, &config) {
                Err(e) => TrialState::Invalid {
                    reason: e.to_string(),
                },
                Ok(mut launch) => match time(stream, &self.bench, &mut launch) {
                    Err(e) => TrialState::Invalid {
                        reason: e.to_string(),
                    },
                    Ok(state) => state,
                },
            };
            if let TrialState::Measured { median_ms, .. } = state
                && best.as_ref().is_none_or(|(b, _)| median_ms < *b)
            {
                best = Some((median_ms, config.clone()));
            }
            trials.push(Trial {
                config_id: config.id,
                state,
            });
        }
        Ok(Output {
            trials,
            best: best.map(|(_, c)| c),
        })
    }
}

/// Times `launch` on `stream` (see the module docs).
fn time<F>(stream: &Arc<Stream>, bench: &BenchOptions, launch: &mut F) -> Result<TrialState, Error>
where
    F: FnMut(&Arc<Stream>) -> Result<(), Error>,
{
    let mut once = || -> Result<f32, Error> {
        let start = stream.record_event()?;
        launch(stream)?;
        let end = stream.record_event()?;
        end.synchronize()?;
        Ok(start.elapsed_ms(&end)?)
    };
    let first = once()?;
    let reps = if first > 0.0 {
        ((bench.rep_ms / first) as usize).clamp(MIN_REPS, MAX_REPS)
    } else {
        MAX_REPS
    };
    let mut times = (0..reps)
        .map(|_| once())
        .collect::<Result<Vec<f32>, Error>>()?;
    times.sort_by(f32::total_cmp);
    Ok(TrialState::Measured {
        median_ms: times[times.len() / 2],
        min_ms: times[0],
        reps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_parameters_in_order() {
        let c = Config::new([
            ("B", ParamValue::Int(64)),
            ("A", ParamValue::Str("x".into())),
        ]);
        assert_eq!(c.id, "A=\"x\",B=64");
        assert_eq!(c.int("B"), Some(64));
        assert_eq!(c.str("A"), Some("x"));
        assert_eq!(c.int("A"), None);
        assert_ne!(
            Config::new([("A", ParamValue::Int(1))]).id,
            Config::new([("A", ParamValue::Str("1".into()))]).id
        );
    }
}
