//! The IR's text form, for `cargo cuprum emit`, snapshots and error messages.
//!
//! One statement per line, values as `%N`, variables as `$name.N`; nested blocks indented.
//! The format is for people; nothing parses it back.

use std::fmt::{self, Write};

use crate::kernel::*;

/// Prints every kernel of `module`.
pub fn print_module(module: &Module) -> String {
    let mut out = String::new();
    for (i, k) in module.kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&print_kernel(k));
    }
    out
}

/// Prints one kernel.
pub fn print_kernel(kernel: &Kernel) -> String {
    let mut p = Printer {
        kernel,
        out: String::new(),
    };
    // Writing to a String cannot fail.
    let _ = p.kernel();
    p.out
}

struct Printer<'k> {
    kernel: &'k Kernel,
    out: String,
}

impl Printer<'_> {
    fn kernel(&mut self) -> fmt::Result {
        let k = self.kernel;
        write!(self.out, "kernel {}(", k.name)?;
        for (i, p) in k.params.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            match p.kind {
                ParamKind::Scalar(t) => write!(self.out, "{}: {t}", p.name)?,
                ParamKind::Slice { elem, access } => {
                    let a = match access {
                        SliceAccess::ReadOnly => "&",
                        SliceAccess::Disjoint => "disjoint ",
                        SliceAccess::ReadWrite => "&mut ",
                    };
                    write!(self.out, "{}: {a}[{elem}]", p.name)?
                }
                ParamKind::TensorMap { elem, rank } => {
                    write!(self.out, "{}: tensormap<{elem}, {rank}>", p.name)?
                }
            }
        }
        self.out.push(')');
        if let Some(b) = k.launch_bounds {
            write!(self.out, " maxntid({})", b.max_threads)?;
            if let Some(m) = b.min_blocks_per_sm {
                write!(self.out, " minnctapersm({m})")?;
            }
        }
        if let Some((x, y, z)) = k.block {
            write!(self.out, " block({x}, {y}, {z})")?;
        }
        if let Some((x, y, z)) = k.cluster {
            write!(self.out, " cluster({x}, {y}, {z})")?;
        }
        for r in &k.requires {
            write!(self.out, " requires({})", r.text)?;
        }
        self.out.push_str(" {\n");
        for (i, a) in k.shared.iter().enumerate() {
            write!(self.out, "  shared {}: [{}; {}]", a.name, a.elem, a.len)?;
            match k.shared_align.get(i) {
                Some(&align) if align > crate::kernel::ARRAY_ALIGN => {
                    writeln!(self.out, " align({align})")?
                }
                _ => self.out.push('\n'),
            }
        }
        for a in &k.locals {
            writeln!(self.out, "  local {}: [{}; {}]", a.name, a.elem, a.len)?;
        }
        for (v, d) in k.vars.iter() {
            writeln!(self.out, "  var ${}.{}: {}", d.name, v.index(), d.ty)?;
        }
        self.block(&k.body, 1)?;
        self.out.push_str("}\n");
        Ok(())
    }

    fn var(&self, v: Var) -> String {
        let name = self.kernel.vars.try_get(v).map_or("?", |d| d.name.as_str());
        format!("${name}.{}", v.index())
    }

    fn block(&mut self, block: &Block, depth: usize) -> fmt::Result {
        for s in &block.stmts {
            self.stmt(s, depth)?;
        }
        Ok(())
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match stmt {
            Stmt::Def { value, op } => {
                let ty = self
                    .kernel
                    .values
                    .try_get(*value)
                    .map_or("?".into(), |d| d.ty.to_string());
                let op = self.op(op);
                writeln!(self.out, "{pad}%{}: {ty} = {op}", value.index())
            }
            Stmt::WriteVar { var, value } => {
                let var = self.var(*var);
                writeln!(self.out, "{pad}{var} = %{}", value.index())
            }
            Stmt::AtomicStore {
                space,
                scope,
                order,
                addr,
                value,
            } => writeln!(
                self.out,
                "{pad}atomic.store.{order:?}.{space:?}.{scope:?} [%{}] = %{}",
                addr.index(),
                value.index()
            ),
            Stmt::Store { space, addr, value } => {
                writeln!(
                    self.out,
                    "{pad}store.{space:?} [%{}] = %{}",
                    addr.index(),
                    value.index()
                )
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                writeln!(self.out, "{pad}if %{} {{", cond.index())?;
                self.block(then, depth + 1)?;
                if !otherwise.stmts.is_empty() {
                    writeln!(self.out, "{pad}}} else {{")?;
                    self.block(otherwise, depth + 1)?;
                }
                writeln!(self.out, "{pad}}}")
            }
            Stmt::Loop { body } => {
                writeln!(self.out, "{pad}loop {{")?;
                self.block(body, depth + 1)?;
                writeln!(self.out, "{pad}}}")
            }
            Stmt::Break => writeln!(self.out, "{pad}break"),
            Stmt::Continue => writeln!(self.out, "{pad}continue"),
            Stmt::Return => writeln!(self.out, "{pad}return"),
            Stmt::Barrier => writeln!(self.out, "{pad}barrier"),
            Stmt::Fence { scope } => writeln!(self.out, "{pad}fence.{scope:?}"),
            Stmt::FenceProxyAsync { space } => match space {
                ProxyFenceSpace::SharedCta => {
                    writeln!(self.out, "{pad}fence.proxy.async.shared::cta")
                }
                ProxyFenceSpace::All => writeln!(self.out, "{pad}fence.proxy.async"),
            },
            Stmt::SourceLine { file, line, column } => {
                writeln!(self.out, "{pad}// {file}:{line}:{column}")
            }
            Stmt::Trap(TrapKind::BoundsCheck { index, len, site }) => writeln!(
                self.out,
                "{pad}trap bounds_check(%{}, %{}) {site:?}",
                index.index(),
                len.index()
            ),
            Stmt::Trap(t) => writeln!(self.out, "{pad}trap {t:?}"),
            Stmt::Mma { shape, a, b, c, d } => {
                let results = self.results(d);
                writeln!(
                    self.out,
                    "{pad}{results} = mma.{}.{} {}, {}, {}",
                    shape.ptx_shape(),
                    shape.input_type(),
                    list(a),
                    list(b),
                    list(c)
                )
            }
            Stmt::VectorLoad {
                space,
                ty,
                addr,
                d,
                eviction,
            } => {
                let results = self.results(d);
                writeln!(
                    self.out,
                    "{pad}{results} = load.{space:?}{}.v{}.{ty} [%{}]",
                    eviction_suffix(*eviction),
                    d.len(),
                    addr.index()
                )
            }
            Stmt::VectorStore {
                space,
                addr,
                values,
            } => {
                let list: Vec<String> = values.iter().map(|v| format!("%{}", v.index())).collect();
                writeln!(
                    self.out,
                    "{pad}store.{space:?}.v{} [%{}] = {{{}}}",
                    values.len(),
                    addr.index(),
                    list.join(", ")
                )
            }
            Stmt::LdMatrix { trans, addr, d } => {
                let results = self.results(d);
                let t = if *trans { ".trans" } else { "" };
                writeln!(
                    self.out,
                    "{pad}{results} = ldmatrix.x{}{t} [%{}]",
                    d.len(),
                    addr.index()
                )
            }
            Stmt::CpAsync {
                cache,
                size,
                dst,
                src,
                src_size,
            } => writeln!(
                self.out,
                "{pad}cp.async.{}.{size} shared[%{}] <- global[%{}]{}",
                cache.ptx_name(),
                dst.index(),
                src.index(),
                src_size.map_or(String::new(), |n| format!(", src_size %{}", n.index()))
            ),
            Stmt::CpAsyncCommit => writeln!(self.out, "{pad}cp.async.commit_group"),
            Stmt::CpAsyncWaitGroup { pending } => {
                writeln!(self.out, "{pad}cp.async.wait_group {pending}")
            }
            Stmt::CpAsyncWaitAll => writeln!(self.out, "{pad}cp.async.wait_all"),
            Stmt::Mbarrier {
                op,
                addr,
                arg,
                result,
            } => {
                let name = match op {
                    MbarrierOp::Init => "init",
                    MbarrierOp::Arrive => "arrive",
                    MbarrierOp::ArriveExpectTx => "arrive.expect_tx",
                    MbarrierOp::ExpectTx => "expect_tx",
                    MbarrierOp::TestWait => "test_wait",
                    MbarrierOp::TryWait => "try_wait",
                    MbarrierOp::TryWaitParity => "try_wait.parity",
                    MbarrierOp::Wait => "wait",
                    MbarrierOp::WaitParity => "wait.parity",
                    MbarrierOp::Inval => "inval",
                    MbarrierOp::CpAsyncArrive { noinc: false } => "cp_async_arrive",
                    MbarrierOp::CpAsyncArrive { noinc: true } => "cp_async_arrive.noinc",
                    MbarrierOp::ArriveCluster => "arrive.cluster",
                };
                let lhs = result.map_or(String::new(), |r| format!("%{} = ", r.index()));
                let operand = arg.map_or(String::new(), |a| format!(", %{}", a.index()));
                writeln!(
                    self.out,
                    "{pad}{lhs}mbarrier.{name} shared[%{}]{operand}",
                    addr.index()
                )
            }
            Stmt::Tma(op) => {
                let map = |m: &crate::tma::TensorMapRef| match m {
                    crate::tma::TensorMapRef::Param(i) => format!("param{i}"),
                    crate::tma::TensorMapRef::Global(v) => format!("global[%{}]", v.index()),
                };
                let list = |vs: &[Value]| {
                    vs.iter()
                        .map(|v| format!("%{}", v.index()))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                match op {
                    crate::tma::TmaOp::LoadTile {
                        map: m,
                        coords,
                        dst,
                        mbar,
                        multicast,
                    } => writeln!(
                        self.out,
                        "{pad}tma.load.{}d shared[%{}], {}, {{{}}}, mbar shared[%{}]{}",
                        coords.len(),
                        dst.index(),
                        map(m),
                        list(coords),
                        mbar.index(),
                        multicast.map_or(String::new(), |v| format!(", multicast %{}", v.index()))
                    ),
                    crate::tma::TmaOp::StoreTile {
                        map: m,
                        coords,
                        src,
                    } => writeln!(
                        self.out,
                        "{pad}tma.store.{}d {}, {{{}}}, shared[%{}]",
                        coords.len(),
                        map(m),
                        list(coords),
                        src.index()
                    ),
                    crate::tma::TmaOp::LoadBulk {
                        dst,
                        src,
                        bytes,
                        mbar,
                    } => writeln!(
                        self.out,
                        "{pad}bulk.load shared[%{}], global[%{}], %{} bytes, mbar shared[%{}]",
                        dst.index(),
                        src.index(),
                        bytes.index(),
                        mbar.index()
                    ),
                    crate::tma::TmaOp::Commit => writeln!(self.out, "{pad}bulk.commit_group"),
                    crate::tma::TmaOp::WaitGroup { pending, read } => writeln!(
                        self.out,
                        "{pad}bulk.wait_group{} {pending}",
                        if *read { ".read" } else { "" }
                    ),
                }
            }
            Stmt::WgmmaFence => writeln!(self.out, "{pad}wgmma.fence"),
            Stmt::WgmmaCommit => writeln!(self.out, "{pad}wgmma.commit_group"),
            Stmt::WgmmaWait { pending } => writeln!(self.out, "{pad}wgmma.wait_group {pending}"),
            Stmt::WgmmaMma(m) => {
                let acc: Vec<String> = m.acc.iter().map(|&v| self.var(v)).collect();
                let a = match &m.a {
                    crate::WgmmaA::Descriptor(d) => format!("desc %{}", d.index()),
                    crate::WgmmaA::Registers(r) => list(r),
                };
                let scale_d = match m.scale_d {
                    crate::ScaleD::Const(c) => format!("{}", u8::from(c)),
                    crate::ScaleD::Pred(p) => format!("%{}", p.index()),
                };
                writeln!(
                    self.out,
                    "{pad}wgmma.mma_async.{}.{} {{{}}}, {a}, desc %{}, scale_d {scale_d}, \
                     scale_a {}, scale_b {}, trans_a {}, trans_b {}",
                    m.shape.ptx_shape(),
                    m.shape.ty.ptx_name(),
                    acc.join(", "),
                    m.b.index(),
                    if m.negate_a { -1 } else { 1 },
                    if m.negate_b { -1 } else { 1 },
                    u8::from(m.trans_a),
                    u8::from(m.trans_b),
                )
            }
            Stmt::SetMaxNreg { increase, count } => writeln!(
                self.out,
                "{pad}setmaxnreg.{} {count}",
                if *increase { "inc" } else { "dec" }
            ),
            Stmt::NamedBarrier {
                arrive,
                id,
                threads,
            } => writeln!(
                self.out,
                "{pad}bar.{} {id}, {threads}",
                if *arrive { "arrive" } else { "sync" }
            ),
            Stmt::ClusterArrive => writeln!(self.out, "{pad}barrier.cluster.arrive"),
            Stmt::ClusterWait => writeln!(self.out, "{pad}barrier.cluster.wait"),
            Stmt::FenceMbarrierInit => writeln!(self.out, "{pad}fence.mbarrier_init.cluster"),
            Stmt::ClusterLoad {
                result,
                ty,
                addr,
                rank,
            } => writeln!(
                self.out,
                "{pad}%{} = load.cluster.{ty} shared[%{}] of rank %{}",
                result.index(),
                addr.index(),
                rank.index()
            ),
            Stmt::ClusterStore { addr, rank, value } => writeln!(
                self.out,
                "{pad}store.cluster shared[%{}] of rank %{} = %{}",
                addr.index(),
                rank.index(),
                value.index()
            ),
            Stmt::StMatrix {
                trans,
                addr,
                values,
            } => writeln!(
                self.out,
                "{pad}stmatrix.x{}{} [%{}] = {}",
                values.len(),
                if *trans { ".trans" } else { "" },
                addr.index(),
                list(values)
            ),
            Stmt::Print { format, args } => {
                write!(self.out, "{pad}print {format:?}")?;
                for a in args {
                    write!(self.out, ", %{}", a.index())?;
                }
                self.out.push('\n');
                Ok(())
            }
        }
    }

    /// `%a: t, %b: t` for the results of a multi-result statement.
    fn results(&self, d: &[Value]) -> String {
        d.iter()
            .map(|v| {
                let ty = self
                    .kernel
                    .values
                    .try_get(*v)
                    .map_or("?".into(), |d| d.ty.to_string());
                format!("%{}: {ty}", v.index())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn op(&self, op: &Op) -> String {
        let v = |v: &Value| format!("%{}", v.index());
        match op {
            Op::Const(c) => format!("const {c}"),
            Op::Param(i) => format!("param {}", self.param_name(*i)),
            Op::SliceBase(i) => format!("slice_base {}", self.param_name(*i)),
            Op::SliceLen(i) => format!("slice_len {}", self.param_name(*i)),
            Op::SharedAddr(i) => format!("shared_addr {i}"),
            Op::DynSharedAddr => "dyn_shared_addr".into(),
            Op::LocalAddr(i) => format!("local_addr {i}"),
            Op::Special(s) => format!("special {s:?}"),
            Op::Unary(u, a) => format!("{u:?} {}", v(a)),
            Op::Binary(b, l, r) => format!("{b:?} {}, {}", v(l), v(r)),
            Op::Ternary(t, a, b, c) => format!("{t:?} {}, {}, {}", v(a), v(b), v(c)),
            Op::Compare(c, l, r) => format!("cmp.{c:?} {}, {}", v(l), v(r)),
            Op::Select {
                cond,
                if_true,
                if_false,
            } => {
                format!("select {}, {}, {}", v(cond), v(if_true), v(if_false))
            }
            Op::Cast { value, to } => format!("cast {} as {to}", v(value)),
            Op::Bitcast { value, to } => format!("bitcast {} to {to}", v(value)),
            Op::ReadVar(var) => format!("read {}", self.var(*var)),
            Op::Load {
                space,
                ty,
                addr,
                eviction,
            } => format!(
                "load.{space:?}{}.{ty} [{}]",
                eviction_suffix(*eviction),
                v(addr)
            ),
            Op::Atomic {
                op,
                space,
                scope,
                order,
                addr,
                value,
                compare,
            } => {
                let cmp = compare
                    .as_ref()
                    .map(|c| format!(", cmp {}", v(c)))
                    .unwrap_or_default();
                let order = match order {
                    MemOrder::Relaxed => String::new(),
                    o => format!(".{o:?}"),
                };
                format!(
                    "atomic.{op:?}{order}.{space:?}.{scope:?} [{}], {}{cmp}",
                    v(addr),
                    v(value)
                )
            }
            Op::AtomicLoad {
                space,
                scope,
                order,
                ty,
                addr,
            } => format!(
                "atomic.load.{order:?}.{space:?}.{scope:?}.{ty} [{}]",
                v(addr)
            ),
            Op::Shuffle { mode, value, lane } => format!("shfl.{mode:?} {}, {}", v(value), v(lane)),
            Op::Vote { mode, pred } => format!("vote.{mode:?} {}", v(pred)),
        }
    }

    fn param_name(&self, i: u32) -> String {
        self.kernel
            .params
            .get(i as usize)
            .map_or_else(|| format!("#{i}"), |p| p.name.clone())
    }
}

/// `{%a, %b, ...}`.
fn list(vs: &[Value]) -> String {
    let inner: Vec<String> = vs.iter().map(|v| format!("%{}", v.index())).collect();
    format!("{{{}}}", inner.join(", "))
}

/// How a load's [`Eviction`] prints after its space (nothing for `Normal`).
fn eviction_suffix(eviction: Eviction) -> &'static str {
    match eviction {
        Eviction::Normal => "",
        Eviction::First => ".evict_first",
        Eviction::Last => ".evict_last",
    }
}
