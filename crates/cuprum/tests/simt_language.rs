//! The device language the front end accepts today — loops, branches, inference of literal
//! types, integer and float operations, casts, `unsafe` kernels — each kernel checked against
//! the same computation in plain Rust on random inputs.

mod common;

use common::{assert_same, blocks_for, ctx, random_f32, random_i32, random_u32};
use cuprum::half::{bf16, f16};
use cuprum::simt::{DisjointSlice, kernel, launch_contract, thread};
use cuprum::{DeviceBuffer, LaunchConfig, LaunchConfig1D, cuda_module};

/// A constant beside the module, which kernels reach through `use super::*` as rustc does.
const OUTER_SCALE: i32 = 3;
/// One that depends on another.
const OUTER_OFFSET: i32 = OUTER_SCALE * 7 - 1;

#[cuda_module]
mod kernels {
    use super::*;

    /// `out = x * OUTER_SCALE + OUTER_OFFSET`, both constants of the parent module.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn outer_constants(x: &[i32], mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            *o = x[i.get()]
                .wrapping_mul(OUTER_SCALE)
                .wrapping_add(OUTER_OFFSET);
        }
    }

    /// Let chains (stable in edition 2024): a condition before a `let`, a condition after
    /// one, and a plain `if let` last, in an else-if ladder.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn let_chains(x: &[i32], limit: i32, mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        if i.get() % 3 != 0
            && let Some(o) = out.get_mut(i)
        {
            *o = x[i.get()];
        } else if let Some(o) = out.get_mut(i)
            && x[i.get()] > limit
        {
            *o = limit;
        } else if let Some(o) = out.get_mut(i) {
            *o = -1;
        }
    }

    /// Long constant loops, unrolled by four by the compiler (a loop over groups): the
    /// values each iteration sees, in order, for an unsigned, a stepped and a signed range.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn long_constant_loops(x: &[u32], mut out: DisjointSlice<u32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let seed = x[i.get()];
            let mut h = seed;
            for k in 0..200u32 {
                h = h.wrapping_mul(31).wrapping_add(k ^ seed);
            }
            for k in (3..403u32).step_by(5) {
                h = h.wrapping_mul(17).wrapping_add(k);
            }
            for k in -128..124i32 {
                h = h.wrapping_mul(7).wrapping_add(k as u32);
            }
            *o = h;
        }
    }

    const LIMIT: i32 = 33;

    /// Collatz steps: a `while` loop whose trip count differs from lane to lane.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn collatz(x: &[u32], mut steps: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let mut v = x[i.get() % x.len()] % 1000 + 1;
        let mut n = 0;
        while v != 1 {
            if v % 2 == 0 {
                v = v / 2;
            } else {
                v = 3 * v + 1;
            }
            n += 1;
        }
        if let Some(out) = steps.get_mut(i) {
            *out = n;
        }
    }

    /// Horner's rule: `acc` and the loop counter take their types from their uses.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn horner(coef: &[f32], x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        if let Some(out) = y.get_mut(i) {
            let v = x[i.get()];
            let mut acc = 0.0;
            for k in 0..coef.len() {
                acc = acc * v + coef[k];
            }
            *out = acc;
        }
    }

    /// Wrapping integer arithmetic, shifts, bit operations, min/max and an `if` with a value.
    #[kernel]
    #[launch_contract(domain = 1, block = (256, 1, 1))]
    pub fn int_mix(a: &[i32], b: &[i32], mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let k = i.get();
        if let Some(o) = out.get_mut(i) {
            let (x, y) = (a[k], b[k]);
            let d = if y == 0 { 1 } else { y };
            let q = x / d + x % d;
            let s = (x << (y & 7)) ^ (x >> 3) | (y & 0x0f0f);
            let m = x.wrapping_mul(31).wrapping_add(y).max(-5).min(1 << 20);
            let sign = if x < 0 {
                -1
            } else if x > 0 {
                1
            } else {
                0
            };
            *o = q.wrapping_add(s).wrapping_sub(m) + sign;
        }
    }

    /// Rust's `as`: float to int saturates, NaN gives 0; int to float rounds.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn casts(x: &[f32], mut as_i32: DisjointSlice<i32>, mut as_u8: DisjointSlice<u32>) {
        let i = thread::index_1d();
        let v = x[i.get()];
        if let Some(o) = as_i32.get_mut(i) {
            *o = v as i32;
        }
        if let Some(o) = as_u8.get_mut(i) {
            *o = (v as u8) as u32 + ((v as i64) as f64 as f32 as u16) as u32;
        }
    }

    /// `loop`, `break`, `continue`, a reversed and a stepped range.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn loops(n: &[u32], mut out: DisjointSlice<u64>) {
        let i = thread::index_1d();
        if i.get() >= n.len() {
            return;
        }
        let limit = n[i.get()] % 200;
        let mut total: u64 = 0;
        let mut k = 0u32;
        loop {
            k += 1;
            if k > limit {
                break;
            }
            if k % 3 == 0 {
                continue;
            }
            total += k as u64;
        }
        for j in (0..limit).rev() {
            if j % 5 == 0 {
                continue;
            }
            total = total * 3 + j as u64;
        }
        for j in (1..=limit).step_by(7) {
            total ^= j as u64;
        }
        if let Some(o) = out.get_mut(i) {
            *o = total;
        }
    }

    /// Float methods and short-circuit logic.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn float_methods(x: &[f32], mut y: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let k = i.get();
        if let Some(o) = y.get_mut(i) {
            let v = x[k];
            let safe = k + 1 < x.len() && x[k + 1] > 0.0;
            let w = if safe {
                v.abs().sqrt()
            } else {
                v.floor().min(2.5).max(-2.5)
            };
            *o = w.mul_add(2.0, -v.ceil()) + v.trunc() + v.round();
        }
    }

    /// `match` on integers: literals, ranges, `|`, constants, bindings, guards, `_`.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn classify(x: &[i32], mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        if let Some(o) = out.get_mut(i) {
            let v = x[i.get()] % 40;
            let class = match v {
                0 => 100,
                1 | 2 | 3 => 200,
                LIMIT => 300,
                -9..=-1 => -1,
                n @ 10..20 if n % 2 == 0 => n * 10,
                n if n < -20 => n - 1000,
                _ => 7,
            };
            let mut extra = 0;
            match v & 3 {
                0 => extra += 1,
                1 => {
                    extra -= 2;
                }
                _ => {}
            }
            *o = class + extra;
        }
    }

    /// Float predicates and powers.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn float_more(x: &[f32], mut flags: DisjointSlice<u32>, mut pows: DisjointSlice<f32>) {
        let i = thread::index_1d();
        let v = x[i.get()];
        if let Some(o) = flags.get_mut(i) {
            *o = v.is_nan() as u32
                | (v.is_finite() as u32) << 1
                | (v.is_infinite() as u32) << 2
                | ((v.signum() + 1.0) as u32) << 3;
        }
        if let Some(o) = pows.get_mut(i) {
            *o = v.powi(3) + (v.abs() + 1.0).powi(-2) + (v.abs() + 0.5).powf(1.7);
        }
    }

    /// f16 and bf16 arithmetic and conversions, bit casts and associated constants.
    #[kernel]
    #[launch_contract(domain = 1, block = (128, 1, 1))]
    pub fn half_math(
        x: &[f16],
        y: &[bf16],
        mut h: DisjointSlice<f16>,
        mut b: DisjointSlice<bf16>,
        mut f: DisjointSlice<f32>,
    ) {
        let i = thread::index_1d();
        let k = i.get();
        if let Some(o) = h.get_mut(i) {
            *o = x[k] * f16::from_f32(1.5) + f16::ONE;
        }
        if let Some(o) = b.get_mut(i) {
            *o = bf16::from_f32(y[k].to_f32().abs().sqrt()) - y[k];
        }
        if let Some(o) = f.get_mut(i) {
            let bits = x[k].to_bits() as u32;
            *o = (x[k].to_f32() + y[k].to_f32()).min(f32::MAX)
                + f32::from_bits(bits << 16)
                + u16::MAX as f32;
        }
    }

    /// An `unsafe` kernel may take `&mut [T]`; it is launched through the raw method.
    #[kernel]
    pub unsafe fn scale_in_place(data: &mut [f32], factor: f32) {
        let i = thread::index_1d().get();
        if i < data.len() {
            data[i] = data[i] * factor;
        }
    }

    fn row_sum(r: [i32; 3]) -> i32 {
        r[0].wrapping_add(r[1]).wrapping_add(r[2])
    }

    fn eye() -> [[f32; 3]; 3] {
        let mut e = [[0.0f32; 3]; 3];
        for d in 0..3 {
            e[d][d] = 1.0;
        }
        e
    }

    /// Nested local arrays: a matrix from repeats, written and read at run-time indices, rows
    /// copied out and back in, a literal of rows, a repeat of a row, a 3-D array, an element
    /// type only a later use gives, and nested arrays through helpers.
    #[kernel]
    #[launch_contract(domain = 1, block = (64, 1, 1))]
    pub fn nested_arrays(x: &[i32], idx: &[u32], mut out: DisjointSlice<i32>) {
        let i = thread::index_1d();
        let k = i.get() % idx.len();
        let s = (idx[k] % 4) as usize;
        let t = (idx[k] / 4 % 3) as usize;
        let mut m = [[0i32; 3]; 4];
        for r in 0..4 {
            for c in 0..3 {
                m[r][c] = x[(k + r * 3 + c) % x.len()];
            }
        }
        let mut r = 0;
        while r < (idx[k] % 5) as usize {
            m[r % 4][(r + t) % 3] ^= 0x55;
            r += 1;
        }
        m[s][t] = m[s][t].wrapping_mul(3);
        let lit = [[1, 2, 3], [4, 5, 6]];
        let mut row = m[s];
        row[0] ^= lit[1][t];
        let before = m[s][0];
        m[(s + 1) % 4] = row;
        let grid = [row; 2];
        let mut cube = [[[0u64; 2]; 3]; 2];
        cube[s % 2][t][k % 2] = idx[k] as u64;
        let mut open = [[0; 2]; 2];
        open[t % 2][s % 2] = idx[k];
        let total = row_sum(m[s]).wrapping_add(row_sum(m[(s + 1) % 4]));
        let e = eye();
        if let Some(o) = out.get_mut(i) {
            *o = total
                ^ before
                ^ grid[1][t].wrapping_mul(7)
                ^ (cube[s % 2][t][k % 2] as i32)
                ^ (cube[1 - s % 2][t][k % 2] as i32)
                ^ (open[t % 2][s % 2] as i32) << 1
                ^ ((m.len() * 10 + m[0].len()) as i32) << 20
                ^ (e[t][t] + e[t][(t + 1) % 3]) as i32;
        }
    }
}

fn config(n: usize, block: u32) -> LaunchConfig1D {
    LaunchConfig1D::new(blocks_for(n, block), block, 0)
}

#[test]
fn constants_of_the_parent_module_reach_device_code() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 777;
    let x = random_i32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![i32::MIN + 3; n])?;
    m.outer_constants(
        &stream,
        &m.prepare_outer_constants(config(n, 64))?,
        &dx,
        &mut out,
    )?;
    let want: Vec<i32> = x
        .iter()
        .map(|v| v.wrapping_mul(3).wrapping_add(20))
        .collect();
    assert_same("outer_constants", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn let_chains_test_each_link_in_order() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    for n in [1usize, 100, 1001] {
        let x = random_i32(n);
        let limit = x[n / 2];
        let dx = DeviceBuffer::from_host(&stream, &x)?;
        let mut out = DeviceBuffer::from_host(&stream, &vec![i32::MIN + 7; n])?;
        let p = m.prepare_let_chains(config(n, 64))?;
        m.let_chains(&stream, &p, &dx, limit, &mut out)?;
        let want: Vec<i32> = (0..n)
            .map(|i| match (i % 3 != 0, x[i] > limit) {
                (true, _) => x[i],
                (false, true) => limit,
                (false, false) => -1,
            })
            .collect();
        assert_same(
            &format!("let_chains of {n}"),
            &out.to_host_vec(&stream)?,
            &want,
        );
    }
    Ok(())
}

#[test]
fn long_constant_loops_see_every_value_in_order() -> cuprum::Result<()> {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let n = 1000;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![0xdead_beefu32; n])?;
    m.long_constant_loops(
        &stream,
        &m.prepare_long_constant_loops(config(n, 64))?,
        &dx,
        &mut out,
    )?;
    let want: Vec<u32> = x
        .iter()
        .map(|&seed| {
            let mut h = seed;
            for k in 0..200u32 {
                h = h.wrapping_mul(31).wrapping_add(k ^ seed);
            }
            for k in (3..403u32).step_by(5) {
                h = h.wrapping_mul(17).wrapping_add(k);
            }
            for k in -128..124i32 {
                h = h.wrapping_mul(7).wrapping_add(k as u32);
            }
            h
        })
        .collect();
    assert_same("long_constant_loops", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn collatz_divergent_while_loop() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 3000);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![u32::MAX; n])?;
    m.collatz(&stream, &m.prepare_collatz(config(n, 128))?, &dx, &mut out)?;
    let want: Vec<u32> = x
        .iter()
        .map(|&v| {
            let (mut v, mut n) = (v % 1000 + 1, 0);
            while v != 1 {
                v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
                n += 1;
            }
            n
        })
        .collect();
    assert_same("collatz", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn horner_infers_literal_types_from_use() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 5000);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let (coef, x) = (
        random_f32(7),
        random_f32(n).iter().map(|v| v / 100.0).collect::<Vec<_>>(),
    );
    let (dc, dx) = (
        DeviceBuffer::from_host(&stream, &coef)?,
        DeviceBuffer::from_host(&stream, &x)?,
    );
    let mut dy = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    m.horner(
        &stream,
        &m.prepare_horner(config(n, 128))?,
        &dc,
        &dx,
        &mut dy,
    )?;
    let want: Vec<f32> = x
        .iter()
        .map(|&v| coef.iter().fold(0.0f32, |acc, &c| acc * v + c))
        .collect();
    assert_same("horner", &dy.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
#[allow(clippy::manual_clamp)] // the reference mirrors the kernel's min/max chain
fn integer_operations_wrap_like_rust_release() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 4099);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let (a, mut b) = (random_i32(n), random_i32(n));
    b[0] = 0;
    b[1] = -1;
    let (da, db) = (
        DeviceBuffer::from_host(&stream, &a)?,
        DeviceBuffer::from_host(&stream, &b)?,
    );
    let mut out = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    m.int_mix(
        &stream,
        &m.prepare_int_mix(config(n, 256))?,
        &da,
        &db,
        &mut out,
    )?;
    let want: Vec<i32> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| {
            let d = if y == 0 { 1 } else { y };
            let q = x.wrapping_div(d).wrapping_add(x.wrapping_rem(d));
            let s = (x.wrapping_shl((y & 7) as u32)) ^ (x >> 3) | (y & 0x0f0f);
            let m = x.wrapping_mul(31).wrapping_add(y).max(-5).min(1 << 20);
            let sign = x.signum();
            q.wrapping_add(s).wrapping_sub(m).wrapping_add(sign)
        })
        .collect();
    assert_same("int_mix", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn casts_follow_rust_as() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 2048);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut x: Vec<f32> = random_f32(n).iter().map(|v| v * 1e8).collect();
    x[..8].copy_from_slice(&[
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.5,
        255.9,
        256.0,
        -1e30,
        3e9,
    ]);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut o1 = DeviceBuffer::from_host(&stream, &vec![7i32; n])?;
    let mut o2 = DeviceBuffer::from_host(&stream, &vec![7u32; n])?;
    m.casts(
        &stream,
        &m.prepare_casts(config(n, 128))?,
        &dx,
        &mut o1,
        &mut o2,
    )?;
    let want1: Vec<i32> = x.iter().map(|&v| v as i32).collect();
    let want2: Vec<u32> = x
        .iter()
        .map(|&v| (v as u8) as u32 + ((v as i64) as f64 as f32 as u16) as u32)
        .collect();
    assert_same("f32 as i32", &o1.to_host_vec(&stream)?, &want1);
    assert_same("mixed casts", &o2.to_host_vec(&stream)?, &want2);
    Ok(())
}

#[test]
fn loop_break_continue_rev_step_by() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 700);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_u32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![u64::MAX; n])?;
    m.loops(&stream, &m.prepare_loops(config(n, 64))?, &dx, &mut out)?;
    let want: Vec<u64> = x
        .iter()
        .map(|&v| {
            let limit = v % 200;
            let mut total: u64 = (1..=limit).filter(|k| k % 3 != 0).map(u64::from).sum();
            for j in (0..limit).rev() {
                if j % 5 != 0 {
                    total = total.wrapping_mul(3).wrapping_add(j as u64);
                }
            }
            for j in (1..=limit).step_by(7) {
                total ^= j as u64;
            }
            total
        })
        .collect();
    assert_same("loops", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
#[allow(clippy::manual_clamp)] // min/max, not clamp: they treat NaN differently
fn float_methods_and_short_circuit() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 1500);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_f32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut dy = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    m.float_methods(
        &stream,
        &m.prepare_float_methods(config(n, 128))?,
        &dx,
        &mut dy,
    )?;
    let want: Vec<f32> = (0..n)
        .map(|k| {
            let v = x[k];
            let safe = k + 1 < n && x[k + 1] > 0.0;
            let w = if safe {
                v.abs().sqrt()
            } else {
                v.floor().min(2.5).max(-2.5)
            };
            w.mul_add(2.0, -v.ceil()) + v.trunc() + v.round()
        })
        .collect();
    assert_same("float methods", &dy.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn match_on_integers_follows_rust() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 4000);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_i32(n);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut out = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    m.classify(&stream, &m.prepare_classify(config(n, 128))?, &dx, &mut out)?;
    let want: Vec<i32> = x
        .iter()
        .map(|&x| {
            let v = x % 40;
            let class = match v {
                0 => 100,
                1..=3 => 200,
                33 => 300,
                -9..=-1 => -1,
                n @ 10..20 if n % 2 == 0 => n * 10,
                n if n < -20 => n - 1000,
                _ => 7,
            };
            let extra = match v & 3 {
                0 => 1,
                1 => -2,
                _ => 0,
            };
            class + extra
        })
        .collect();
    assert_same("classify", &out.to_host_vec(&stream)?, &want);
    Ok(())
}

#[test]
fn float_predicates_and_powers() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 1024);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let mut x: Vec<f32> = random_f32(n).iter().map(|v| v / 10.0).collect();
    x[..6].copy_from_slice(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, -3.0]);
    let dx = DeviceBuffer::from_host(&stream, &x)?;
    let mut flags = DeviceBuffer::from_host(&stream, &vec![u32::MAX; n])?;
    let mut pows = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    m.float_more(
        &stream,
        &m.prepare_float_more(config(n, 128))?,
        &dx,
        &mut flags,
        &mut pows,
    )?;
    let want_flags: Vec<u32> = x
        .iter()
        .map(|v| {
            v.is_nan() as u32
                | (v.is_finite() as u32) << 1
                | (v.is_infinite() as u32) << 2
                | ((v.signum() + 1.0) as u32) << 3
        })
        .collect();
    assert_same(
        "float predicates",
        &flags.to_host_vec(&stream)?,
        &want_flags,
    );
    // powf is exp2(y * log2(x)) on the device: within 1e-5 relative of Rust's powf here.
    let got = pows.to_host_vec(&stream)?;
    for (k, v) in x.iter().enumerate().skip(6) {
        let want = v.powi(3) + (v.abs() + 1.0).powi(-2) + (v.abs() + 0.5).powf(1.7);
        let tol = 1e-5 * want.abs().max(1.0);
        assert!(
            (got[k] - want).abs() <= tol,
            "pow at {k}: got {}, want {want}",
            got[k]
        );
    }
    Ok(())
}

#[test]
fn half_precision_arithmetic_and_conversions() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 999);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let xs = random_f32(n);
    let x: Vec<f16> = xs.iter().map(|v| f16::from_f32(v / 4.0)).collect();
    let y: Vec<bf16> = xs.iter().map(|v| bf16::from_f32(v * 3.0)).collect();
    let (dx, dy) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &y)?,
    );
    let mut h = DeviceBuffer::from_host(&stream, &vec![f16::NAN; n])?;
    let mut b = DeviceBuffer::from_host(&stream, &vec![bf16::NAN; n])?;
    let mut f = DeviceBuffer::from_host(&stream, &vec![f32::NAN; n])?;
    m.half_math(
        &stream,
        &m.prepare_half_math(config(n, 128))?,
        &dx,
        &dy,
        &mut h,
        &mut b,
        &mut f,
    )?;
    let want_h: Vec<f16> = x
        .iter()
        .map(|&v| v * f16::from_f32(1.5) + f16::ONE)
        .collect();
    let want_b: Vec<bf16> = y
        .iter()
        .map(|&v| bf16::from_f32(v.to_f32().abs().sqrt()) - v)
        .collect();
    let want_f: Vec<f32> = (0..n)
        .map(|k| {
            let bits = x[k].to_bits() as u32;
            (x[k].to_f32() + y[k].to_f32()).min(f32::MAX)
                + f32::from_bits(bits << 16)
                + u16::MAX as f32
        })
        .collect();
    assert_same("f16", &h.to_host_vec(&stream)?, &want_h);
    assert_same("bf16", &b.to_host_vec(&stream)?, &want_b);
    assert_same("f32 from halves", &f.to_host_vec(&stream)?, &want_f);
    Ok(())
}

#[test]
fn unsafe_kernel_through_raw_launch() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 1003);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_f32(n);
    let mut d = DeviceBuffer::from_host(&stream, &x)?;
    let config: LaunchConfig = config(n, 96).into();
    // SAFETY: one thread per element, guarded by `i < data.len()`; nothing else aliases `d`.
    unsafe { m.scale_in_place(&stream, config, &mut d, 1.5)? };
    let want: Vec<f32> = x.iter().map(|v| v * 1.5).collect();
    assert_same("scale_in_place", &d.to_host_vec(&stream)?, &want);
    Ok(())
}

/// What `nested_arrays` computes for thread `k`, in plain Rust.
fn nested_arrays_reference(x: &[i32], idx: &[u32], k: usize) -> i32 {
    let s = (idx[k] % 4) as usize;
    let t = (idx[k] / 4 % 3) as usize;
    let mut m = [[0i32; 3]; 4];
    for (r, row) in m.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = x[(k + r * 3 + c) % x.len()];
        }
    }
    for r in 0..(idx[k] % 5) as usize {
        m[r % 4][(r + t) % 3] ^= 0x55;
    }
    m[s][t] = m[s][t].wrapping_mul(3);
    let lit = [[1, 2, 3], [4, 5, 6]];
    let mut row = m[s];
    row[0] ^= lit[1][t];
    let before = m[s][0];
    m[(s + 1) % 4] = row;
    let grid = [row; 2];
    let mut cube = [[[0u64; 2]; 3]; 2];
    cube[s % 2][t][k % 2] = idx[k] as u64;
    let mut open = [[0u32; 2]; 2];
    open[t % 2][s % 2] = idx[k];
    let row_sum = |r: [i32; 3]| r[0].wrapping_add(r[1]).wrapping_add(r[2]);
    let total = row_sum(m[s]).wrapping_add(row_sum(m[(s + 1) % 4]));
    let e = [[1.0f32, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    total
        ^ before
        ^ grid[1][t].wrapping_mul(7)
        ^ (cube[s % 2][t][k % 2] as i32)
        ^ (cube[1 - s % 2][t][k % 2] as i32)
        ^ (open[t % 2][s % 2] as i32) << 1
        ^ (4 * 10 + 3) << 20
        ^ (e[t][t] + e[t][(t + 1) % 3]) as i32
}

#[test]
fn nested_local_arrays_match_rust() -> cuprum::Result<()> {
    let (ctx, n) = (ctx(), 64 * 7 + 13);
    let stream = ctx.default_stream();
    let m = kernels::load(ctx)?;
    let x = random_i32(97);
    let idx = random_u32(n);
    let (dx, di) = (
        DeviceBuffer::from_host(&stream, &x)?,
        DeviceBuffer::from_host(&stream, &idx)?,
    );
    let mut out = DeviceBuffer::from_host(&stream, &vec![i32::MIN; n])?;
    m.nested_arrays(
        &stream,
        &m.prepare_nested_arrays(config(n, 64))?,
        &dx,
        &di,
        &mut out,
    )?;
    let want: Vec<i32> = (0..n)
        .map(|k| nested_arrays_reference(&x, &idx, k))
        .collect();
    assert_same("nested arrays", &out.to_host_vec(&stream)?, &want);
    Ok(())
}
