//! The helpers cuTile Rust's examples import from their support crate (`cutile_examples`),
//! so that those examples run on cuprum with their paths changed to
//! `cuprum_tile_examples`: host data as [candle](candle_core) tensors, to compute the
//! answers to check against, and a printer of matrices for when a check fails.
//!
//! cuprum's element types are the real `half` 2.x types candle uses, so `f16` and `bf16`
//! results convert without copies of their own.

use candle_core::{Device, Tensor, WithDType};
use cuprum::tile::DType;

/// `data` (row-major) as a candle tensor of `shape` on the CPU.
///
/// # Panics
/// When `data` does not have the shape's element count (the examples' own mistake, as in
/// cuTile Rust's helper).
pub fn to_candle_tensor<T: DType + WithDType>(data: &[T], shape: &[usize]) -> Tensor {
    match Tensor::from_slice(data, shape, &Device::Cpu) {
        Ok(t) => t,
        Err(e) => panic!(
            "to_candle_tensor: {} elements do not make a tensor of shape {shape:?}: {e}",
            data.len()
        ),
    }
}

/// Prints a matrix (a rank-2 tensor): its column numbers, then one line per row, each
/// element to one decimal. A tensor that is not a matrix of `T` prints why instead.
pub fn pretty_print_matrix<T: WithDType>(mat: &Tensor) {
    match matrix_text::<T>(mat) {
        Ok(text) => print!("{text}"),
        Err(e) => println!("(cannot print this tensor as a matrix: {e})"),
    }
}

fn matrix_text<T: WithDType>(mat: &Tensor) -> candle_core::Result<String> {
    let rows: Vec<Vec<T>> = mat.to_vec2()?;
    let columns = rows.first().map_or(0, Vec::len);
    let mut out = String::from(" ");
    for c in 0..columns {
        out.push_str(&format!("{c:^9}"));
    }
    out.push('\n');
    for row in rows {
        out.push('|');
        for v in row {
            out.push_str(&format!("{:^8.1}|", v.to_f64()));
        }
        out.push('\n');
    }
    Ok(out)
}
