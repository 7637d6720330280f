//! Typing facts of the first lowering run (see the module docs of `lower`): every `let`, `for`
//! and `if`/`else` expression is a numbered *site*; the first run records which sites must
//! share a type, the types it learned, and whether a site holds an untyped integer or float
//! literal; [`Inference::solve`] gives every site its type, defaulting as Rust does (`i32`,
//! `f64`), for the second run to emit with.

use std::collections::HashMap;

use cuprum_ir::ScalarType as S;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LitKind {
    Int,
    Float,
}

impl LitKind {
    pub(super) fn default_type(self) -> S {
        match self {
            LitKind::Int => S::I32,
            LitKind::Float => S::F64,
        }
    }
}

/// Union-find over sites, each with an optional known type and a literal kind.
#[derive(Default)]
pub(super) struct Inference {
    parent: HashMap<u32, u32>,
    ty: HashMap<u32, S>,
    kind: HashMap<u32, LitKind>,
    /// The `let` sites whose arrays are wgmma accumulators, kept in variables in the emit run
    /// (`arrays::Registers`).
    pub(super) register_lets: std::collections::HashSet<u32>,
    /// Whether the run left a generic struct's argument open (`let mut acc = Acc::new();`,
    /// typed by later uses): its guess may have been wrong, so another infer run follows
    /// with what this one learned.
    pub(super) opened_struct_params: bool,
}

impl Inference {
    pub(super) fn find(&self, mut s: u32) -> u32 {
        while let Some(&p) = self.parent.get(&s) {
            if p == s {
                break;
            }
            s = p;
        }
        s
    }
    pub(super) fn set_type(&mut self, site: u32, ty: S) {
        let root = self.find(site);
        self.ty.entry(root).or_insert(ty);
    }
    /// Records that `site` holds an untyped literal of `kind` (the first record stays).
    pub(super) fn set_kind(&mut self, site: u32, kind: LitKind) {
        self.kind.entry(site).or_insert(kind);
    }
    pub(super) fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return;
        }
        self.parent.insert(rb, ra);
        if let Some(t) = self.ty.remove(&rb) {
            self.ty.entry(ra).or_insert(t);
        }
        if let Some(k) = self.kind.remove(&rb) {
            self.kind.entry(ra).or_insert(k);
        }
    }
    pub(super) fn solve(&self) -> HashMap<u32, S> {
        let mut sites: Vec<u32> = self
            .parent
            .keys()
            .chain(self.ty.keys())
            .chain(self.kind.keys())
            .copied()
            .collect();
        sites.sort_unstable();
        sites.dedup();
        let mut out = HashMap::new();
        for s in sites {
            let root = self.find(s);
            let ty = self
                .ty
                .get(&root)
                .copied()
                .or_else(|| self.kind.get(&root).map(|k| k.default_type()));
            if let Some(t) = ty {
                out.insert(s, t);
            }
        }
        out
    }
}

/// Which run of the lowering this is: the first collects typing facts into an [`Inference`],
/// the second emits IR with the solved types.
pub(super) enum Mode<'a> {
    Infer(&'a mut Inference),
    Emit(&'a HashMap<u32, S>),
}
