//! Command-line parsing shared by the examples that take numeric options.

/// The positive number after `name` in `args`, or `default` when `name` is absent.
pub fn arg(args: &[String], name: &str, default: usize) -> Result<usize, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(at) => args
            .get(at + 1)
            .and_then(|v| v.parse().ok())
            .filter(|&v: &usize| v > 0)
            .ok_or_else(|| format!("{name} needs a positive number")),
    }
}
