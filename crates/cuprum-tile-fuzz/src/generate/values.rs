//! Values: operands of a wanted type (a visible value, or a fresh one: a constant, an iota,
//! a load, a scalar broadcast, a conversion, an element-wise operation, or a value of a
//! related shape permuted, reshaped, or reduced and broadcast back), element-wise
//! operations on every type (with the float and integer rules of the module above),
//! shape statements, reductions and their closures, conditions and assertions that hold.

use cuprum_ir::{BinaryOp, CmpOp, Constant, ScalarType, UnaryOp};
use cuprum_tile_ir::{Combine, Elem, Literal, Op, Stmt, TileType, TileValue, shape_of};
use rand::Rng;

use super::{Gen, R};
use crate::tensor::random_element;

use ScalarType as S;

/// How deep fresh operands nest before only leaves (constants, iotas, loads, scalars) are
/// made.
const MAX_LEVEL: u32 = 2;

/// The significand bits of a float type (with the implicit one): integers up to `2^p` are
/// exact.
fn significand_bits(ty: ScalarType) -> u32 {
    match ty {
        S::F16 => 11,
        S::BF16 => 8,
        S::F32 => 24,
        _ => 53,
    }
}

/// The smallest and largest value of integer type `ty`, as constants.
fn int_bounds(ty: ScalarType) -> (Constant, Constant) {
    let bits = ty.bits();
    if ty.is_signed_int() {
        (
            Constant::new(ty, 1u64 << (bits - 1)),
            Constant::new(ty, (1u64 << (bits - 1)) - 1),
        )
    } else {
        (Constant::new(ty, 0), Constant::new(ty, u64::MAX))
    }
}

/// A reduce closure to build: its combination and identity.
#[derive(Clone, Copy, Debug)]
enum ClosureKind {
    /// `a op b`.
    Binary(BinaryOp),
    /// `if a > b { a } else { b }` as a select.
    SelectMax,
    /// `if a < b { a } else { b }` as an `if` with a result.
    IfMin,
    /// `a == b` or `a != b` on `bool`.
    Compare(CmpOp),
}

impl Gen<'_> {
    /// A constant tile (not offered to later operations).
    pub(crate) fn konst(
        &mut self,
        elem: ScalarType,
        value: Literal,
        shape: &[u32],
    ) -> R<TileValue> {
        self.def_hidden(Op::Const {
            value,
            elem: Elem::Known(elem),
            shape: shape_of(shape),
        })
    }

    /// A random literal for `elem`.
    fn literal(&mut self, elem: ScalarType) -> Literal {
        if elem == S::Bool {
            return Literal::Bool(self.chance(0.5));
        }
        match self.below(4) {
            0 => Literal::Exact(random_element(&mut self.rng, elem)),
            1 if elem.is_float() => Literal::Float(self.rng.random_range(-8.0..8.0)),
            _ => Literal::Int(self.rng.random_range(-9..=9)),
        }
    }

    /// Rank-0 `v` repeated to `shape` (a reshape to all ones, then a broadcast).
    pub(crate) fn splat(&mut self, v: TileValue, shape: &[u32]) -> R<TileValue> {
        if shape.is_empty() {
            return Ok(v);
        }
        let ones = self.def_hidden(Op::Reshape {
            value: v,
            shape: shape_of(&vec![1; shape.len()]),
        })?;
        self.def_hidden(Op::Broadcast {
            value: ones,
            shape: shape_of(shape),
        })
    }

    /// Integer `v` of type `ty` clamped to `lo..=hi`.
    pub(crate) fn clamp_int(
        &mut self,
        v: TileValue,
        ty: ScalarType,
        lo: i64,
        hi: i64,
    ) -> R<TileValue> {
        let shape = self.shape_of_value(v);
        let lo = self.konst(ty, Literal::Int(lo), &shape)?;
        let hi = self.konst(ty, Literal::Int(hi), &shape)?;
        let m = self.def_hidden(Op::Binary(BinaryOp::Max, v, lo))?;
        self.def_hidden(Op::Binary(BinaryOp::Min, m, hi))
    }

    /// A value of `elem` and `shape`: a visible one most of the time, else a fresh one.
    pub(crate) fn operand(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        if let Some(v) = self.pick(elem, shape)
            && self.chance(0.65)
        {
            return Ok(v);
        }
        self.fresh(elem, shape)
    }

    /// A new value of `elem` and `shape` (see the module docs), offered to later operations.
    pub(crate) fn fresh(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        self.level += 1;
        let r = self.fresh_inner(elem, shape);
        self.level -= 1;
        let v = r?;
        self.expose(v);
        Ok(v)
    }

    fn fresh_inner(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let rank = shape.len();
        let leaf = self.level > MAX_LEVEL;
        match self.below(if leaf { 5 } else { 12 }) {
            0 => {
                let value = self.literal(elem);
                self.konst(elem, value, shape)
            }
            1 if elem.is_int() && rank > 0 => {
                let axis = self.below(rank) as u32;
                self.def_hidden(Op::Iota {
                    elem: Elem::Known(elem),
                    shape: shape_of(shape),
                    axis,
                })
            }
            1 | 2 => self.load(elem, shape),
            3 if rank > 0 => {
                let s = self.scalar_source(elem)?;
                self.splat(s, shape)
            }
            3 | 4 => self.scalar_source(elem).and_then(|s| self.splat(s, shape)),
            5 | 6 => self.convert_into(elem, shape),
            7 | 8 => self.elementwise(elem, shape),
            9 if rank >= 2 => self.permuted_into(elem, shape),
            10 if rank >= 1 => self.reduced_and_broadcast(elem, shape),
            11 => self.reshaped_into(elem, shape),
            _ => self.load(elem, shape),
        }
    }

    /// A rank-0 value of `elem` from the launch: a scalar parameter, the block index or
    /// count, a tensor's size, converted; or a visible scalar.
    fn scalar_source(&mut self, elem: ScalarType) -> R<TileValue> {
        if let Some(v) = self.pick(elem, &[])
            && self.chance(0.4)
        {
            return Ok(v);
        }
        let raw = match self.below(5) {
            0 | 1 => return self.scalar_param(elem),
            2 => {
                let axis = self.below(3) as u32;
                self.def_hidden(Op::BlockId(axis))?
            }
            3 => {
                let axis = self.below(3) as u32;
                self.def_hidden(Op::NumBlocks(axis))?
            }
            _ => {
                let tensors: Vec<(u32, usize)> = self
                    .cb
                    .args
                    .iter()
                    .enumerate()
                    .filter_map(|(i, a)| match a {
                        crate::ArgData::Tensor(t) if !t.shape.is_empty() => {
                            Some((i as u32, t.shape.len()))
                        }
                        _ => None,
                    })
                    .collect();
                let (tensor, rank) = self.choose(&tensors);
                let axis = self.below(rank) as u32;
                self.def_hidden(Op::TensorDim { tensor, axis })?
            }
        };
        self.convert(raw, elem)
    }

    /// `v` as `elem`: a cast, or for `bool` a comparison with zero.
    pub(crate) fn convert(&mut self, v: TileValue, elem: ScalarType) -> R<TileValue> {
        let from = self.elem_of(v);
        if from == elem {
            return Ok(v);
        }
        if elem == S::Bool {
            let shape = self.shape_of_value(v);
            let zero = if from == S::Bool {
                Literal::Bool(false)
            } else {
                Literal::Int(0)
            };
            let z = self.konst(from, zero, &shape)?;
            let op = self.choose(&[CmpOp::Ne, CmpOp::Gt, CmpOp::Lt]);
            return self.def_hidden(Op::Compare(op, v, z));
        }
        self.def_hidden(Op::Cast {
            value: v,
            to: Elem::Known(elem),
        })
    }

    /// A value of another type converted to `elem`.
    fn convert_into(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let from = self.elem(true);
        let v = self.operand(from, shape)?;
        self.convert(v, elem)
    }

    /// A value whose shape is a permutation of `shape`, permuted into it.
    fn permuted_into(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let perm = self.permutation(shape.len());
        // Source axis `perm[i]` becomes result axis `i`.
        let mut source = vec![0u32; shape.len()];
        for (i, &p) in perm.iter().enumerate() {
            source[p] = shape[i];
        }
        let v = self.operand(elem, &source)?;
        self.def_hidden(Op::Permute {
            value: v,
            perm: perm.iter().map(|&p| p as u32).collect(),
        })
    }

    /// A value of another shape with as many elements, reshaped.
    fn reshaped_into(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let n: u32 = shape.iter().product();
        let other = self.factor_shape(n);
        let v = self.operand(elem, &other)?;
        self.def_hidden(Op::Reshape {
            value: v,
            shape: shape_of(shape),
        })
    }

    /// A random shape of one to three axes with `n` elements.
    pub(crate) fn factor_shape(&mut self, n: u32) -> Vec<u32> {
        let rank = self.rng.random_range(1..=3usize);
        let mut dims = Vec::with_capacity(rank);
        let mut rest = n.max(1);
        for _ in 1..rank {
            let divisors: Vec<u32> = (1..=rest).filter(|d| rest.is_multiple_of(*d)).collect();
            let d = self.choose(&divisors);
            dims.push(d);
            rest /= d;
        }
        dims.push(rest);
        dims
    }

    /// `reduce(x, axis)` broadcast back along `axis` (a softmax's row maximum).
    fn reduced_and_broadcast(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let axis = self.below(shape.len());
        let x = self.operand(elem, shape)?;
        let r = self.reduce(x, axis)?;
        let mut kept = shape.to_vec();
        kept[axis] = 1;
        let line = self.def_hidden(Op::Reshape {
            value: r,
            shape: shape_of(&kept),
        })?;
        self.def_hidden(Op::Broadcast {
            value: line,
            shape: shape_of(shape),
        })
    }

    // ----- element-wise -----

    /// A new element-wise result of `elem` and `shape`, offered to later operations.
    pub(crate) fn elementwise(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let v = if elem == S::Bool {
            self.bool_op(shape)?
        } else if elem.is_int() {
            self.int_op(elem, shape)?
        } else {
            self.float_op(elem, shape)?
        };
        self.expose(v);
        Ok(v)
    }

    fn bool_op(&mut self, shape: &[u32]) -> R<TileValue> {
        match self.below(6) {
            0 => {
                let x = self.operand(S::Bool, shape)?;
                self.def_hidden(Op::Unary(UnaryOp::Not, x))
            }
            1 | 2 => {
                let op = self.choose(&[BinaryOp::And, BinaryOp::Or, BinaryOp::Xor]);
                let x = self.operand(S::Bool, shape)?;
                let y = self.operand(S::Bool, shape)?;
                self.def_hidden(Op::Binary(op, x, y))
            }
            3 => self.select(S::Bool, shape),
            _ => {
                let ty = self.elem(true);
                let op = self.choose(&[
                    CmpOp::Eq,
                    CmpOp::Ne,
                    CmpOp::Lt,
                    CmpOp::Le,
                    CmpOp::Gt,
                    CmpOp::Ge,
                ]);
                let x = self.operand(ty, shape)?;
                let y = self.operand(ty, shape)?;
                self.def_hidden(Op::Compare(op, x, y))
            }
        }
    }

    fn select(&mut self, elem: ScalarType, shape: &[u32]) -> R<TileValue> {
        let cond = self.operand(S::Bool, shape)?;
        let t = self.operand(elem, shape)?;
        let f = self.operand(elem, shape)?;
        self.def_hidden(Op::Select {
            cond,
            if_true: t,
            if_false: f,
        })
    }

    fn int_op(&mut self, ty: ScalarType, shape: &[u32]) -> R<TileValue> {
        match self.below(12) {
            0 => {
                let u = if ty.is_signed_int() && self.chance(0.5) {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Not
                };
                let x = self.operand(ty, shape)?;
                self.def_hidden(Op::Unary(u, x))
            }
            1..=3 => {
                let op = self.choose(&[
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::And,
                    BinaryOp::Or,
                    BinaryOp::Xor,
                    BinaryOp::Min,
                    BinaryOp::Max,
                ]);
                let x = self.operand(ty, shape)?;
                let y = self.operand(ty, shape)?;
                self.def_hidden(Op::Binary(op, x, y))
            }
            4 => {
                let op = self.choose(&[BinaryOp::Div, BinaryOp::Rem]);
                let x = self.operand(ty, shape)?;
                let d = self.operand(ty, shape)?;
                let d = self.safe_divisor(x, d, ty)?;
                self.def_hidden(Op::Binary(op, x, d))
            }
            5 => {
                let op = self.choose(&[BinaryOp::Shl, BinaryOp::Shr]);
                let x = self.operand(ty, shape)?;
                let s = self.operand(S::U32, shape)?;
                self.def_hidden(Op::Binary(op, x, s))
            }
            6 => self.select(ty, shape),
            7 | 8 => self.convert_into(ty, shape),
            9 => self.bitcast_into(ty, shape),
            _ => {
                let op = self.choose(&[BinaryOp::Add, BinaryOp::Mul, BinaryOp::Xor]);
                let x = self.operand(ty, shape)?;
                let y = self.fresh(ty, shape)?;
                self.def_hidden(Op::Binary(op, x, y))
            }
        }
    }

    /// `d` made a safe divisor for `x`: 1 where it is 0, and where it is `-1` under a
    /// signed `MIN`.
    fn safe_divisor(&mut self, x: TileValue, d: TileValue, ty: ScalarType) -> R<TileValue> {
        let shape = self.shape_of_value(d);
        let zero = self.konst(ty, Literal::Int(0), &shape)?;
        let one = self.konst(ty, Literal::Int(1), &shape)?;
        let is_zero = self.def_hidden(Op::Compare(CmpOp::Eq, d, zero))?;
        let d = self.def_hidden(Op::Select {
            cond: is_zero,
            if_true: one,
            if_false: d,
        })?;
        if !ty.is_signed_int() {
            return Ok(d);
        }
        let (min, _) = int_bounds(ty);
        let min = self.konst(ty, Literal::Exact(min), &shape)?;
        let minus_one = self.konst(ty, Literal::Int(-1), &shape)?;
        let x_min = self.def_hidden(Op::Compare(CmpOp::Eq, x, min))?;
        let d_m1 = self.def_hidden(Op::Compare(CmpOp::Eq, d, minus_one))?;
        let both = self.def_hidden(Op::Binary(BinaryOp::And, x_min, d_m1))?;
        self.def_hidden(Op::Select {
            cond: both,
            if_true: one,
            if_false: d,
        })
    }

    fn float_op(&mut self, ty: ScalarType, shape: &[u32]) -> R<TileValue> {
        match self.below(13) {
            12 if mma_fits(shape) && matches!(ty, ScalarType::F32 | ScalarType::F64) => {
                self.mma(ty, shape)
            }
            0 | 1 => {
                let u = self.choose(&[
                    UnaryOp::Neg,
                    UnaryOp::Abs,
                    UnaryOp::Sqrt,
                    UnaryOp::Floor,
                    UnaryOp::Ceil,
                    UnaryOp::Round,
                    UnaryOp::Trunc,
                ]);
                let x = self.operand(ty, shape)?;
                self.def_hidden(Op::Unary(u, x))
            }
            2..=4 => {
                let op = self.choose(&[
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Rem,
                    BinaryOp::Min,
                    BinaryOp::Max,
                ]);
                let x = self.operand(ty, shape)?;
                let y = self.operand(ty, shape)?;
                self.float_binary(op, x, y)
            }
            5 => {
                let a = self.operand(ty, shape)?;
                let b = self.operand(ty, shape)?;
                let c = self.operand(ty, shape)?;
                self.def_hidden(Op::Ternary(cuprum_ir::TernaryOp::MulAdd, a, b, c))
            }
            6 => self.select(ty, shape),
            7 | 8 => self.convert_into(ty, shape),
            9 => self.bitcast_into(ty, shape),
            _ => {
                let op = self.choose(&[BinaryOp::Add, BinaryOp::Mul, BinaryOp::Sub]);
                let x = self.operand(ty, shape)?;
                let y = self.fresh(ty, shape)?;
                self.float_binary(op, x, y)
            }
        }
    }

    /// `mma(a, b, acc)` giving a tile of `ty` (`F32` or `F64`) and `shape` (rank 2 or 3): a
    /// chain of fused multiply-adds of `ty` inputs, or for `F32` now and then one on the
    /// tensor cores (`f16`/`bf16` inputs, or `f32` values converted to `tf32`; K mostly a
    /// multiple of 16): of `shape` itself where its M
    /// and N are multiples of 16 and 8, else of a small tile whose maximum (exact in any
    /// order) is spread over `shape`. Any NaN is made canonical (the payloads of NaN inputs
    /// are not part of the semantics).
    fn mma(&mut self, ty: ScalarType, shape: &[u32]) -> R<TileValue> {
        let r = shape.len();
        let (m, n) = (shape[r - 2], shape[r - 1]);
        if ty == ScalarType::F32 && self.chance(0.6) {
            let input = self.choose(&[ScalarType::F16, ScalarType::BF16, ScalarType::Tf32]);
            // Multiples of 16 mostly; any K now and then (a shorter last step).
            let k = if self.chance(0.7) {
                16 * (1 + self.below(3) as u32)
            } else {
                1 + self.below(40) as u32
            };
            if m.is_multiple_of(16) && n.is_multiple_of(8) {
                return self.mma_of(input, ty, shape, k);
            }
            let small = [
                16 * (1 + self.below(2) as u32),
                8 * (1 + self.below(2) as u32),
            ];
            let d = self.mma_of(input, ty, &small, k)?;
            let rows = self.def_hidden(Op::Reduce {
                value: d,
                axis: 1,
                combine: Combine::Max,
            })?;
            let max = self.def_hidden(Op::Reduce {
                value: rows,
                axis: 0,
                combine: Combine::Max,
            })?;
            let max = self.plus_zero(max)?;
            return self.splat(max, shape);
        }
        let k = 1 + self.below(24) as u32;
        self.mma_of(ty, ty, shape, k)
    }

    /// `mma(a, b, acc)` of `input` operands into an accumulator of `acc_ty` and `shape`,
    /// with `k` products per element, its NaNs canonical.
    fn mma_of(
        &mut self,
        input: ScalarType,
        acc_ty: ScalarType,
        shape: &[u32],
        k: u32,
    ) -> R<TileValue> {
        let r = shape.len();
        let mut a_shape = shape.to_vec();
        a_shape[r - 1] = k;
        let mut b_shape = shape.to_vec();
        b_shape[r - 2] = k;
        let a = self.mma_operand(input, &a_shape)?;
        let b = self.mma_operand(input, &b_shape)?;
        let acc = self.operand(acc_ty, shape)?;
        let d = self.def_hidden(Op::Mma { a, b, acc })?;
        self.canonical(d)
    }

    /// An `mma` operand of `input` and `shape`: made as any operand is, but a `tf32` one
    /// (which has no arithmetic to make it with) is an `f32` operand converted (rounded).
    fn mma_operand(&mut self, input: ScalarType, shape: &[u32]) -> R<TileValue> {
        if input.has_arithmetic() {
            return self.operand(input, shape);
        }
        let x = self.operand(ScalarType::F32, shape)?;
        self.def_hidden(Op::Cast {
            value: x,
            to: Elem::Known(input),
        })
    }

    /// `x op y` on floats, `+ 0.0` after `min`/`max` (the sign of their zero result is
    /// unspecified when the operands are `+0` and `-0`).
    fn float_binary(&mut self, op: BinaryOp, x: TileValue, y: TileValue) -> R<TileValue> {
        let r = self.def_hidden(Op::Binary(op, x, y))?;
        if matches!(op, BinaryOp::Min | BinaryOp::Max) {
            return self.plus_zero(r);
        }
        Ok(r)
    }

    /// Float `v + 0.0`: a zero of either sign becomes `+0`, anything else stays.
    pub(crate) fn plus_zero(&mut self, v: TileValue) -> R<TileValue> {
        let ty = self.elem_of(v);
        let shape = self.shape_of_value(v);
        let zero = self.konst(ty, Literal::Float(0.0), &shape)?;
        self.def_hidden(Op::Binary(BinaryOp::Add, v, zero))
    }

    /// Float `v` with every NaN the canonical one (`v != v ? NaN : v`).
    fn canonical(&mut self, v: TileValue) -> R<TileValue> {
        let ty = self.elem_of(v);
        if !ty.is_float() {
            return Ok(v);
        }
        let shape = self.shape_of_value(v);
        let nan = self.konst(ty, Literal::Float(f64::NAN), &shape)?;
        let is_nan = self.def_hidden(Op::Compare(CmpOp::Ne, v, v))?;
        self.def_hidden(Op::Select {
            cond: is_nan,
            if_true: nan,
            if_false: v,
        })
    }

    /// A value of another type of `ty`'s size, bitcast to `ty` (floats canonical on both
    /// sides).
    fn bitcast_into(&mut self, ty: ScalarType, shape: &[u32]) -> R<TileValue> {
        let same: Vec<ScalarType> = ScalarType::ALL
            .into_iter()
            .filter(|&t| {
                t != ty && t != S::Bool && t.has_arithmetic() && t.size_bytes() == ty.size_bytes()
            })
            .collect();
        let from = self.choose(&same);
        let x = self.operand(from, shape)?;
        let x = self.canonical(x)?;
        let r = self.def_hidden(Op::Bitcast {
            value: x,
            to: Elem::Known(ty),
        })?;
        self.canonical(r)
    }

    // ----- shapes and reductions -----

    /// A shape operation on a visible value (or a new one of `W`).
    pub(crate) fn shape_stmt(&mut self) -> R<()> {
        let elem = self.elem(true);
        let work = self.work.clone();
        let v = match self.below(5) {
            0 if work.len() >= 2 => {
                let x = self.operand(elem, &work)?;
                let perm = self.permutation(work.len());
                self.def_hidden(Op::Permute {
                    value: x,
                    perm: perm.iter().map(|&p| p as u32).collect(),
                })?
            }
            1 => {
                let x = self.operand(elem, &work)?;
                let n = work.iter().product();
                let shape = self.factor_shape(n);
                self.def_hidden(Op::Reshape {
                    value: x,
                    shape: shape_of(&shape),
                })?
            }
            2 if !work.is_empty() => self.reduced_and_broadcast(elem, &work)?,
            3 if elem.is_int() && !work.is_empty() => {
                let axis = self.below(work.len()) as u32;
                self.def_hidden(Op::Iota {
                    elem: Elem::Known(elem),
                    shape: shape_of(&work),
                    axis,
                })?
            }
            _ => {
                let s = self.operand(elem, &[])?;
                self.splat(s, &work)?
            }
        };
        self.expose(v);
        Ok(())
    }

    /// A reduction of a visible tile (or a new one of `W`) along a random axis.
    pub(crate) fn reduce_stmt(&mut self) -> R<()> {
        let x = match self.pick_where(|t| !t.is_scalar()) {
            Some(x) if self.chance(0.6) => x,
            _ => {
                let elem = self.elem(true);
                let work = self.work.clone();
                self.operand(elem, &work)?
            }
        };
        let rank = self.shape_of_value(x).len();
        let v = if self.chance(0.25) {
            self.reduced_to_scalar(x)?
        } else {
            let axis = self.below(rank);
            self.reduce(x, axis)?
        };
        self.expose(v);
        Ok(())
    }

    /// `x` reduced along every axis to a rank-0 value.
    pub(crate) fn reduced_to_scalar(&mut self, x: TileValue) -> R<TileValue> {
        let mut v = x;
        while !self.ty(v).is_scalar() {
            let rank = self.shape_of_value(v).len();
            let axis = self.below(rank);
            v = self.reduce(v, axis)?;
        }
        Ok(v)
    }

    /// `x` reduced along `axis` by a combination valid for its element type, the same in
    /// any order of combination (see the module docs).
    pub(crate) fn reduce(&mut self, x: TileValue, axis: usize) -> R<TileValue> {
        let ty = self.elem_of(x);
        let n = self.shape_of_value(x)[axis];
        let axis32 = axis as u32;
        if ty == S::Bool {
            let kind = self.choose(&[
                ClosureKind::Binary(BinaryOp::Or),
                ClosureKind::Binary(BinaryOp::And),
                ClosureKind::Binary(BinaryOp::Xor),
                ClosureKind::Compare(CmpOp::Eq),
                ClosureKind::Compare(CmpOp::Ne),
            ]);
            let combine = self.closure(ty, kind)?;
            return self.def_hidden(Op::Reduce {
                value: x,
                axis: axis32,
                combine,
            });
        }
        if ty.is_int() {
            let combine = match self.below(9) {
                0 => Combine::Sum,
                1 => Combine::Prod,
                2 => Combine::Min,
                3 => Combine::Max,
                _ => {
                    let kind = self.choose(&[
                        ClosureKind::Binary(BinaryOp::Add),
                        ClosureKind::Binary(BinaryOp::Mul),
                        ClosureKind::Binary(BinaryOp::Xor),
                        ClosureKind::Binary(BinaryOp::Or),
                        ClosureKind::Binary(BinaryOp::And),
                        ClosureKind::Binary(BinaryOp::Min),
                        ClosureKind::Binary(BinaryOp::Max),
                        ClosureKind::SelectMax,
                        ClosureKind::IfMin,
                    ]);
                    self.closure(ty, kind)?
                }
            };
            return self.def_hidden(Op::Reduce {
                value: x,
                axis: axis32,
                combine,
            });
        }
        // Floats. Sums of integers in [-k, k] along an axis of n are exact while n * k fits
        // the significand; along an axis longer than 2^p (a bf16 axis of 1024) no k does,
        // so only the combinations exact in any order are left there.
        let exact_bound = 1u64 << significand_bits(ty);
        let k = (exact_bound / u64::from(n.max(1))).clamp(1, 64) as i64;
        let sums = u64::from(n) <= exact_bound;
        let choice = match self.below(7) {
            2 | 4 if !sums => 1,
            c => c,
        };
        let (operand, combine, zero_fix) = match choice {
            0 => (x, Combine::Min, true),
            1 => (x, Combine::Max, true),
            2 => (self.exact(x, k)?, Combine::Sum, false),
            3 => (self.exact(x, 1)?, Combine::Prod, false),
            4 => {
                let c = self.closure(ty, ClosureKind::Binary(BinaryOp::Add))?;
                (self.exact(x, k)?, c, false)
            }
            5 => {
                let c = self.closure(ty, ClosureKind::Binary(BinaryOp::Max))?;
                (x, c, true)
            }
            _ => {
                let c = self.closure(ty, ClosureKind::SelectMax)?;
                (self.exact(x, k)?, c, true)
            }
        };
        let r = self.def_hidden(Op::Reduce {
            value: operand,
            axis: axis32,
            combine,
        })?;
        if zero_fix { self.plus_zero(r) } else { Ok(r) }
    }

    /// Float `x` rounded to an integer and clamped to `[-k, k]` (a NaN becomes one of the
    /// bounds), so that sums of up to `2^p / k` of them are exact in any order.
    fn exact(&mut self, x: TileValue, k: i64) -> R<TileValue> {
        let ty = self.elem_of(x);
        let shape = self.shape_of_value(x);
        let r = self.def_hidden(Op::Unary(UnaryOp::Round, x))?;
        let lo = self.konst(ty, Literal::Int(-k), &shape)?;
        let hi = self.konst(ty, Literal::Int(k), &shape)?;
        let m = self.def_hidden(Op::Binary(BinaryOp::Max, r, lo))?;
        self.def_hidden(Op::Binary(BinaryOp::Min, m, hi))
    }

    /// A reduce closure of `kind` on elements of `ty`, with its identity.
    fn closure(&mut self, ty: ScalarType, kind: ClosureKind) -> R<Combine> {
        let a = self.cb.b.value(TileType::scalar(ty));
        let b = self.cb.b.value(TileType::scalar(ty));
        let (lo, hi) = if ty.is_int() {
            let (lo, hi) = int_bounds(ty);
            (Literal::Exact(lo), Literal::Exact(hi))
        } else {
            (
                Literal::Float(f64::NEG_INFINITY),
                Literal::Float(f64::INFINITY),
            )
        };
        let identity = match kind {
            ClosureKind::Binary(BinaryOp::Add) if ty.is_float() => Literal::Float(-0.0),
            ClosureKind::Binary(BinaryOp::Add | BinaryOp::Xor | BinaryOp::Or) => {
                if ty == S::Bool {
                    Literal::Bool(false)
                } else {
                    Literal::Int(0)
                }
            }
            // NaN: `min`/`max` with a NaN give the other operand, so NaN is their identity
            // (an infinity is not: `max(-inf, NaN)` is `-inf`, where a line of NaNs gives NaN).
            ClosureKind::Binary(BinaryOp::Min | BinaryOp::Max) if ty.is_float() => {
                Literal::Float(f64::NAN)
            }
            ClosureKind::Binary(BinaryOp::Mul) => Literal::Int(1),
            ClosureKind::Binary(BinaryOp::And) => {
                if ty == S::Bool {
                    Literal::Bool(true)
                } else {
                    Literal::Int(-1)
                }
            }
            ClosureKind::Binary(BinaryOp::Min) | ClosureKind::IfMin => hi,
            ClosureKind::Binary(_) | ClosureKind::SelectMax => lo,
            ClosureKind::Compare(CmpOp::Eq) => Literal::Bool(true),
            ClosureKind::Compare(_) => Literal::Bool(false),
        };
        self.cb.b.begin_block();
        let out = self.closure_body(kind, a, b);
        let out = match out {
            Ok(v) => v,
            Err(e) => {
                self.cb.b.end_block(Vec::new());
                return Err(e);
            }
        };
        let body = self.cb.b.end_block(vec![out]);
        Ok(Combine::Closure {
            a,
            b,
            body,
            identity,
        })
    }

    fn closure_body(&mut self, kind: ClosureKind, a: TileValue, b: TileValue) -> R<TileValue> {
        match kind {
            ClosureKind::Binary(op) => self.def_hidden(Op::Binary(op, a, b)),
            ClosureKind::Compare(op) => self.def_hidden(Op::Compare(op, a, b)),
            ClosureKind::SelectMax => {
                let gt = self.def_hidden(Op::Compare(CmpOp::Gt, a, b))?;
                self.def_hidden(Op::Select {
                    cond: gt,
                    if_true: a,
                    if_false: b,
                })
            }
            ClosureKind::IfMin => {
                let lt = self.def_hidden(Op::Compare(CmpOp::Lt, a, b))?;
                let r = self.cb.b.value(self.ty(a));
                self.cb.b.begin_block();
                let then = self.cb.b.end_block(vec![a]);
                self.cb.b.begin_block();
                let otherwise = self.cb.b.end_block(vec![b]);
                self.push(Stmt::If {
                    cond: lt,
                    then,
                    otherwise,
                    results: vec![r],
                });
                Ok(r)
            }
        }
    }

    // ----- conditions -----

    /// A rank-0 `bool`: a comparison of a block index, a launch scalar or a reduction with
    /// a constant, a `bool` parameter, or a `bool` tile reduced.
    pub(crate) fn condition(&mut self) -> R<TileValue> {
        match self.below(6) {
            0 => {
                let axis = self.below(3) as u32;
                let id = self.def_hidden(Op::BlockId(axis))?;
                let k = self.rng.random_range(0..=2);
                let c = self.konst(S::I32, Literal::Int(k), &[])?;
                let op = self.choose(&[CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Ge]);
                self.def(Op::Compare(op, id, c))
            }
            1 => self.scalar_param(S::Bool),
            2 => {
                let work = self.work.clone();
                let t = self.operand(S::Bool, &work)?;
                self.reduced_to_scalar(t)
            }
            _ => {
                let ty = self.elem(false);
                let x = self.operand(ty, &[])?;
                let value = self.literal(ty);
                let c = self.konst(ty, value, &[])?;
                let op = self.choose(&[
                    CmpOp::Eq,
                    CmpOp::Ne,
                    CmpOp::Lt,
                    CmpOp::Le,
                    CmpOp::Gt,
                    CmpOp::Ge,
                ]);
                self.def(Op::Compare(op, x, c))
            }
        }
    }

    /// An assertion that holds: `x == x` for an integer, `b || !b` for a `bool`.
    pub(crate) fn assert_true(&mut self) -> R<()> {
        let cond = if self.chance(0.5) {
            let ty = self.int_elem();
            let x = self.operand(ty, &[])?;
            self.def_hidden(Op::Compare(CmpOp::Eq, x, x))?
        } else {
            let b = self.operand(S::Bool, &[])?;
            let n = self.def_hidden(Op::Unary(UnaryOp::Not, b))?;
            self.def_hidden(Op::Binary(BinaryOp::Or, b, n))?
        };
        self.push(Stmt::Assert {
            cond,
            message: format!("tile fuzz seed {}: an assertion that holds", self.seed),
        });
        Ok(())
    }
}

/// Whether an `mma` giving a tile of `shape` stays within what one block lowers: a matrix or
/// a few batches (each thread holds fragments of every batch), and operands and result small
/// enough to move between layouts through shared memory.
fn mma_fits(shape: &[u32]) -> bool {
    let elements: u64 = shape.iter().map(|&n| u64::from(n)).product();
    match shape.len() {
        2 => elements <= 8192,
        3 => shape[0] <= 4 && elements <= 8192,
        _ => false,
    }
}
