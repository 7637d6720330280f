//! Raw pointers of `unsafe` entries ([`cuprum_tile_ir::TensorAccess::Raw`]): gathers and
//! scatters element by element at offsets from the pointer.
//!
//! A block's scatters go to its own log ([`RawWrites`]), which its later gathers read
//! first (a block sees its own writes, in program order) and which the launch writes to
//! memory once the block has ended, in block order, as it does with the blocks' own tiles.
//! Races between blocks are excluded by the entry's caller, so what another block sees
//! meanwhile is the tile IR's to leave unspecified; the interpreter's choice is that blocks
//! see memory as it was before the launch plus the writes of blocks before them in the
//! current batch's write-back order, which for race-free kernels is the same thing.

use std::collections::HashMap;

use cuprum_ir::ScalarType;

use crate::memory::{AddressFault, TensorView};

/// One block's scatters, per raw parameter, in program order.
#[derive(Clone, Debug, Default)]
pub(crate) struct RawWrites {
    /// `(parameter, element address, bits)`, in the order written.
    pub log: Vec<(u32, usize, u64)>,
    /// The latest bits written per `(parameter, element address)`.
    latest: HashMap<(u32, usize), u64>,
}

impl RawWrites {
    /// Records a write.
    pub fn write(&mut self, param: u32, addr: usize, bits: u64) {
        self.log.push((param, addr, bits));
        self.latest.insert((param, addr), bits);
    }

    /// The element at `addr` as this block sees it: its own latest write, else memory.
    pub fn read(&self, param: u32, view: &TensorView<'_>, addr: usize) -> u64 {
        match self.latest.get(&(param, addr)) {
            Some(&bits) => bits,
            None => view.read(addr),
        }
    }
}

/// The element address of offset `off` from raw pointer `view` (a rank-1 tensor from the
/// pointer to its allocation's end): `None` when the offset is outside it (the element is
/// not accessed), an error when the address is outside the allocation (an argument that
/// does not describe its allocation).
pub(crate) fn element_address(
    view: &TensorView<'_>,
    off: i128,
) -> Result<Option<usize>, AddressFault> {
    let len = view.shape.first().copied().unwrap_or(0);
    if off < 0 || off >= i128::from(len) {
        return Ok(None);
    }
    let stride = view.strides.first().copied().unwrap_or(1);
    let addr = i128::from(view.offset) + off * i128::from(stride);
    if addr < 0 || addr >= i128::from(view.elements()) {
        return Err(AddressFault {
            coord: vec![off as u64],
            address: i64::try_from(addr).ok(),
        });
    }
    Ok(Some(addr as usize))
}

/// Whether `ty` is an integer type whose every value an offset may take.
pub(crate) fn is_offset_type(ty: ScalarType) -> bool {
    ty.is_int()
}
