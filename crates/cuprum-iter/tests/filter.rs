//! `filter` followed by `collect`/`materialize`: the survivors, in input order, against
//! `Iterator::filter` on random data, at every length of `LENGTHS` and with tunings that
//! put chunk and tile boundaries everywhere.

mod common;

use common::{LENGTHS, assert_bits_eq, device, ok, random, rng};
use cuprum_iter::prelude::*;
use cuprum_iter::{Layout, Tuning};

#[test]
fn survivors_keep_their_order() {
    let device = device();
    let mut rng = rng("filter_order");
    for len in LENGTHS {
        let a = random(&mut rng, len, -1f32, 1.0);
        let da = ok(device.upload(&a));
        for cut in [-2.0f32, -0.5, 0.0, 0.9, 2.0] {
            let got = ok((&da).filter(move |x| x.gt(cut)).collect(&device));
            let want: Vec<f32> = a.iter().copied().filter(|&x| x > cut).collect();
            assert_bits_eq(&format!("filter > {cut} len {len}"), &got, &want);
        }
    }
}

#[test]
fn map_filter_map_and_positions() {
    let device = device();
    let mut rng = rng("filter_chain");
    for len in LENGTHS {
        let a = random(&mut rng, len, -100i32, 100);
        let b = random(&mut rng, len, -100i32, 100);
        let (da, db) = (ok(device.upload(&a)), ok(device.upload(&b)));
        let got = ok((&da)
            .zip(&db)
            .map(|(x, y)| x * y)
            .filter(|p| p.lt(0))
            .map(|p| p.cast::<f64>() * 0.5)
            .collect(&device));
        let want: Vec<f64> = a
            .iter()
            .zip(&b)
            .map(|(x, y)| x * y)
            .filter(|&p| p < 0)
            .map(|p| f64::from(p) * 0.5)
            .collect();
        assert_eq!(got, want, "map-filter-map len {len}");
        let got = ok((&da)
            .enumerate()
            .filter(|(_, x)| x.ge(90))
            .map(|(i, _)| i)
            .collect(&device));
        let want: Vec<usize> = a
            .iter()
            .enumerate()
            .filter(|(_, x)| **x >= 90)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(got, want, "positions len {len}");
        // A division that only the survivors reach: zeros are filtered out first, so
        // nothing traps (Rust would not have divided them either).
        let got = ok((&da).filter(|x| x.ne(0)).map(|x| 1000 / x).collect(&device));
        let want: Vec<i32> = a.iter().filter(|&&x| x != 0).map(|&x| 1000 / x).collect();
        assert_eq!(got, want, "guarded division len {len}");
    }
}

#[test]
fn materialized_survivors_feed_another_chain() {
    let device = device();
    let a: Vec<u32> = (0..100_000).collect();
    let da = ok(device.upload(&a));
    let evens = ok((&da).filter(|x| (x & 1).eq(0)).materialize(&device));
    assert_eq!(evens.len(), 50_000);
    let got = ok(evens.map(|x| x / 2).collect(&device));
    assert_eq!(got, (0..50_000).collect::<Vec<u32>>());
    let none = ok((&da).filter(|x| x.gt(u32::MAX - 1)).materialize(&device));
    assert!(none.is_empty());
    assert!(ok(none.to_vec()).is_empty());
}

#[test]
fn every_tuning_compacts_in_order() {
    let device = device();
    let mut rng = rng("filter_tunings");
    let lens = [
        1usize, 2, 31, 32, 33, 64, 255, 256, 257, 4095, 4096, 4097, 100_003,
    ];
    for (bytes_per_thread, block, blocks_per_sm) in [
        (4u32, 32u32, 1u32),
        (8, 64, 2),
        (16, 128, 1),
        (32, 256, 4),
        (64, 1024, 1),
    ] {
        ok(device.set_tuning(Tuning {
            block,
            blocks_per_sm,
            bytes_per_thread,
            layout: Layout::Consecutive,
            vector_bytes: 16,
        }));
        for &len in &lens {
            let a = random(&mut rng, len, 0u16, 1000);
            let da = ok(device.upload(&a));
            let got = ok((&da).filter(|x| x.lt(300)).collect(&device));
            let want: Vec<u16> = a.iter().copied().filter(|&x| x < 300).collect();
            assert_eq!(
                got, want,
                "block {block} bytes {bytes_per_thread} len {len}"
            );
        }
    }
}
