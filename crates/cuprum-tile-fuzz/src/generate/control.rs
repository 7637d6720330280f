//! Control flow: `if` with results, `for` (counters of several integer types, bounds from
//! constants or clamped data, a step that would carry a narrow counter past its range) and
//! `loop` with carried values, `break` and `continue` under conditions. Every loop runs at
//! most a few iterations: a `loop` carries its own counter, which every `continue` advances.

use cuprum_ir::{BinaryOp, CmpOp, ScalarType};
use cuprum_tile_ir::{Block, Literal, Op, Stmt, TileType, TileValue, shape_of};
use rand::Rng;

use super::{Gen, LoopFrame, R};

use ScalarType as S;

impl Gen<'_> {
    /// Statements for a nested block: a share of the budget.
    fn inner_budget(&mut self) -> usize {
        1 + self.below(self.budget.min(4))
    }

    /// The types of `k` carried values or results: tiles of `W` or rank 0.
    fn carried_types(&mut self, k: usize) -> Vec<TileType> {
        (0..k)
            .map(|_| {
                let elem = self.elem(true);
                let shape = if self.chance(0.65) {
                    self.work.clone()
                } else {
                    Vec::new()
                };
                TileType::new(elem, shape_of(&shape))
            })
            .collect()
    }

    /// A value of type `t` (a visible one or a new one).
    fn operand_of(&mut self, t: &TileType) -> R<TileValue> {
        let elem = t.elem.known().unwrap_or(S::I32);
        let shape = cuprum_tile_ir::known_sizes(&t.shape).unwrap_or_default();
        self.operand(elem, &shape)
    }

    fn operands_of(&mut self, types: &[TileType]) -> R<Vec<TileValue>> {
        types.iter().map(|t| self.operand_of(t)).collect()
    }

    /// `n` statements, now and then a store of what they made (so that it shows), then
    /// values of `types` unless the block ended early.
    fn branch(&mut self, n: usize, types: &[TileType]) -> R<Vec<TileValue>> {
        self.stmts(n)?;
        if self.cb.b.block_ended() {
            return Ok(Vec::new());
        }
        if self.chance(0.5) {
            let o = self.choose(&self.outputs.clone());
            self.store(o)?;
        }
        self.operands_of(types)
    }

    /// `if cond { .. } else { .. }` with zero to two results.
    pub(crate) fn if_stmt(&mut self) -> R<()> {
        let cond = self.condition()?;
        let k = self.below(3);
        let types = self.carried_types(k);
        // (On an error the whole program is dropped: the depth need not be restored.)
        self.depth += 1;
        let (n1, n2) = (self.inner_budget(), self.inner_budget());
        let then = self.nested(&[], |g| g.branch(n1, &types))?;
        let otherwise = self.nested(&[], |g| g.branch(n2, &types))?;
        self.depth -= 1;
        let results: Vec<TileValue> = types.iter().map(|t| self.cb.b.value(t.clone())).collect();
        self.push(Stmt::If {
            cond,
            then,
            otherwise,
            results: results.clone(),
        });
        for r in results {
            self.expose(r);
        }
        Ok(())
    }

    /// Generates a loop body with `visible` values in scope, inside a loop frame of
    /// `types`, yielding what `yields` gives unless it ended early.
    fn loop_body(
        &mut self,
        visible: &[TileValue],
        frame: LoopFrame,
        f: impl FnOnce(&mut Self) -> R<Vec<TileValue>>,
    ) -> R<Block> {
        self.depth += 1;
        self.loops.push(frame);
        let body = self.nested(visible, f)?;
        self.loops.pop();
        self.depth -= 1;
        Ok(body)
    }

    /// `for counter in (start..end).step_by(step)` with carried values.
    pub(crate) fn for_stmt(&mut self) -> R<()> {
        let ct = self.choose(&[S::I32, S::I32, S::I32, S::I64, S::U32, S::U8, S::I16, S::I8]);
        let int = |g: &mut Self, v: i64| g.konst(ct, Literal::Int(v), &[]);
        let (start, end, step) = if matches!(ct, S::U8 | S::I8) && self.chance(0.3) {
            // The counter would pass the type's range: the loop ends there.
            let (s, e, st) = if ct == S::U8 {
                (250, 255, 3)
            } else {
                (120, 127, 4)
            };
            (int(self, s)?, int(self, e)?, int(self, st)?)
        } else {
            let s = if ct.is_signed_int() {
                self.rng.random_range(-2..=2)
            } else {
                self.rng.random_range(0..=2)
            };
            let st = self.rng.random_range(1..=3);
            let trips = self.rng.random_range(0..=3);
            let start = int(self, s)?;
            let step = if self.chance(0.2) {
                // A step from the launch, kept in 1..=3.
                let p = self.scalar_param(ct)?;
                self.clamp_int(p, ct, 1, 3)?
            } else {
                int(self, st)?
            };
            let end = if self.chance(0.3) {
                // An end from the data, kept within three steps of the start.
                let x = self.operand(ct, &[])?;
                self.clamp_int(x, ct, s, s + 3 * st)?
            } else {
                let slack = self.rng.random_range(0..st);
                // Below the start is no iteration; an unsigned end stays at least 0 (a
                // negative one would wrap to a bound past the type's range).
                let floor = if ct.is_unsigned_int() { 0 } else { i64::MIN };
                int(self, (s + trips * st - slack).max(floor))?
            };
            (start, end, step)
        };
        let k = self.below(3);
        let types = self.carried_types(k);
        let inits = self.operands_of(&types)?;
        let counter = self.cb.b.value(TileType::scalar(ct));
        let args: Vec<TileValue> = types.iter().map(|t| self.cb.b.value(t.clone())).collect();
        let mut visible = vec![counter];
        visible.extend(&args);
        let n = self.inner_budget();
        let frame = LoopFrame {
            types: types.clone(),
            counter: None,
        };
        let body = self.loop_body(&visible, frame, |g| g.branch(n, &types))?;
        let results: Vec<TileValue> = types.iter().map(|t| self.cb.b.value(t.clone())).collect();
        self.push(Stmt::For {
            counter,
            start,
            end,
            step,
            args,
            inits,
            body,
            results: results.clone(),
        });
        for r in results {
            self.expose(r);
        }
        Ok(())
    }

    /// `loop` carrying an `i32` counter (first) and values; it breaks once the counter
    /// reaches a limit of 0 to 3.
    pub(crate) fn loop_stmt(&mut self) -> R<()> {
        let limit = self.rng.random_range(0..=3);
        let k = self.below(3);
        let mut types = vec![TileType::scalar(S::I32)];
        types.extend(self.carried_types(k));
        let zero = self.konst(S::I32, Literal::Int(0), &[])?;
        let mut inits = vec![zero];
        inits.extend(self.operands_of(&types[1..])?);
        let args: Vec<TileValue> = types.iter().map(|t| self.cb.b.value(t.clone())).collect();
        let counter = args[0];
        let n = self.inner_budget();
        let frame = LoopFrame {
            types: types.clone(),
            counter: Some(counter),
        };
        let body = self.loop_body(&args, frame, |g| {
            let lim = g.konst(S::I32, Literal::Int(limit), &[])?;
            let done = g.def_hidden(Op::Compare(CmpOp::Ge, counter, lim))?;
            let values = g.leave_values(true)?;
            let then = g.nested(&[], |g| {
                g.push(Stmt::Break { values });
                Ok(Vec::new())
            })?;
            g.push(Stmt::If {
                cond: done,
                then,
                otherwise: Block::default(),
                results: Vec::new(),
            });
            g.stmts(n)?;
            if g.cb.b.block_ended() {
                return Ok(Vec::new());
            }
            if g.chance(0.5) {
                let o = g.choose(&g.outputs.clone());
                g.store(o)?;
            }
            let next = g.next_counter(counter)?;
            let mut yields = vec![next];
            yields.extend(g.operands_of(&types[1..])?);
            Ok(yields)
        })?;
        let results: Vec<TileValue> = types.iter().map(|t| self.cb.b.value(t.clone())).collect();
        self.push(Stmt::Loop {
            args,
            inits,
            body,
            results: results.clone(),
        });
        for r in results {
            self.expose(r);
        }
        Ok(())
    }

    /// `counter + 1`.
    fn next_counter(&mut self, counter: TileValue) -> R<TileValue> {
        let one = self.konst(S::I32, Literal::Int(1), &[])?;
        self.def_hidden(Op::Binary(BinaryOp::Add, counter, one))
    }

    /// Values for a `break` (`breaking`) or `continue` of the innermost loop: its carried
    /// types, the counter of a `loop` advanced for a `continue`.
    fn leave_values(&mut self, breaking: bool) -> R<Vec<TileValue>> {
        let Some(frame) = self.loops.last() else {
            return Err(self.error("a break or continue outside a loop".into()));
        };
        let (types, counter) = (frame.types.clone(), frame.counter);
        let mut values = Vec::with_capacity(types.len());
        let mut rest = &types[..];
        if let Some(c) = counter {
            values.push(if breaking { c } else { self.next_counter(c)? });
            rest = &types[1..];
        }
        values.extend(self.operands_of(rest)?);
        Ok(values)
    }

    /// `if cond { break(..) }` or `if cond { continue(..) }` on the innermost loop.
    pub(crate) fn leave_loop_maybe(&mut self) -> R<()> {
        let cond = self.condition()?;
        let breaking = self.chance(0.5);
        let then = self.nested(&[], |g| {
            let values = g.leave_values(breaking)?;
            g.push(if breaking {
                Stmt::Break { values }
            } else {
                Stmt::Continue { values }
            });
            Ok(Vec::new())
        })?;
        self.push(Stmt::If {
            cond,
            then,
            otherwise: Block::default(),
            results: Vec::new(),
        });
        Ok(())
    }
}
