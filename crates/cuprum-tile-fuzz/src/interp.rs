//! The reference: a case run by the tile interpreter (`cuprum-tile-interp`), the tile IR's
//! executable definition.

use cuprum_tile_interp::{Arg, InterpError, TensorArg, TensorData, run};
use cuprum_tile_ir::{ParamKind, TensorAccess};

use crate::{ArgData, Case, Fault, Outcome, TrapClass};

/// The fault an interpreter error stands for: the traps by class (a non-positive `for`
/// step is an assertion, as the lowering traps it), anything else a failure.
pub fn fault_of(e: &InterpError) -> Fault {
    match e {
        InterpError::DivideByZero { .. } => Fault::Trap(TrapClass::DivideByZero),
        InterpError::DivideOverflow { .. } => Fault::Trap(TrapClass::DivideOverflow),
        InterpError::AssertFailed { .. } | InterpError::ForStep { .. } => {
            Fault::Trap(TrapClass::Assert)
        }
        other => Fault::Failed(format!("the interpreter: {other}")),
    }
}

/// Runs `case` in the interpreter: the final bytes of every tensor argument (empty for
/// scalars), and what it printed.
pub fn interpret(case: &Case) -> (Outcome, String) {
    let mut bytes: Vec<Vec<u8>> = case
        .args
        .iter()
        .map(|a| match a {
            ArgData::Tensor(t) => t.bytes.clone(),
            ArgData::Scalar(_) => Vec::new(),
        })
        .collect();
    let result = {
        let mut args: Vec<Arg<'_>> = Vec::with_capacity(case.args.len());
        for ((a, b), p) in case.args.iter().zip(&mut bytes).zip(&case.kernel.params) {
            args.push(match a {
                ArgData::Scalar(c) => Arg::Scalar(*c),
                ArgData::Tensor(t) => {
                    let output = matches!(
                        &p.kind,
                        ParamKind::Tensor(tp) if tp.access != TensorAccess::Read
                    );
                    let data = if output {
                        TensorData::Write(b.as_mut_slice())
                    } else {
                        TensorData::Read(b.as_slice())
                    };
                    Arg::Tensor(TensorArg {
                        elem: t.elem,
                        shape: t.shape.clone(),
                        strides: t.strides.clone(),
                        offset: t.offset,
                        data,
                    })
                }
            });
        }
        run(&case.kernel, &mut args, case.grid)
    };
    match result {
        Ok(out) => (Ok(bytes), out.text()),
        Err(e) => (Err(fault_of(&e)), String::new()),
    }
}
