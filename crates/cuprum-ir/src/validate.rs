//! The validator: checks every invariant documented on [`Kernel`].
//!
//! Front ends, passes and tests run it after every transformation; the PTX writer and the
//! emulator may assume a validated kernel and need not re-check these rules.

use std::collections::HashSet;

use crate::kernel::*;
use crate::types::ScalarType;

/// A broken invariant, with enough context to find it in the printed IR.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("invalid IR in kernel `{kernel}`: {message}")]
pub struct ValidationError {
    /// The name of the kernel that broke the rule.
    pub kernel: String,
    /// What is wrong, naming the offending value, statement or parameter.
    pub message: String,
}

/// The type `op` produces, or why its operands are ill-typed. `value_ty` gives the type of an
/// already defined value. Shared by the validator and the builder so the two cannot disagree.
pub fn result_type(
    kernel: &Kernel,
    op: &Op,
    value_ty: impl Fn(Value) -> Result<ScalarType, String>,
) -> Result<ScalarType, String> {
    use ScalarType as S;
    let param = |index: u32| {
        kernel
            .params
            .get(index as usize)
            .map(|p| p.kind)
            .ok_or_else(|| format!("parameter index {index} out of range"))
    };
    Ok(match op {
        Op::Const(c) => {
            if !c.is_canonical() {
                return Err(format!("constant {c:?} has bits above its width"));
            }
            c.ty
        }
        Op::Param(i) => match param(*i)? {
            ParamKind::Scalar(ty) => ty,
            ParamKind::Slice { .. } => return Err(format!("Param({i}) names a slice parameter")),
            ParamKind::TensorMap { .. } => {
                return Err(format!("Param({i}) names a tensor-map parameter"));
            }
        },
        Op::SliceBase(i) | Op::SliceLen(i) => match param(*i)? {
            ParamKind::Slice { .. } => S::U64,
            ParamKind::Scalar(_) | ParamKind::TensorMap { .. } => {
                return Err(format!("slice op on non-slice parameter {i}"));
            }
        },
        Op::SharedAddr(i) => {
            if *i as usize >= kernel.shared.len() {
                return Err(format!("shared array index {i} out of range"));
            }
            S::U32
        }
        Op::LocalAddr(i) => {
            if *i as usize >= kernel.locals.len() {
                return Err(format!("local array index {i} out of range"));
            }
            S::U32
        }
        Op::DynSharedAddr => S::U32,
        Op::Special(_) => S::U32,
        Op::Unary(u, v) => {
            let t = value_ty(*v)?;
            no_tf32_arithmetic(t, &format!("{u:?}"))?;
            if u.is_float_only() && !t.is_float() {
                return Err(format!("{u:?} needs a float operand, got {t}"));
            }
            if *u == UnaryOp::Neg && t == S::Bool {
                return Err("Neg on bool".into());
            }
            if u.is_bit_count() && !t.is_int() {
                return Err(format!("{u:?} needs an integer operand, got {t}"));
            }
            t
        }
        Op::Binary(b, l, r) => {
            let (lt, rt) = (value_ty(*l)?, value_ty(*r)?);
            no_tf32_arithmetic(lt, &format!("{b:?}"))?;
            match b {
                BinaryOp::Shl | BinaryOp::Shr => {
                    if !lt.is_int() || rt != S::U32 {
                        return Err(format!("{b:?} needs an integer and a u32, got {lt}, {rt}"));
                    }
                }
                _ => {
                    if lt != rt {
                        return Err(format!("{b:?} operands differ: {lt} vs {rt}"));
                    }
                    let logical = matches!(b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                    if lt == S::Bool && !logical {
                        return Err(format!("{b:?} on bool"));
                    }
                    if lt.is_float() && b.is_integer_only() {
                        return Err(format!("{b:?} on float"));
                    }
                    if b.is_float_only() && !lt.is_float() {
                        return Err(format!("{b:?} needs float operands, got {lt}"));
                    }
                    if *b == BinaryOp::MulHigh && !(lt.is_int() && lt.bits() >= 32) {
                        return Err(format!("MulHigh needs 32- or 64-bit integers, got {lt}"));
                    }
                }
            }
            lt
        }
        Op::Ternary(TernaryOp::MulAdd, a, b, c) => {
            let (at, bt, ct) = (value_ty(*a)?, value_ty(*b)?, value_ty(*c)?);
            if at != bt || bt != ct || !at.is_float() {
                return Err(format!(
                    "MulAdd needs three equal float types, got {at}, {bt}, {ct}"
                ));
            }
            at
        }
        Op::Compare(_, l, r) => {
            let (lt, rt) = (value_ty(*l)?, value_ty(*r)?);
            if lt != rt {
                return Err(format!("comparison operands differ: {lt} vs {rt}"));
            }
            no_tf32_arithmetic(lt, "comparison")?;
            S::Bool
        }
        Op::Select {
            cond,
            if_true,
            if_false,
        } => {
            let (c, t, f) = (value_ty(*cond)?, value_ty(*if_true)?, value_ty(*if_false)?);
            if c != S::Bool || t != f {
                return Err(format!("Select needs (bool, T, T), got ({c}, {t}, {f})"));
            }
            t
        }
        Op::Cast { value, to } => {
            let from = value_ty(*value)?;
            if *to == S::Bool && from != S::Bool {
                return Err(format!("cast from {from} to bool is not allowed"));
            }
            *to
        }
        Op::Bitcast { value, to } => {
            let from = value_ty(*value)?;
            if from.size_bytes() != to.size_bytes() || from == S::Bool || *to == S::Bool {
                return Err(format!("bitcast between {from} and {to}"));
            }
            if *to == S::Tf32 && from != S::Tf32 {
                return Err(format!(
                    "bitcast from {from} to tf32 (a tf32's low 13 bits are zero: cast instead)"
                ));
            }
            *to
        }
        Op::ReadVar(var) => {
            kernel
                .vars
                .try_get(*var)
                .ok_or_else(|| format!("variable {var:?} out of range"))?
                .ty
        }
        Op::Load {
            space,
            ty,
            addr,
            eviction,
        } => {
            check_address(*space, value_ty(*addr)?)?;
            check_eviction(*space, *eviction)?;
            *ty
        }
        Op::Atomic {
            op,
            space,
            addr,
            value,
            compare,
            ..
        } => {
            check_address(*space, value_ty(*addr)?)?;
            if *space == AddressSpace::Local {
                return Err("atomics on local memory".into());
            }
            let t = value_ty(*value)?;
            if !matches!(t.size_bytes(), 4 | 8) || t == S::Bool || t == S::Tf32 {
                return Err(format!(
                    "atomic on {t}: only 32- and 64-bit integers and floats"
                ));
            }
            let is_cas = *op == AtomicOp::CompareExchange;
            match compare {
                Some(c) if is_cas => {
                    if value_ty(*c)? != t {
                        return Err("compare-exchange operands differ".into());
                    }
                }
                None if !is_cas => {}
                _ => return Err("compare operand present exactly for CompareExchange".into()),
            }
            if !op.applies_to(t) {
                return Err(format!("atomic {op:?} on float"));
            }
            t
        }
        Op::AtomicLoad {
            space,
            order,
            ty,
            addr,
            ..
        } => {
            check_address(*space, value_ty(*addr)?)?;
            check_atomic_access(*space, *ty)?;
            if matches!(order, MemOrder::Release | MemOrder::AcqRel) {
                return Err(format!("an atomic load cannot be {order:?}"));
            }
            *ty
        }
        Op::Shuffle { value, lane, .. } => {
            let t = value_ty(*value)?;
            if value_ty(*lane)? != S::U32 {
                return Err("shuffle lane operand must be u32".into());
            }
            t
        }
        Op::Vote { mode, pred } => {
            if value_ty(*pred)? != S::Bool {
                return Err("vote predicate must be bool".into());
            }
            match mode {
                VoteMode::Ballot => S::U32,
                VoteMode::All | VoteMode::Any => S::Bool,
            }
        }
    })
}

/// The values a statement defines besides [`Stmt::Def`] (the results of [`Stmt::Mma`],
/// [`Stmt::LdMatrix`], [`Stmt::VectorLoad`], [`Stmt::Mbarrier`] and [`Stmt::ClusterLoad`]),
/// with the type each must have.
pub fn stmt_results(stmt: &Stmt) -> Vec<(Value, ScalarType)> {
    match stmt.result_type() {
        Some(ty) => stmt.results().iter().map(|&v| (v, ty)).collect(),
        None => Vec::new(),
    }
}

/// Checks the operands of the warp-matrix, async-copy and print statements (everything but
/// their results, see [`stmt_results`]); `value_ty` gives the type of a visible value. Shared
/// by the validator and the builder. Other statements pass.
pub fn check_stmt_operands(
    stmt: &Stmt,
    value_ty: impl Fn(Value) -> Result<ScalarType, String>,
) -> Result<(), String> {
    use ScalarType as S;
    let expect = |what: &str, vs: &[Value], ty: ScalarType| {
        for (i, &v) in vs.iter().enumerate() {
            let t = value_ty(v)?;
            if t != ty {
                return Err(format!("{what}[{i}] must be {ty}, got {t}"));
            }
        }
        Ok(())
    };
    match stmt {
        Stmt::Mma { shape, a, b, c, .. } => {
            expect(&format!("mma {shape:?} operand a"), a, S::U32)?;
            expect(&format!("mma {shape:?} operand b"), b, S::U32)?;
            expect(&format!("mma {shape:?} operand c"), c, S::F32)?;
        }
        Stmt::LdMatrix { addr, d, .. } => {
            check_address(AddressSpace::Shared, value_ty(*addr)?)?;
            if !matches!(d.len(), 1 | 2 | 4) {
                return Err(format!(
                    "ldmatrix loads 1, 2 or 4 matrices, not {}",
                    d.len()
                ));
            }
        }
        Stmt::CpAsync {
            cache,
            size,
            dst,
            src,
            src_size,
        } => {
            if !cache.allows_size(*size) {
                return Err(format!(
                    "cp.async.{} cannot copy {size} bytes",
                    cache.ptx_name()
                ));
            }
            check_address(AddressSpace::Shared, value_ty(*dst)?)?;
            check_address(AddressSpace::Global, value_ty(*src)?)?;
            if let Some(n) = src_size
                && value_ty(*n)? != S::U32
            {
                return Err("cp.async's source size must be u32".into());
            }
        }
        Stmt::VectorLoad {
            space,
            ty,
            addr,
            d,
            eviction,
        } => {
            check_address(*space, value_ty(*addr)?)?;
            check_eviction(*space, *eviction)?;
            check_vector(*ty, d.len())?;
        }
        Stmt::VectorStore {
            space,
            addr,
            values,
        } => {
            check_address(*space, value_ty(*addr)?)?;
            let Some(&first) = values.first() else {
                return Err("a vector store needs values".into());
            };
            let ty = value_ty(first)?;
            expect("vector store value", values, ty)?;
            check_vector(ty, values.len())?;
        }
        Stmt::Mbarrier { op, addr, arg, .. } => {
            check_address(AddressSpace::Shared, value_ty(*addr)?)?;
            match (op.operand(), arg) {
                (None, None) => {}
                (Some(want), Some(a)) => {
                    let t = value_ty(*a)?;
                    if t != want {
                        return Err(format!("mbarrier {op:?}'s operand must be {want}, got {t}"));
                    }
                }
                (Some(want), None) => {
                    return Err(format!("mbarrier {op:?} needs its {want} operand"));
                }
                (None, Some(_)) => return Err(format!("mbarrier {op:?} takes no operand")),
            }
        }
        Stmt::Tma(op) => {
            let rank = op.rank();
            if op.map().is_some() && !(1..=crate::tma::MAX_RANK).contains(&rank) {
                return Err(format!("a tensor copy has 1 to 5 coordinates, not {rank}"));
            }
            for (i, (v, want)) in op
                .operands()
                .into_iter()
                .zip(op.operand_types())
                .enumerate()
            {
                let t = value_ty(*v)?;
                if t != want {
                    return Err(format!("tma {op:?} operand {i} must be {want}, got {t}"));
                }
            }
        }
        Stmt::StMatrix { addr, values, .. } => {
            check_address(AddressSpace::Shared, value_ty(*addr)?)?;
            if !matches!(values.len(), 1 | 2 | 4) {
                return Err(format!(
                    "stmatrix stores 1, 2 or 4 matrices, not {}",
                    values.len()
                ));
            }
            expect("stmatrix value", values, S::U32)?;
        }
        Stmt::ClusterLoad { addr, rank, .. } => {
            check_address(AddressSpace::Shared, value_ty(*addr)?)?;
            check_rank(value_ty(*rank)?)?;
        }
        Stmt::ClusterStore { addr, rank, value } => {
            check_address(AddressSpace::Shared, value_ty(*addr)?)?;
            check_rank(value_ty(*rank)?)?;
            value_ty(*value)?;
        }
        Stmt::SetMaxNreg { count, .. } if !crate::wgmma::valid_register_count(*count) => {
            return Err(format!(
                "setmaxnreg asks for a multiple of 8 in 24..=256 registers, not {count}"
            ));
        }
        Stmt::NamedBarrier { id, threads, .. } => {
            if !(1..=crate::wgmma::MAX_BARRIER_ID).contains(id) {
                return Err(format!(
                    "a named barrier's id is 1..=15 (0 is the block barrier), not {id}"
                ));
            }
            if *threads == 0 || *threads > 1024 || threads % 32 != 0 {
                return Err(format!(
                    "a named barrier counts a multiple of 32 threads up to 1024, not {threads}"
                ));
            }
        }
        Stmt::WgmmaWait { pending } if *pending > 7 => {
            return Err(format!(
                "wgmma.wait_group waits for 0..=7 groups, not {pending}"
            ));
        }
        Stmt::Print { format, args } => {
            let types = args
                .iter()
                .map(|&v| value_ty(v))
                .collect::<Result<Vec<_>, _>>()?;
            crate::printf::check_print(format, &types)?;
        }
        _ => {}
    }
    Ok(())
}

/// A distributed shared-memory access's block rank: a `U32`, as `%cluster_ctarank` is.
fn check_rank(ty: ScalarType) -> Result<(), String> {
    if ty != ScalarType::U32 {
        return Err(format!("a cluster block rank must be u32, got {ty}"));
    }
    Ok(())
}

/// A vector access of `lanes` elements of `ty`: 2 or 4 of them, not `Bool`, at most 16 bytes.
fn check_vector(ty: ScalarType, lanes: usize) -> Result<(), String> {
    if !matches!(lanes, 2 | 4) {
        return Err(format!("a vector access has 2 or 4 elements, not {lanes}"));
    }
    if ty == ScalarType::Bool {
        return Err("a vector access cannot move bool".into());
    }
    if ty.size_bytes() as usize * lanes > 16 {
        return Err(format!(
            "a vector access moves at most 16 bytes, not {lanes} x {ty}"
        ));
    }
    Ok(())
}

fn check_address(space: AddressSpace, ty: ScalarType) -> Result<(), String> {
    if ty != space.address_type() {
        return Err(format!(
            "{space:?} address must be {}, got {ty}",
            space.address_type()
        ));
    }
    Ok(())
}

/// An eviction hint other than `Normal` only on a global load (the caches it steers hold
/// global memory).
fn check_eviction(space: AddressSpace, eviction: Eviction) -> Result<(), String> {
    if eviction != Eviction::Normal && space != AddressSpace::Global {
        return Err(format!(
            "an eviction hint ({eviction:?}) on a {space:?} load: only global loads take one"
        ));
    }
    Ok(())
}

/// Checks every invariant of `kernel`.
pub fn validate_kernel(kernel: &Kernel) -> Result<(), ValidationError> {
    let err = |message: String| ValidationError {
        kernel: kernel.name.clone(),
        message,
    };
    if !is_ptx_identifier(&kernel.name) {
        return Err(err(format!(
            "`{}` is not a valid PTX identifier",
            kernel.name
        )));
    }
    if let Some(b) = kernel.launch_bounds
        && (b.max_threads == 0 || b.max_threads > 1024 || b.min_blocks_per_sm == Some(0))
    {
        return Err(err(format!("launch bounds {b:?} out of range")));
    }
    if let Some((x, y, z)) = kernel.block {
        let threads = u64::from(x) * u64::from(y) * u64::from(z);
        let max = kernel
            .launch_bounds
            .map_or(1024, |b| b.max_threads.min(1024));
        if x == 0 || y == 0 || z == 0 || x > 1024 || y > 1024 || z > 64 || threads > u64::from(max)
        {
            return Err(err(format!(
                "block ({x}, {y}, {z}) out of range (each dimension at least 1, at most \
                 (1024, 1024, 64), and at most {max} threads)"
            )));
        }
    }
    if let Some((x, y, z)) = kernel.cluster {
        let blocks = u64::from(x) * u64::from(y) * u64::from(z);
        if x == 0 || y == 0 || z == 0 || blocks > u64::from(crate::kernel::MAX_CLUSTER_BLOCKS) {
            return Err(err(format!(
                "cluster ({x}, {y}, {z}) out of range (each dimension at least 1, at most {} \
                 blocks in all)",
                crate::kernel::MAX_CLUSTER_BLOCKS
            )));
        }
    }
    if let Some(problem) = kernel.requires.iter().find_map(|r| r.problem(kernel)) {
        return Err(err(problem));
    }
    let align = kernel.dyn_shared_align;
    if align != 0 && (!align.is_power_of_two() || align > crate::kernel::DYN_SHARED_MAX_ALIGN) {
        return Err(err(format!(
            "dynamic shared memory alignment {align} is not a power of two up to {}",
            crate::kernel::DYN_SHARED_MAX_ALIGN
        )));
    }
    for (i, &a) in kernel.shared_align.iter().enumerate() {
        if i >= kernel.shared.len()
            || (a != 0 && (!a.is_power_of_two() || a > crate::kernel::MAX_ARRAY_ALIGN))
        {
            return Err(err(format!(
                "shared array alignment {a} (entry {i}) is not a power of two up to {} of a \
                 declared array",
                crate::kernel::MAX_ARRAY_ALIGN
            )));
        }
    }
    for p in &kernel.params {
        if let ParamKind::TensorMap { elem, rank } = p.kind
            && (!(1..=crate::tma::MAX_RANK).contains(&usize::from(rank))
                || crate::tma::tensor_map_data_type(elem).is_none())
        {
            return Err(err(format!(
                "tensor-map parameter `{}` of {rank} dimensions of {elem}: a tensor map has \
                 1 to 5 dimensions of a non-bool type",
                p.name
            )));
        }
    }
    if let Some(cap) = kernel.max_registers
        && !crate::wgmma::valid_register_count(cap)
    {
        return Err(err(format!(
            "register cap {cap} is not a multiple of 8 in 24..=256"
        )));
    }
    let mut uses_setmaxnreg = false;
    kernel.body.visit(&mut |s| {
        uses_setmaxnreg |= matches!(s, Stmt::SetMaxNreg { .. });
    });
    if uses_setmaxnreg && kernel.max_registers.is_none() {
        return Err(err(
            "setmaxnreg needs a register cap on the kernel (`#[max_registers(n)]`, PTX \
             `.maxnreg`); without one ptxas ignores it (warning C7508)"
                .into(),
        ));
    }
    let mut state = Walk {
        kernel,
        defined: vec![false; kernel.values.len()],
        scope: Vec::new(),
        in_scope: vec![false; kernel.values.len()],
        fence_mark: None,
        fenced_reads: Default::default(),
        fenced_writes: Vec::new(),
    };
    state.block(&kernel.body, 0).map_err(err)?;
    if let Some((v, _)) = kernel
        .values
        .iter()
        .find(|(v, _)| !state.defined[v.index()])
    {
        return Err(err(format!("value {v:?} is never defined")));
    }
    Ok(())
}

/// Validates every kernel and checks that names are unique.
pub fn validate_module(module: &Module) -> Result<(), ValidationError> {
    let mut names = HashSet::new();
    for k in &module.kernels {
        validate_kernel(k)?;
        if !names.insert(k.name.as_str()) {
            return Err(ValidationError {
                kernel: k.name.clone(),
                message: "duplicate kernel name".into(),
            });
        }
    }
    Ok(())
}

/// Whether `s` can name a kernel: an ASCII letter or `_`, then letters, digits and `_` (what
/// PTX accepts as an entry name, and what the emulator and the runtime look kernels up by).
pub fn is_ptx_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Walk<'k> {
    kernel: &'k Kernel,
    defined: Vec<bool>,
    /// Values visible at this point: a stack, truncated when a block ends.
    scope: Vec<Value>,
    /// `in_scope[v]`: whether `v` is on `scope` (so that a use is checked in constant time,
    /// not by searching the stack, which made validation quadratic in the kernel's size).
    in_scope: Vec<bool>,
    /// The length of `scope` at the last `wgmma.fence` of the enclosing blocks: the values
    /// above it were defined since, and a `wgmma` may not read them as `A` registers, unless
    /// they only read a variable no statement wrote since the fence (`fenced_reads`).
    fence_mark: Option<usize>,
    /// Since the last fence: the values that read a variable (and which), and the
    /// variables written.
    fenced_reads: std::collections::HashMap<Value, crate::kernel::Var>,
    fenced_writes: Vec<crate::kernel::Var>,
}

impl Walk<'_> {
    fn visible(&self, v: Value) -> Result<ScalarType, String> {
        let def = self
            .kernel
            .values
            .try_get(v)
            .ok_or_else(|| format!("value {v:?} out of range"))?;
        if !self.in_scope.get(v.index()).copied().unwrap_or(false) {
            return Err(format!(
                "value {v:?} used where its definition does not dominate"
            ));
        }
        Ok(def.ty)
    }

    fn block(&mut self, block: &Block, loop_depth: u32) -> Result<(), String> {
        let mark = self.scope.len();
        let fence_mark = self.fence_mark;
        for stmt in &block.stmts {
            self.stmt(stmt, loop_depth)?;
        }
        self.fence_mark = fence_mark;
        for v in self.scope.drain(mark..) {
            if let Some(flag) = self.in_scope.get_mut(v.index()) {
                *flag = false;
            }
        }
        Ok(())
    }

    fn stmt(&mut self, stmt: &Stmt, loop_depth: u32) -> Result<(), String> {
        match stmt {
            Stmt::Def { value, op } => {
                let ty = result_type(self.kernel, op, |v| self.visible(v))?;
                self.define(*value, ty, || format!("{op:?}"))?;
                if let (Op::ReadVar(var), Some(_)) = (op, self.fence_mark) {
                    self.fenced_reads.insert(*value, *var);
                }
            }
            Stmt::WriteVar { var, value } => {
                if self.fence_mark.is_some() {
                    self.fenced_writes.push(*var);
                }
                let vt = self.visible(*value)?;
                let var_ty = self
                    .kernel
                    .vars
                    .try_get(*var)
                    .ok_or_else(|| format!("variable {var:?} out of range"))?
                    .ty;
                if vt != var_ty {
                    return Err(format!(
                        "writing {vt} into variable {var:?} of type {var_ty}"
                    ));
                }
            }
            Stmt::Store { space, addr, value } => {
                check_address(*space, self.visible(*addr)?)?;
                self.visible(*value)?;
            }
            Stmt::AtomicStore {
                space,
                order,
                addr,
                value,
                ..
            } => {
                check_address(*space, self.visible(*addr)?)?;
                check_atomic_access(*space, self.visible(*value)?)?;
                if matches!(order, MemOrder::Acquire | MemOrder::AcqRel) {
                    return Err(format!("an atomic store cannot be {order:?}"));
                }
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                if self.visible(*cond)? != ScalarType::Bool {
                    return Err("if condition must be bool".into());
                }
                self.block(then, loop_depth)?;
                self.block(otherwise, loop_depth)?;
            }
            Stmt::Loop { body } => self.block(body, loop_depth + 1)?,
            Stmt::Break | Stmt::Continue => {
                if loop_depth == 0 {
                    return Err(format!("{stmt:?} outside a loop"));
                }
            }
            Stmt::Return
            | Stmt::Barrier
            | Stmt::Fence { .. }
            | Stmt::FenceProxyAsync { .. }
            | Stmt::SourceLine { .. } => {}
            Stmt::Trap(TrapKind::BoundsCheck { index, len, .. }) => {
                if self.visible(*index)? != ScalarType::U64
                    || self.visible(*len)? != ScalarType::U64
                {
                    return Err("bounds-check trap operands must be u64".into());
                }
            }
            Stmt::Trap(_) | Stmt::CpAsyncCommit | Stmt::CpAsyncWaitGroup { .. } => {}
            Stmt::WgmmaFence => {
                self.fence_mark = Some(self.scope.len());
                self.fenced_reads.clear();
                self.fenced_writes.clear();
            }
            Stmt::WgmmaCommit => {}
            Stmt::WgmmaWait { .. }
            | Stmt::SetMaxNreg { .. }
            | Stmt::NamedBarrier { .. }
            | Stmt::StMatrix { .. } => check_stmt_operands(stmt, |v| self.visible(v))?,
            Stmt::ClusterArrive | Stmt::ClusterWait | Stmt::FenceMbarrierInit => {}
            Stmt::ClusterStore { .. } => check_stmt_operands(stmt, |v| self.visible(v))?,
            Stmt::ClusterLoad { result, ty, .. } => {
                check_stmt_operands(stmt, |v| self.visible(v))?;
                self.define(*result, *ty, || "the cluster load".into())?;
            }
            Stmt::WgmmaMma(m) => {
                // A value defined since the fence is a register written since, unless it
                // only reads a variable nothing wrote since the fence (the same register).
                let written_since = |v: &Value| match self.fenced_reads.get(v) {
                    Some(var) => self.fenced_writes.contains(var),
                    None => true,
                };
                if let (crate::wgmma::WgmmaA::Registers(a), Some(mark)) = (&m.a, self.fence_mark)
                    && let Some(v) = a
                        .iter()
                        .find(|v| self.scope[mark..].contains(v) && written_since(v))
                {
                    let mut by = String::new();
                    self.kernel.body.visit(&mut |s| {
                        if let Stmt::Def { value, op } = s
                            && value == v
                        {
                            by = format!(" (by {op:?})");
                        }
                    });
                    return Err(format!(
                        "wgmma A register {v:?} is defined{by} after the `wgmma.fence` before \
                         the wgmma: registers a wgmma reads must be written before the fence"
                    ));
                }
                m.check(
                    |v| self.visible(v),
                    |var| {
                        self.kernel
                            .vars
                            .try_get(var)
                            .map(|d| d.ty)
                            .ok_or_else(|| format!("variable {var:?} out of range"))
                    },
                )?
            }
            Stmt::CpAsyncWaitAll => {}
            Stmt::Mma { .. }
            | Stmt::LdMatrix { .. }
            | Stmt::VectorLoad { .. }
            | Stmt::VectorStore { .. }
            | Stmt::CpAsync { .. }
            | Stmt::Print { .. }
            | Stmt::Mbarrier { .. }
            | Stmt::Tma(_) => {
                check_stmt_operands(stmt, |v| self.visible(v))?;
                if let Stmt::Tma(op) = stmt
                    && let Some(crate::tma::TensorMapRef::Param(i)) = op.map()
                {
                    match self.kernel.params.get(i as usize).map(|p| p.kind) {
                        Some(ParamKind::TensorMap { rank, .. })
                            if usize::from(rank) == op.rank() => {}
                        Some(ParamKind::TensorMap { rank, .. }) => {
                            return Err(format!(
                                "a {}-d tensor copy through the {rank}-d tensor map {i}",
                                op.rank()
                            ));
                        }
                        _ => return Err(format!("parameter {i} is not a tensor map")),
                    }
                }
                if let Stmt::Mbarrier { op, result, .. } = stmt
                    && result.is_some() != op.result().is_some()
                {
                    return Err(format!(
                        "mbarrier {op:?} {} a result",
                        if result.is_some() {
                            "defines no"
                        } else {
                            "needs"
                        }
                    ));
                }
                let name = match stmt {
                    Stmt::Mma { .. } => "the mma",
                    Stmt::VectorLoad { .. } => "the vector load",
                    Stmt::Mbarrier { .. } => "the mbarrier operation",
                    _ => "the ldmatrix",
                };
                for (value, ty) in stmt_results(stmt) {
                    self.define(value, ty, || name.into())?;
                }
            }
        }
        Ok(())
    }

    /// Records the definition of `value`, which `what` gives type `ty`.
    fn define(
        &mut self,
        value: Value,
        ty: ScalarType,
        what: impl FnOnce() -> String,
    ) -> Result<(), String> {
        let def = self
            .kernel
            .values
            .try_get(value)
            .ok_or_else(|| format!("defined value {value:?} out of range"))?;
        if def.ty != ty {
            return Err(format!(
                "value {value:?} declared {} but {} gives {ty}",
                def.ty,
                what()
            ));
        }
        if std::mem::replace(&mut self.defined[value.index()], true) {
            return Err(format!("value {value:?} defined twice"));
        }
        self.scope.push(value);
        if let Some(flag) = self.in_scope.get_mut(value.index()) {
            *flag = true;
        }
        Ok(())
    }
}

/// Atomic loads and stores: global or shared memory, 32- and 64-bit types.
fn check_atomic_access(space: AddressSpace, ty: ScalarType) -> Result<(), String> {
    if space == AddressSpace::Local {
        return Err("atomics on local memory".into());
    }
    if !matches!(ty.size_bytes(), 4 | 8) || ty == ScalarType::Bool {
        return Err(format!("atomic on {ty}: only 32- and 64-bit types"));
    }
    Ok(())
}

/// Refuses `what` (an arithmetic operation or a comparison) on a type without arithmetic
/// (`tf32`, which is cast to `f32` first: see [`ScalarType::has_arithmetic`]).
fn no_tf32_arithmetic(ty: ScalarType, what: &str) -> Result<(), String> {
    if !ty.has_arithmetic() {
        return Err(format!(
            "{what} on tf32: tf32 has no arithmetic; cast it to f32 first"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::KernelBuilder;
    use crate::types::Constant;

    /// `if c { x = 1 + 1 }; y = x + x`: `x` is out of scope after the `if`.
    fn use_after_block(use_inside: bool) -> Kernel {
        let mut b = KernelBuilder::new("scope");
        let c = b.constant(Constant::bool(true));
        let one = b.constant(Constant::u32(1));
        b.begin_block();
        let x = b.def(Op::Binary(BinaryOp::Add, one, one)).unwrap();
        if use_inside {
            b.def(Op::Binary(BinaryOp::Add, x, x)).unwrap();
        }
        let then = b.end_block();
        b.push(Stmt::If {
            cond: c,
            then,
            otherwise: Block::default(),
        });
        if !use_inside {
            b.def(Op::Binary(BinaryOp::Add, x, x)).unwrap();
        }
        b.finish()
    }

    /// A kernel's zeroed `m64n8k16` accumulator variables.
    fn wgmma_accumulator(b: &mut KernelBuilder) -> Vec<crate::kernel::Var> {
        let acc: Vec<_> = (0..4)
            .map(|i| b.var(format!("d{i}"), ScalarType::F32))
            .collect();
        let zero = b.constant(Constant::f32(0.0));
        for &v in &acc {
            b.push(Stmt::WriteVar {
                var: v,
                value: zero,
            });
        }
        acc
    }

    /// A `wgmma m64n8k16` with register `A` `a` (all four words) and accumulator `acc`.
    fn push_wgmma(b: &mut KernelBuilder, a: Value, acc: Vec<crate::kernel::Var>) {
        use crate::wgmma::{ScaleD, WgmmaA, WgmmaShape, WgmmaType};
        let desc = b.constant(Constant::u64(0));
        b.push(Stmt::WgmmaMma(Box::new(crate::WgmmaMma {
            shape: WgmmaShape {
                ty: WgmmaType::F16,
                n: 8,
            },
            a: WgmmaA::Registers([a; 4]),
            b: desc,
            scale_d: ScaleD::Const(true),
            negate_a: false,
            negate_b: false,
            trans_a: false,
            trans_b: false,
            acc,
        })));
    }

    /// A `wgmma` reading A from registers, which are made before or after its fence.
    fn wgmma_after(a_after_fence: bool) -> Kernel {
        let mut b = KernelBuilder::new("fenced");
        let acc = wgmma_accumulator(&mut b);
        let word = |b: &mut KernelBuilder| {
            let one = b.constant(Constant::u32(1));
            b.def(Op::Binary(BinaryOp::Add, one, one)).unwrap()
        };
        let early = word(&mut b);
        b.push(Stmt::WgmmaFence);
        let a = if a_after_fence { word(&mut b) } else { early };
        push_wgmma(&mut b, a, acc);
        b.finish()
    }

    #[test]
    fn a_wgmma_reads_no_register_written_after_its_fence() {
        validate_kernel(&wgmma_after(false)).unwrap();
        let err = validate_kernel(&wgmma_after(true)).unwrap_err();
        assert!(err.message.contains("after the `wgmma.fence`"), "{err}");
    }

    /// A register `A` read from a variable after the fence: the variable's register, fine
    /// when written before the fence, not when written after it.
    fn wgmma_reading_var(written_after_fence: bool) -> Kernel {
        let mut b = KernelBuilder::new("fenced_var");
        let acc = wgmma_accumulator(&mut b);
        let a_var = b.var("a", ScalarType::U32);
        let one = b.constant(Constant::u32(1));
        if !written_after_fence {
            b.push(Stmt::WriteVar {
                var: a_var,
                value: one,
            });
        }
        b.push(Stmt::WgmmaFence);
        if written_after_fence {
            b.push(Stmt::WriteVar {
                var: a_var,
                value: one,
            });
        }
        let a = b.def(Op::ReadVar(a_var)).unwrap();
        push_wgmma(&mut b, a, acc);
        b.finish()
    }

    #[test]
    fn a_wgmma_may_read_a_variable_written_before_its_fence() {
        validate_kernel(&wgmma_reading_var(false)).unwrap();
        let err = validate_kernel(&wgmma_reading_var(true)).unwrap_err();
        assert!(err.message.contains("after the `wgmma.fence`"), "{err}");
    }

    #[test]
    fn a_value_is_visible_in_its_block_only() {
        validate_kernel(&use_after_block(true)).unwrap();
        let err = validate_kernel(&use_after_block(false)).unwrap_err();
        assert!(err.message.contains("does not dominate"), "{err}");
    }

    #[test]
    fn validation_is_linear_in_the_kernel_size() {
        // 200,000 chained additions: quadratic scope checks took minutes here.
        let mut b = KernelBuilder::new("long");
        let mut v = b.constant(Constant::u32(1));
        for _ in 0..200_000 {
            v = b.def(Op::Binary(BinaryOp::Add, v, v)).unwrap();
        }
        let k = b.finish();
        let start = std::time::Instant::now();
        validate_kernel(&k).unwrap();
        assert!(start.elapsed().as_secs_f64() < 2.0, "{:?}", start.elapsed());
    }
}
