//! What the generated programs contain: a count of every construct, operation and type, so
//! tests can assert that the generator covers what it should and people can read what a run
//! exercised.

use std::collections::BTreeMap;

use crate::program::{Node, Place, Program, Stmt};

/// How often each construct occurs, by a readable key (`binary Add u32`, `cast f16 -> i8`,
/// `shuffle Xor`, `atomic Min shared`, `loop`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Occurrences by key.
    pub counts: BTreeMap<String, usize>,
}

fn place_kind(p: &Place) -> &'static str {
    match p {
        Place::Buffer { .. } => "global",
        Place::Shared { .. } => "shared",
        Place::Local { .. } => "local",
    }
}

impl Coverage {
    /// Adds one occurrence of `key`.
    pub fn bump(&mut self, key: impl Into<String>) {
        *self.counts.entry(key.into()).or_default() += 1;
    }

    /// Counts the collective and control statements by where they stand: inside a branch,
    /// inside a loop (`shuffle in loop`, `barrier in branch`, ...), and after a `return`.
    fn nesting(&mut self, stmts: &[Stmt], in_if: bool, in_loop: bool, returned: &mut bool) {
        for s in stmts {
            let kind = match s {
                Stmt::Def(_, Node::Shuffle(..)) => Some("shuffle"),
                Stmt::Def(_, Node::Vote(..)) => Some("vote"),
                Stmt::Def(_, Node::Atomic { .. }) => Some("atomic"),
                Stmt::Barrier => Some("barrier"),
                Stmt::Break => Some("break"),
                Stmt::Continue => Some("continue"),
                _ => None,
            };
            if let Some(kind) = kind {
                if in_if {
                    self.bump(format!("{kind} in branch"));
                }
                if in_loop {
                    self.bump(format!("{kind} in loop"));
                }
                if *returned {
                    self.bump(format!("{kind} after return"));
                }
            }
            match s {
                Stmt::If {
                    then, otherwise, ..
                } => {
                    if in_loop {
                        self.bump("if in loop");
                    }
                    if in_if {
                        self.bump("if in branch");
                    }
                    self.nesting(then, true, in_loop, returned);
                    self.nesting(otherwise, true, in_loop, returned);
                }
                Stmt::Loop(body) => {
                    if in_loop {
                        self.bump("loop in loop");
                    }
                    if in_if {
                        self.bump("loop in branch");
                    }
                    self.nesting(body, in_if, true, returned);
                }
                Stmt::Return => *returned = true,
                _ => {}
            }
        }
    }

    /// Adds what `program` contains.
    pub fn add(&mut self, program: &Program) {
        self.nesting(&program.body, false, false, &mut false);
        let ty = |id: u32| program.types[id as usize];
        for &t in &program.types {
            self.bump(format!("type {t}"));
        }
        program.walk(|s| match s {
            Stmt::Def(_, node) => match node {
                Node::Const(_) | Node::Source(_) | Node::Scalar(_) | Node::ReadVar(_) => {}
                Node::Unary(op, a) => self.bump(format!("unary {op:?} {}", ty(*a))),
                Node::Binary(op, a, _) => self.bump(format!("binary {op:?} {}", ty(*a))),
                Node::MulAdd(a, ..) => self.bump(format!("muladd {}", ty(*a))),
                Node::Compare(op, a, _) => {
                    self.bump(format!("compare {op:?}"));
                    self.bump(format!("compare {}", ty(*a)));
                }
                Node::Select(_, a, _) => self.bump(format!("select {}", ty(*a))),
                Node::Cast(a, to) => self.bump(format!("cast {} -> {to}", ty(*a))),
                Node::Bitcast(a, to) => self.bump(format!("bitcast {} -> {to}", ty(*a))),
                Node::Load(p) => self.bump(format!("load {}", place_kind(p))),
                Node::Shuffle(mode, v, _) => {
                    self.bump(format!("shuffle {mode:?}"));
                    self.bump(format!("shuffle {}", ty(*v)));
                }
                Node::Vote(mode, _) => self.bump(format!("vote {mode:?}")),
                Node::Atomic {
                    place, op, value, ..
                } => {
                    self.bump(format!("atomic {op:?} {}", place_kind(place)));
                    self.bump(format!("atomic {}", ty(*value)));
                }
            },
            Stmt::SetVar(..) => self.bump("set var"),
            Stmt::Store { place, .. } => self.bump(format!("store {}", place_kind(place))),
            Stmt::If { .. } => self.bump("if"),
            Stmt::Loop(_) => self.bump("loop"),
            Stmt::Break => self.bump("break"),
            Stmt::Continue => self.bump("continue"),
            Stmt::Return => self.bump("return"),
            Stmt::Barrier => self.bump("barrier"),
            Stmt::Check(_) => self.bump("check"),
        });
    }

    /// How often `key` occurred.
    pub fn get(&self, key: &str) -> usize {
        self.counts.get(key).copied().unwrap_or(0)
    }

    /// The counts as lines of `key: count`.
    pub fn table(&self) -> String {
        self.counts
            .iter()
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect()
    }
}
