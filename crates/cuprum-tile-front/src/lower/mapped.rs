//! Mapped outputs, in cuTile Rust's shapes: a `MappedPartitionMut<E, S, M>` parameter, the
//! persistent loop `for idx in z.iter_indices() { .. }` over the tiles the schedule deals
//! this block, `idx.components()` and `z.store(tile, idx)`.
//!
//! The loop is the tile IR's `ForTiles`, whose index is only ever the current tile: a store
//! takes an index only from the innermost loop over its own output (an index cannot leave
//! its loop: loop-carried variables hold tiles only), so each tile is written by the one
//! block the schedule gives it to, as a partitioned output's own tile is.

use cuprum_ir::ScalarType;
use cuprum_tile_ir::{Elem, Shape, Stmt, TileType, TileValue};
use proc_macro2::Span;
use syn::spanned::Spanned;

use super::calls::Args;
use super::*;

impl<'m> Lowerer<'m> {
    /// `for idx in z.iter_indices() { body }` (see the module docs).
    pub(super) fn mapped_loop(
        &mut self,
        f: &syn::ExprForLoop,
        tensor: u32,
        map: Shape,
    ) -> Result<Val> {
        let span = f.span();
        if self.mapped_loops.iter().any(|&(t, _)| t == tensor) {
            return err(
                f.expr.span(),
                "a loop over this mapped partition's indices is already running: loops over one mapped partition cannot nest",
            );
        }
        let rank = map.len();
        let i32_scalar = TileType {
            elem: Elem::Known(ScalarType::I32),
            shape: Vec::new(),
        };
        let coords: Vec<TileValue> = (0..rank)
            .map(|_| self.b.value(i32_scalar.clone()))
            .collect();
        let id = self.mapped_ids;
        self.mapped_ids += 1;
        let (flats, inits) = self.carried(&control::assigned_names(&f.body), span)?;
        let before_loop = self.frame.scopes.len();
        let (args, types) = self.enter_loop(&flats, &inits);
        self.b.begin_block();
        self.frame.scopes.push(Vec::new());
        let index = Val::TileIndex {
            tensor,
            id,
            coords: coords.clone(),
        };
        let bound = match &*f.pat {
            syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
                self.bind(&i.ident.to_string(), index, false);
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            other => err(other.span(), "a loop variable is a plain name"),
        };
        self.mapped_loops.push((tensor, id));
        let body = bound.and_then(|()| self.loop_body(&f.body, flats.clone(), types.clone()));
        self.mapped_loops.pop();
        self.frame.scopes.truncate(before_loop);
        let body = body?;
        let results = self.finish_loop(&flats, &types);
        self.b.push(Stmt::ForTiles {
            tensor,
            map,
            coords,
            args,
            inits,
            body,
            results,
        });
        Ok(Val::Unit)
    }

    /// A method of a mapped partition: `store(tile, idx)`.
    pub(super) fn mapped_method(
        &mut self,
        tensor: u32,
        tile: Shape,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        match name {
            "store" => {
                self.check_arity("store(tile, index)", &args)?;
                let (_, tp) = self.tensor_param(tensor)?;
                let value = self.tile_of(args.val(0), tp.elem, args.span_of(0))?;
                let want = TileType {
                    elem: tp.elem,
                    shape: tile,
                };
                let got = self.ty(value);
                if got != want {
                    return err(
                        args.span_of(0),
                        format!(
                            "this mapped partition's tiles are `{}`, not `{}`",
                            self.show(&want),
                            self.show(&got)
                        ),
                    );
                }
                match args.val(1) {
                    Val::TileIndex { tensor: t, id, .. }
                        if t == tensor
                            && self
                                .mapped_loops
                                .last()
                                .is_some_and(|&(lt, lid)| lt == tensor && lid == id) => {}
                    Val::TileIndex { .. } => {
                        return err(
                            args.span_of(1),
                            "this index comes from another mapped partition's loop: a store takes the index of the innermost loop over its own partition",
                        );
                    }
                    other => {
                        return err(
                            args.span_of(1),
                            format!(
                                "a mapped partition stores at an index from its `iter_indices()` loop, not {}",
                                other.kind()
                            ),
                        );
                    }
                }
                self.b.push(Stmt::StoreMapped { tensor, value });
                Ok(Val::Unit)
            }
            "iter_indices" => err(
                span,
                "`iter_indices()` is iterated by a `for` loop: `for idx in z.iter_indices() { .. }`",
            ),
            _ => err(
                span,
                format!(
                    "a mapped partition has no method `{name}` (it has `iter_indices` and `store`)"
                ),
            ),
        }
    }

    /// A method of a mapped partition's index: `components()`.
    pub(super) fn tile_index_method(
        &mut self,
        coords: Vec<TileValue>,
        name: &str,
        args: Args<'_>,
        span: Span,
    ) -> Result<Val> {
        match name {
            "components" => {
                self.check_arity("components()", &args)?;
                Ok(Val::Tuple(coords.into_iter().map(Val::Tile).collect()))
            }
            _ => err(
                span,
                format!("a partition index has no method `{name}` (it has `components`)"),
            ),
        }
    }
}
