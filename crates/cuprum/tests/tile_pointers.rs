//! Raw pointers in tile kernels (`unsafe` entries over `*mut T`, cuTile Rust's pointer API)
//! end to end on the backend `CUPRUM_DEVICE` selects: tensor views over pointers
//! (`make_tensor_view`, rank 1 and 2 with strides, ragged edges), pointer tiles with
//! gathers and masked scatters at offsets read from data, pointers into the middle of an
//! allocation; outputs poisoned first and every element of every allocation checked
//! against plain Rust on fresh random inputs. And what a launch refuses before anything
//! runs: a pointer outside the context's live allocations, one not aligned to its element,
//! one into a tensor argument's memory. The three-way comparison of `Gather`/`Scatter` with
//! the tile interpreter is `cuprum-tile-fuzz`'s `tests/ops.rs`.

use cuprum::tile::cuda_async::device_buffer::DevicePointer;
use cuprum::tile::error::LaunchProblem;
use cuprum::tile::prelude::*;
use cuprum_testkit::compare::assert_same;
use cuprum_testkit::random::{random, rng};
use rand::seq::SliceRandom;

#[cuprum::tile::module]
mod kernels {
    use cuprum::tile::core::*;

    unsafe fn vector<T: ElementType>(ptr: *mut T, len: i32) -> Tensor<T, { [-1] }> {
        let shape: Shape<{ [-1] }> = Shape::<{ [-1] }> { dims: &[len] };
        let strides: Array<{ [-1] }> = Array::<{ [-1] }> { dims: &[1i32] };
        let base: PointerTile<*mut T, { [] }> = pointer_to_tile(ptr);
        make_tensor_view(base, shape, strides, new_token_unordered())
    }

    /// `z = x * a + y` over the first `len` elements, through views of the pointers.
    #[cuprum::tile::entry()]
    unsafe fn axpy<const B: i32>(z: *mut f32, x: *mut f32, y: *mut f32, a: f32, len: i32) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let xs = vector(x, len).partition(const_shape![B]).load([pid.0]);
        let ys = vector(y, len).partition(const_shape![B]).load([pid.0]);
        let out: Tile<f32, { [B] }> = xs * a + ys;
        vector(z, len)
            .partition_mut(const_shape![B])
            .store(out, [pid.0]);
    }

    /// `out` (`cols x rows`, row-major) = the transpose of `x` (`rows x cols`, rows `pitch`
    /// elements apart), through two-dimensional views.
    #[cuprum::tile::entry()]
    unsafe fn transposed<const BM: i32, const BN: i32>(
        out: *mut f32,
        x: *mut f32,
        rows: i32,
        cols: i32,
        pitch: i32,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let src = make_tensor_view(
            pointer_to_tile(x),
            Shape::<{ [-1, -1] }> {
                dims: &[rows, cols],
            },
            Array::<{ [-1, -1] }> {
                dims: &[pitch, 1i32],
            },
            new_token_unordered(),
        );
        let dst = make_tensor_view(
            pointer_to_tile(out),
            Shape::<{ [-1, -1] }> {
                dims: &[cols, rows],
            },
            Array::<{ [-1, -1] }> {
                dims: &[rows, 1i32],
            },
            new_token_unordered(),
        );
        let t: Tile<f32, { [BM, BN] }> = src.partition(const_shape![BM, BN]).load([pid.0, pid.1]);
        dst.partition_mut(const_shape![BN, BM])
            .store(transpose(t), [pid.1, pid.0]);
    }

    /// `out[perm[i]] = values[i] * 3` for `i < len`: a scatter at offsets read from data,
    /// under a mask, from pointer tiles made by reshape and broadcast.
    #[cuprum::tile::entry()]
    unsafe fn scatter<const B: i32>(
        out: *mut i32,
        values: &Tensor<i32, { [-1] }>,
        perm: &Tensor<i32, { [-1] }>,
        len: i32,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let v: Tile<i32, { [B] }> = values.partition(const_shape![B]).load([pid.0]);
        let p: Tile<i32, { [B] }> = perm.partition(const_shape![B]).load([pid.0]);
        let i: Tile<i32, { [B] }> =
            iota(const_shape![B]) + broadcast_scalar(pid.0 * B, const_shape![B]);
        let mask: Tile<bool, { [B] }> = lt_tile(i, broadcast_scalar(len, const_shape![B]));
        let base: PointerTile<*mut i32, { [] }> = pointer_to_tile(out);
        let ptrs: PointerTile<*mut i32, { [B] }> = base
            .reshape(const_shape![1])
            .broadcast(const_shape![B])
            .offset_tile(p);
        store_ptr_tko(
            ptrs,
            v * 3i32,
            ordering::Weak,
            None::<scope::TileBlock>,
            Some(mask),
            None,
            Latency::<0>,
        );
    }

    /// `out[i] = src[at[i]]`, padding `-1` where `at[i]` is outside `src`'s allocation.
    #[cuprum::tile::entry()]
    unsafe fn gather<const B: i32>(
        out: &mut Tensor<i32, { [B] }>,
        src: *mut i32,
        at: &Tensor<i64, { [-1] }>,
    ) {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let offsets: Tile<i64, { [B] }> = at.partition(const_shape![B]).load([pid.0]);
        let ptrs = pointer_to_tile(src)
            .reshape(const_shape![1])
            .broadcast(const_shape![B])
            .offset_tile(offsets);
        let got: (Tile<i32, { [B] }>, Token) = load_ptr_tko(
            ptrs,
            ordering::Weak,
            None::<scope::TileBlock>,
            None,
            Some(-1i32),
            None,
            Latency::<0>,
        );
        out.store(got.0);
    }
}

const POISON: f32 = -7.25e30;

/// What a launch that must be refused was refused for.
fn problem<T>(r: Result<T, Error>) -> LaunchProblem {
    match r {
        Err(Error::InvalidLaunch { problem, .. }) => problem,
        Err(other) => panic!("expected a refused launch, got {other}"),
        Ok(_) => panic!("a bad pointer was launched"),
    }
}

#[test]
fn views_over_pointers_compute_every_element_and_nothing_past_the_view() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let mut r = rng("views_over_pointers_compute_every_element_and_nothing_past_the_view");
    // A ragged length; `x` is read from 5 elements into its allocation, and `z` has room
    // past `len` that must keep its poison.
    let (len, b, skip, extra) = (1000usize, 128usize, 5usize, 13usize);
    let x_host = random(&mut r, len + skip, -4.0f32, 4.0);
    let y_host = random(&mut r, len, -4.0f32, 4.0);
    let a = 1.75f32;
    let x = api::from_host(&x_host, &[len + skip]).sync_on(&stream)?;
    let y = api::from_host(&y_host, &[len]).sync_on(&stream)?;
    let z = api::full(POISON, &[len + extra]).sync_on(&stream)?;
    let (zp, xp, yp) = (
        z.device_pointer(),
        x.device_pointer().add(skip),
        y.device_pointer(),
    );
    let blocks = len.div_ceil(b) as u32;
    let _ = unsafe { kernels::axpy(zp, xp, yp, a, len as i32) }
        .generics(vec![b.to_string()])
        .grid((blocks, 1, 1))
        .sync_on(&stream)?;
    let got = z.to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = (0..len + extra)
        .map(|i| {
            if i < len {
                x_host[i + skip] * a + y_host[i]
            } else {
                POISON
            }
        })
        .collect();
    assert_same("axpy through pointers", &got, &want);

    // Two-dimensional views with a pitch: ragged on both axes.
    let (rows, cols, pitch, bm, bn) = (37usize, 53usize, 60usize, 16usize, 32usize);
    let src_host = random(&mut r, rows * pitch, -9.0f32, 9.0);
    let src = api::from_host(&src_host, &[rows * pitch]).sync_on(&stream)?;
    let out = api::full(POISON, &[cols * rows + extra]).sync_on(&stream)?;
    let grid = (rows.div_ceil(bm) as u32, cols.div_ceil(bn) as u32, 1);
    let _ = unsafe {
        kernels::transposed(
            out.device_pointer(),
            src.device_pointer(),
            rows as i32,
            cols as i32,
            pitch as i32,
        )
    }
    .generics(vec![bm.to_string(), bn.to_string()])
    .grid(grid)
    .sync_on(&stream)?;
    let got = out.to_host_vec().sync_on(&stream)?;
    let want: Vec<f32> = (0..cols * rows + extra)
        .map(|k| {
            if k < cols * rows {
                let (c, row) = (k / rows, k % rows);
                src_host[row * pitch + c]
            } else {
                POISON
            }
        })
        .collect();
    assert_same("transpose through two-dimensional views", &got, &want);
    Ok(())
}

#[test]
fn pointer_tiles_scatter_and_gather_at_offsets_from_data() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let mut r = rng("pointer_tiles_scatter_and_gather_at_offsets_from_data");
    let (len, b) = (777usize, 64usize);
    let values = random(&mut r, len, -1000i32, 1000);
    let mut perm: Vec<i32> = (0..len as i32).collect();
    perm.shuffle(&mut r);
    let v = api::from_host(&values, &[len]).sync_on(&stream)?;
    let p = api::from_host(&perm, &[len]).sync_on(&stream)?;
    let out = api::full(i32::MIN, &[len + 3]).sync_on(&stream)?;
    let blocks = len.div_ceil(b) as u32;
    let _ = unsafe { kernels::scatter(out.device_pointer(), &v, &p, len as i32) }
        .generics(vec![b.to_string()])
        .grid((blocks, 1, 1))
        .sync_on(&stream)?;
    let got = out.to_host_vec().sync_on(&stream)?;
    let mut want = vec![i32::MIN; len + 3];
    for i in 0..len {
        want[perm[i] as usize] = values[i] * 3;
    }
    assert_same("scatter at a permutation", &got, &want);

    // Gathers at offsets from data, some before the pointer or past its allocation (those
    // read the padding), from a pointer 4 elements into its allocation.
    let n = 301usize;
    let src_host = random(&mut r, n, -50i32, 50);
    let src = api::from_host(&src_host, &[n]).sync_on(&stream)?;
    let reachable = (n - 4) as i64;
    let at_host = random(&mut r, len, -6i64, reachable + 6);
    let at = api::from_host(&at_host, &[len]).sync_on(&stream)?;
    let dst = api::full(i32::MIN, &[len]).partition([b]);
    let (dst, _, _) =
        unsafe { kernels::gather(dst, src.device_pointer().add(4), &at) }.sync_on(&stream)?;
    let got = dst.unpartition().to_host_vec().sync_on(&stream)?;
    let want: Vec<i32> = at_host
        .iter()
        .map(|&o| {
            if (0..reachable).contains(&o) {
                src_host[o as usize + 4]
            } else {
                -1
            }
        })
        .collect();
    assert_same("gather at offsets from data", &got, &want);
    Ok(())
}

#[test]
fn bad_pointers_are_refused_before_anything_runs() -> Result<(), Error> {
    let stream = Device::new(0)?.new_stream()?;
    let x = api::ones::<f32>(&[64]).sync_on(&stream)?;
    let z = api::full(POISON, &[64]).sync_on(&stream)?;
    let launch = |z: DevicePointer<f32>, x: DevicePointer<f32>| {
        unsafe { kernels::axpy(z, x, x, 1.0f32, 64) }
            .generics(vec!["32".to_string()])
            .grid((2, 1, 1))
            .sync_on(&stream)
    };
    // An address in no live allocation.
    let nowhere = unsafe { DevicePointer::<f32>::from_cu_deviceptr(64) };
    match problem(launch(z.device_pointer(), nowhere)) {
        LaunchProblem::BadPointer { param, reason, .. } => {
            assert_eq!(param, "x");
            assert!(reason.contains("no live allocation"), "{reason}");
        }
        other => panic!("unexpected refusal: {other}"),
    }
    // Inside an allocation, but not at an element.
    let odd =
        unsafe { DevicePointer::<f32>::from_cu_deviceptr(x.device_pointer().cu_deviceptr() + 2) };
    match problem(launch(z.device_pointer(), odd)) {
        LaunchProblem::BadPointer { reason, .. } => assert!(reason.contains("aligned"), "{reason}"),
        other => panic!("unexpected refusal: {other}"),
    }
    let got = z.to_host_vec().sync_on(&stream)?;
    assert!(got.iter().all(|&v| v == POISON), "a refused launch wrote");

    // A pointer into the memory of a tensor argument of the same launch.
    let v = api::ones::<i32>(&[64]).sync_on(&stream)?;
    let p = api::zeros::<i32>(&[64]).sync_on(&stream)?;
    let r = unsafe { kernels::scatter(v.device_pointer(), &v, &p, 64) }
        .generics(vec!["32".to_string()])
        .grid((2, 1, 1))
        .sync_on(&stream);
    match problem(r) {
        LaunchProblem::PointerAliased { pointer, tensor } => {
            assert_eq!((pointer.as_str(), tensor.as_str()), ("out", "values"));
        }
        other => panic!("unexpected refusal: {other}"),
    }
    Ok(())
}
