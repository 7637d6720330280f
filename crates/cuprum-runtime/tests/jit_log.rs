//! The driver JIT's log of a module (`LoadedModule::jit_log`, `jit_warnings`): ptxas's
//! warnings reach the program, so that a Hopper kernel's test can fail on `C7510` (wgmma
//! serialized) or `C7508` (setmaxnreg ignored). On the emulator there is no JIT and the log
//! is empty.

mod common;

use std::sync::Arc;

use common::ctx;
use cuprum_ir::{KernelBuilder, Module, ParamKind, ScalarType};
use cuprum_runtime::{BackendKind, LoadedModule};

/// A kernel `w(p: u64)` that does nothing, as IR (its PTX is written by hand below).
fn ir() -> Arc<Module> {
    let mut b = KernelBuilder::new("w");
    b.param("p", ParamKind::Scalar(ScalarType::U64));
    Arc::new(Module {
        kernels: vec![b.finish()],
    })
}

/// `w`'s PTX, asking for 4 registers per thread (ptxas raises it to its minimum and warns)
/// when `warn`, else asking nothing.
fn ptx(warn: bool) -> String {
    let directives = if warn { " .maxnreg 4" } else { "" };
    format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry w(.param .u64 \
         w_param_0){directives}\n{{\n\tret;\n}}\n"
    )
}

#[test]
fn ptxas_warnings_reach_the_loaded_module() {
    let ctx = ctx();
    let warned = LoadedModule::load_with_ptx(&ctx, ir(), ptx(true)).expect("load");
    let quiet = LoadedModule::load_with_ptx(&ctx, ir(), ptx(false)).expect("load");
    match ctx.backend() {
        BackendKind::Cuda => {
            let warnings = warned.jit_warnings();
            assert!(
                warnings.iter().any(|w| w.contains("register count")),
                "the JIT's warning about `.maxnreg 4` is missing; the log was:\n{}",
                warned.jit_log()
            );
            assert!(quiet.jit_warnings().is_empty(), "{}", quiet.jit_log());
        }
        BackendKind::Emulator => {
            assert_eq!(warned.jit_log(), "");
            assert!(warned.jit_warnings().is_empty());
        }
    }
}
