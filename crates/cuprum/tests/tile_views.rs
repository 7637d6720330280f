//! Slices and views of tensors (`Tensor::slice`, `Tensor::view`, and the same on a
//! `TensorView`): kernels read exactly the elements a view covers, through its offset and
//! strides, nothing is copied, and ranges that do not fit are refused with a message. And
//! permuted partitions in kernels (`x.partition_permuted(tile, dim_map)`), lowered and run
//! on the device for every permutation of three axes, of whole tensors and of slices.

use cuprum::tile::prelude::*;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    #[cuprum::tile::entry()]
    fn copy2<const BM: i32, const BN: i32>(
        out: &mut Tensor<f32, { [BM, BN] }>,
        x: &Tensor<f32, { [-1, -1] }>,
    ) {
        out.store(load_tile_like(x, out) + 0.5f32);
    }

    #[cuprum::tile::entry()]
    fn permute3<const B0: i32, const B1: i32, const B2: i32, const P: [i32; 3]>(
        out: &mut Tensor<f32, { [B0, B1, B2] }>,
        x: &Tensor<f32, { [-1, -1, -1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let part = x.partition_permuted(const_shape![B0, B1, B2], const_array!(P));
        out.store(part.load([pid.0, pid.1, pid.2]));
    }
}

#[test]
fn permuted_partitions_read_the_tensor_in_the_permuted_order() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let full = [7usize, 9, 21];
    let host: Vec<f32> = (0..full.iter().product::<usize>())
        .map(|i| i as f32 - 500.0)
        .collect();
    let data = api::from_host(&host, &full).sync_on(&stream)?;
    // The whole tensor, and a slice of it (an offset and strides that are not row-major).
    for ranges in [vec![0..7, 0..9, 0..21], vec![1..6, 2..9, 3..20]] {
        let view = data.slice(&ranges)?;
        let shape: Vec<usize> = ranges.iter().map(|r| r.end - r.start).collect();
        for perm in [
            [0usize, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            let out_shape: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
            let tile = [2usize, 4, 8];
            let out = api::full(f32::NAN, &out_shape).partition(tile);
            let generics: Vec<String> = tile.iter().chain(&perm).map(|v| v.to_string()).collect();
            let (out, _) = kernels::permute3(out, &view)
                .generics(generics)
                .sync_on(&stream)?;
            let got = out.unpartition().to_host_vec().sync_on(&stream)?;
            let mut want = Vec::with_capacity(got.len());
            for v0 in 0..out_shape[0] {
                for v1 in 0..out_shape[1] {
                    for v2 in 0..out_shape[2] {
                        let v = [v0, v1, v2];
                        let mut s = [0usize; 3];
                        for i in 0..3 {
                            s[perm[i]] = v[i] + ranges[perm[i]].start;
                        }
                        want.push(host[(s[0] * full[1] + s[1]) * full[2] + s[2]]);
                    }
                }
            }
            assert_eq!(got, want, "permutation {perm:?} of {ranges:?}");
        }
    }
    Ok(())
}

#[test]
fn kernels_read_the_elements_a_view_covers() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let (rows, cols) = (37usize, 53usize);
    let host: Vec<f32> = (0..rows * cols).map(|i| i as f32 * 0.25 - 100.0).collect();
    let data = api::from_host(&host, &[rows, cols]).sync_on(&stream)?;
    let at = |r: usize, c: usize| host[r * cols + c] + 0.5;
    for (r0, r1, c0, c1) in [
        (0, 37, 0, 53),
        (5, 30, 7, 50),
        (36, 37, 0, 1),
        (10, 11, 3, 53),
    ] {
        let view = data.slice(&[r0..r1, c0..c1])?;
        assert_eq!(view.shape(), &[r1 - r0, c1 - c0]);
        assert_eq!(view.strides(), &[cols, 1]);
        let (vr, vc) = (r1 - r0, c1 - c0);
        let out = api::full(f32::NAN, &[vr, vc]).partition([4, 16]);
        let (out, _) = kernels::copy2(out, &view).sync_on(&stream)?;
        let got = out.unpartition().to_host_vec().sync_on(&stream)?;
        let want: Vec<f32> = (0..vr * vc).map(|i| at(r0 + i / vc, c0 + i % vc)).collect();
        assert_eq!(got, want, "rows {r0}..{r1}, columns {c0}..{c1}");
    }
    // Slices of slices compose their offsets; a view reshapes a contiguous tensor.
    let inner = data.slice(&[4..30])?.slice(&[2..6, 10..20])?;
    let out = api::full(f32::NAN, &[4, 10]).partition([4, 16]);
    let (out, _) = kernels::copy2(out, &inner).sync_on(&stream)?;
    let got = out.unpartition().to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = (0..40).map(|i| at(6 + i / 10, 10 + i % 10)).collect();
    assert_eq!(got, want, "a slice of a slice");
    let flat = data.view(&[rows * cols])?.view(&[cols, rows])?;
    assert_eq!(flat.shape(), &[cols, rows]);
    let out = api::full(f32::NAN, &[cols, rows]).partition([8, 8]);
    let (out, _) = kernels::copy2(out, &flat).sync_on(&stream)?;
    let got = out.unpartition().to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = host.iter().map(|v| v + 0.5).collect();
    assert_eq!(got, want, "a view in another shape");
    Ok(())
}

#[test]
#[allow(clippy::reversed_empty_ranges)] // a reversed range is one of the refused cases
fn slices_that_do_not_fit_are_refused() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let data = api::zeros::<f32>(&[4, 6]).sync_on(&stream)?;
    for ranges in [
        vec![0..5],
        vec![0..4, 2..7],
        vec![3..2],
        vec![0..1, 0..1, 0..1],
    ] {
        let e = data.slice(&ranges).expect_err("out of range");
        assert!(e.to_string().contains("cannot slice"), "{e}");
    }
    let e = data.view(&[5, 5]).expect_err("another element count");
    assert!(e.to_string().contains("element counts differ"), "{e}");
    let e = data
        .slice(&[0..4, 1..3])?
        .view(&[8])
        .expect_err("not contiguous");
    assert!(e.to_string().contains("contiguous"), "{e}");
    Ok(())
}
