//! The helpers cuTile Rust's examples import from their support crate (`cutile_examples`),
//! so that those examples run on cuprum with their paths changed to
//! `cuprum_tile_examples`: host data as [candle](candle_core) tensors, to compute the
//! answers to check against (among them attention's, [`fmha_ref_exec`]), and a printer of
//! matrices for when a check fails.
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

/// Attention on the host, the answer flash-attention examples check against:
/// `softmax(scale * q · kᵀ) · v` per batch and head, with `q` of shape `[b, h, m, d]` and `k`,
/// `v` of shape `[b, hkv, n, d]` (row-major `f32`; `h` a multiple of `hkv`, each group of
/// `h / hkv` query heads sharing one key/value head). The result has shape `[b, h, m, d]`.
///
/// # Panics
/// When a slice does not have its shape's element count or the shapes do not fit together
/// (the examples' own mistakes).
pub fn fmha_ref_exec(
    q: &[f32],
    q_shape: &[usize],
    k: &[f32],
    k_shape: &[usize],
    v: &[f32],
    v_shape: &[usize],
    scale: f32,
) -> Tensor {
    let attention = || -> candle_core::Result<Tensor> {
        let cpu = &Device::Cpu;
        let (q, k, v) = (
            Tensor::from_slice(q, q_shape, cpu)?,
            Tensor::from_slice(k, k_shape, cpu)?,
            Tensor::from_slice(v, v_shape, cpu)?,
        );
        let h = q.dims4()?.1;
        let hkv = k.dims4()?.1;
        if hkv == 0 || h % hkv != 0 {
            candle_core::bail!("{h} query heads do not share {hkv} key/value heads evenly");
        }
        // Each key/value head repeated for the query heads of its group.
        let repeat = |t: &Tensor| -> candle_core::Result<Tensor> {
            let (tb, th, tn, td) = t.dims4()?;
            t.unsqueeze(2)?
                .broadcast_as((tb, th, h / hkv, tn, td))?
                .reshape((tb, h, tn, td))
        };
        let (k, v) = (repeat(&k)?, repeat(&v)?);
        let scores = (q.matmul(&k.transpose(2, 3)?.contiguous()?)? * f64::from(scale))?;
        let max = scores.max_keepdim(3)?;
        let e = scores.broadcast_sub(&max)?.exp()?;
        let p = e.broadcast_div(&e.sum_keepdim(3)?)?;
        p.matmul(&v.contiguous()?)
    };
    match attention() {
        Ok(t) => t,
        Err(e) => panic!(
            "fmha_ref_exec: q {q_shape:?}, k {k_shape:?}, v {v_shape:?} do not make an \
             attention: {e}"
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
