//! Typing a `let`'s literal from a later use, as rustc does: `let mut i = 0;` is an `i64`
//! when `i` is later compared with an `i64`.
//!
//! Lowering is one pass, so a literal that must become a tile before its use is seen (a
//! variable carried by a loop, say) takes Rust's default type. What any use teaches about a
//! `let`'s literal is recorded here, by the `let`'s position in lowering order; when a run
//! learnt something, the kernel is lowered again with it, and the `let` takes that type from
//! the start. Lowering is deterministic, so both runs number their `let`s alike.

use std::collections::HashMap;

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{Elem, TileValue};

/// What runs of one kernel's lowering know about its `let`s' literals.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hints {
    /// Types learnt by earlier runs, by `let` number.
    known: HashMap<u32, ScalarType>,
    /// Types learnt by this run.
    learnt: HashMap<u32, ScalarType>,
    /// The next `let` number of this run.
    next: u32,
    /// Tiles made from a `let`'s literal in its default type.
    defaulted: HashMap<TileValue, u32>,
}

impl Hints {
    /// Numbers the next `let` that binds an untyped literal.
    pub fn next_let(&mut self) -> u32 {
        self.next += 1;
        self.next - 1
    }

    /// The type an earlier run learnt for `let` number `id`.
    pub fn get(&self, id: u32) -> Option<ScalarType> {
        self.known.get(&id).copied()
    }

    /// A use gives `let` number `id`'s literal type `ty`.
    pub fn learn(&mut self, id: u32, ty: ScalarType) {
        self.learnt.entry(id).or_insert(ty);
    }

    /// `v` was made from `let` number `id`'s literal in its default type.
    pub fn defaulted(&mut self, v: TileValue, id: u32) {
        self.defaulted.insert(v, id);
    }

    /// `to` carries `from`'s value (a loop argument its initial value).
    pub fn inherit(&mut self, from: TileValue, to: TileValue) {
        if let Some(id) = self.defaulted.get(&from).copied() {
            self.defaulted.insert(to, id);
        }
    }

    /// `v` was used where elements of `want` are required: if it was a defaulted literal,
    /// that is its type.
    pub fn mismatch(&mut self, v: TileValue, want: Elem) {
        if let (Some(id), Elem::Known(t)) = (self.defaulted.get(&v).copied(), want) {
            self.learn(id, t);
        }
    }

    /// Whether this run learnt a type an earlier run did not know.
    pub fn learnt_something_new(&self) -> bool {
        self.learnt
            .iter()
            .any(|(id, t)| self.known.get(id) != Some(t))
    }

    /// The hints for the next run: everything known so far.
    pub fn for_next_run(self) -> Hints {
        let mut known = self.known;
        for (id, t) in self.learnt {
            known.entry(id).or_insert(t);
        }
        Hints {
            known,
            ..Hints::default()
        }
    }
}
