//! cuda-oxide's TMA API (`cuprum::simt::tma`) read as the IR's
//! [`Stmt::Tma`](cuprum_ir::Stmt::Tma): bulk tensor loads and stores of 1 to 5 dimensions,
//! multicast loads into the blocks of a cluster (`_g2s_multicast`, a `u16` mask of ranks),
//! bulk-group commits and waits, and `fence_proxy_async_shared_cta`.
//!
//! A tensor map is a [`Val::TensorMap`]: a `TensorMap<T, RANK>` parameter (and its
//! `as_ptr()`), or a `*const TmaDescriptor` parameter, a map in global memory. Shared
//! destinations and sources, and mbarriers, are raw pointers into shared memory
//! (`&raw mut TILE as *mut u8`, `&raw mut BAR`), as the mbarrier functions take them.

use cuprum_ir::{AddressSpace, ScalarType as S, Stmt, TensorMapRef, TmaOp, Value};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::*;

/// Whether a type's last path segment is `TmaDescriptor`.
pub(super) fn is_tma_descriptor(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "TmaDescriptor"))
}

/// What a `cp_async_bulk_tensor_<n>d_<dir>` name copies.
#[derive(Clone, Copy, PartialEq)]
enum CopyKind {
    Load,
    /// `_g2s_multicast`: a load into the blocks of a cluster mask.
    Multicast,
    Store,
}

/// Which copy a `cp_async_bulk_tensor_<n>d_<dir>` name is: its rank and what it copies.
fn tensor_copy(name: &str) -> Option<(usize, CopyKind)> {
    let rest = name.strip_prefix("cp_async_bulk_tensor_")?;
    let (rank, dir) = rest.split_once("d_")?;
    let rank: usize = rank.parse().ok()?;
    if !(1..=cuprum_ir::tma::MAX_RANK).contains(&rank) {
        return None;
    }
    match dir {
        "g2s" => Some((rank, CopyKind::Load)),
        "g2s_multicast" => Some((rank, CopyKind::Multicast)),
        "s2g" => Some((rank, CopyKind::Store)),
        _ => None,
    }
}

impl Lowerer<'_> {
    /// The TMA functions; `None` when `name` is not one.
    pub(super) fn tma_call(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> Result<Option<Val>> {
        match name {
            "fence_proxy_async_shared_cta" if args.is_empty() => {
                self.b.push(Stmt::FenceProxyAsync {
                    space: cuprum_ir::ProxyFenceSpace::SharedCta,
                });
                return Ok(Some(Val::Unit));
            }
            "cp_async_bulk_commit_group" if args.is_empty() => {
                self.push_tma(TmaOp::Commit, span)?;
                return Ok(Some(Val::Unit));
            }
            "cp_async_bulk_wait_group" | "cp_async_bulk_wait_group_read" => {
                let [n] = args else {
                    return err(
                        span,
                        format!("`{name}` takes the number of groups that may stay in flight"),
                    );
                };
                let pending = match self.eval_const(n, 0) {
                    Ok(ConstVal::Int(v)) => u32::try_from(v).ok(),
                    _ => None,
                };
                let Some(pending) = pending else {
                    return err(
                        n.span(),
                        format!(
                            "`{name}`'s group count is an immediate of the instruction: write a \
                             constant from 0 to {}",
                            u32::MAX
                        ),
                    );
                };
                let read = name.ends_with("_read");
                self.push_tma(TmaOp::WaitGroup { pending, read }, span)?;
                return Ok(Some(Val::Unit));
            }
            _ => {}
        }
        if name.starts_with("cp_async_bulk_tensor_") && name.ends_with("_cg2") {
            return err(
                span,
                format!(
                    "`{name}` copies for a pair of blocks' tensor cores (`.cta_group::2`), \
                     which sm_100a has and cuprum's targets (sm_80, sm_90, sm_90a) do not: use \
                     the plain multicast copy"
                ),
            );
        }
        let Some((rank, copy)) = tensor_copy(name) else {
            return Ok(None);
        };
        let want = match copy {
            CopyKind::Load => rank + 3,
            CopyKind::Multicast => rank + 4,
            CopyKind::Store => rank + 2,
        };
        if args.len() != want {
            let what = match copy {
                CopyKind::Load => {
                    "a shared destination, a tensor map, {rank} coordinates and a `Barrier`"
                }
                CopyKind::Multicast => {
                    "a shared destination, a tensor map, {rank} coordinates, a `Barrier` and a \
                     `u16` mask of cluster ranks"
                }
                CopyKind::Store => "a shared source, a tensor map and {rank} coordinates",
            };
            return err(
                span,
                format!(
                    "`{name}` takes {}",
                    what.replace("{rank}", &rank.to_string())
                ),
            );
        }
        let tile = self.shared_pointer(name, args[0], "the tile")?;
        let map = self.tensor_map_arg(name, args[1])?;
        let mut coords = Vec::with_capacity(rank);
        for c in &args[2..2 + rank] {
            let v = self.expr(c)?;
            coords.push(self.materialize(v, S::I32, c.span())?);
        }
        let op = if copy != CopyKind::Store {
            let mbar = self.shared_pointer(name, args[2 + rank], "the `Barrier`")?;
            let multicast = match copy {
                CopyKind::Multicast => {
                    let m = args[3 + rank];
                    let v = self.expr(m)?;
                    Some(self.materialize(v, S::U16, m.span())?)
                }
                _ => None,
            };
            TmaOp::LoadTile {
                map,
                coords,
                dst: tile,
                mbar,
                multicast,
            }
        } else {
            TmaOp::StoreTile {
                map,
                coords,
                src: tile,
            }
        };
        self.push_tma(op, span)?;
        Ok(Some(Val::Unit))
    }

    fn push_tma(&mut self, op: TmaOp, span: Span) -> Result<()> {
        self.b
            .tma(op)
            .or_else(|m| err(span, format!("TMA copy: {m}")))
    }

    /// The `U32` shared address a raw pointer argument holds.
    fn shared_pointer(&mut self, name: &str, e: &syn::Expr, what: &str) -> Result<Value> {
        match self.expr(e)? {
            Val::Ptr {
                addr,
                space: AddressSpace::Shared,
                ..
            } => Ok(addr),
            other => err(
                e.span(),
                format!(
                    "`{name}` takes {what} as a raw pointer into shared memory (`&raw mut TILE \
                     as *mut u8` of a `static mut TILE: SharedArray<T, N, 128>`, `&raw mut BAR`), \
                     not {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// The tensor map argument of a copy.
    fn tensor_map_arg(&mut self, name: &str, e: &syn::Expr) -> Result<TensorMapRef> {
        match self.expr(e)? {
            Val::TensorMap(r) => Ok(r),
            other => err(
                e.span(),
                format!(
                    "`{name}` takes a tensor map: a `TensorMap<T, RANK>` parameter's `as_ptr()` \
                     or a `*const TmaDescriptor` parameter, not {}",
                    describe(&other)
                ),
            ),
        }
    }
}
