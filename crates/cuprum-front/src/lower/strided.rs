//! One loop shape that several lowerings share: a thread's values `start, start + step, ..`
//! below `end`, with `start` the thread's index along an axis and `step` the block's size
//! there (the elements a thread owns of a phased shared array, of a block's output tile).
//! With both the step and the end constant (a launch contract's block, a constant tile) the
//! iterations are unrolled and only a partial last one is tested, as CUDA code written with
//! `#pragma unroll` over `j += blockDim` would be; otherwise it is a loop that stops rather
//! than wraps.

use cuprum_ir::{BinaryOp, CmpOp, Constant, Op, Stmt, Value};
use proc_macro2::Span;

use super::*;

/// A step or an end of a strided range: a constant, or a value known only at run time.
#[derive(Clone, Copy)]
pub(super) enum Extent {
    Fixed(u64),
    Runtime(Value),
}

/// Strided ranges of at most this many iterations, with constant extents, are unrolled.
const UNROLL_STRIDED: u64 = 16;

impl Lowerer<'_> {
    /// Runs `body` for each of `start, start + step, ..` below `end`, all of `start`'s
    /// (unsigned integer) type. `start` must be below `step` (a thread index and its block's
    /// size) for the unrolled form's untested iterations to be in range.
    pub(super) fn strided_range(
        &mut self,
        start: Value,
        step: Extent,
        end: Extent,
        span: Span,
        body: &mut dyn FnMut(&mut Self, Value) -> Result<()>,
    ) -> Result<()> {
        let ty = self.ty(start);
        if let (Extent::Fixed(step), Extent::Fixed(end)) = (step, end)
            && step > 0
            && end.div_ceil(step) <= UNROLL_STRIDED
        {
            for k in 0..end.div_ceil(step) {
                let offset = self.constant(Constant::new(ty, k * step));
                let e = self.def(Op::Binary(BinaryOp::Add, start, offset), span)?;
                if (k + 1) * step <= end {
                    // start < step, so e < (k + 1) * step <= end.
                    body(self, e)?;
                } else {
                    let end_v = self.constant(Constant::new(ty, end));
                    let inside = self.def(Op::Compare(CmpOp::Lt, e, end_v), span)?;
                    self.when(inside, |this| body(this, e))?;
                }
            }
            return Ok(());
        }
        let value = |this: &mut Self, x: Extent| match x {
            Extent::Fixed(n) => this.constant(Constant::new(ty, n)),
            Extent::Runtime(v) => v,
        };
        let (step, end) = (value(self, step), value(self, end));
        let max = self.constant(Constant::new(ty, u64::MAX));
        let cursor = self.b.var("strided", ty);
        self.b.push(Stmt::WriteVar {
            var: cursor,
            value: start,
        });
        self.loop_body(|this| {
            let e = this.def(Op::ReadVar(cursor), span)?;
            let more = this.def(Op::Compare(CmpOp::Lt, e, end), span)?;
            this.break_unless(more);
            let next = this.def(Op::Binary(BinaryOp::Add, e, step), span)?;
            let no_wrap = this.def(Op::Compare(CmpOp::Ge, next, e), span)?;
            let next = this.def(
                Op::Select {
                    cond: no_wrap,
                    if_true: next,
                    if_false: max,
                },
                span,
            )?;
            this.b.push(Stmt::WriteVar {
                var: cursor,
                value: next,
            });
            body(this, e)
        })
    }
}
