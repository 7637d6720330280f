//! The tile IR's validator: every rule of [`crate::kernel`] that can be decided, checked in
//! one walk.
//!
//! Front ends run it on what they build (a failure there is a front-end bug or, for shapes
//! that depend on parameters, a user error found at specialization), tests run it after
//! every transformation, and [`crate::specialize`] runs it on every specialized kernel, when
//! all shapes are known. On a generic kernel, a rule about sizes that name parameters
//! (element counts of a reshape, say) is checked only when the sizes are equal or known.

use std::collections::HashSet;
use std::fmt;

use cuprum_ir::{BinaryOp, ScalarType, UnaryOp};

use crate::kernel::*;
use crate::types::{Dim, Elem, Shape, ShapeDisplay, TileType, element_count};

/// A broken rule, with the kernel and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tile kernel `{kernel}`: {message}")]
pub struct TileValidationError {
    /// The kernel's name.
    pub kernel: String,
    /// What is wrong.
    pub message: String,
}

/// Validates every kernel of `module`.
pub fn validate_module(module: &TileModule) -> Result<(), TileValidationError> {
    module.kernels.iter().try_for_each(validate_kernel)
}

/// Validates one kernel (see the module docs).
pub fn validate_kernel(kernel: &TileKernel) -> Result<(), TileValidationError> {
    let mut v = Validator {
        kernel,
        defined: HashSet::new(),
        scopes: vec![Vec::new()],
        loops: Vec::new(),
        mapped: Vec::new(),
        typing_only: false,
    };
    if !cuprum_ir::validate::is_ptx_identifier(&kernel.name) {
        return Err(v.error(format!(
            "`{}` cannot name a kernel: use letters, digits and `_`, not starting with a digit",
            kernel.name
        )));
    }
    v.params().map_err(|m| v.error(m))?;
    v.block(&kernel.body, &[]).map_err(|m| v.error(m))?;
    if !kernel.body.yields.is_empty() {
        return Err(v.error("the kernel body yields values".into()));
    }
    Ok(())
}

/// The type `op` gives in `kernel`, after checking its operands' types (not where they are
/// defined): the one definition of each operation's typing rule, which the validator and
/// the builders of tile IR share.
pub fn result_type(kernel: &TileKernel, op: &Op) -> Result<TileType, TileValidationError> {
    let mut v = Validator {
        kernel,
        defined: HashSet::new(),
        scopes: vec![Vec::new()],
        loops: Vec::new(),
        mapped: Vec::new(),
        typing_only: true,
    };
    v.op(op).map_err(|m| v.error(m))
}

/// A loop being walked: the types its `Continue` and `Break` give.
struct LoopTypes {
    args: Vec<TileType>,
    results: Vec<TileType>,
}

struct Validator<'k> {
    kernel: &'k TileKernel,
    /// Values defined so far anywhere (each may be defined once).
    defined: HashSet<TileValue>,
    /// Values visible in each open block, innermost last.
    scopes: Vec<Vec<TileValue>>,
    loops: Vec<LoopTypes>,
    /// The mapped outputs of the enclosing `ForTiles`, innermost last.
    mapped: Vec<u32>,
    /// Only operations' types are asked ([`result_type`]): where values are defined is not
    /// checked, and nothing is recorded as defined.
    typing_only: bool,
}

type Check = Result<(), String>;

fn dims_equal(a: &[Dim], b: &[Dim]) -> bool {
    a == b
}

/// Checks the operand types of an `Op::Mma` (see its docs): ranks 2 or 3, matching `M`, `N`,
/// `K` and batch sizes, and element types [`MmaKind::of`] accepts. Sizes and types still
/// generic are checked when specialized.
fn mma_type(a: &TileType, b: &TileType, acc: &TileType) -> Check {
    let rank = a.rank();
    if !(rank == 2 || rank == 3) || b.rank() != rank || acc.rank() != rank {
        return Err(format!(
            "mma of {a} and {b} into {acc}: the operands must all be matrices (rank 2) or all \
             batches of matrices (rank 3)"
        ));
    }
    let (m, k) = (a.shape[rank - 2], a.shape[rank - 1]);
    let (k2, n) = (b.shape[rank - 2], b.shape[rank - 1]);
    let (m2, n2) = (acc.shape[rank - 2], acc.shape[rank - 1]);
    let differ = |x: Dim, y: Dim| x != y && x.known().is_some() && y.known().is_some();
    let mut pairs = vec![
        (k, k2, "K (columns of a, rows of b)"),
        (m, m2, "M (rows of a and of the accumulator)"),
        (n, n2, "N (columns of b and of the accumulator)"),
    ];
    if rank == 3 {
        pairs.push((a.shape[0], b.shape[0], "the batch size"));
        pairs.push((a.shape[0], acc.shape[0], "the batch size"));
    }
    for (x, y, what) in pairs {
        if differ(x, y) {
            return Err(format!(
                "mma of {a} and {b} into {acc}: {what} differs ({x} and {y})"
            ));
        }
    }
    if let (Elem::Known(x), Elem::Known(y)) = (a.elem, b.elem)
        && x != y
    {
        return Err(format!(
            "mma of {a} and {b}: the inputs' element types differ"
        ));
    }
    if let (Elem::Known(input), Elem::Known(accum)) = (a.elem, acc.elem)
        && MmaKind::of(input, accum).is_none()
    {
        return Err(format!(
            "mma of {input} inputs into a {accum} accumulator: mma takes f16, bf16 or tf32 \
             inputs with an f32 accumulator, or f32 or f64 inputs with an accumulator of the \
             same type"
        ));
    }
    Ok(())
}

impl<'k> Validator<'k> {
    fn error(&self, message: String) -> TileValidationError {
        TileValidationError {
            kernel: self.kernel.name.clone(),
            message,
        }
    }

    fn ty(&self, v: TileValue) -> Result<&'k TileType, String> {
        self.kernel
            .values
            .try_get(v)
            .ok_or_else(|| format!("{v:?} is not a value of the kernel"))
    }

    fn visible(&self, v: TileValue) -> bool {
        self.scopes.iter().any(|s| s.contains(&v))
    }

    fn use_value(&self, v: TileValue) -> Result<&'k TileType, String> {
        let t = self.ty(v)?;
        if !self.typing_only && !self.visible(v) {
            return Err(format!("{v:?} is used where it is not defined"));
        }
        Ok(t)
    }

    fn define(&mut self, v: TileValue) -> Check {
        self.ty(v)?;
        if self.typing_only {
            return Ok(());
        }
        if !self.defined.insert(v) {
            return Err(format!("{v:?} is defined twice"));
        }
        if let Some(s) = self.scopes.last_mut() {
            s.push(v);
        }
        Ok(())
    }

    fn elem_ok(&self, e: Elem) -> Check {
        match e {
            Elem::Known(_) => Ok(()),
            Elem::Param(i) if (i as usize) < self.kernel.types.len() => Ok(()),
            Elem::Param(i) => Err(format!("element type parameter {i} does not exist")),
        }
    }

    fn shape_ok(&self, shape: &[Dim]) -> Check {
        for d in shape {
            match *d {
                Dim::Known(0) => return Err("a tile dimension of size 0".into()),
                Dim::Known(_) => {}
                Dim::Param(i) => match self.kernel.consts.get(i as usize) {
                    Some(c) if c.ty.is_int() => {}
                    Some(c) => {
                        return Err(format!(
                            "const parameter `{}` of type {} sizes a tile",
                            c.name, c.ty
                        ));
                    }
                    None => return Err(format!("const parameter {i} does not exist")),
                },
            }
        }
        Ok(())
    }

    fn params(&self) -> Check {
        for p in &self.kernel.params {
            match &p.kind {
                ParamKind::Scalar(e) => self.elem_ok(*e)?,
                ParamKind::Tensor(t) => {
                    self.elem_ok(t.elem)?;
                    if t.access == TensorAccess::Raw && t.dims != [TensorDim::Dynamic] {
                        return Err(format!(
                            "raw pointer `{}` is a rank-1 tensor of dynamic size",
                            p.name
                        ));
                    }
                    // Outputs cut into tiles (one per block, or dealt by a schedule).
                    let tiled = match t.access {
                        TensorAccess::Partitioned => {
                            Some(("partitioned tensor", t.partition_tile()))
                        }
                        TensorAccess::Mapped => Some(("mapped output", t.mapped_tile())),
                        TensorAccess::Read | TensorAccess::Raw => None,
                    };
                    if let Some((what, tile)) = tiled {
                        let tile = tile.ok_or_else(|| {
                            format!("{what} `{}` has a dynamic tile dimension", p.name)
                        })?;
                        if tile.is_empty() || tile.len() > 3 {
                            return Err(format!(
                                "{what} `{}` has rank {}; 1 to 3 are supported",
                                p.name,
                                tile.len()
                            ));
                        }
                        self.shape_ok(&tile)?;
                    }
                    for d in &t.dims {
                        if let TensorDim::Static(d) = d {
                            self.shape_ok(std::slice::from_ref(d))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn tensor(&self, index: u32) -> Result<&'k TensorParam, String> {
        match self.kernel.params.get(index as usize).map(|p| &p.kind) {
            Some(ParamKind::Tensor(t)) => Ok(t),
            _ => Err(format!("parameter {index} is not a tensor")),
        }
    }

    /// Checks the operands of a gather or scatter through raw pointer `tensor`: integer
    /// `offsets`, and a `Bool` `mask` of their shape. Returns the shape.
    fn raw_access(
        &self,
        tensor: u32,
        offsets: TileValue,
        mask: Option<TileValue>,
        what: &str,
    ) -> Result<Shape, String> {
        let t = self.tensor(tensor)?;
        if t.access != TensorAccess::Raw {
            return Err(format!(
                "{what} through parameter {tensor}, which is not a raw pointer (`*mut T` of an `unsafe` entry)"
            ));
        }
        let o = self.use_value(offsets)?;
        if !matches!(o.elem, Elem::Known(s) if s.is_int()) {
            return Err(format!("{what}'s offsets must be integers, not {o}"));
        }
        if let Some(m) = mask {
            let m = self.use_value(m)?;
            self.expect(
                m,
                &TileType {
                    elem: Elem::Known(ScalarType::Bool),
                    shape: o.shape.clone(),
                },
                &format!("{what}'s mask"),
            )?;
        }
        Ok(o.shape.clone())
    }

    fn expect(&self, got: &TileType, want: &TileType, what: &str) -> Check {
        if got.elem == want.elem && dims_equal(&got.shape, &want.shape) {
            Ok(())
        } else {
            Err(format!("{what}: {got} where {want} is required"))
        }
    }

    fn scalar_int(&self, v: TileValue, what: &str) -> Result<ScalarType, String> {
        let t = self.use_value(v)?;
        match t.elem {
            Elem::Known(s) if t.is_scalar() && s.is_int() => Ok(s),
            _ => Err(format!("{what} must be a rank-0 integer, not {t}")),
        }
    }

    fn scalar_bool(&self, v: TileValue, what: &str) -> Check {
        let t = self.use_value(v)?;
        if t.is_scalar() && t.elem == Elem::Known(ScalarType::Bool) {
            Ok(())
        } else {
            Err(format!("{what} must be a rank-0 bool, not {t}"))
        }
    }

    /// Walks `block`, whose yields must have `yields` types.
    fn block(&mut self, block: &Block, yields: &[TileType]) -> Check {
        self.scopes.push(Vec::new());
        let mut ended = false;
        for s in &block.stmts {
            if ended {
                return Err("a statement follows a break, continue or return".into());
            }
            self.stmt(s)?;
            ended = s.is_terminator();
        }
        if !ended {
            if block.yields.len() != yields.len() {
                return Err(format!(
                    "a block yields {} values where {} are expected",
                    block.yields.len(),
                    yields.len()
                ));
            }
            for (v, want) in block.yields.iter().zip(yields) {
                let got = self.use_value(*v)?;
                self.expect(got, want, "a yielded value")?;
            }
        } else if !block.yields.is_empty() {
            return Err("a block that ends in a break, continue or return yields values".into());
        }
        self.scopes.pop();
        Ok(())
    }

    fn types_of(&self, vs: &[TileValue]) -> Result<Vec<TileType>, String> {
        vs.iter().map(|v| self.ty(*v).cloned()).collect()
    }

    fn stmt(&mut self, s: &Stmt) -> Check {
        match s {
            Stmt::Def { value, op } => {
                let want = self.op(op)?;
                let got = self.ty(*value)?;
                self.expect(got, &want, "a definition's recorded type")?;
                self.define(*value)
            }
            Stmt::Store { tensor, value } => {
                let t = self.tensor(*tensor)?;
                let tile = t
                    .partition_tile()
                    .ok_or_else(|| format!("a store to parameter {tensor}, which is not a partitioned tensor (only `&mut Tensor` outputs are written)"))?;
                let got = self.use_value(*value)?;
                self.expect(
                    got,
                    &TileType {
                        elem: t.elem,
                        shape: tile,
                    },
                    "a store",
                )
            }
            Stmt::Scatter {
                tensor,
                offsets,
                value,
                mask,
            } => {
                let shape = self.raw_access(*tensor, *offsets, *mask, "a scatter")?;
                let t = self.tensor(*tensor)?;
                let got = self.use_value(*value)?;
                self.expect(
                    got,
                    &TileType {
                        elem: t.elem,
                        shape,
                    },
                    "a scattered value",
                )
            }
            Stmt::StorePart {
                tensor,
                tile,
                index,
                value,
            } => {
                let t = self.tensor(*tensor)?;
                if t.partition_tile().is_none() {
                    return Err(format!(
                        "a sub-tile store to parameter {tensor}, which is not a partitioned tensor (only `&mut Tensor` outputs are written)"
                    ));
                }
                if tile.len() != t.rank() || index.len() != t.rank() {
                    return Err(format!(
                        "a store of a {} sub-tile with {} indices to a rank-{} tensor",
                        ShapeDisplay(tile),
                        index.len(),
                        t.rank()
                    ));
                }
                self.shape_ok(tile)?;
                for i in index {
                    self.scalar_int(*i, "a sub-tile index")?;
                }
                let got = self.use_value(*value)?;
                self.expect(
                    got,
                    &TileType {
                        elem: t.elem,
                        shape: tile.clone(),
                    },
                    "a sub-tile store",
                )
            }
            Stmt::If {
                cond,
                then,
                otherwise,
                results,
            } => {
                self.scalar_bool(*cond, "an if condition")?;
                let types = self.types_of(results)?;
                self.block(then, &types)?;
                self.block(otherwise, &types)?;
                for r in results {
                    self.define(*r)?;
                }
                Ok(())
            }
            Stmt::For {
                counter,
                start,
                end,
                step,
                args,
                inits,
                body,
                results,
            } => {
                let ty = self.scalar_int(*start, "a for loop's start")?;
                for (v, what) in [(*end, "end"), (*step, "step")] {
                    if self.scalar_int(v, what)? != ty {
                        return Err(format!("a for loop's {what} is not of its start's type"));
                    }
                }
                if self.ty(*counter)? != &TileType::scalar(ty) {
                    return Err("a for loop's counter is not of its start's type".into());
                }
                self.loop_stmt(&[*counter], args, inits, body, results)
            }
            Stmt::ForTiles {
                tensor,
                map,
                coords,
                args,
                inits,
                body,
                results,
            } => {
                let t = self.tensor(*tensor)?;
                if t.access != TensorAccess::Mapped {
                    return Err(format!(
                        "a loop over the tiles of parameter {tensor}, which is not a mapped output"
                    ));
                }
                if map.len() != t.rank() || coords.len() != t.rank() {
                    return Err(format!(
                        "a loop over the tiles of a rank-{} mapped output with a map of rank {} and {} coordinates",
                        t.rank(),
                        map.len(),
                        coords.len()
                    ));
                }
                self.shape_ok(map)?;
                let rank = map.len();
                for (axis, d) in map.iter().enumerate() {
                    let grouped = rank >= 2 && axis == rank - 2;
                    if let Dim::Known(n) = d
                        && *n != 1
                        && !grouped
                    {
                        return Err(format!(
                            "a map shape {} groups tiles along axis {axis}: only the second-to-last entry may be above 1",
                            ShapeDisplay(map)
                        ));
                    }
                }
                for c in coords {
                    if self.ty(*c)? != &TileType::scalar(ScalarType::I32) {
                        return Err("a tile coordinate of a mapped loop is not an `i32`".into());
                    }
                }
                self.mapped.push(*tensor);
                let r = self.loop_stmt(coords, args, inits, body, results);
                self.mapped.pop();
                r
            }
            Stmt::StoreMapped { tensor, value } => {
                let t = self.tensor(*tensor)?;
                let tile = t.mapped_tile().ok_or_else(|| {
                    format!("a mapped store to parameter {tensor}, which is not a mapped output")
                })?;
                if !self.mapped.contains(tensor) {
                    return Err(format!(
                        "a mapped store to parameter {tensor} outside a loop over its tiles"
                    ));
                }
                let got = self.use_value(*value)?;
                self.expect(
                    got,
                    &TileType {
                        elem: t.elem,
                        shape: tile,
                    },
                    "a mapped store",
                )
            }
            Stmt::Loop {
                args,
                inits,
                body,
                results,
            } => self.loop_stmt(&[], args, inits, body, results),
            Stmt::Break { values } => {
                let want = match self.loops.last() {
                    Some(l) => l.results.clone(),
                    None => return Err("a break outside a loop".into()),
                };
                self.values_match(values, &want, "a break")
            }
            Stmt::Continue { values } => {
                let want = match self.loops.last() {
                    Some(l) => l.args.clone(),
                    None => return Err("a continue outside a loop".into()),
                };
                self.values_match(values, &want, "a continue")
            }
            Stmt::Return => Ok(()),
            Stmt::Print { format, args } => {
                if let Err(e) = cuprum_ir::printf::parse_format(format) {
                    return Err(format!("print format {format:?} is not supported: {e}"));
                }
                let mut known = Vec::with_capacity(args.len());
                for a in args {
                    let t = self.use_value(*a)?;
                    if !t.is_scalar() {
                        return Err("print takes rank-0 arguments".into());
                    }
                    known.extend(t.elem.known());
                }
                // The argument count and classes, once every argument's type is known.
                if known.len() == args.len() {
                    cuprum_ir::printf::check_print(format, &known)?;
                }
                Ok(())
            }
            Stmt::Assert { cond, .. } => self.scalar_bool(*cond, "an assertion"),
            Stmt::SourceLine { .. } => Ok(()),
        }
    }

    fn values_match(&self, values: &[TileValue], want: &[TileType], what: &str) -> Check {
        if values.len() != want.len() {
            return Err(format!(
                "{what} gives {} values where {} are expected",
                values.len(),
                want.len()
            ));
        }
        for (v, w) in values.iter().zip(want) {
            let got = self.use_value(*v)?;
            self.expect(got, w, what)?;
        }
        Ok(())
    }

    fn loop_stmt(
        &mut self,
        defined: &[TileValue],
        args: &[TileValue],
        inits: &[TileValue],
        body: &Block,
        results: &[TileValue],
    ) -> Check {
        if args.len() != inits.len() || args.len() != results.len() {
            return Err(format!(
                "a loop has {} arguments, {} initial values and {} results",
                args.len(),
                inits.len(),
                results.len()
            ));
        }
        let arg_types = self.types_of(args)?;
        self.values_match(inits, &arg_types, "a loop's initial values")?;
        let result_types = self.types_of(results)?;
        if arg_types != result_types {
            return Err("a loop's results differ in type from its arguments".into());
        }
        self.scopes.push(Vec::new());
        for &c in defined {
            self.define(c)?;
        }
        for a in args {
            self.define(*a)?;
        }
        self.loops.push(LoopTypes {
            args: arg_types.clone(),
            results: result_types,
        });
        self.block(body, &arg_types)?;
        self.loops.pop();
        self.scopes.pop();
        for r in results {
            self.define(*r)?;
        }
        Ok(())
    }

    /// The type `op` produces, after checking its operands.
    fn op(&mut self, op: &Op) -> Result<TileType, String> {
        match op {
            Op::Const { value, elem, shape } => {
                self.elem_ok(*elem)?;
                self.shape_ok(shape)?;
                literal_fits(*value, *elem)?;
                Ok(TileType {
                    elem: *elem,
                    shape: shape.clone(),
                })
            }
            Op::ConstParam(i) => match self.kernel.consts.get(*i as usize) {
                Some(c) => Ok(TileType::scalar(c.ty)),
                None => Err(format!("const parameter {i} does not exist")),
            },
            Op::Param(i) => match self.kernel.params.get(*i as usize).map(|p| &p.kind) {
                Some(ParamKind::Scalar(e)) => Ok(TileType {
                    elem: *e,
                    shape: Vec::new(),
                }),
                _ => Err(format!("parameter {i} is not a scalar")),
            },
            Op::BlockId(a) | Op::NumBlocks(a) => {
                if *a > 2 {
                    return Err(format!("grid axis {a} does not exist"));
                }
                Ok(TileType::scalar(ScalarType::I32))
            }
            Op::TensorDim { tensor, axis } => {
                let t = self.tensor(*tensor)?;
                if *axis as usize >= t.rank() {
                    return Err(format!("axis {axis} of a rank-{} tensor", t.rank()));
                }
                Ok(TileType::scalar(ScalarType::I64))
            }
            Op::Iota { elem, shape, axis } => {
                self.elem_ok(*elem)?;
                self.shape_ok(shape)?;
                if let Elem::Known(e) = elem
                    && !e.is_int()
                {
                    return Err(format!("iota of {e}: an integer type is required"));
                }
                if *axis as usize >= shape.len() {
                    return Err(format!(
                        "iota along axis {axis} of a rank-{} tile",
                        shape.len()
                    ));
                }
                Ok(TileType {
                    elem: *elem,
                    shape: shape.clone(),
                })
            }
            Op::Unary(u, a) => {
                let t = self.use_value(*a)?;
                computes(t, &format!("{u:?}"))?;
                if let Elem::Known(e) = t.elem {
                    if u.is_float_only() && !e.is_float() {
                        return Err(format!("{u:?} of {e}: a float type is required"));
                    }
                    if *u == UnaryOp::Neg && e == ScalarType::Bool {
                        return Err("negation of bool".into());
                    }
                }
                Ok(t.clone())
            }
            Op::Binary(b, x, y) => {
                let (tx, ty) = (self.use_value(*x)?, self.use_value(*y)?);
                let shift = matches!(b, BinaryOp::Shl | BinaryOp::Shr);
                if shift {
                    let want = TileType {
                        elem: Elem::Known(ScalarType::U32),
                        shape: tx.shape.clone(),
                    };
                    self.expect(ty, &want, "a shift amount")?;
                } else {
                    self.expect(ty, tx, &format!("the right operand of {b:?}"))?;
                }
                computes(tx, &format!("{b:?}"))?;
                // The kernel IR's rules for which operator applies to which type.
                if let Elem::Known(e) = tx.elem {
                    let logical = matches!(b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                    if shift && !e.is_int() {
                        return Err(format!("{b:?} of {e}: an integer type is required"));
                    }
                    if e == ScalarType::Bool && !logical {
                        return Err(format!("{b:?} of bool"));
                    }
                    if e.is_float() && logical {
                        return Err(format!("{b:?} of {e}: an integer or bool type is required"));
                    }
                }
                Ok(tx.clone())
            }
            Op::Ternary(_, a, b, c) => {
                let ta = self.use_value(*a)?;
                computes(ta, "a fused multiply-add")?;
                self.expect(self.use_value(*b)?, ta, "a ternary operand")?;
                self.expect(self.use_value(*c)?, ta, "a ternary operand")?;
                if let Elem::Known(e) = ta.elem
                    && !e.is_float()
                {
                    return Err(format!(
                        "fused multiply-add of {e}: a float type is required"
                    ));
                }
                Ok(ta.clone())
            }
            Op::Mma { a, b, acc } => {
                let (ta, tb, tc) = (
                    self.use_value(*a)?,
                    self.use_value(*b)?,
                    self.use_value(*acc)?,
                );
                mma_type(ta, tb, tc)?;
                Ok(tc.clone())
            }
            Op::Compare(_, x, y) => {
                let tx = self.use_value(*x)?;
                computes(tx, "a comparison")?;
                self.expect(self.use_value(*y)?, tx, "a comparison operand")?;
                Ok(TileType {
                    elem: Elem::Known(ScalarType::Bool),
                    shape: tx.shape.clone(),
                })
            }
            Op::Select {
                cond,
                if_true,
                if_false,
            } => {
                let tt = self.use_value(*if_true)?;
                self.expect(self.use_value(*if_false)?, tt, "a select's arms")?;
                let tc = self.use_value(*cond)?;
                let want = TileType {
                    elem: Elem::Known(ScalarType::Bool),
                    shape: tt.shape.clone(),
                };
                self.expect(tc, &want, "a select's condition")?;
                Ok(tt.clone())
            }
            Op::Cast { value, to } => {
                self.elem_ok(*to)?;
                if *to == Elem::Known(ScalarType::Bool) {
                    return Err("a cast to bool (compare with zero instead)".into());
                }
                Ok(TileType {
                    elem: *to,
                    shape: self.use_value(*value)?.shape.clone(),
                })
            }
            Op::Bitcast { value, to } => {
                self.elem_ok(*to)?;
                let t = self.use_value(*value)?;
                if let (Elem::Known(a), Elem::Known(b)) = (t.elem, *to) {
                    if a.size_bytes() != b.size_bytes() {
                        return Err(format!("a bitcast from {a} to {b}, of another size"));
                    }
                    // As in the kernel IR: a bool holds only 0 or 1, so no bits become one.
                    if a == ScalarType::Bool || b == ScalarType::Bool {
                        return Err(format!(
                            "a bitcast from {a} to {b} (compare or select instead)"
                        ));
                    }
                    // A tf32's low 13 bits are zero, so bits become one only by a cast.
                    if b == ScalarType::Tf32 && a != ScalarType::Tf32 {
                        return Err(format!("a bitcast from {a} to tf32 (convert instead)"));
                    }
                }
                Ok(TileType {
                    elem: *to,
                    shape: t.shape.clone(),
                })
            }
            Op::Broadcast { value, shape } => {
                self.shape_ok(shape)?;
                let t = self.use_value(*value)?;
                if t.rank() != shape.len() {
                    return Err(format!(
                        "broadcast of a {} to {}: the ranks differ (reshape first)",
                        t,
                        ShapeDisplay(shape)
                    ));
                }
                for (from, to) in t.shape.iter().zip(shape) {
                    // A parameter against another dimension is checked when specialized.
                    if from != to
                        && *from != Dim::Known(1)
                        && from.known().is_some()
                        && to.known().is_some()
                    {
                        return Err(format!(
                            "broadcast of {} to {}: dimension {from} is neither 1 nor {to}",
                            t,
                            ShapeDisplay(shape)
                        ));
                    }
                }
                Ok(TileType {
                    elem: t.elem,
                    shape: shape.clone(),
                })
            }
            Op::Reshape { value, shape } => {
                self.shape_ok(shape)?;
                let t = self.use_value(*value)?;
                if let (Some(a), Some(b)) = (element_count(&t.shape), element_count(shape))
                    && a != b
                {
                    return Err(format!(
                        "reshape of {} ({a} elements) to {} ({b} elements)",
                        t,
                        ShapeDisplay(shape)
                    ));
                }
                Ok(TileType {
                    elem: t.elem,
                    shape: shape.clone(),
                })
            }
            Op::Permute { value, perm } => {
                let t = self.use_value(*value)?;
                let mut seen = vec![false; t.rank()];
                if perm.len() != t.rank() {
                    return Err(format!("permutation {perm:?} of a rank-{} tile", t.rank()));
                }
                for &p in perm {
                    match seen.get_mut(p as usize) {
                        Some(s) if !*s => *s = true,
                        _ => return Err(format!("{perm:?} is not a permutation")),
                    }
                }
                Ok(TileType {
                    elem: t.elem,
                    shape: perm.iter().map(|&p| t.shape[p as usize]).collect(),
                })
            }
            Op::Reduce {
                value,
                axis,
                combine,
            } => {
                let t = self.use_value(*value)?.clone();
                if *axis as usize >= t.rank() {
                    return Err(format!("a reduction along axis {axis} of {t}"));
                }
                computes(&t, "a reduction")?;
                if let Combine::Closure {
                    a,
                    b,
                    body,
                    identity,
                } = combine
                {
                    literal_fits(*identity, t.elem)?;
                    let scalar = TileType {
                        elem: t.elem,
                        shape: Vec::new(),
                    };
                    for v in [a, b] {
                        if self.ty(*v)? != &scalar {
                            return Err(format!("a reduce closure's operand is not {scalar}"));
                        }
                    }
                    // The closure sees only its operands (and values defined outside it).
                    self.scopes.push(Vec::new());
                    self.define(*a)?;
                    self.define(*b)?;
                    let loops = std::mem::take(&mut self.loops);
                    let r = self.block(body, std::slice::from_ref(&scalar));
                    self.loops = loops;
                    r?;
                    self.scopes.pop();
                }
                let mut shape = t.shape.clone();
                shape.remove(*axis as usize);
                Ok(TileType {
                    elem: t.elem,
                    shape,
                })
            }
            Op::Gather {
                tensor,
                offsets,
                mask,
                padding,
            } => {
                let shape = self.raw_access(*tensor, *offsets, *mask, "a gather")?;
                let t = self.tensor(*tensor)?;
                literal_fits(*padding, t.elem)?;
                Ok(TileType {
                    elem: t.elem,
                    shape,
                })
            }
            Op::Load { view, padding } => {
                let t = self.tensor(view.tensor())?;
                literal_fits(*padding, t.elem)?;
                let shape = match view {
                    View::Own { tensor } => t.partition_tile().ok_or_else(|| {
                        format!("parameter {tensor} is not a partitioned tensor (`&mut Tensor`)")
                    })?,
                    View::Tiled {
                        tensor,
                        tile,
                        index,
                    } => {
                        if t.access != TensorAccess::Read {
                            return Err(format!(
                                "a tiled load of parameter {tensor}, a partitioned output: a block reads only its own tile of an output"
                            ));
                        }
                        if tile.len() != t.rank() || index.len() != t.rank() {
                            return Err(format!(
                                "a load of a {} tile with {} indices from a rank-{} tensor",
                                ShapeDisplay(tile),
                                index.len(),
                                t.rank()
                            ));
                        }
                        self.shape_ok(tile)?;
                        for i in index {
                            self.scalar_int(*i, "a tile index")?;
                        }
                        tile.clone()
                    }
                    View::Permuted {
                        tensor,
                        tile,
                        index,
                        dim_map,
                    } => {
                        if t.access != TensorAccess::Read {
                            return Err(format!(
                                "a permuted load of parameter {tensor}, a partitioned output: a block reads only its own tile of an output"
                            ));
                        }
                        if tile.len() != t.rank()
                            || index.len() != t.rank()
                            || dim_map.len() != t.rank()
                        {
                            return Err(format!(
                                "a permuted load of a {} tile with {} indices and {} axes from a rank-{} tensor",
                                ShapeDisplay(tile),
                                index.len(),
                                dim_map.len(),
                                t.rank()
                            ));
                        }
                        let known: Vec<u32> = dim_map.iter().filter_map(|a| a.known()).collect();
                        let mut seen = vec![false; t.rank()];
                        for &a in &known {
                            match seen.get_mut(a as usize) {
                                Some(s) if !*s => *s = true,
                                _ => {
                                    return Err(format!(
                                        "the axes {dim_map:?} of a permuted load are not a permutation of the rank-{} tensor's axes",
                                        t.rank()
                                    ));
                                }
                            }
                        }
                        self.shape_ok(tile)?;
                        for i in index {
                            self.scalar_int(*i, "a tile index")?;
                        }
                        tile.clone()
                    }
                };
                Ok(TileType {
                    elem: t.elem,
                    shape,
                })
            }
        }
    }
}

/// Whether `literal` can be an element of type `elem` (a known type only; a parameter is
/// checked at specialization).
fn literal_fits(literal: Literal, elem: Elem) -> Check {
    let Elem::Known(e) = elem else {
        return Ok(());
    };
    match literal {
        Literal::Exact(c) if c.ty == e => Ok(()),
        Literal::Exact(c) => Err(format!("a {} constant where {e} is required", c.ty)),
        Literal::Bool(_) if e == ScalarType::Bool => Ok(()),
        Literal::Bool(_) => Err(format!("a bool literal where {e} is required")),
        Literal::Int(_) | Literal::Float(_) if e == ScalarType::Bool => {
            Err("a number where bool is required".into())
        }
        Literal::Int(_) | Literal::Float(_) => Ok(()),
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Exact(c) => write!(f, "{c}"),
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Refuses `what` (arithmetic, a comparison or a reduction) on a tile whose element type has
/// none (`tf32`, a tensor-core operand type: `ScalarType::has_arithmetic`), naming the cast
/// that gives one.
fn computes(t: &TileType, what: &str) -> Check {
    match t.elem {
        Elem::Known(e) if !e.has_arithmetic() => Err(format!(
            "{what} of {t}: {e} tiles only feed `mma` and conversions; convert them to f32 first"
        )),
        _ => Ok(()),
    }
}
