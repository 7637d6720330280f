//! Analyses the passes share through one context ([`Analyses`]), as Cranelift's `Context`
//! keeps a function's dominator tree: an analysis is computed when a pass first asks for it,
//! kept while the following passes leave the kernel unchanged, and dropped by the pass runner
//! after any pass that changed it. Today those are [`Defs`] (every value's pure definition and
//! type), which five passes need, and [`Addresses`] (every value's linear form, root,
//! alignment and read-only-ness as an address: the IR's one address analysis, which the PTX
//! writer asks too), which `checks`, `vectorize` and `promote` read.
//!
//! A pass takes an analysis (it may extend it while it rewrites) and gives it back only if it
//! changed nothing; in debug builds every analysis handed out from the cache is checked
//! against a fresh computation, so a pass that changes the kernel without saying so fails the
//! tests.

use cuprum_ir::{Addresses, Kernel};

use crate::facts::Defs;

/// The analyses of one kernel, valid for the kernel as it is now.
#[derive(Default)]
pub struct Analyses {
    defs: Option<Defs>,
    addresses: Option<Addresses>,
}

impl Analyses {
    /// No analysis computed yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every analysis: the kernel has changed.
    pub fn invalidate(&mut self) {
        self.defs = None;
        self.addresses = None;
    }

    /// The definitions of `kernel`'s values, from the cache or computed now. The caller owns
    /// them; [`keep_defs`](Self::keep_defs) returns them when the kernel did not change.
    pub(crate) fn take_defs(&mut self, kernel: &Kernel) -> Defs {
        match self.defs.take() {
            Some(defs) => {
                debug_assert!(
                    defs.same_as(&Defs::new(kernel)),
                    "cuprum-opt: cached definitions of `{}` are stale (a pass changed the \
                     kernel and reported no change)",
                    kernel.name
                );
                defs
            }
            None => Defs::new(kernel),
        }
    }

    /// Keeps `defs` for the next pass; only for a pass that left the kernel unchanged.
    pub(crate) fn keep_defs(&mut self, defs: Defs) {
        self.defs = Some(defs);
    }

    /// The address analysis of `kernel`, from the cache or computed now. The caller owns it;
    /// [`keep_addresses`](Self::keep_addresses) returns it when the kernel did not change.
    pub(crate) fn take_addresses(&mut self, kernel: &Kernel) -> Addresses {
        match self.addresses.take() {
            Some(addresses) => {
                debug_assert!(
                    addresses == Addresses::new(kernel),
                    "cuprum-opt: cached address analysis of `{}` is stale (a pass changed the \
                     kernel and reported no change)",
                    kernel.name
                );
                addresses
            }
            None => Addresses::new(kernel),
        }
    }

    /// Keeps `addresses` for the next pass; only for a pass that left the kernel unchanged.
    pub(crate) fn keep_addresses(&mut self, addresses: Addresses) {
        self.addresses = Some(addresses);
    }

    /// Whether the definitions are cached (for tests of the cache itself).
    #[cfg(test)]
    pub(crate) fn has_defs(&self) -> bool {
        self.defs.is_some()
    }

    /// Whether the address analysis is cached (for tests of the cache itself).
    #[cfg(test)]
    pub(crate) fn has_addresses(&self) -> bool {
        self.addresses.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuprum_ir::{BinaryOp, Constant, KernelBuilder, Op, ParamKind, ScalarType};

    /// `x + 1` on a scalar parameter: nothing for `conditions` to decide.
    fn kernel() -> Kernel {
        let mut b = KernelBuilder::new("k");
        let p = b.param("x", ParamKind::Scalar(ScalarType::U32));
        let x = b.def(Op::Param(p)).expect("a parameter types");
        let one = b.constant(Constant::u32(1));
        b.def(Op::Binary(BinaryOp::Add, x, one)).expect("u32 + u32");
        b.finish()
    }

    #[test]
    fn definitions_are_kept_across_passes_that_change_nothing() {
        let mut k = kernel();
        let mut analyses = Analyses::new();
        assert!(!crate::conditions::run_with(&mut k, &mut analyses));
        assert!(
            analyses.has_defs(),
            "an unchanged kernel keeps its definitions"
        );
        // The next pass is handed the same definitions (checked against fresh ones in debug).
        assert!(!crate::vectorize::run_with(&mut k, &mut analyses));
        assert!(analyses.has_defs());
        assert!(
            analyses.has_addresses(),
            "vectorize computed the address analysis and handed it on"
        );
        // `checks` is handed the same address analysis (checked in debug too).
        assert!(!crate::checks::run_with(&mut k, &mut analyses));
        assert!(analyses.has_addresses());
        analyses.invalidate();
        assert!(!analyses.has_defs());
        assert!(!analyses.has_addresses());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "stale")]
    fn stale_definitions_are_caught_in_debug_builds() {
        let mut k = kernel();
        let mut analyses = Analyses::new();
        crate::conditions::run_with(&mut k, &mut analyses);
        // A change nobody reported: the kernel now holds one constant and nothing else.
        let mut b = KernelBuilder::new("k");
        b.constant(Constant::u32(2));
        let _ = analyses.take_defs(&b.finish());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "stale")]
    fn stale_addresses_are_caught_in_debug_builds() {
        let mut k = kernel();
        let mut analyses = Analyses::new();
        crate::vectorize::run_with(&mut k, &mut analyses);
        // A change nobody reported, as above.
        let mut b = KernelBuilder::new("k");
        b.constant(Constant::u32(2));
        let _ = analyses.take_addresses(&b.finish());
    }
}
