//! Vector loads and stores (`Stmt::VectorLoad`/`VectorStore`): element order, every address
//! space, partial warps, and the whole-vector alignment rule.

mod common;

use common::*;
use cuprum_emu::{ArgValue, EmuError, Memory, launch};
use cuprum_ir::*;
use rand::{Rng, SeedableRng, rngs::StdRng};

/// Thread `t < n / lanes` moves run `t` (`lanes` elements of `T`) from `a` to shared memory,
/// reversed, then through local memory, and writes it to `out` at the mirrored run, so that a
/// wrong element order or address shows up.
fn shuffle_runs_kernel(ty: ScalarType, lanes: usize, block: u32) -> Kernel {
    let mut k = K::new("vector_runs");
    let a = k.slice("a", ty, SliceAccess::ReadOnly);
    let out = k.slice("out", ty, SliceAccess::Disjoint);
    let sh = k.b.shared_array(ArrayDecl {
        name: "s".into(),
        elem: ty,
        len: block * lanes as u32,
    });
    let lo = k.b.local_array(ArrayDecl {
        name: "l".into(),
        elem: ty,
        len: lanes as u32,
    });
    let i = k.global_id();
    let n = k.len(out);
    let w = k.u64(lanes as u64);
    let runs = k.bin(BinaryOp::Div, n, w);
    let ok = k.cmp(CmpOp::Lt, i, runs);
    k.if_(ok, |k| {
        let first = k.mul(i, w);
        let src = k.elem_addr(a, first);
        let d =
            k.b.vector_load(AddressSpace::Global, ty, src, lanes)
                .unwrap();
        let t = k.tid();
        let wl = k.u32(lanes as u32);
        let st = k.mul(t, wl);
        let saddr = k.shared_addr(sh, st);
        let reversed: Vec<Value> = d.iter().rev().copied().collect();
        k.b.vector_store(AddressSpace::Shared, saddr, reversed)
            .unwrap();
        let s =
            k.b.vector_load(AddressSpace::Shared, ty, saddr, lanes)
                .unwrap();
        let laddr = k.op(Op::LocalAddr(lo));
        k.b.vector_store(AddressSpace::Local, laddr, s).unwrap();
        let l =
            k.b.vector_load(AddressSpace::Local, ty, laddr, lanes)
                .unwrap();
        let one = k.u64(1);
        let last = k.bin(BinaryOp::Sub, runs, one);
        let mirrored = k.bin(BinaryOp::Sub, last, i);
        let at = k.mul(mirrored, w);
        let dst = k.elem_addr(out, at);
        k.b.vector_store(AddressSpace::Global, dst, l).unwrap();
    });
    k.finish()
}

fn check_runs<T: Elem>(rng: &mut StdRng, lanes: usize, random: impl Fn(&mut StdRng) -> T) {
    let mem = Memory::new();
    for n in [0usize, lanes, 3 * lanes, 1000 * lanes] {
        for block in [32u32, 96, 256] {
            let kernel = shuffle_runs_kernel(T::TY, lanes, block);
            let a: Vec<T> = (0..n).map(|_| random(rng)).collect();
            let (da, dout) = (upload(&mem, &a), output(&mem, T::TY, n));
            let runs = (n / lanes) as u64;
            launch(&mem, &kernel, dims1(runs.max(1), block), &[da, dout]).unwrap();
            let got: Vec<T> = download(&mem, dout);
            for r in 0..n / lanes {
                let src = n / lanes - 1 - r;
                for e in 0..lanes {
                    let want = a[src * lanes + lanes - 1 - e];
                    assert_eq!(
                        got[r * lanes + e],
                        want,
                        "{} x{lanes} n={n} block={block} run {r} element {e}",
                        T::TY
                    );
                }
            }
        }
    }
}

#[test]
fn vector_runs_keep_element_order_in_every_space() {
    let mut rng = StdRng::seed_from_u64(7);
    check_runs(&mut rng, 4, |r| r.random::<u32>());
    check_runs(&mut rng, 2, |r| r.random::<u32>());
    check_runs(&mut rng, 2, |r| r.random::<u64>());
    check_runs(&mut rng, 4, |r| r.random::<u16>());
    check_runs(&mut rng, 4, |r| r.random::<i8>());
    check_runs(&mut rng, 2, |r| r.random::<i64>());
}

#[test]
fn a_vector_access_must_be_aligned_to_its_whole_size() {
    let mem = Memory::new();
    let mut k = K::new("misaligned");
    let p = k.scalar("ptr", ScalarType::U64);
    let out = k.slice("out", ScalarType::U32, SliceAccess::Disjoint);
    let addr = k.param(p);
    let d =
        k.b.vector_load(AddressSpace::Global, ScalarType::U32, addr, 4)
            .unwrap();
    let z = k.u64(0);
    let dst = k.elem_addr(out, z);
    k.b.vector_store(AddressSpace::Global, dst, d).unwrap();
    let kernel = k.finish();
    let src = upload(&mem, &[1u32, 2, 3, 4, 5, 6, 7, 8]);
    let dout = output(&mem, ScalarType::U32, 4);
    let ArgValue::Slice { base, .. } = src else {
        unreachable!()
    };
    // Aligned: the four elements in order.
    launch(
        &mem,
        &kernel,
        dims1(1, 1),
        &[ArgValue::Scalar(base + 16), dout],
    )
    .unwrap();
    assert_eq!(download::<u32>(&mem, dout), vec![5, 6, 7, 8]);
    // Aligned to one element but not to the vector: an error naming the whole access.
    for off in [4u64, 8, 12] {
        let err = launch(
            &mem,
            &kernel,
            dims1(1, 1),
            &[ArgValue::Scalar(base + off), dout],
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                EmuError::Misaligned {
                    size: 16,
                    space: AddressSpace::Global,
                    address,
                    ..
                } if address == base + off
            ),
            "offset {off}: {err:?}"
        );
    }
}
