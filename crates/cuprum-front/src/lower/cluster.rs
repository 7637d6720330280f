//! cuda-oxide's thread-block cluster API (`cuprum::simt::cluster`, and
//! `barrier::fence_mbarrier_init_release_cluster`) read as the IR's cluster statements: the
//! cluster's special registers and the values cuda-oxide derives from them (`block_rank`,
//! `cluster_size`, `cluster_idx`, `num_clusters`), the cluster barrier
//! ([`Stmt::ClusterArrive`], [`Stmt::ClusterWait`]) in all of cuda-oxide's spellings, and
//! distributed shared memory: `dsmem_read_u32` as one [`Stmt::ClusterLoad`], and
//! `map_shared_rank{,_mut}`'s pointers ([`Val::ClusterPtr`]: a shared address of this
//! block's window and the rank it is mapped to), whose reads and writes (`*p`, `p.read()`,
//! `*p = v`, `p.write(v)`) are [`Stmt::ClusterLoad`]s and [`Stmt::ClusterStore`]s and whose
//! arithmetic (`p.add(i)`) moves the address.
//!
//! The cluster's shape comes from the kernel's `#[cluster_launch(x, y, z)]` (`items`).

use cuprum_ir::{BinaryOp, Dim, Op, ScalarType as S, Special, Stmt, Value};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// The special register a cluster function reads as it is: cuda-oxide's
/// `cluster_ctaidX/Y/Z` (the block's place in its cluster), `cluster_nctaidX/Y/Z` (the
/// cluster's shape) and `block_rank` (`%cluster_ctarank`, which is cuda-oxide's
/// `x + y * nx + z * nx * ny` of those).
fn cluster_register(name: &str) -> Option<Special> {
    Some(match name {
        "cluster_ctaidX" => Special::ClusterCtaIdx(Dim::X),
        "cluster_ctaidY" => Special::ClusterCtaIdx(Dim::Y),
        "cluster_ctaidZ" => Special::ClusterCtaIdx(Dim::Z),
        "cluster_nctaidX" => Special::ClusterDim(Dim::X),
        "cluster_nctaidY" => Special::ClusterDim(Dim::Y),
        "cluster_nctaidZ" => Special::ClusterDim(Dim::Z),
        "block_rank" => Special::ClusterCtaRank,
        _ => return None,
    })
}

impl Lowerer<'_> {
    /// The cluster functions; `None` when `name` is not one.
    pub(super) fn cluster_call(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        if let Some(reg) = cluster_register(name) {
            no_arguments(name, args, span)?;
            return Ok(Some(Val::Scalar(self.def(Op::Special(reg), span)?)));
        }
        match name {
            "cluster_size" => {
                no_arguments(name, args, span)?;
                let dims = [Dim::X, Dim::Y, Dim::Z].map(Special::ClusterDim);
                Ok(Some(Val::Scalar(self.special_product(dims, span)?)))
            }
            "num_clusters" => {
                no_arguments(name, args, span)?;
                let dims = [Dim::X, Dim::Y, Dim::Z].map(Special::ClusterCount);
                Ok(Some(Val::Scalar(self.special_product(dims, span)?)))
            }
            // cuda-oxide's linear cluster index: `x + y * nx + z * nx * ny`.
            "cluster_idx" => {
                no_arguments(name, args, span)?;
                let [x, y, z] = [Dim::X, Dim::Y, Dim::Z]
                    .map(|d| self.def(Op::Special(Special::ClusterIdx(d)), span));
                let [nx, ny] =
                    [Dim::X, Dim::Y].map(|d| self.def(Op::Special(Special::ClusterCount(d)), span));
                let (x, y, z, nx, ny) = (x?, y?, z?, nx?, ny?);
                let nxy = self.def(Op::Binary(BinaryOp::Mul, nx, ny), span)?;
                let zz = self.def(Op::Binary(BinaryOp::Mul, z, nxy), span)?;
                let yy = self.def(Op::Binary(BinaryOp::Mul, y, nx), span)?;
                let v = self.def(Op::Binary(BinaryOp::Add, x, yy), span)?;
                Ok(Some(Val::Scalar(
                    self.def(Op::Binary(BinaryOp::Add, v, zz), span)?,
                )))
            }
            "cluster_sync" => {
                no_arguments(name, args, span)?;
                self.b.push(Stmt::ClusterArrive);
                self.b.push(Stmt::ClusterWait);
                Ok(Some(Val::Unit))
            }
            // Every arrival is the IR's `.aligned` release arrival (see `simt::cluster`).
            "barrier_cluster_arrive"
            | "barrier_cluster_arrive_aligned"
            | "barrier_cluster_arrive_relaxed"
            | "barrier_cluster_arrive_relaxed_aligned" => {
                no_arguments(name, args, span)?;
                self.b.push(Stmt::ClusterArrive);
                Ok(Some(Val::Unit))
            }
            "barrier_cluster_wait" | "barrier_cluster_wait_aligned" => {
                no_arguments(name, args, span)?;
                self.b.push(Stmt::ClusterWait);
                Ok(Some(Val::Unit))
            }
            "fence_mbarrier_init_release_cluster" => {
                no_arguments(name, args, span)?;
                self.b.push(Stmt::FenceMbarrierInit);
                Ok(Some(Val::Unit))
            }
            "dsmem_read_u32" => {
                let [ptr, rank] = args else {
                    return err(
                        span,
                        "`dsmem_read_u32` takes a pointer into shared memory and a cluster \
                         block rank: `dsmem_read_u32(addr_of!(SHMEM) as *const u32, rank)`",
                    );
                };
                let (addr, elem, _) = self.local_shared_pointer(name, ptr)?;
                if elem != S::U32 {
                    return err(
                        ptr.span(),
                        format!(
                            "`dsmem_read_u32` reads a `u32` through a `*const u32`, not a \
                             `*const {}`: cast the pointer (`as *const u32`), or read other \
                             types through `map_shared_rank`",
                            elem.rust_name()
                        ),
                    );
                }
                let rank = self.rank_arg(rank)?;
                let v = self
                    .b
                    .cluster_load(S::U32, addr, rank)
                    .or_else(|m| err(span, format!("`dsmem_read_u32`: {m}")))?;
                Ok(Some(Val::Scalar(v)))
            }
            "map_shared_rank" | "map_shared_rank_mut" => {
                let [ptr, rank] = args else {
                    return err(
                        span,
                        format!(
                            "`{name}` takes a pointer into shared memory and a cluster block \
                             rank: `{name}(addr_of!(SHMEM) as *const u32, rank)`"
                        ),
                    );
                };
                let (addr, elem, mutable) = self.local_shared_pointer(name, ptr)?;
                let want_mut = name.ends_with("_mut");
                if want_mut && !mutable {
                    return err(
                        ptr.span(),
                        "`map_shared_rank_mut` maps a `*mut` pointer (`addr_of_mut!(SHMEM) as \
                         *mut u32`)",
                    );
                }
                let rank = self.rank_arg(rank)?;
                Ok(Some(Val::ClusterPtr {
                    addr,
                    rank,
                    elem,
                    mutable: want_mut,
                }))
            }
            _ => Ok(None),
        }
    }

    /// The product of three special registers (`U32`).
    fn special_product(&mut self, specials: [Special; 3], span: Span) -> Result<Value> {
        let [a, b, c] = specials.map(|s| self.def(Op::Special(s), span));
        let ab = self.def(Op::Binary(BinaryOp::Mul, a?, b?), span)?;
        self.def(Op::Binary(BinaryOp::Mul, ab, c?), span)
    }

    /// A raw pointer into this block's shared memory: its `U32` address, element type and
    /// whether it is `*mut`.
    fn local_shared_pointer(&mut self, name: &str, e: &syn::Expr) -> Result<(Value, S, bool)> {
        match self.expr(e)? {
            Val::Ptr {
                addr,
                elem,
                mutable,
                space: cuprum_ir::AddressSpace::Shared,
            } => Ok((addr, elem, mutable)),
            other => err(
                e.span(),
                format!(
                    "`{name}` takes a raw pointer into this block's shared memory \
                     (`addr_of!(SHMEM) as *const u32` of a `static mut SHMEM: SharedArray<u32, \
                     N>`, or `.add(i)` of one), not {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// A cluster block rank argument, as a `u32`.
    fn rank_arg(&mut self, e: &syn::Expr) -> Result<Value> {
        let v = self.expr(e)?;
        self.materialize(v, S::U32, e.span())
    }

    /// `p.add(i)`, `p.sub(i)`, `p.offset(i)` (and their `wrapping_` forms), `p.read()` and
    /// `p.write(v)` on a pointer `map_shared_rank{,_mut}` made.
    pub(super) fn cluster_pointer_method(
        &mut self,
        m: &syn::ExprMethodCall,
        p: Val,
    ) -> Result<Val> {
        let Val::ClusterPtr {
            addr,
            rank,
            elem,
            mutable,
        } = p
        else {
            return err(m.span(), "expected a pointer from `map_shared_rank`");
        };
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (method.as_str(), &args[..]) {
            (
                "add" | "sub" | "offset" | "wrapping_add" | "wrapping_sub" | "wrapping_offset",
                [n],
            ) => {
                // A shared address: it wraps in 32 bits.
                let addr = self.stepped_address(&method, addr, n, elem, span)?;
                Ok(Val::ClusterPtr {
                    addr,
                    rank,
                    elem,
                    mutable,
                })
            }
            ("read", []) => Ok(Val::Scalar(self.cluster_read(addr, rank, elem, span)?)),
            ("write", [v]) if mutable => {
                let v = self.expr(v)?;
                let v = self.materialize(v, elem, span)?;
                self.cluster_write(addr, rank, v, span)?;
                Ok(Val::Unit)
            }
            ("write", _) => err(
                span,
                "cannot write through `map_shared_rank`'s `*const` pointer: map a `*mut` one \
                 with `map_shared_rank_mut`",
            ),
            _ => err(
                m.method.span(),
                format!(
                    "`{method}` is not supported on `map_shared_rank`'s pointers (add, sub, \
                     offset, read, write, and `*p`)"
                ),
            ),
        }
    }

    /// The `elem` at shared address `addr` of cluster block `rank`.
    pub(super) fn cluster_read(
        &mut self,
        addr: Value,
        rank: Value,
        elem: S,
        span: Span,
    ) -> Result<Value> {
        self.b
            .cluster_load(elem, addr, rank)
            .or_else(|m| err(span, format!("distributed shared memory: {m}")))
    }

    /// Stores `v` at shared address `addr` of cluster block `rank`.
    pub(super) fn cluster_write(
        &mut self,
        addr: Value,
        rank: Value,
        v: Value,
        span: Span,
    ) -> Result<()> {
        self.b
            .cluster_store(addr, rank, v)
            .or_else(|m| err(span, format!("distributed shared memory: {m}")))
    }
}

/// Refuses arguments to a cluster function that takes none.
fn no_arguments(name: &str, args: &[&syn::Expr], span: Span) -> Result<()> {
    if args.is_empty() {
        return Ok(());
    }
    err(span, format!("`cluster::{name}()` takes no arguments"))
}
