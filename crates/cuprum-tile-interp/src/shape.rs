//! Moving a tile's elements: broadcast, permute, iota and the reordering of a reduction are
//! all one gather, `out[c] = src[sum(c[i] * stride[i])]` over the row-major coordinates `c`
//! of the result (a broadcast axis has stride 0). Reshape moves nothing: a tile is its
//! elements in row-major order.

/// The row-major strides of `shape`, in elements.
pub(crate) fn row_major(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// `out[c] = src[sum(c[i] * strides[i])]` for every coordinate `c` of `shape`, row-major.
pub(crate) fn gather(src: &[u64], shape: &[usize], strides: &[usize]) -> Vec<u64> {
    let count: usize = shape.iter().product();
    let mut out = Vec::with_capacity(count);
    let rank = shape.len();
    if count == 0 {
        return out;
    }
    if rank == 0 {
        out.push(src[0]);
        return out;
    }
    let inner = rank - 1;
    let (len, s) = (shape[inner], strides[inner]);
    let mut c = vec![0usize; rank];
    loop {
        let at: usize = (0..inner).map(|d| c[d] * strides[d]).sum();
        if s == 1 {
            out.extend_from_slice(&src[at..at + len]);
        } else {
            out.extend((0..len).map(|k| src[at + k * s]));
        }
        let mut d = inner;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            c[d] += 1;
            if c[d] < shape[d] {
                break;
            }
            c[d] = 0;
        }
    }
}

/// `src` of shape `from` repeated along its axes of size 1 to `to` (same rank).
pub(crate) fn broadcast(src: &[u64], from: &[usize], to: &[usize]) -> Vec<u64> {
    let mut strides = row_major(from);
    for d in 0..from.len() {
        if from[d] == 1 && to[d] != 1 {
            strides[d] = 0;
        }
    }
    gather(src, to, &strides)
}

/// `src` of shape `from` with result axis `i` its axis `perm[i]`.
pub(crate) fn permute(src: &[u64], from: &[usize], perm: &[u32]) -> Vec<u64> {
    let s = row_major(from);
    let shape: Vec<usize> = perm.iter().map(|&p| from[p as usize]).collect();
    let strides: Vec<usize> = perm.iter().map(|&p| s[p as usize]).collect();
    gather(src, &shape, &strides)
}

/// A tile of shape `shape` whose element at `c` is `c[axis]`, as `U64` bits.
pub(crate) fn iota(shape: &[usize], axis: usize) -> Vec<u64> {
    let line: Vec<u64> = (0..shape[axis] as u64).collect();
    let strides: Vec<usize> = (0..shape.len()).map(|d| usize::from(d == axis)).collect();
    gather(&line, shape, &strides)
}

/// The elements of `src` (of shape `shape`) reordered for a reduction along `axis`: `n`
/// rows of `m` elements, row `j` holding every element whose coordinate along `axis` is `j`,
/// in the row-major order of the result (the shape without `axis`). Returns the rows, `n`
/// and `m`.
pub(crate) fn reduction_rows(
    src: &[u64],
    shape: &[usize],
    axis: usize,
) -> (Vec<u64>, usize, usize) {
    let n = shape[axis];
    let m = shape.iter().product::<usize>() / n.max(1);
    if axis == 0 {
        return (src.to_vec(), n, m);
    }
    // Move `axis` to the front.
    let mut perm: Vec<u32> = vec![axis as u32];
    perm.extend((0..shape.len() as u32).filter(|&d| d != axis as u32));
    (permute(src, shape, &perm), n, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves() {
        let a: Vec<u64> = (0..6).collect(); // [[0, 1, 2], [3, 4, 5]]
        assert_eq!(permute(&a, &[2, 3], &[1, 0]), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(broadcast(&[7, 8], &[2, 1], &[2, 3]), vec![7, 7, 7, 8, 8, 8]);
        assert_eq!(broadcast(&[7, 8], &[1, 2], &[2, 2]), vec![7, 8, 7, 8]);
        assert_eq!(iota(&[2, 3], 0), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(iota(&[2, 3], 1), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(
            reduction_rows(&a, &[2, 3], 1),
            (vec![0, 3, 1, 4, 2, 5], 3, 2)
        );
        assert_eq!(gather(&[9], &[], &[]), vec![9]);
        let b: Vec<u64> = (0..24).collect();
        let p = permute(&b, &[2, 3, 4], &[2, 0, 1]);
        // Result (k, i, j) of shape [4, 2, 3] is b[i][j][k]: (1, 1, 2) is b[1][2][1].
        let (k, i, j) = (1, 1, 2);
        assert_eq!(p[k * 6 + i * 3 + j], (i * 12 + j * 4 + k) as u64);
    }
}
