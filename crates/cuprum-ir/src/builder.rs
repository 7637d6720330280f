//! A builder for kernels: appends statements to the innermost open block and types every
//! value as it is defined, so front ends and tests never write types by hand.

use crate::kernel::*;
use crate::matrix::{CpAsyncCache, MmaShape};
use crate::types::{Constant, ScalarType};
use crate::validate::{check_stmt_operands, result_type};

/// Why the builder refused an operation or a statement: its operands have types it does not
/// accept, or (for `print`) its format does not fit its arguments. Nothing was appended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct BuildError {
    /// What is wrong, naming the operand or the format.
    pub reason: String,
}

impl From<String> for BuildError {
    fn from(reason: String) -> Self {
        Self { reason }
    }
}

/// Front ends that report errors as text take a builder's error as its message.
impl From<BuildError> for String {
    fn from(error: BuildError) -> Self {
        error.reason
    }
}

/// Builds one [`Kernel`]. Nested blocks (for `If` and `Loop`) are opened with
/// [`begin_block`](Self::begin_block) and closed with [`end_block`](Self::end_block).
pub struct KernelBuilder {
    kernel: Kernel,
    open_blocks: Vec<Vec<Stmt>>,
}

impl KernelBuilder {
    /// Starts an empty kernel called `name` (no parameters, arrays or statements), with the
    /// kernel's top-level block open. The name must be a valid PTX identifier by the time the
    /// kernel is validated.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            kernel: Kernel {
                name: name.into(),
                ..Kernel::default()
            },
            open_blocks: vec![Vec::new()],
        }
    }

    /// The kernel built so far (its body is not filled in until [`finish`](Self::finish)).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Adds a parameter and returns its index.
    pub fn param(&mut self, name: impl Into<String>, kind: ParamKind) -> u32 {
        self.kernel.params.push(Param {
            name: name.into(),
            kind,
        });
        (self.kernel.params.len() - 1) as u32
    }

    /// Sets (or, with `None`, clears) the kernel's [`LaunchBounds`], replacing any earlier
    /// setting.
    pub fn set_launch_bounds(&mut self, bounds: Option<LaunchBounds>) {
        self.kernel.launch_bounds = bounds;
    }

    /// Declares the cluster shape every launch has ([`Kernel::cluster`]).
    pub fn set_cluster(&mut self, cluster: Option<(u32, u32, u32)>) {
        self.kernel.cluster = cluster;
    }

    /// Declares the exact block shape every launch must have ([`Kernel::block`]).
    pub fn set_block(&mut self, block: Option<(u32, u32, u32)>) {
        self.kernel.block = block;
    }

    /// Adds a relation every launch must satisfy ([`Kernel::requires`]).
    pub fn require(&mut self, requirement: crate::requires::Requirement) {
        self.kernel.requires.push(requirement);
    }

    /// Asks that dynamic shared memory start at a multiple of `align` bytes (a power of two);
    /// the kernel keeps the largest alignment asked ([`Kernel::dyn_shared_alignment`]).
    pub fn align_dyn_shared(&mut self, align: u32) {
        self.kernel.dyn_shared_align = self.kernel.dyn_shared_align.max(align);
    }

    /// Declares a static shared array and returns its index.
    pub fn shared_array(&mut self, decl: ArrayDecl) -> u32 {
        self.kernel.shared.push(decl);
        (self.kernel.shared.len() - 1) as u32
    }

    /// Declares a static shared array whose start is a multiple of `align` bytes (a power of
    /// two up to [`crate::MAX_ARRAY_ALIGN`]; 16 or less is the default) and returns its index.
    pub fn shared_array_aligned(&mut self, decl: ArrayDecl, align: u32) -> u32 {
        let i = self.shared_array(decl);
        if align > crate::ARRAY_ALIGN {
            self.kernel.shared_align.resize(i as usize + 1, 0);
            self.kernel.shared_align[i as usize] = align;
        }
        i
    }

    /// Appends a [`Stmt::Tma`] after checking its operands.
    pub fn tma(&mut self, op: crate::tma::TmaOp) -> Result<(), BuildError> {
        self.push_checked(Stmt::Tma(op))
    }

    /// Declares a per-thread array and returns its index.
    pub fn local_array(&mut self, decl: ArrayDecl) -> u32 {
        self.kernel.locals.push(decl);
        (self.kernel.locals.len() - 1) as u32
    }

    /// Declares a mutable variable.
    pub fn var(&mut self, name: impl Into<String>, ty: ScalarType) -> Var {
        self.kernel.vars.append(VarDef {
            name: name.into(),
            ty,
        })
    }

    /// The type of a value defined earlier.
    pub fn type_of(&self, v: Value) -> ScalarType {
        self.kernel
            .values
            .try_get(v)
            .map_or(ScalarType::Bool, |d| d.ty)
    }

    /// Defines a new value as the result of `op`. Fails with a message when the operands are
    /// ill-typed.
    pub fn def(&mut self, op: Op) -> Result<Value, BuildError> {
        let values = &self.kernel.values;
        let ty = result_type(&self.kernel, &op, |v| {
            values
                .try_get(v)
                .map(|d| d.ty)
                .ok_or_else(|| format!("value {v:?} out of range"))
        })?;
        let value = self.kernel.values.append(ValueDef { ty });
        self.push(Stmt::Def { value, op });
        Ok(value)
    }

    /// `a op b` ([`Op::Binary`]).
    pub fn binary(&mut self, op: BinaryOp, a: Value, b: Value) -> Result<Value, BuildError> {
        self.def(Op::Binary(op, a, b))
    }

    /// `a op b`, a `Bool` ([`Op::Compare`]).
    pub fn compare(&mut self, op: CmpOp, a: Value, b: Value) -> Result<Value, BuildError> {
        self.def(Op::Compare(op, a, b))
    }

    /// `cond ? if_true : if_false` ([`Op::Select`]).
    pub fn select(
        &mut self,
        cond: Value,
        if_true: Value,
        if_false: Value,
    ) -> Result<Value, BuildError> {
        self.def(Op::Select {
            cond,
            if_true,
            if_false,
        })
    }

    /// `value as to` ([`Op::Cast`]); `value` itself when it already has type `to`.
    pub fn cast(&mut self, value: Value, to: ScalarType) -> Result<Value, BuildError> {
        if self.type_of(value) == to {
            return Ok(value);
        }
        self.def(Op::Cast { value, to })
    }

    /// `value`'s bits as `to` ([`Op::Bitcast`]); `value` itself when it already has type `to`.
    pub fn bitcast(&mut self, value: Value, to: ScalarType) -> Result<Value, BuildError> {
        if self.type_of(value) == to {
            return Ok(value);
        }
        self.def(Op::Bitcast { value, to })
    }

    /// Type-checks the operands of `stmt` (see [`check_stmt_operands`]).
    fn check(&self, stmt: &Stmt) -> Result<(), BuildError> {
        let values = &self.kernel.values;
        check_stmt_operands(stmt, |v| {
            values
                .try_get(v)
                .map(|d| d.ty)
                .ok_or_else(|| format!("value {v:?} out of range"))
        })
        .map_err(BuildError::from)
    }

    /// Type-checks the operands of `stmt` and appends it.
    fn push_checked(&mut self, stmt: Stmt) -> Result<(), BuildError> {
        self.check(&stmt)?;
        self.push(stmt);
        Ok(())
    }

    /// Appends a [`Stmt::WgmmaMma`] after checking its shape, flags and operand types.
    pub fn wgmma_mma(&mut self, m: crate::WgmmaMma) -> Result<(), BuildError> {
        let (values, vars) = (&self.kernel.values, &self.kernel.vars);
        m.check(
            |v| {
                values
                    .try_get(v)
                    .map(|d| d.ty)
                    .ok_or_else(|| format!("value {v:?} out of range"))
            },
            |v| {
                vars.try_get(v)
                    .map(|d| d.ty)
                    .ok_or_else(|| format!("variable {v:?} out of range"))
            },
        )
        .map_err(BuildError::from)?;
        self.push(Stmt::WgmmaMma(Box::new(m)));
        Ok(())
    }

    /// Sets the kernel's register cap ([`Kernel::max_registers`], PTX `.maxnreg`).
    pub fn set_max_registers(&mut self, cap: Option<u32>) {
        self.kernel.max_registers = cap;
    }

    /// Appends a [`Stmt::Mma`] and returns its four `F32` results (this lane's fragment of D).
    pub fn mma(
        &mut self,
        shape: MmaShape,
        a: [Value; 4],
        b: [Value; 2],
        c: [Value; 4],
    ) -> Result<[Value; 4], BuildError> {
        // The results are allocated only once the operands type, so a failed call leaves no
        // undefined value behind (the check does not look at `d`).
        self.check(&Stmt::Mma {
            shape,
            a,
            b,
            c,
            d: a,
        })?;
        let d = [(); 4].map(|_| {
            self.kernel.values.append(ValueDef {
                ty: ScalarType::F32,
            })
        });
        self.push(Stmt::Mma { shape, a, b, c, d });
        Ok(d)
    }

    /// Appends a [`Stmt::LdMatrix`] loading `count` (1, 2 or 4) matrices and returns its `U32`
    /// results, one per matrix.
    pub fn ldmatrix(
        &mut self,
        count: usize,
        trans: bool,
        addr: Value,
    ) -> Result<Vec<Value>, BuildError> {
        if !matches!(count, 1 | 2 | 4) {
            return Err(format!("ldmatrix loads 1, 2 or 4 matrices, not {count}").into());
        }
        self.check(&Stmt::LdMatrix {
            trans,
            addr,
            d: vec![addr; count],
        })?;
        let d: Vec<Value> = (0..count)
            .map(|_| {
                self.kernel.values.append(ValueDef {
                    ty: ScalarType::U32,
                })
            })
            .collect();
        self.push(Stmt::LdMatrix {
            trans,
            addr,
            d: d.clone(),
        });
        Ok(d)
    }

    /// Appends a [`Stmt::VectorLoad`] of `lanes` (2 or 4) consecutive `ty` elements at `addr`
    /// and returns them in order.
    pub fn vector_load(
        &mut self,
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
        lanes: usize,
    ) -> Result<Vec<Value>, BuildError> {
        self.vector_load_evicting(space, ty, addr, lanes, Eviction::Normal)
    }

    /// [`vector_load`](Self::vector_load) with an eviction hint.
    pub fn vector_load_evicting(
        &mut self,
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
        lanes: usize,
        eviction: Eviction,
    ) -> Result<Vec<Value>, BuildError> {
        self.check(&Stmt::VectorLoad {
            space,
            ty,
            addr,
            d: vec![addr; lanes],
            eviction,
        })?;
        let d: Vec<Value> = (0..lanes)
            .map(|_| self.kernel.values.append(ValueDef { ty }))
            .collect();
        self.push(Stmt::VectorLoad {
            space,
            ty,
            addr,
            d: d.clone(),
            eviction,
        });
        Ok(d)
    }

    /// Appends a [`Stmt::ClusterLoad`] of a `ty` at shared address `addr` of the cluster's
    /// block `rank`, and returns the loaded value.
    pub fn cluster_load(
        &mut self,
        ty: ScalarType,
        addr: Value,
        rank: Value,
    ) -> Result<Value, BuildError> {
        // The result is allocated only once the operands type (see `mma`).
        self.check(&Stmt::ClusterLoad {
            result: addr,
            ty,
            addr,
            rank,
        })?;
        let result = self.kernel.values.append(ValueDef { ty });
        self.push(Stmt::ClusterLoad {
            result,
            ty,
            addr,
            rank,
        });
        Ok(result)
    }

    /// Appends a [`Stmt::ClusterStore`] of `value` at shared address `addr` of the cluster's
    /// block `rank`.
    pub fn cluster_store(
        &mut self,
        addr: Value,
        rank: Value,
        value: Value,
    ) -> Result<(), BuildError> {
        self.push_checked(Stmt::ClusterStore { addr, rank, value })
    }

    /// Appends a [`Stmt::VectorStore`] of `values` (2 or 4, of one type) at `addr`.
    pub fn vector_store(
        &mut self,
        space: AddressSpace,
        addr: Value,
        values: Vec<Value>,
    ) -> Result<(), BuildError> {
        self.push_checked(Stmt::VectorStore {
            space,
            addr,
            values,
        })
    }

    /// Appends a [`Stmt::CpAsync`] of `size` bytes from global `src` to shared `dst`; with
    /// `src_size`, only that many are read and the rest zero-filled.
    pub fn cp_async(
        &mut self,
        cache: CpAsyncCache,
        size: u32,
        dst: Value,
        src: Value,
        src_size: Option<Value>,
    ) -> Result<(), BuildError> {
        self.push_checked(Stmt::CpAsync {
            cache,
            size,
            dst,
            src,
            src_size,
        })
    }

    /// Appends a [`Stmt::Mbarrier`] doing `op` to the barrier at shared address `addr`, with
    /// the operand `arg` the operation takes, and returns its result (a token or a completion
    /// flag) when it has one.
    pub fn mbarrier(
        &mut self,
        op: MbarrierOp,
        addr: Value,
        arg: Option<Value>,
    ) -> Result<Option<Value>, BuildError> {
        // The result is allocated only once the operands type (see `mma`).
        self.check(&Stmt::Mbarrier {
            op,
            addr,
            arg,
            result: None,
        })?;
        let result = op
            .result()
            .map(|ty| self.kernel.values.append(ValueDef { ty }));
        self.push(Stmt::Mbarrier {
            op,
            addr,
            arg,
            result,
        });
        Ok(result)
    }

    /// Appends a [`Stmt::Print`] after checking the format and the argument types.
    pub fn print(&mut self, format: impl Into<String>, args: Vec<Value>) -> Result<(), BuildError> {
        self.push_checked(Stmt::Print {
            format: format.into(),
            args,
        })
    }

    /// Defines a constant.
    pub fn constant(&mut self, c: Constant) -> Value {
        let value = self.kernel.values.append(ValueDef { ty: c.ty });
        self.push(Stmt::Def {
            value,
            op: Op::Const(c),
        });
        value
    }

    /// Appends a statement to the innermost open block.
    pub fn push(&mut self, stmt: Stmt) {
        if let Some(block) = self.open_blocks.last_mut() {
            block.push(stmt);
        }
    }

    /// How many nested blocks are open (0 at the kernel's top level).
    pub fn depth(&self) -> usize {
        self.open_blocks.len() - 1
    }

    /// Where the builder is, as the lengths of the enclosing blocks (outermost first, not the
    /// innermost open one): two moments with the same position are in one block with only
    /// straight-line statements between them (closing a nested block appends a statement to
    /// its parent).
    pub fn position(&self) -> Vec<usize> {
        let outer = self.open_blocks.len().saturating_sub(1);
        self.open_blocks[..outer].iter().map(Vec::len).collect()
    }

    /// How many statements the kernel's top-level block holds so far: a place
    /// [`insert_at_top`](Self::insert_at_top) can put statements later.
    pub fn top_len(&self) -> usize {
        self.open_blocks.first().map_or(0, Vec::len)
    }

    /// Inserts `stmts` into the kernel's top-level block before its statement `at` (a
    /// [`top_len`](Self::top_len) taken earlier), for code built after what follows it
    /// (it may read only values defined before `at` or by itself).
    pub fn insert_at_top(&mut self, at: usize, stmts: Vec<Stmt>) {
        if let Some(top) = self.open_blocks.first_mut() {
            let at = at.min(top.len());
            top.splice(at..at, stmts);
        }
    }

    /// Opens a nested block.
    pub fn begin_block(&mut self) {
        self.open_blocks.push(Vec::new());
    }

    /// Closes the innermost nested block and returns it, to be placed in an `If` or `Loop`.
    pub fn end_block(&mut self) -> Block {
        if self.open_blocks.len() <= 1 {
            return Block::default();
        }
        Block {
            stmts: self.open_blocks.pop().unwrap_or_default(),
        }
    }

    /// Whether the innermost open block already ends in a statement that leaves it.
    pub fn block_terminated(&self) -> bool {
        matches!(
            self.open_blocks.last().and_then(|b| b.last()),
            Some(Stmt::Break | Stmt::Continue | Stmt::Return | Stmt::Trap(_))
        )
    }

    /// Finishes the kernel. Unclosed nested blocks are appended to the body in order.
    pub fn finish(mut self) -> Kernel {
        while self.open_blocks.len() > 1 {
            let inner = self.open_blocks.pop().unwrap_or_default();
            if let Some(outer) = self.open_blocks.last_mut() {
                outer.extend(inner);
            }
        }
        self.kernel.body = Block {
            stmts: self.open_blocks.pop().unwrap_or_default(),
        };
        self.kernel
    }
}
