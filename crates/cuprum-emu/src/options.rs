//! What a launch may be told besides its kernel, grid and arguments: the step budget of the
//! watchdog and whether global memory is checked for races. One place defines the defaults,
//! the environment variables that change them and how their values are read, so the crate
//! docs, the README and the error messages all point at the same names.

use std::sync::OnceLock;

/// The environment variable that sets the step budget of every launch made with
/// [`launch`](crate::launch): a number of steps (`_` separators allowed), or `off` for no
/// limit.
pub const STEP_LIMIT_ENV: &str = "CUPRUM_EMU_STEP_LIMIT";

/// The environment variable that turns global-memory race detection off (`off`) or on (`on`,
/// the default) for every launch made with [`launch`](crate::launch).
pub const RACE_CHECK_ENV: &str = "CUPRUM_EMU_RACE_CHECK";

/// The step budget of a launch unless [`STEP_LIMIT_ENV`] or [`LaunchOptions::step_limit`]
/// says otherwise: one billion steps.
///
/// A *step* is one statement executed by one warp (whatever the number of active lanes), or
/// one end of a statement list (a loop's back edge, the end of an `if` arm), summed over all
/// blocks of the launch. Measured on the project's 2-core CI machine (`measure_step_rate` in
/// `tests/watchdog.rs`), the emulator runs 90 to 130 million steps a second on one core for
/// an arithmetic loop and 20 to 30 million for a loop that loads and stores global memory
/// every iteration, about twice that on both cores; so an endless loop stops after 4 s
/// (arithmetic, many blocks) to 50 s (memory-bound, one block). The largest launch of the
/// repository's test suites takes about 6 million steps, 170 times less than the budget.
pub const DEFAULT_STEP_LIMIT: u64 = 1_000_000_000;

/// Options of one launch ([`launch_with`](crate::launch_with)).
///
/// [`LaunchOptions::default`] has the built-in defaults; [`LaunchOptions::from_env`] applies
/// [`STEP_LIMIT_ENV`] and [`RACE_CHECK_ENV`] on top of them (what [`launch`](crate::launch)
/// uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Most steps the launch may run, summed over all its blocks, before it stops with
    /// [`EmuError::StepLimit`](crate::EmuError::StepLimit); `None` for no limit. Defaults to
    /// [`DEFAULT_STEP_LIMIT`].
    pub step_limit: Option<u64>,
    /// Whether plain accesses to global memory are checked for races between threads
    /// ([`EmuError::GlobalRace`](crate::EmuError::GlobalRace),
    /// [`EmuError::DisjointWrite`](crate::EmuError::DisjointWrite)). Defaults to `true`.
    pub global_race_check: bool,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        Self {
            step_limit: Some(DEFAULT_STEP_LIMIT),
            global_race_check: true,
        }
    }
}

impl LaunchOptions {
    /// These options with a step budget of `limit` steps (`None`: unlimited).
    pub fn with_step_limit(self, limit: Option<u64>) -> Self {
        Self {
            step_limit: limit,
            ..self
        }
    }

    /// These options with global-memory race detection on or off.
    pub fn with_global_race_check(self, on: bool) -> Self {
        Self {
            global_race_check: on,
            ..self
        }
    }

    /// The defaults with [`STEP_LIMIT_ENV`] and [`RACE_CHECK_ENV`] applied, read once per
    /// process. An unreadable value is an error that says which variable and what it accepts.
    pub fn from_env() -> Result<Self, String> {
        static FROM_ENV: OnceLock<Result<LaunchOptions, String>> = OnceLock::new();
        FROM_ENV
            .get_or_init(|| {
                let var = |name| std::env::var(name).ok();
                Self::from_values(
                    var(STEP_LIMIT_ENV).as_deref(),
                    var(RACE_CHECK_ENV).as_deref(),
                )
            })
            .clone()
    }

    /// The defaults with the given values of the two environment variables applied.
    fn from_values(step_limit: Option<&str>, race_check: Option<&str>) -> Result<Self, String> {
        let mut options = Self::default();
        if let Some(text) = step_limit {
            options.step_limit = parse_step_limit(text).ok_or_else(|| {
                format!(
                    "{STEP_LIMIT_ENV}=`{text}` is not a step budget: give a whole number of \
                     steps such as 100_000_000_000, or `off` for no limit"
                )
            })?;
        }
        if let Some(text) = race_check {
            options.global_race_check = match text.trim().to_ascii_lowercase().as_str() {
                "on" | "1" | "true" | "yes" => true,
                "off" | "0" | "false" | "no" => false,
                _ => {
                    return Err(format!(
                        "{RACE_CHECK_ENV}=`{text}` is neither `on` nor `off`"
                    ));
                }
            };
        }
        Ok(options)
    }
}

/// `Some(None)` for `off`/`none`/`unlimited`, `Some(Some(n))` for a positive number of steps.
fn parse_step_limit(text: &str) -> Option<Option<u64>> {
    let t = text.trim();
    if ["off", "none", "unlimited"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        return Some(None);
    }
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    match digits.parse::<u64>() {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(Some(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values() {
        let d = LaunchOptions::default();
        assert_eq!(LaunchOptions::from_values(None, None), Ok(d));
        let o = LaunchOptions::from_values(Some("1_000"), Some("off")).unwrap();
        assert_eq!(o.step_limit, Some(1000));
        assert!(!o.global_race_check);
        let o = LaunchOptions::from_values(Some(" OFF "), Some("on")).unwrap();
        assert_eq!(o.step_limit, None);
        assert!(o.global_race_check);
        for bad in ["", "0", "-5", "1e9", "lots"] {
            let e = LaunchOptions::from_values(Some(bad), None).unwrap_err();
            assert!(e.contains(STEP_LIMIT_ENV) && e.contains("off"), "{e}");
        }
        let e = LaunchOptions::from_values(None, Some("maybe")).unwrap_err();
        assert!(e.contains(RACE_CHECK_ENV), "{e}");
    }
}
