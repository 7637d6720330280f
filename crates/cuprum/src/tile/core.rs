//! What tile kernels are written with: the kernel-side names a `#[cuprum::tile::module]`
//! imports with `use cuprum::tile::core::*;`.
//!
//! Kernel bodies are compiled by cuprum's tile front end when the macro runs, never by rustc
//! as host code (their types, `Tensor<f32, { [B, -1] }>` and `Tile<f32, { [BM, BN] }>`,
//! need const generics stable Rust does not have), so this module holds only what host code
//! may also name. The kernel language (cuTile Rust's `cutile::core`):
//!
//! * grid: `get_tile_block_id()`, `get_num_tile_blocks()`;
//! * views: `x.shape()`, `x.partition(shape)` and `.load([i, j])`, `load_tile_like(x, z)`,
//!   `load_tile_mut(z)`, `z.load()`, `z.store(t)`, `z.partition_mut(shape).store(t, idx)`;
//!   loads outside a tensor read padding and stores outside it are dropped;
//! * tiles: `constant`, `broadcast_scalar` / `.broadcast`, `iota`, `reshape`, `transpose`,
//!   `permute`, element-wise operators between tiles and with scalars, `fma`, `min`/`max`,
//!   comparisons, `select`, `as` conversions, math functions, reductions along an axis
//!   (`reduce_sum`, `reduce_max`, `reduce_min`, `reduce_prod`, `reduce`);
//! * control flow: `if`, `for` (with `break`), `while`, `loop`, helper functions, module
//!   consts, `cuda_tile_print!`, `cuda_tile_assert!`;
//! * matrix multiply: `mma(a, b, acc)`;
//! * persistent kernels: `MappedPartitionMut` outputs and `for idx in z.iter_indices()`;
//! * in `unsafe fn` entries, raw pointers (`*mut T`): `pointer_to_tile`, pointer tiles,
//!   `load_ptr_tko`/`store_ptr_tko`, `make_tensor_view`.
//!
//! The front end's documentation (`cuprum-tile-front`) is the reference for what it accepts.

pub use cuprum_runtime::tf32;
pub use half::{bf16, f16};
