//! Which target a module is written for: the portable target of the device's generation,
//! `sm_90a` only for modules with Hopper-only statements on compute capability 9.0, and a
//! typed refusal below sm_80. (The tests that write an arch-specific statement live with
//! those statements' tests.)

mod common;

use common::*;
use cuprum_ir::ScalarType as S;
use cuprum_ptx::{Target, TargetError};

fn plain_module() -> cuprum_ir::Module {
    let mut k = K::new("plain");
    let out = k.slice("out", S::U32, cuprum_ir::SliceAccess::ReadWrite);
    let base = k.op(cuprum_ir::Op::SliceBase(out));
    let value = k.u32(1);
    k.b.push(cuprum_ir::Stmt::Store {
        space: cuprum_ir::AddressSpace::Global,
        addr: base,
        value,
    });
    one(k.finish())
}

#[test]
fn a_module_without_hopper_only_statements_gets_the_portable_target() {
    let m = plain_module();
    assert!(!m.needs_arch_specific());
    assert_eq!(Target::for_module(&m, 9, 0), Ok(Target::Sm90));
    assert_eq!(Target::for_module(&m, 10, 0), Ok(Target::Sm90));
    assert_eq!(Target::for_module(&m, 8, 6), Ok(Target::Sm80));
    assert_eq!(
        Target::for_module(&m, 7, 5),
        Err(TargetError::TooOld {
            compute_capability: (7, 5)
        })
    );
    assert_eq!(Target::Sm90a.name(), "sm_90a");
    assert!(Target::Sm90a.is_arch_specific() && !Target::Sm90.is_arch_specific());
    // Portable code may still be written for sm_90a: it is a superset.
    let text = cuprum_ptx::write_module(&m, Target::Sm90a).expect("plain PTX for sm_90a");
    assert!(text.contains(".target sm_90a"));
}
