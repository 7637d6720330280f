//! `api::rand` and `api::randn`: the device generator is Philox4x32-10 exactly (checked
//! against a plain-Rust Philox that passes Random123's known-answer vectors), the same seed
//! gives the same tensor, other seeds other tensors, and the samples have the distribution
//! they should (mean, variance, a chi-square over bins, Box–Muller against plain Rust).

use cuprum::tile::prelude::*;
use half::{bf16, f16};

/// Philox4x32-10 of `counter` under `key`, in plain Rust.
fn philox(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for _ in 0..10 {
        let p0 = u64::from(c[0]) * 0xD251_1F53;
        let p1 = u64::from(c[2]) * 0xCD9E_8D57;
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
        k = [
            k[0].wrapping_add(0x9E37_79B9),
            k[1].wrapping_add(0xBB67_AE85),
        ];
    }
    c
}

fn words(i: usize, seed: u64) -> [u32; 4] {
    philox([i as u32, 0, 0, 0], [seed as u32, (seed >> 32) as u32])
}

fn uniform_f32(i: usize, seed: u64) -> f32 {
    (words(i, seed)[0] >> 8) as f32 * 2f32.powi(-24)
}

fn uniform_f64(i: usize, seed: u64) -> f64 {
    let w = words(i, seed);
    let bits = (u64::from(w[0]) << 21) | u64::from(w[1] >> 11);
    bits as f64 * 2f64.powi(-53)
}

fn normal_f32(i: usize, seed: u64) -> f32 {
    let w = words(i, seed);
    let u1 = ((w[0] >> 8) + 1) as f32 * 2f32.powi(-24);
    let u2 = (w[1] >> 8) as f32 * 2f32.powi(-24);
    (u1.ln() * -2.0).sqrt() * (u2 * 6.283_185_5).cos()
}

/// A seed for this run, printed so that a failure can be replayed.
fn seed(name: &str) -> u64 {
    let s = std::env::var("CUPRUM_TEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("{name}: seed {s} (set CUPRUM_TEST_SEED to replay)");
    s
}

#[test]
fn the_reference_philox_passes_random123s_known_answers() {
    assert_eq!(
        philox([0; 4], [0; 2]),
        [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
    );
    assert_eq!(
        philox([u32::MAX; 4], [u32::MAX; 2]),
        [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
    );
    assert_eq!(
        philox(
            [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
            [0xa409_3822, 0x299f_31d0]
        ),
        [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
    );
}

#[test]
fn uniform_samples_are_philox_bit_for_bit_and_repeat_per_seed() -> Result<(), Error> {
    let s = seed("uniform");
    let stream = Device::new(0)?.new_stream()?;
    // Ragged: not a multiple of the generator's tiles.
    let (rows, cols) = (3usize, 1500usize);
    let a: Vec<f32> = api::rand([rows, cols], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    let want: Vec<f32> = (0..rows * cols).map(|i| uniform_f32(i, s)).collect();
    for (i, (g, w)) in a.iter().zip(&want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "rand f32 element {i}: {g} != {w}");
    }
    assert_eq!(a.len(), want.len());
    let again: Vec<f32> = api::rand([rows * cols], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    assert_eq!(a, again, "the same seed gives the same samples");
    let other: Vec<f32> = api::rand([rows * cols], Some(s ^ 1))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    let same = a.iter().zip(&other).filter(|(x, y)| x == y).count();
    assert!(same < 10, "another seed, {same} equal samples");
    let unseeded: Vec<f32> = api::rand([rows * cols], None)
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    let unseeded2: Vec<f32> = api::rand([rows * cols], None)
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    assert_ne!(unseeded, unseeded2, "without a seed, each call draws anew");

    let d: Vec<f64> = api::rand([777], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    for (i, g) in d.iter().enumerate() {
        let w = uniform_f64(i, s);
        assert_eq!(g.to_bits(), w.to_bits(), "rand f64 element {i}: {g} != {w}");
    }
    assert_eq!(d.len(), 777);
    let empty: Tensor<f32> = api::rand([0, 5], Some(s)).sync_on(&stream)?;
    assert_eq!(empty.shape(), &[0, 5]);
    Ok(())
}

/// Mean, variance and a chi-square over 16 equal bins of `n` uniform samples.
#[test]
fn uniform_samples_are_uniform() -> Result<(), Error> {
    let s = seed("uniform statistics");
    let stream = Device::new(0)?.new_stream()?;
    let n = 1 << 15;
    for v in [
        api::rand::<f32, 1>([n], Some(s))
            .sync_on(&stream)?
            .to_host_vec()
            .sync_on(&stream)?
            .into_iter()
            .map(f64::from)
            .collect::<Vec<f64>>(),
        api::rand::<f64, 1>([n], Some(s))
            .sync_on(&stream)?
            .to_host_vec()
            .sync_on(&stream)?,
    ] {
        assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)), "outside [0, 1)");
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // Standard errors: sqrt(1/12 / n) for the mean; about 0.3/sqrt(n)·(1/12) for the
        // variance. Six of them.
        assert!(
            (mean - 0.5).abs() < 6.0 * (1.0 / 12.0 / n as f64).sqrt(),
            "mean {mean}"
        );
        assert!((var - 1.0 / 12.0).abs() < 0.01, "variance {var}");
        let mut bins = [0usize; 16];
        for &x in &v {
            bins[(x * 16.0) as usize] += 1;
        }
        let expect = n as f64 / 16.0;
        let chi2: f64 = bins
            .iter()
            .map(|&b| (b as f64 - expect).powi(2) / expect)
            .sum();
        // 15 degrees of freedom: P(chi2 > 45) is about 7e-5.
        assert!(chi2 < 45.0, "chi-square {chi2} over bins {bins:?}");
    }
    Ok(())
}

#[test]
fn normal_samples_follow_box_muller_and_the_normal_distribution() -> Result<(), Error> {
    let s = seed("normal");
    let stream = Device::new(0)?.new_stream()?;
    let n = 1 << 15;
    let (mean, std) = (1.5f32, 2.5f32);
    let v: Vec<f32> = api::randn(mean, std, [n], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    assert_eq!(v.len(), n);
    for (i, &g) in v.iter().enumerate() {
        let w = normal_f32(i, s) * std + mean;
        // The device's `ln` and `cos` are within a few ulp of Rust's.
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "randn element {i}: {g} != {w}"
        );
    }
    let again: Vec<f32> = api::randn(mean, std, [n], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    assert_eq!(v, again, "the same seed gives the same samples");
    let m = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
    let var = v.iter().map(|&x| (f64::from(x) - m).powi(2)).sum::<f64>() / n as f64;
    let sd = f64::from(std);
    assert!(
        (m - f64::from(mean)).abs() < 6.0 * sd / (n as f64).sqrt(),
        "mean {m}"
    );
    // The variance's standard error is sd^2 * sqrt(2 / n).
    assert!(
        (var - sd * sd).abs() < 6.0 * sd * sd * (2.0 / n as f64).sqrt(),
        "variance {var}"
    );
    // About 68.3% within one deviation, 95.4% within two.
    let within = |k: f64| {
        v.iter()
            .filter(|&&x| (f64::from(x) - f64::from(mean)).abs() < k * sd)
            .count() as f64
            / n as f64
    };
    assert!((within(1.0) - 0.6827).abs() < 0.02, "{}", within(1.0));
    assert!((within(2.0) - 0.9545).abs() < 0.01, "{}", within(2.0));

    // Other element types: f64 scales in f64, the 16-bit types round the f32 sample.
    let d: Vec<f64> = api::randn(0.0f64, 1.0, [300], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    let h: Vec<f16> = api::randn_f16(f16::ZERO, f16::ONE, [300], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    let b: Vec<bf16> = api::randn(bf16::ZERO, bf16::ONE, [300], Some(s))
        .sync_on(&stream)?
        .to_host_vec()
        .sync_on(&stream)?;
    for i in 0..300 {
        let w = normal_f32(i, s);
        assert!(
            (d[i] - f64::from(w)).abs() <= 1e-5 * (1.0 + f64::from(w.abs())),
            "f64 {i}"
        );
        assert!(
            (h[i].to_f32() - w).abs() <= 1e-3 * (1.0 + w.abs()),
            "f16 {i}"
        );
        assert!(
            (b[i].to_f32() - w).abs() <= 1e-2 * (1.0 + w.abs()),
            "bf16 {i}"
        );
    }
    Ok(())
}
