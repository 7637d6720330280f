//! Gathers and scatters through the raw pointers of `unsafe` entries
//! (`TensorAccess::Raw`), element by element.
//!
//! A raw pointer is a rank-1 tensor from the pointer to its allocation's end (its size and
//! offset are kernel parameters like any tensor's), so offset `o` is inside when
//! `0 <= o < size` and is then element `offset + o * stride` of the allocation. Each element
//! is a predicated scalar access: a masked-off or outside one reads the padding and is not
//! written, so a raw pointer never reaches past its allocation. A scatter writes each
//! element once, from its owner in the layout its operands meet in; a barrier follows every
//! access to a pointer the kernel scatters to (`memory::barrier_after`), so a block's
//! accesses keep their program order across its threads.

use cuprum_ir::{AddressSpace, CmpOp, Eviction, Op, ScalarType, Stmt, Value};
use cuprum_tile_ir::{Literal, TileValue};

use super::{Emitter, Lv, R};
use crate::plan::Repr;

impl Emitter<'_> {
    /// Element `off` (an integer of any type) of raw pointer `tensor`: whether it is inside
    /// the pointer's elements, and its element index in the allocation (`I64`).
    fn raw_element(&mut self, tensor: u32, off: Value) -> R<(Value, Value)> {
        let t = self.tensor(tensor)?;
        let (offset, size) = (t.offset, self.tensor_dim(tensor, 0)?);
        let stride = t
            .strides
            .first()
            .copied()
            .ok_or_else(|| self.internal("a raw pointer without a stride"))?;
        // A `u64` offset past `i64::MAX` becomes negative: outside either way.
        let o = self.cast(off, ScalarType::I64)?;
        let zero = self.i64c(0);
        let low = self.cmp(CmpOp::Ge, o, zero)?;
        let high = self.cmp(CmpOp::Lt, o, size)?;
        let inside = self.bin(cuprum_ir::BinaryOp::And, low, high)?;
        let step = self.mul(o, stride)?;
        let index = self.add(offset, step)?;
        Ok((inside, index))
    }

    /// `value = gather(tensor, offsets, mask, padding)`.
    pub(super) fn gather(
        &mut self,
        value: TileValue,
        tensor: u32,
        offsets: TileValue,
        mask: Option<TileValue>,
        padding: Literal,
    ) -> R<Lv> {
        let ty = self.elem(value)?;
        let pad = padding
            .to_constant(ty)
            .ok_or_else(|| self.unsupported(format!("the padding {padding} cannot be a {ty}")))?;
        let pad = self.konst(pad);
        let base = self.tensor(tensor)?.base;
        let operands: Vec<TileValue> = [offsets].into_iter().chain(mask).collect();
        let lv = self.elementwise(value, &operands, |e, xs| {
            let (inside, index) = e.raw_element(tensor, xs[0])?;
            let read = e.and(Some(inside), xs.get(1).copied())?;
            let var = e.var(ty);
            e.write(var, pad);
            e.if_some(read, |e| {
                let addr = e.element_address(base, index, ty)?;
                let v = e.def(Op::Load {
                    space: AddressSpace::Global,
                    ty,
                    addr,
                    eviction: Eviction::Normal,
                })?;
                e.write(var, v);
                Ok(())
            })?;
            e.read(var)
        })?;
        if self.barrier_after.get(tensor as usize) == Some(&true) {
            self.barrier();
        }
        Ok(lv)
    }

    /// `scatter(tensor, offsets, value, mask)`.
    pub(super) fn scatter(
        &mut self,
        tensor: u32,
        offsets: TileValue,
        value: TileValue,
        mask: Option<TileValue>,
    ) -> R<()> {
        let ty = self.elem(value)?;
        let base = self.tensor(tensor)?.base;
        let repr = self
            .plan
            .scatter_repr(offsets, value)
            .cloned()
            .ok_or_else(|| self.internal("a scatter was not planned"))?;
        // Per element: (offset, value, mask, whether this thread is its writer).
        let mut elements: Vec<(Value, Value, Option<Value>, Option<Value>)> = Vec::new();
        match repr {
            Repr::Dist(layout) => {
                let offs = self.regs_in(offsets, layout)?;
                let vals = self.regs_in(value, layout)?;
                let masks = match mask {
                    Some(m) => Some(self.regs_in(m, layout)?),
                    None => None,
                };
                let primary = self.primary(layout);
                for (r, (&o, &v)) in offs.iter().zip(&vals).enumerate() {
                    let valid = self.valid(layout, r)?;
                    let owner = self.and(primary, valid)?;
                    elements.push((o, v, masks.as_ref().map(|m| m[r]), owner));
                }
            }
            // One element standing for all: thread 0 writes it.
            Repr::Uniform => {
                let o = self.uniform(offsets)?;
                let v = self.uniform(value)?;
                let m = mask.map(|m| self.uniform(m)).transpose()?;
                let zero = self.u32c(0);
                let first = self.cmp(CmpOp::Eq, self.tid, zero)?;
                elements.push((o, v, m, Some(first)));
            }
            Repr::Iota { .. } | Repr::Computed => {
                return Err(self.internal("a scatter planned as an iota or computed"));
            }
        }
        for (o, v, m, owner) in elements {
            let (inside, index) = self.raw_element(tensor, o)?;
            let write = self.and(Some(inside), m)?;
            let write = self.and(write, owner)?;
            self.if_some(write, |e| {
                let addr = e.element_address(base, index, ty)?;
                e.push(Stmt::Store {
                    space: AddressSpace::Global,
                    addr,
                    value: v,
                });
                Ok(())
            })?;
        }
        if self.barrier_after.get(tensor as usize) == Some(&true) {
            self.barrier();
        }
        Ok(())
    }
}
