//! Command-line parsing shared by the examples that take numeric options: they declare their
//! flags with `clap`'s derive, and take counts and sizes through [`positive`].

#![allow(dead_code)]

/// A positive whole number: the value of `--size`, `--reps`, `--procs` and the like.
pub fn positive(text: &str) -> Result<usize, String> {
    text.parse()
        .ok()
        .filter(|&v: &usize| v > 0)
        .ok_or_else(|| format!("{text:?} is not a positive number"))
}
