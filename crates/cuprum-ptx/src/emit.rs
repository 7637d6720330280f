//! The kernel writer: one `.entry` per IR kernel, and the statements of its body.
//!
//! This module owns the structure of the PTX text (parameters, register declarations,
//! shared and local arrays, labels for structured control flow) and the statements that touch
//! memory or the warp (loads, stores, atomics, shuffles, votes, barriers). The computation of
//! single values (arithmetic, comparisons, casts) lives in `ops`, float math sequences in
//! `math`, the warp matrix and `cp.async` instructions in `warp_matrix`, device `printf` in
//! `printf`; all add methods to [`KernelWriter`].
//!
//! It must not change what the IR means: every construct maps to PTX with the semantics
//! documented in `cuprum_ir::kernel`; anything it cannot express exactly is an
//! [`PtxError::Unsupported`], never an approximation that is not documented.

use std::fmt::{self, Write as _};

use cuprum_ir::{
    AddressSpace, Addresses, AtomicOp, Block, Eviction, Kernel, MemOrder, Op, ParamKind, Scope,
    ShuffleMode, Special, Stmt, Value, Var, VoteMode, array_layout,
};
use cuprum_ir::{Dim, ScalarType};

use crate::PtxError;
use crate::regs::{Class, Reg, RegFile, class_of, int_op_type, mem_type};

/// Appends one instruction line: a tab, the formatted text, `;` and a newline.
macro_rules! ins {
    ($w:expr, $($arg:tt)*) => {{
        $w.out.push('\t');
        let _ = ::std::fmt::Write::write_fmt(&mut $w.out, format_args!($($arg)*));
        $w.out.push_str(";\n");
    }};
}
pub(crate) use ins;

/// The module-scope symbol of dynamic shared memory (one for the whole module; the hardware
/// places it after the static shared memory of whichever kernel runs), declared
/// [`cuprum_ir::DYN_SHARED_MIN_ALIGN`]-aligned: a kernel that asks for more rounds its start
/// up itself ([`cuprum_ir::Kernel::dyn_shared_padding`]), since the driver's linker drops a
/// larger declared alignment.
pub(crate) const DYN_SHARED_SYMBOL: &str = "$cuprum_dsmem";
/// The function-scope symbol of the static shared arrays of a kernel.
const SHARED_SYMBOL: &str = "$smem";
/// The function-scope symbol of the local arrays of a kernel.
const LOCAL_SYMBOL: &str = "$lmem";

/// The name of machine parameter `index` of `kernel` (see [`crate::machine_params`]).
pub(crate) struct ParamName<'a>(pub(crate) &'a str, pub(crate) u32);

impl fmt::Display for ParamName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_param_{}", self.0, self.1)
    }
}

/// A label inside one entry.
#[derive(Clone, Copy)]
pub(crate) struct Label(u32);

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$L__{}", self.0)
    }
}

/// The member mask of a warp-synchronous instruction (see `control`).
#[derive(Clone, Copy)]
pub(crate) enum WarpMask {
    /// `0xffffffff`: at the top level of the body, where every live lane of the warp runs.
    Full,
    /// A register holding the exact lanes of the current branch or loop iteration.
    Active(Reg),
}

impl fmt::Display for WarpMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarpMask::Full => f.write_str("0xffffffff"),
            WarpMask::Active(r) => r.fmt(f),
        }
    }
}

/// Writes one kernel. Created per kernel by [`write_kernel`].
pub(crate) struct KernelWriter<'k> {
    /// The architecture written for.
    pub(crate) target: crate::Target,
    pub(crate) kernel: &'k Kernel,
    /// The body text; the entry header and declarations are written around it at the end.
    pub(crate) out: String,
    pub(crate) regs: RegFile,
    values: Vec<Reg>,
    vars: Vec<Reg>,
    /// The kernel's address analysis: which global addresses lie inside a read-only slice
    /// (loads from them may use `ld.global.nc`).
    addresses: Addresses,
    /// Per IR parameter: the index of its first machine parameter.
    param_slots: Vec<u32>,
    shared_offsets: Vec<u32>,
    local_offsets: Vec<u32>,
    next_label: u32,
    /// How `Break`/`Continue` leave each enclosing loop, innermost last.
    pub(crate) loops: Vec<crate::control::LoopExit>,
    /// Whether warp operations get exact member masks (some are inside control flow; see
    /// `control`).
    pub(crate) exact_masks: bool,
    /// The member mask of a warp operation at the current statement.
    pub(crate) mask: WarpMask,
    /// Module-scope declarations of the `printf` format strings, written before the entry.
    pub(crate) format_strings: Vec<String>,
    /// Bytes of the `vprintf` argument buffer (the most any print of the kernel needs).
    pub(crate) printf_args_size: u32,
    /// The `F32`/`F64` values defined as the constant `1.0`: `1.0 / x` is `rcp.rn`.
    pub(crate) float_ones: std::collections::HashSet<Value>,
    /// Words that are two 16-bit floats packed (`pack`), with their halves: `mov.b32 {lo, hi}`.
    pub(crate) half_pairs: std::collections::HashMap<Value, (Value, Value)>,
    /// The module's source files (`.file` index - 1), for `.loc`.
    pub(crate) files: &'k [String],
    /// Addresses defined as another value plus a small constant, written `[base+offset]`.
    offset_addresses: std::collections::HashMap<Value, (Value, i64)>,
}

/// The most an address operand's constant offset may be (either sign): PTX takes any 32-bit
/// offset, and ptxas folds those of this size into the instruction.
const MAX_ADDRESS_OFFSET: i64 = 1 << 23;

/// The integer values `kernel` defines as another value plus a small constant (`Add` of a
/// `U32` or `U64` with a constant operand), as `(base, offset)`: a load or store at such an
/// address is written `[base+offset]`, which is the same address in the type's wrapping
/// arithmetic, and ptxas then keeps one register for many accesses at offsets from it.
fn offset_addresses(kernel: &Kernel) -> std::collections::HashMap<Value, (Value, i64)> {
    let mut consts = std::collections::HashMap::new();
    let mut out = std::collections::HashMap::new();
    kernel.body.visit(&mut |s| {
        let cuprum_ir::Stmt::Def { value, op } = s else {
            return;
        };
        match op {
            cuprum_ir::Op::Const(c) => {
                let signed = match c.ty {
                    ScalarType::U32 => Some(i64::from(c.bits as u32 as i32)),
                    ScalarType::U64 => Some(c.bits as i64),
                    _ => None,
                };
                if let Some(k) =
                    signed.filter(|k| k.unsigned_abs() < MAX_ADDRESS_OFFSET.unsigned_abs())
                {
                    consts.insert(*value, k);
                }
            }
            cuprum_ir::Op::Binary(cuprum_ir::BinaryOp::Add, a, b) => {
                if let Some(&k) = consts.get(b) {
                    out.insert(*value, (*a, k));
                } else if let Some(&k) = consts.get(a) {
                    out.insert(*value, (*b, k));
                }
            }
            _ => {}
        }
    });
    out
}

/// The values `kernel` defines as the float constant `1.0`.
fn float_ones(kernel: &Kernel) -> std::collections::HashSet<Value> {
    let mut ones = std::collections::HashSet::new();
    kernel.body.visit(&mut |s| {
        if let cuprum_ir::Stmt::Def {
            value,
            op: cuprum_ir::Op::Const(c),
        } = s
            && (*c == cuprum_ir::Constant::f32(1.0) || *c == cuprum_ir::Constant::f64(1.0))
        {
            ones.insert(*value);
        }
    });
    ones
}

/// Appends the `.entry` of `kernel` to `out`.
pub(crate) fn write_kernel(
    kernel: &Kernel,
    target: crate::Target,
    files: &[String],
    out: &mut String,
) -> Result<(), PtxError> {
    let mut regs = RegFile::default();
    let values = kernel
        .values
        .iter()
        .map(|(_, def)| regs.alloc(class_of(def.ty)))
        .collect();
    let vars = kernel
        .vars
        .iter()
        .map(|(_, def)| regs.alloc(class_of(def.ty)))
        .collect();
    let mut param_slots = Vec::with_capacity(kernel.params.len());
    let mut slot = 0u32;
    for p in &kernel.params {
        param_slots.push(slot);
        slot += match p.kind {
            ParamKind::Scalar(_) | ParamKind::TensorMap { .. } => 1,
            ParamKind::Slice { .. } => 2,
        };
    }
    let (shared_offsets, shared_size) = kernel.shared_layout();
    let (local_offsets, local_size) = array_layout(&kernel.locals);
    let mut w = KernelWriter {
        kernel,
        target,
        out: String::with_capacity(64 * kernel.values.len() + 256),
        regs,
        values,
        vars,
        addresses: Addresses::new(kernel),
        param_slots,
        shared_offsets,
        local_offsets,
        next_label: 0,
        loops: Vec::new(),
        exact_masks: crate::control::needs_exact_masks(&kernel.body),
        offset_addresses: offset_addresses(kernel),
        mask: WarpMask::Full,
        format_strings: Vec::new(),
        printf_args_size: 0,
        float_ones: float_ones(kernel),
        half_pairs: crate::pack::half_pairs(kernel),
        files,
    };
    // Variables hold zero until first written (the IR's rule); ptxas drops the moves a
    // write always overrides.
    for i in 0..w.vars.len() {
        let reg = w.vars[i];
        match reg.class {
            Class::Pred => ins!(w, "setp.ne.u32 {reg}, 0, 0"),
            Class::B16 => ins!(w, "mov.b16 {reg}, 0"),
            Class::B32 => ins!(w, "mov.b32 {reg}, 0"),
            Class::B64 => ins!(w, "mov.b64 {reg}, 0"),
            Class::F32 => ins!(w, "mov.f32 {reg}, 0f00000000"),
            Class::F64 => ins!(w, "mov.f64 {reg}, 0d0000000000000000"),
        }
    }
    w.block(&kernel.body.stmts)?;
    ins!(w, "ret");

    // The entry: format strings, header, parameters, performance directives, declarations,
    // then the body.
    if !w.format_strings.is_empty() {
        out.push('\n');
        for decl in &w.format_strings {
            out.push_str(decl);
        }
    }
    let name = &kernel.name;
    let _ = write!(out, "\n.visible .entry {name}(");
    let mut n = 0u32;
    for p in &kernel.params {
        let types: &[&str] = match p.kind {
            ParamKind::Scalar(ty) => &[mem_type(ty)],
            ParamKind::Slice { .. } => &["u64", "u64"],
            ParamKind::TensorMap { .. } => &[crate::tma::TENSOR_MAP_PARAM],
        };
        for t in types {
            let sep = if n == 0 { "" } else { "," };
            let name = ParamName(name, n);
            match *t {
                crate::tma::TENSOR_MAP_PARAM => {
                    let _ = write!(out, "{sep}\n\t.param .align 64 .b8 {name}[128]");
                }
                t => {
                    let _ = write!(out, "{sep}\n\t.param .{t} {name}");
                }
            }
            n += 1;
        }
    }
    out.push_str(if n == 0 { ")\n" } else { "\n)\n" });
    // `.reqntid` (the exact block) and `.maxntid` may not both be given; the exact block is
    // within the launch bounds (the validator checks it), so it says more.
    if let Some((x, y, z)) = kernel.block {
        let _ = writeln!(out, ".reqntid {x}, {y}, {z}");
    } else if let Some(b) = kernel.launch_bounds {
        let _ = writeln!(out, ".maxntid {}, 1, 1", b.max_threads);
    }
    if let Some(m) = kernel.launch_bounds.and_then(|b| b.min_blocks_per_sm) {
        let _ = writeln!(out, ".minnctapersm {m}");
    }
    if let Some(r) = kernel.max_registers {
        let _ = writeln!(out, ".maxnreg {r}");
    }
    crate::cluster::entry_directives(kernel, target, out)?;
    out.push_str("{\n");
    for class in Class::ALL {
        let count = w.regs.count(class);
        if count > 0 {
            let _ = writeln!(
                out,
                "\t.reg .{} %{}<{count}>;",
                class.ptx_type(),
                class.prefix()
            );
        }
    }
    if shared_size > 0 {
        let _ = writeln!(
            out,
            "\t.shared .align {} .b8 {SHARED_SYMBOL}[{shared_size}];",
            kernel.shared_window_align()
        );
    }
    if local_size > 0 {
        let _ = writeln!(
            out,
            "\t.local .align {} .b8 {LOCAL_SYMBOL}[{local_size}];",
            cuprum_ir::ARRAY_ALIGN
        );
    }
    if w.printf_args_size > 0 {
        let _ = writeln!(
            out,
            "\t.local .align 8 .b8 {}[{}];",
            crate::printf::ARGS_SYMBOL,
            w.printf_args_size
        );
    }
    out.push('\n');
    out.push_str(&w.out);
    out.push_str("}\n");
    Ok(())
}

/// Whether any statement of `block` (nested ones included) defines a value with an operation
/// for which `pred` holds.
pub(crate) fn uses_op(block: &Block, pred: &impl Fn(&Op) -> bool) -> bool {
    block.stmts.iter().any(|s| match s {
        Stmt::Def { op, .. } => pred(op),
        Stmt::If {
            then, otherwise, ..
        } => uses_op(then, pred) || uses_op(otherwise, pred),
        Stmt::Loop { body } => uses_op(body, pred),
        _ => false,
    })
}

/// Whether `block` (nested blocks included) has a statement for which `pred` holds.
/// Adds the source files `block`'s `SourceLine`s name to `files`, in order of first use.
pub(crate) fn source_files(block: &Block, files: &mut Vec<String>) {
    for s in &block.stmts {
        match s {
            Stmt::SourceLine { file, .. } if !files.contains(file) => files.push(file.clone()),
            Stmt::If {
                then, otherwise, ..
            } => {
                source_files(then, files);
                source_files(otherwise, files);
            }
            Stmt::Loop { body } => source_files(body, files),
            _ => {}
        }
    }
}

pub(crate) fn uses_stmt(block: &Block, pred: &impl Fn(&Stmt) -> bool) -> bool {
    block.stmts.iter().any(|s| {
        pred(s)
            || match s {
                Stmt::If {
                    then, otherwise, ..
                } => uses_stmt(then, pred) || uses_stmt(otherwise, pred),
                Stmt::Loop { body } => uses_stmt(body, pred),
                _ => false,
            }
    })
}

fn space_name(space: AddressSpace) -> &'static str {
    match space {
        AddressSpace::Global => "global",
        AddressSpace::Shared => "shared",
        AddressSpace::Local => "local",
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Block => "cta",
        Scope::Device => "gpu",
        Scope::System => "sys",
    }
}

/// The type of a store of `ty`: values in float registers (`tf32` too) and halves store as
/// their memory type, integers by size (extension does not matter).
pub(crate) fn store_type(ty: ScalarType) -> &'static str {
    match (class_of(ty), ty.size_bytes()) {
        (Class::F32 | Class::F64 | Class::B16, _) => mem_type(ty),
        (_, 1) => "u8",
        (_, 2) => "u16",
        (_, 4) => "u32",
        _ => "u64",
    }
}

impl<'k> KernelWriter<'k> {
    /// The register of value `v`.
    pub(crate) fn reg(&self, v: Value) -> Reg {
        // A validated kernel defines every value, so the index is in range; the fallback only
        // keeps this total.
        self.values.get(v.index()).copied().unwrap_or(Reg {
            class: Class::B32,
            index: 0,
        })
    }

    /// The register of variable `v`.
    pub(crate) fn var(&self, v: Var) -> Reg {
        self.vars.get(v.index()).copied().unwrap_or(Reg {
            class: Class::B32,
            index: 0,
        })
    }

    /// The type of value `v`.
    pub(crate) fn ty(&self, v: Value) -> ScalarType {
        self.kernel
            .values
            .try_get(v)
            .map_or(ScalarType::U32, |d| d.ty)
    }

    /// A fresh temporary register.
    pub(crate) fn tmp(&mut self, class: Class) -> Reg {
        self.regs.alloc(class)
    }

    pub(crate) fn label(&mut self) -> Label {
        self.next_label += 1;
        Label(self.next_label)
    }

    pub(crate) fn place(&mut self, l: Label) {
        let _ = writeln!(self.out, "{l}:");
    }

    pub(crate) fn unsupported(&self, what: impl Into<String>) -> PtxError {
        PtxError::Unsupported {
            kernel: self.kernel.name.clone(),
            what: what.into(),
        }
    }

    /// Name of the machine parameter `offset` of IR parameter `index`.
    pub(crate) fn param_name(&self, index: u32, offset: u32) -> ParamName<'k> {
        let slot = self.param_slots.get(index as usize).copied().unwrap_or(0);
        ParamName(&self.kernel.name, slot + offset)
    }

    pub(crate) fn stmt(&mut self, stmt: &Stmt) -> Result<(), PtxError> {
        match stmt {
            Stmt::Def { value, op } => self.def(*value, op)?,
            Stmt::WriteVar { var, value } => {
                let (d, s) = (self.var(*var), self.reg(*value));
                ins!(self, "mov.{} {d}, {s}", d.class.ptx_type());
            }
            Stmt::Store { space, addr, value } => self.store(*space, *addr, *value),
            Stmt::AtomicStore {
                space,
                scope,
                order,
                addr,
                value,
            } => self.atomic_store(*space, *scope, *order, *addr, *value)?,
            Stmt::VectorLoad {
                space,
                ty,
                addr,
                d,
                eviction,
            } => self.vector_load(*space, *ty, *addr, d, *eviction),
            Stmt::VectorStore {
                space,
                addr,
                values,
            } => self.vector_store(*space, *addr, values),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => self.if_stmt(*cond, then, otherwise)?,
            Stmt::Loop { body } => self.loop_stmt(body)?,
            Stmt::Break => self.loop_jump(true)?,
            Stmt::Continue => self.loop_jump(false)?,
            Stmt::Return => ins!(self, "ret"),
            Stmt::Barrier => ins!(self, "bar.sync 0"),
            Stmt::Fence { scope } => ins!(self, "fence.sc.{}", scope_name(*scope)),
            Stmt::SourceLine { file, line, column } => {
                let index = self.files.iter().position(|f| f == file).ok_or_else(|| {
                    self.unsupported("line information naming a file the module did not declare")
                })?;
                let _ = writeln!(self.out, "\t.loc {} {line} {column}", index + 1);
            }
            Stmt::FenceProxyAsync { space } => {
                if self.target == crate::Target::Sm80 {
                    return Err(self.unsupported(
                        "`fence.proxy.async` on sm_80 (it needs compute capability 9.0)",
                    ));
                }
                match space {
                    cuprum_ir::ProxyFenceSpace::SharedCta => {
                        ins!(self, "fence.proxy.async.shared::cta")
                    }
                    cuprum_ir::ProxyFenceSpace::All => ins!(self, "fence.proxy.async"),
                }
            }
            Stmt::Trap(_) => ins!(self, "trap"),
            Stmt::Mma { shape, a, b, c, d } => self.mma(*shape, a, b, c, d),
            Stmt::LdMatrix { trans, addr, d } => self.ldmatrix(*trans, *addr, d),
            Stmt::CpAsync {
                cache,
                size,
                dst,
                src,
                src_size,
            } => self.cp_async(*cache, *size, *dst, *src, *src_size),
            Stmt::CpAsyncCommit => ins!(self, "cp.async.commit_group"),
            Stmt::CpAsyncWaitGroup { pending } => ins!(self, "cp.async.wait_group {pending}"),
            Stmt::CpAsyncWaitAll => ins!(self, "cp.async.wait_all"),
            Stmt::Print { format, args } => self.print(format, args),
            Stmt::Mbarrier {
                op,
                addr,
                arg,
                result,
            } => self.mbarrier(*op, *addr, *arg, *result)?,
            Stmt::Tma(op) => self.tma(op)?,
            Stmt::WgmmaFence => self.wgmma_fence()?,
            Stmt::WgmmaMma(m) => self.wgmma_mma(m)?,
            Stmt::WgmmaCommit => self.wgmma_commit()?,
            Stmt::WgmmaWait { pending } => self.wgmma_wait(*pending)?,
            Stmt::SetMaxNreg { increase, count } => self.setmaxnreg(*increase, *count)?,
            Stmt::NamedBarrier {
                arrive,
                id,
                threads,
            } => self.named_barrier(*arrive, *id, *threads),
            Stmt::StMatrix {
                trans,
                addr,
                values,
            } => self.stmatrix(*trans, *addr, values)?,
            Stmt::ClusterArrive => self.cluster_barrier(false),
            Stmt::ClusterWait => self.cluster_barrier(true),
            Stmt::FenceMbarrierInit => self.fence_mbarrier_init(),
            Stmt::ClusterLoad {
                result,
                ty,
                addr,
                rank,
            } => self.cluster_load(*result, *ty, *addr, *rank)?,
            Stmt::ClusterStore { addr, rank, value } => self.cluster_store(*addr, *rank, *value)?,
        }
        Ok(())
    }

    /// `mov` of a whole register of any class.
    pub(crate) fn mov(&mut self, d: Reg, s: Reg) {
        ins!(self, "mov.{} {d}, {s}", d.class.ptx_type());
    }

    /// Values that read a parameter, an array address or a hardware register.
    pub(crate) fn def_input(&mut self, d: Reg, ty: ScalarType, op: &Op) {
        match op {
            Op::Param(i) => {
                let p = self.param_name(*i, 0);
                if ty == ScalarType::Bool {
                    let t = self.tmp(Class::B32);
                    ins!(self, "ld.param.u8 {t}, [{p}]");
                    ins!(self, "setp.ne.u32 {d}, {t}, 0");
                } else {
                    ins!(self, "ld.param.{} {d}, [{p}]", mem_type(ty));
                }
            }
            Op::SliceBase(i) => {
                let p = self.param_name(*i, 0);
                ins!(self, "ld.param.u64 {d}, [{p}]");
                ins!(self, "cvta.to.global.u64 {d}, {d}");
            }
            Op::SliceLen(i) => {
                let p = self.param_name(*i, 1);
                ins!(self, "ld.param.u64 {d}, [{p}]");
            }
            Op::SharedAddr(i) => {
                let off = self.shared_offsets.get(*i as usize).copied().unwrap_or(0);
                self.symbol_address(d, SHARED_SYMBOL, off);
            }
            Op::LocalAddr(i) => {
                let off = self.local_offsets.get(*i as usize).copied().unwrap_or(0);
                self.symbol_address(d, LOCAL_SYMBOL, off);
            }
            Op::DynSharedAddr => {
                self.symbol_address(d, DYN_SHARED_SYMBOL, 0);
                let padding = self.kernel.dyn_shared_padding();
                if padding > 0 {
                    // Up to the next multiple of the alignment: the launch gave `padding`
                    // bytes more (the region starts 16-byte aligned).
                    let mask = !(self.kernel.dyn_shared_alignment() - 1);
                    ins!(self, "add.u32 {d}, {d}, {padding}");
                    ins!(self, "and.b32 {d}, {d}, 0x{mask:08X}");
                }
            }
            Op::Special(s) if crate::cluster::is_cluster_special(*s) => self.cluster_special(d, *s),
            Op::Special(s) => {
                let dim = |d: &Dim| match d {
                    Dim::X => "x",
                    Dim::Y => "y",
                    Dim::Z => "z",
                };
                let (reg, dim) = match s {
                    Special::ThreadIdx(d) => ("tid", dim(d)),
                    Special::BlockDim(d) => ("ntid", dim(d)),
                    Special::BlockIdx(d) => ("ctaid", dim(d)),
                    Special::GridDim(d) => ("nctaid", dim(d)),
                    Special::LaneId => ("laneid", ""),
                    _ => return,
                };
                let dot = if dim.is_empty() { "" } else { "." };
                ins!(self, "mov.u32 {d}, %{reg}{dot}{dim}");
            }
            _ => {}
        }
    }

    fn symbol_address(&mut self, d: Reg, symbol: &str, offset: u32) {
        ins!(self, "mov.u32 {d}, {symbol}");
        if offset != 0 {
            ins!(self, "add.u32 {d}, {d}, {offset}");
        }
    }

    /// The address operand of a load or store at `addr`, without its brackets: `%r` or
    /// `%r+16` ([`offset_addresses`]).
    fn address_operand(&self, addr: Value) -> String {
        match self.offset_addresses.get(&addr) {
            Some(&(base, offset)) if offset != 0 => format!("{}+{offset}", self.reg(base)),
            Some(&(base, _)) => self.reg(base).to_string(),
            None => self.reg(addr).to_string(),
        }
    }

    pub(crate) fn load(
        &mut self,
        d: Reg,
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
        eviction: Eviction,
    ) {
        let (a, sp, nc) = (
            self.address_operand(addr),
            space_name(space),
            self.non_coherent(space, addr),
        );
        let (hint, policy) = self.cache_hint(eviction);
        if ty == ScalarType::Bool {
            let t = self.tmp(Class::B32);
            ins!(self, "ld.{sp}{nc}{hint}.u8 {t}, [{a}]{policy}");
            ins!(self, "setp.ne.u32 {d}, {t}, 0");
        } else {
            ins!(
                self,
                "ld.{sp}{nc}{hint}.{} {d}, [{a}]{policy}",
                mem_type(ty)
            );
        }
    }

    /// A load's qualifiers and trailing policy operand for `eviction`: the L1 eviction
    /// priority and an L2 policy of the same kind over all of the lines read, made by a
    /// `createpolicy` just before (ptxas keeps one per kind); nothing for `Normal`.
    fn cache_hint(&mut self, eviction: Eviction) -> (&'static str, String) {
        let (kind, hint) = match eviction {
            Eviction::Normal => return ("", String::new()),
            Eviction::First => ("evict_first", ".L1::evict_first.L2::cache_hint"),
            Eviction::Last => ("evict_last", ".L1::evict_last.L2::cache_hint"),
        };
        let policy = self.tmp(Class::B64);
        ins!(self, "createpolicy.fractional.L2::{kind}.b64 {policy}, 1.0");
        (hint, format!(", {policy}"))
    }

    /// `.nc` where `addr` is a global address inside a read-only slice.
    fn non_coherent(&self, space: AddressSpace, addr: Value) -> &'static str {
        if space == AddressSpace::Global && self.addresses.is_read_only(addr) {
            ".nc"
        } else {
            ""
        }
    }

    /// `{%r1, %r2, ..}`: the registers of `values`, as a PTX vector operand.
    fn vector_operand(&self, values: &[Value]) -> String {
        let regs: Vec<String> = values.iter().map(|&v| self.reg(v).to_string()).collect();
        format!("{{{}}}", regs.join(", "))
    }

    fn vector_load(
        &mut self,
        space: AddressSpace,
        ty: ScalarType,
        addr: Value,
        d: &[Value],
        eviction: Eviction,
    ) {
        let (a, sp, nc) = (
            self.address_operand(addr),
            space_name(space),
            self.non_coherent(space, addr),
        );
        let (hint, policy) = self.cache_hint(eviction);
        let (n, list) = (d.len(), self.vector_operand(d));
        ins!(
            self,
            "ld.{sp}{nc}{hint}.v{n}.{} {list}, [{a}]{policy}",
            mem_type(ty)
        );
    }

    fn vector_store(&mut self, space: AddressSpace, addr: Value, values: &[Value]) {
        let Some(&first) = values.first() else {
            return;
        };
        let (a, sp, ty) = (
            self.address_operand(addr),
            space_name(space),
            self.ty(first),
        );
        let (n, list) = (values.len(), self.vector_operand(values));
        ins!(self, "st.{sp}.v{n}.{} [{a}], {list}", store_type(ty));
    }

    fn store(&mut self, space: AddressSpace, addr: Value, value: Value) {
        let (a, v, ty) = (self.address_operand(addr), self.reg(value), self.ty(value));
        let sp = space_name(space);
        if ty == ScalarType::Bool {
            let t = self.tmp(Class::B32);
            ins!(self, "selp.u32 {t}, 1, 0, {v}");
            ins!(self, "st.{sp}.u8 [{a}], {t}");
        } else {
            ins!(self, "st.{sp}.{} [{a}], {v}", store_type(ty));
        }
    }

    /// The `.sem` qualifier of an atomic of `order` at `scope`, after the `fence.sc` that a
    /// `SeqCst` one begins with (PTX's mapping of C++'s `seq_cst`: a `fence.sc`, then an
    /// acquire load or read-modify-write, or a relaxed store).
    fn atomic_sem(&mut self, order: MemOrder, scope: Scope, store: bool) -> &'static str {
        match order {
            MemOrder::Relaxed => "relaxed",
            MemOrder::Acquire => "acquire",
            MemOrder::Release => "release",
            MemOrder::AcqRel => "acq_rel",
            MemOrder::SeqCst => {
                ins!(self, "fence.sc.{}", scope_name(scope));
                if store { "relaxed" } else { "acquire" }
            }
        }
    }

    /// `ld.{sem}.{scope}`: an atomic load (never `.nc`).
    pub(crate) fn atomic_load(
        &mut self,
        d: Reg,
        space: AddressSpace,
        scope: Scope,
        order: MemOrder,
        ty: ScalarType,
        addr: Value,
    ) -> Result<(), PtxError> {
        if space == AddressSpace::Local {
            return Err(self.unsupported("atomics on local memory"));
        }
        let a = self.reg(addr);
        let sem = self.atomic_sem(order, scope, false);
        let (sc, sp) = (scope_name(scope), space_name(space));
        ins!(self, "ld.{sem}.{sc}.{sp}.{} {d}, [{a}]", mem_type(ty));
        Ok(())
    }

    /// `st.{sem}.{scope}`: an atomic store.
    pub(crate) fn atomic_store(
        &mut self,
        space: AddressSpace,
        scope: Scope,
        order: MemOrder,
        addr: Value,
        value: Value,
    ) -> Result<(), PtxError> {
        if space == AddressSpace::Local {
            return Err(self.unsupported("atomics on local memory"));
        }
        let (a, v, ty) = (self.reg(addr), self.reg(value), self.ty(value));
        let sem = self.atomic_sem(order, scope, true);
        let (sc, sp) = (scope_name(scope), space_name(space));
        ins!(self, "st.{sem}.{sc}.{sp}.{} [{a}], {v}", store_type(ty));
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn atomic(
        &mut self,
        d: Reg,
        op: AtomicOp,
        space: AddressSpace,
        scope: Scope,
        order: MemOrder,
        addr: Value,
        value: Value,
        compare: Option<Value>,
    ) -> Result<(), PtxError> {
        let (a, mut v, ty) = (self.reg(addr), self.reg(value), self.ty(value));
        if space == AddressSpace::Local {
            return Err(self.unsupported("atomics on local memory"));
        }
        let wide = ty.size_bytes() == 8;
        let bits = if wide { "b64" } else { "b32" };
        let (name, t) = match op {
            AtomicOp::Add | AtomicOp::Sub if ty.is_float() => {
                if op == AtomicOp::Sub {
                    return Err(self.unsupported("atomic sub on floats"));
                }
                ("add", crate::regs::float_type(ty))
            }
            AtomicOp::Add | AtomicOp::Sub => {
                if op == AtomicOp::Sub {
                    let n = self.tmp(v.class);
                    ins!(self, "neg.s{} {n}, {v}", if wide { 64 } else { 32 });
                    v = n;
                }
                ("add", if wide { "u64" } else { "u32" })
            }
            AtomicOp::Min | AtomicOp::Max if ty.is_int() => {
                let name = if op == AtomicOp::Min { "min" } else { "max" };
                (name, int_op_type(ty))
            }
            AtomicOp::Min | AtomicOp::Max => {
                return Err(self.unsupported(format!("atomic {op:?} on {ty}")));
            }
            AtomicOp::Exchange => ("exch", bits),
            AtomicOp::CompareExchange => ("cas", bits),
            AtomicOp::And => ("and", bits),
            AtomicOp::Or => ("or", bits),
            AtomicOp::Xor => ("xor", bits),
        };
        let sem = self.atomic_sem(order, scope, false);
        let (sc, sp) = (scope_name(scope), space_name(space));
        match compare {
            Some(c) if op == AtomicOp::CompareExchange => {
                let c = self.reg(c);
                ins!(self, "atom.{sem}.{sc}.{sp}.{name}.{t} {d}, [{a}], {c}, {v}");
            }
            _ => ins!(self, "atom.{sem}.{sc}.{sp}.{name}.{t} {d}, [{a}], {v}"),
        }
        Ok(())
    }

    pub(crate) fn shuffle(&mut self, d: Reg, mode: ShuffleMode, value: Value, lane: Value) {
        let (v, b) = (self.reg(value), self.reg(lane));
        let mask = self.mask;
        let (m, c) = match mode {
            ShuffleMode::Idx => ("idx", "0x1f"),
            ShuffleMode::Up => ("up", "0x0"),
            ShuffleMode::Down => ("down", "0x1f"),
            ShuffleMode::Xor => ("bfly", "0x1f"),
        };
        match v.class {
            Class::B32 | Class::F32 => ins!(self, "shfl.sync.{m}.b32 {d}, {v}, {b}, {c}, {mask}"),
            Class::B64 | Class::F64 => {
                let (lo, hi) = (self.tmp(Class::B32), self.tmp(Class::B32));
                ins!(self, "mov.b64 {{{lo}, {hi}}}, {v}");
                ins!(self, "shfl.sync.{m}.b32 {lo}, {lo}, {b}, {c}, {mask}");
                ins!(self, "shfl.sync.{m}.b32 {hi}, {hi}, {b}, {c}, {mask}");
                ins!(self, "mov.b64 {d}, {{{lo}, {hi}}}");
            }
            Class::B16 => {
                let t = self.tmp(Class::B32);
                ins!(self, "cvt.u32.u16 {t}, {v}");
                ins!(self, "shfl.sync.{m}.b32 {t}, {t}, {b}, {c}, {mask}");
                ins!(self, "cvt.u16.u32 {d}, {t}");
            }
            Class::Pred => {
                let t = self.tmp(Class::B32);
                ins!(self, "selp.u32 {t}, 1, 0, {v}");
                ins!(self, "shfl.sync.{m}.b32 {t}, {t}, {b}, {c}, {mask}");
                ins!(self, "setp.ne.u32 {d}, {t}, 0");
            }
        }
    }

    pub(crate) fn vote(&mut self, d: Reg, mode: VoteMode, pred: Value) {
        let p = self.reg(pred);
        let mask = self.mask;
        match mode {
            VoteMode::All => ins!(self, "vote.sync.all.pred {d}, {p}, {mask}"),
            VoteMode::Any => ins!(self, "vote.sync.any.pred {d}, {p}, {mask}"),
            VoteMode::Ballot => ins!(self, "vote.sync.ballot.b32 {d}, {p}, {mask}"),
        }
    }
}
