//! Hand-written PTX run through `Module::from_ptx` on the backend `CUPRUM_DEVICE` selects:
//! on a GPU the driver compiles it, on the emulator `cuprum-ptx-import` translates it into
//! cuprum's IR, so the same test checks the importer against plain-Rust references of the
//! PTX ISA's semantics here and against the hardware through gpu-pack. Each kernel's PTX is
//! also assembled by ptxas (when it is installed), so the tests are real PTX. Covered: a
//! divergent loop (branches back and forth), a shared-memory reduction with `bar.sync` in a
//! loop, integer arithmetic at its edges (division by zero and `MIN / -1`, clamped shifts,
//! high and wide products, bit counts), float conversions and comparisons with NaNs and
//! ties, `.sat` and `.ftz`, vector accesses, dynamic shared memory, a thread's local array,
//! whole-warp shuffles and votes, and atomics; and the refusals of what the importer does not
//! model, with the line.

mod common;

use common::{assert_same, ctx};
use cuprum::{BackendKind, DeviceBuffer, Error, Module, launch};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::rng;
use rand::Rng;

const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

/// Loads `body` (after the header) on the test's context, its PTX assembled by ptxas first.
fn load(body: &str) -> Module {
    let ptx = format!("{HEADER}{body}");
    if let Err(e) = cuprum_testkit::ptxas::check(&ptx, "sm_80") {
        panic!("the test's PTX is not valid: {e}");
    }
    match Module::from_ptx(ctx(), &ptx) {
        Ok(m) => m,
        Err(e) => panic!("the PTX does not load: {e}"),
    }
}

/// `out[i] = sum over k < (i % 37) of x[i] * k`, a loop whose trip count differs between the
/// lanes of a warp (they leave it at different passes and meet again after it).
const DIVERGENT_LOOP: &str = r#"
.visible .entry divergent_loop(.param .u64 x_ptr, .param .u64 out_ptr, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [out_ptr];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $DONE;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    rem.u32 %r6, %r5, 37;
    mov.f32 %f2, 0f00000000;
    mov.u32 %r7, 0;
$LOOP:
    setp.ge.u32 %p2, %r7, %r6;
    @%p2 bra $STORE;
    cvt.rn.f32.u32 %f3, %r7;
    fma.rn.f32 %f2, %f1, %f3, %f2;
    add.s32 %r7, %r7, 1;
    bra.uni $LOOP;
$STORE:
    add.s64 %rd5, %rd2, %rd3;
    st.global.f32 [%rd5], %f2;
$DONE:
    ret;
}
"#;

#[test]
fn a_loop_whose_lanes_leave_at_different_passes() {
    let module = load(DIVERGENT_LOOP);
    let f = module.get_function("divergent_loop").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("a_loop_whose_lanes_leave_at_different_passes");
    for n in [1usize, 300, 5000] {
        let x: Vec<f32> = (0..n).map(|_| r.random_range(-8.0..8.0)).collect();
        let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
        let out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).expect("out");
        // SAFETY: thread i < n reads x[i] and writes out[i], both of n elements.
        unsafe { launch!(f<<<(n as u32).div_ceil(128), 128, 0, stream>>>(&dx, &out, n as u32)) }
            .expect("launch");
        let want: Vec<f32> = (0..n)
            .map(|i| (0..(i % 37)).fold(0.0f32, |acc, k| x[i].mul_add(k as f32, acc)))
            .collect();
        assert_same(
            &format!("divergent loop, n = {n}"),
            &out.to_host_vec(&stream).expect("out"),
            &want,
        );
    }
}

/// Each block of 256 sums its 256 elements in a static shared array, halving with a
/// `bar.sync` per step (in a loop), and thread 0 writes the block's sum.
const BLOCK_SUM: &str = r#"
.visible .entry block_sum(.param .u64 x_ptr, .param .u64 out_ptr, .param .u32 n)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 partial[1024];
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [out_ptr];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    shl.b32 %r4, %r3, 8;
    add.s32 %r4, %r4, %r2;
    mov.u32 %r5, 0;
    setp.lt.u32 %p1, %r4, %r1;
    @!%p1 bra $STAGE;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
$STAGE:
    mov.u32 %r6, partial;
    shl.b32 %r7, %r2, 2;
    add.s32 %r8, %r6, %r7;
    st.shared.u32 [%r8], %r5;
    bar.sync 0;
    mov.u32 %r9, 128;
$HALVE:
    setp.ge.u32 %p2, %r2, %r9;
    @%p2 bra $WAIT;
    shl.b32 %r10, %r9, 2;
    add.s32 %r10, %r8, %r10;
    ld.shared.u32 %r11, [%r10];
    ld.shared.u32 %r5, [%r8];
    add.s32 %r5, %r5, %r11;
    st.shared.u32 [%r8], %r5;
$WAIT:
    bar.sync 0;
    shr.u32 %r9, %r9, 1;
    setp.ne.s32 %p3, %r9, 0;
    @%p3 bra $HALVE;
    setp.ne.s32 %p1, %r2, 0;
    @%p1 bra $END;
    ld.shared.u32 %r5, [partial];
    mul.wide.u32 %rd5, %r3, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.u32 [%rd6], %r5;
$END:
    exit;
}
"#;

#[test]
fn a_shared_memory_reduction_with_barriers_in_a_loop() {
    let module = load(BLOCK_SUM);
    let f = module.get_function("block_sum").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("a_shared_memory_reduction_with_barriers_in_a_loop");
    for n in [1usize, 256, 1000, 4099] {
        let x: Vec<u32> = (0..n).map(|_| r.random()).collect();
        let blocks = n.div_ceil(256);
        let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
        let out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks)).expect("out");
        // SAFETY: block b reads x[256 b ..] below n and writes out[b], of `blocks` elements.
        unsafe { launch!(f<<<blocks as u32, 256, 0, stream>>>(&dx, &out, n as u32)) }
            .expect("launch");
        let want: Vec<u32> = x
            .chunks(256)
            .map(|c| c.iter().fold(0u32, |a, v| a.wrapping_add(*v)))
            .collect();
        assert_same(
            &format!("block sums, n = {n}"),
            &out.to_host_vec(&stream).expect("out"),
            &want,
        );
    }
}

/// Per thread, 12 results of integer instructions on `a[i]`, `b[i]` and `s[i]` (a shift
/// amount that may pass the width).
const INTEGERS: &str = r#"
.visible .entry integers(.param .u64 a_ptr, .param .u64 b_ptr, .param .u64 s_ptr,
                         .param .u64 out_ptr, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [a_ptr];
    ld.param.u64 %rd2, [b_ptr];
    ld.param.u64 %rd3, [s_ptr];
    ld.param.u64 %rd4, [out_ptr];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $DONE;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd1, %rd5;
    ld.global.u32 %r6, [%rd6];
    add.s64 %rd6, %rd2, %rd5;
    ld.global.u32 %r7, [%rd6];
    add.s64 %rd6, %rd3, %rd5;
    ld.global.u32 %r8, [%rd6];
    mul.lo.s32 %r9, %r5, 48;
    mul.wide.u32 %rd7, %r9, 1;
    add.s64 %rd8, %rd4, %rd7;
    div.s32 %r10, %r6, %r7;
    st.global.u32 [%rd8], %r10;
    rem.s32 %r11, %r6, %r7;
    st.global.u32 [%rd8+4], %r11;
    div.u32 %r12, %r6, %r7;
    st.global.u32 [%rd8+8], %r12;
    shl.b32 %r13, %r6, %r8;
    st.global.u32 [%rd8+12], %r13;
    shr.s32 %r14, %r6, %r8;
    st.global.u32 [%rd8+16], %r14;
    shr.u32 %r15, %r6, %r8;
    st.global.u32 [%rd8+20], %r15;
    mul.hi.s32 %r16, %r6, %r7;
    st.global.u32 [%rd8+24], %r16;
    mul.wide.s32 %rd9, %r6, %r7;
    st.global.v2.u32 [%rd8+32], {%r6, %r7};
    cvt.u32.u64 %r17, %rd9;
    shr.u64 %rd10, %rd9, 32;
    cvt.u32.u64 %r18, %rd10;
    xor.b32 %r17, %r17, %r18;
    st.global.u32 [%rd8+28], %r17;
    popc.b32 %r19, %r6;
    clz.b32 %r20, %r7;
    add.s32 %r19, %r19, %r20;
    st.global.u32 [%rd8+40], %r19;
    min.s32 %r21, %r6, %r7;
    max.u32 %r22, %r6, %r7;
    setp.lt.s32 %p2, %r6, 0;
    selp.b32 %r23, %r21, %r22, %p2;
    abs.s32 %r21, %r23;
    not.b32 %r21, %r21;
    st.global.u32 [%rd8+44], %r21;
$DONE:
    ret;
}
"#;

/// What `INTEGERS` computes for one thread, as the PTX ISA defines it (and the importer makes
/// definite where the ISA leaves it unspecified: a zero divisor, `MIN / -1`).
fn integers_reference(a: u32, b: u32, s: u32) -> [u32; 12] {
    let (sa, sb) = (a as i32, b as i32);
    let div_s = if sb == 0 {
        u32::MAX
    } else {
        sa.wrapping_div(sb) as u32
    };
    let rem_s = if sb == 0 {
        a
    } else {
        sa.wrapping_rem(sb) as u32
    };
    let div_u = a.checked_div(b).unwrap_or(u32::MAX);
    let shl = if s >= 32 { 0 } else { a << s };
    let shr_s = (sa >> s.min(31)) as u32;
    let shr_u = if s >= 32 { 0 } else { a >> s };
    let hi = ((i64::from(sa) * i64::from(sb)) >> 32) as u32;
    let wide = i64::from(sa) * i64::from(sb);
    let folded = (wide as u32) ^ ((wide as u64 >> 32) as u32);
    let bits = a.count_ones() + b.leading_zeros();
    let picked = if sa < 0 { sa.min(sb) as u32 } else { a.max(b) };
    let last = !((picked as i32).wrapping_abs() as u32);
    [
        div_s, rem_s, div_u, shl, shr_s, shr_u, hi, folded, a, b, bits, last,
    ]
}

#[test]
fn integer_instructions_at_their_edges() {
    let module = load(INTEGERS);
    let f = module.get_function("integers").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("integer_instructions_at_their_edges");
    let n = 3000;
    let edge = [
        0u32,
        1,
        u32::MAX,
        i32::MIN as u32,
        i32::MAX as u32,
        31,
        32,
        33,
    ];
    let pick = |r: &mut rand::rngs::StdRng| {
        if r.random_bool(0.3) {
            edge[r.random_range(0..edge.len())]
        } else {
            r.random()
        }
    };
    let a: Vec<u32> = (0..n).map(|_| pick(&mut r)).collect();
    let b: Vec<u32> = (0..n).map(|_| pick(&mut r)).collect();
    let s: Vec<u32> = (0..n).map(|_| r.random_range(0..70)).collect();
    let (da, db, ds) = (
        DeviceBuffer::from_host(&stream, &a).expect("a"),
        DeviceBuffer::from_host(&stream, &b).expect("b"),
        DeviceBuffer::from_host(&stream, &s).expect("s"),
    );
    let out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(12 * n)).expect("out");
    // SAFETY: thread i < n reads a[i], b[i], s[i] and writes out[12 i .. 12 i + 12].
    unsafe {
        launch!(f<<<(n as u32).div_ceil(64), 64, 0, stream>>>(&da, &db, &ds, &out, n as u32))
    }
    .expect("launch");
    let mut want: Vec<u32> = (0..n)
        .flat_map(|i| integers_reference(a[i], b[i], s[i]))
        .collect();
    let mut got = out.to_host_vec(&stream).expect("out");
    // A zero divisor and `MIN / -1` have no result the ISA specifies: the importer's
    // definite ones are checked on the emulator only.
    if ctx().backend() == BackendKind::Cuda {
        for i in 0..n {
            let (sa, sb) = (a[i] as i32, b[i] as i32);
            if sb == 0 || (sa == i32::MIN && sb == -1) {
                for k in 0..3 {
                    got[12 * i + k] = 0;
                    want[12 * i + k] = 0;
                }
            }
        }
    }
    assert_same("integer results", &got, &want);
}

/// Per thread, 8 results of float instructions on `x[i]` and `y[i]`: conversions to integers
/// in every rounding, comparisons that NaNs decide, `.sat`, `.ftz`, `min` with NaN, fused and
/// correctly rounded arithmetic.
const FLOATS: &str = r#"
.visible .entry floats(.param .u64 x_ptr, .param .u64 y_ptr, .param .u64 out_ptr, .param .u32 n)
{
    .reg .pred %p<8>;
    .reg .b32 %r<16>;
    .reg .f32 %f<12>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [y_ptr];
    ld.param.u64 %rd3, [out_ptr];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $DONE;
    mul.wide.u32 %rd4, %r5, 4;
    add.s64 %rd5, %rd1, %rd4;
    ld.global.f32 %f1, [%rd5];
    add.s64 %rd5, %rd2, %rd4;
    ld.global.f32 %f2, [%rd5];
    shl.b64 %rd6, %rd4, 3;
    add.s64 %rd7, %rd3, %rd6;
    cvt.rni.s32.f32 %r6, %f1;
    cvt.rzi.s32.f32 %r7, %f1;
    cvt.rmi.s32.f32 %r8, %f1;
    cvt.rpi.u32.f32 %r9, %f1;
    st.global.v4.u32 [%rd7], {%r6, %r7, %r8, %r9};
    setp.ne.f32 %p2, %f1, %f2;
    setp.neu.f32 %p3, %f1, %f2;
    setp.equ.f32 %p4, %f1, %f2;
    setp.gtu.f32 %p5, %f1, %f2;
    setp.nan.f32 %p6, %f1, %f2;
    selp.u32 %r10, 1, 0, %p2;
    selp.u32 %r11, 2, 0, %p3;
    or.b32 %r10, %r10, %r11;
    selp.u32 %r11, 4, 0, %p4;
    or.b32 %r10, %r10, %r11;
    selp.u32 %r11, 8, 0, %p5;
    or.b32 %r10, %r10, %r11;
    selp.u32 %r11, 16, 0, %p6;
    or.b32 %r10, %r10, %r11;
    setp.lt.and.f32 %p7, %f1, %f2, %p2;
    selp.u32 %r11, 32, 0, %p7;
    or.b32 %r10, %r10, %r11;
    st.global.u32 [%rd7+16], %r10;
    add.sat.f32 %f3, %f1, %f2;
    mul.ftz.f32 %f4, %f1, %f2;
    min.f32 %f5, %f1, %f2;
    fma.rn.f32 %f6, %f1, %f2, %f3;
    div.rn.f32 %f7, %f6, %f2;
    sqrt.rn.f32 %f8, %f3;
    add.f32 %f9, %f7, %f8;
    st.global.v2.f32 [%rd7+24], {%f4, %f9};
    st.global.f32 [%rd7+20], %f5;
$DONE:
    ret;
}
"#;

/// PTX's `cvt.rni`: to nearest, ties to even; NaN 0, saturating.
fn round_even_i32(x: f32) -> i32 {
    x.round_ties_even() as i32
}

fn floats_reference(x: f32, y: f32) -> [u32; 8] {
    let bit = |c: bool, v: u32| if c { v } else { 0 };
    let unordered = x.is_nan() || y.is_nan();
    let flags = bit(!unordered && x != y, 1)
        | bit(x != y, 2)
        | bit(x == y || unordered, 4)
        | bit(x > y || unordered, 8)
        | bit(unordered, 16)
        | bit(x < y && (!unordered && x != y), 32);
    let sat = {
        let s = x + y;
        if s.is_nan() { 0.0 } else { s.clamp(0.0, 1.0) }
    };
    let ftz = |v: f32| {
        if v.is_subnormal() {
            0.0f32.copysign(v)
        } else {
            v
        }
    };
    let product = ftz(ftz(x) * ftz(y));
    let min = x.min(y);
    let fused = x.mul_add(y, sat);
    let sum = fused / y + sat.sqrt();
    [
        round_even_i32(x) as u32,
        x as i32 as u32,
        x.floor() as i32 as u32,
        x.ceil() as u32,
        flags,
        min.to_bits(),
        product.to_bits(),
        sum.to_bits(),
    ]
}

#[test]
fn float_instructions_with_nans_ties_and_subnormals() {
    let module = load(FLOATS);
    let f = module.get_function("floats").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("float_instructions_with_nans_ties_and_subnormals");
    let n = 4000;
    let edge = [
        0.5f32,
        1.5,
        2.5,
        -0.5,
        -2.5,
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        1e-39,
        -1e-39,
        3e9,
        -3e9,
        0.3,
        1.0,
    ];
    let pick = |r: &mut rand::rngs::StdRng| {
        if r.random_bool(0.4) {
            edge[r.random_range(0..edge.len())]
        } else {
            r.random_range(-100.0f32..100.0)
        }
    };
    let x: Vec<f32> = (0..n).map(|_| pick(&mut r)).collect();
    let y: Vec<f32> = (0..n).map(|_| pick(&mut r)).collect();
    let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
    let dy = DeviceBuffer::from_host(&stream, &y).expect("y");
    let out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(8 * n)).expect("out");
    // SAFETY: thread i < n reads x[i], y[i] and writes out[8 i .. 8 i + 8].
    unsafe { launch!(f<<<(n as u32).div_ceil(64), 64, 0, stream>>>(&dx, &dy, &out, n as u32)) }
        .expect("launch");
    let mut want: Vec<u32> = (0..n).flat_map(|i| floats_reference(x[i], y[i])).collect();
    let mut got = out.to_host_vec(&stream).expect("out");
    for i in 0..n {
        // NaN results are checked as NaNs (their bits are the backend's canonical NaN), and
        // `min` of two zeros or two NaNs, whose sign or payload the ISA does not fix, as a
        // zero or a NaN.
        for k in 5..8 {
            let (g, w) = (
                f32::from_bits(got[8 * i + k]),
                f32::from_bits(want[8 * i + k]),
            );
            let loose = w.is_nan() || (k == 5 && w == 0.0 && x[i] == 0.0 && y[i] == 0.0);
            if loose {
                assert!(
                    (w.is_nan() && g.is_nan()) || (w == 0.0 && g == 0.0),
                    "element {i}, result {k}: got {g:?}, want {w:?}"
                );
                got[8 * i + k] = 0;
                want[8 * i + k] = 0;
            }
        }
    }
    assert_same("float results", &got, &want);
}

/// A histogram by `atom.global.add` (and the old values' sum by `red`), and each block's
/// maximum by `atom.shared.max` on dynamic shared memory, written by thread 0 after a
/// barrier; `atom.cas` swaps in each thread's id where `slots` hold zero.
const ATOMICS: &str = r#"
.extern .shared .align 16 .b8 dynamic[];
.visible .entry atomics(.param .u64 x_ptr, .param .u64 hist_ptr, .param .u64 maxes_ptr,
                        .param .u64 slots_ptr, .param .u64 total_ptr, .param .u32 n)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [hist_ptr];
    ld.param.u64 %rd3, [maxes_ptr];
    ld.param.u64 %rd4, [slots_ptr];
    ld.param.u64 %rd5, [total_ptr];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ne.s32 %p1, %r4, 0;
    @%p1 bra $STARTED;
    mov.u32 %r14, 0;
    st.shared.u32 [dynamic], %r14;
$STARTED:
    bar.sync 0;
    setp.ge.u32 %p2, %r5, %r1;
    @%p2 bra $MET;
    mul.wide.u32 %rd6, %r5, 4;
    add.s64 %rd7, %rd1, %rd6;
    ld.global.u32 %r6, [%rd7];
    and.b32 %r7, %r6, 15;
    mul.wide.u32 %rd8, %r7, 4;
    add.s64 %rd9, %rd2, %rd8;
    atom.global.add.u32 %r8, [%rd9], 1;
    red.global.add.u64 [%rd5], 1;
    atom.shared.max.u32 %r9, [dynamic], %r6;
    shr.u32 %r10, %r6, 28;
    mul.wide.u32 %rd10, %r10, 4;
    add.s64 %rd11, %rd4, %rd10;
    add.s32 %r11, %r5, 1;
    atom.global.cas.b32 %r12, [%rd11], 0, %r11;
$MET:
    bar.sync 0;
    @%p1 bra $END;
    ld.shared.u32 %r13, [dynamic];
    mul.wide.u32 %rd6, %r2, 4;
    add.s64 %rd7, %rd3, %rd6;
    st.global.u32 [%rd7], %r13;
$END:
    ret;
}
"#;

#[test]
fn atomics_on_global_and_dynamic_shared_memory() {
    let module = load(ATOMICS);
    let f = module.get_function("atomics").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("atomics_on_global_and_dynamic_shared_memory");
    let n = 2500usize;
    let x: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let blocks = n.div_ceil(128);
    let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
    let hist = DeviceBuffer::from_host(&stream, &[0u32; 16]).expect("hist");
    let maxes = DeviceBuffer::from_host(&stream, &poisoned::<u32>(blocks)).expect("maxes");
    let slots = DeviceBuffer::from_host(&stream, &[0u32; 16]).expect("slots");
    let total = DeviceBuffer::from_host(&stream, &[7u64]).expect("total");
    // SAFETY: every address is inside its buffer (x below n, 16 bins and slots, a max per
    // block, one total); 4 bytes of dynamic shared memory.
    unsafe {
        launch!(f<<<blocks as u32, 128, 4, stream>>>(&dx, &hist, &maxes, &slots, &total, n as u32))
    }
    .expect("launch");
    let mut want_hist = [0u32; 16];
    for v in &x {
        want_hist[(v & 15) as usize] += 1;
    }
    assert_same(
        "histogram",
        &hist.to_host_vec(&stream).expect("hist"),
        &want_hist,
    );
    let want_max: Vec<u32> = x
        .chunks(128)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    assert_same(
        "block maxima",
        &maxes.to_host_vec(&stream).expect("maxes"),
        &want_max,
    );
    assert_same(
        "total",
        &total.to_host_vec(&stream).expect("total"),
        &[7 + n as u64],
    );
    // Each slot holds the id (plus one) of one of the threads that mapped to it, or zero.
    let got = slots.to_host_vec(&stream).expect("slots");
    for (slot, &id) in got.iter().enumerate() {
        let claimants: Vec<u32> = (0..n as u32)
            .filter(|&i| x[i as usize] >> 28 == slot as u32)
            .collect();
        match id {
            0 => assert!(claimants.is_empty(), "slot {slot} unclaimed"),
            id => assert!(claimants.contains(&(id - 1)), "slot {slot} holds {id}"),
        }
    }
}

/// Whole-warp operations: a warp sum by `shfl.sync.down`, its broadcast by `idx`, an `up`
/// with its in-range predicate, a ballot, and `mov.b64` packing and unpacking.
const WARP_OPS: &str = r#"
.visible .entry warp_ops(.param .u64 x_ptr, .param .u64 out_ptr)
{
    .reg .pred %p<3>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [out_ptr];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    shfl.sync.down.b32 %r6, %r5, 16, 31, -1;
    add.s32 %r5, %r5, %r6;
    shfl.sync.down.b32 %r6, %r5, 8, 31, -1;
    add.s32 %r5, %r5, %r6;
    shfl.sync.down.b32 %r6, %r5, 4, 31, -1;
    add.s32 %r5, %r5, %r6;
    shfl.sync.down.b32 %r6, %r5, 2, 31, -1;
    add.s32 %r5, %r5, %r6;
    shfl.sync.down.b32 %r6, %r5, 1, 31, -1;
    add.s32 %r5, %r5, %r6;
    shfl.sync.idx.b32 %r7, %r5, 0, 31, 0xffffffff;
    shfl.sync.up.b32 %r8|%p1, %r4, 3, 0, -1;
    selp.u32 %r9, %r8, 12345, %p1;
    and.b32 %r10, %r4, 1;
    setp.ne.u32 %p2, %r10, 0;
    vote.sync.ballot.b32 %r11, %p2, -1;
    mov.b64 %rd5, {%r7, %r11};
    mov.b64 {%r12, %r13}, %rd5;
    xor.b32 %r14, %r12, %r13;
    mul.lo.s32 %r15, %r4, 12;
    cvt.u64.u32 %rd6, %r15;
    add.s64 %rd7, %rd2, %rd6;
    st.global.u32 [%rd7], %r7;
    st.global.u32 [%rd7+4], %r9;
    st.global.u32 [%rd7+8], %r14;
    ret;
}
"#;

#[test]
fn whole_warp_shuffles_votes_and_packed_moves() {
    let module = load(WARP_OPS);
    let f = module.get_function("warp_ops").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("whole_warp_shuffles_votes_and_packed_moves");
    let n = 64 * 5;
    let x: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
    let out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(3 * n)).expect("out");
    // SAFETY: n threads, each reading x[i] and writing out[3 i .. 3 i + 3].
    unsafe { launch!(f<<<(n / 64) as u32, 64, 0, stream>>>(&dx, &out)) }.expect("launch");
    let want: Vec<u32> = (0..n)
        .flat_map(|g| {
            let warp = &x[g / 32 * 32..g / 32 * 32 + 32];
            let sum = warp.iter().fold(0u32, |a, v| a.wrapping_add(*v));
            let up = if g % 32 >= 3 { (g - 3) as u32 } else { 12345 };
            [sum, up, sum ^ 0xAAAA_AAAA]
        })
        .collect();
    assert_same(
        "warp results",
        &out.to_host_vec(&stream).expect("out"),
        &want,
    );
}

/// A thread's own array (nvcc's stack for a dynamically indexed array, `.local`): eight
/// counters zeroed in a loop, bumped at indices computed from `x[i]`, read back as vectors.
const LOCAL_ARRAY: &str = r#"
.visible .entry local_counts(.param .u64 x_ptr, .param .u64 out_ptr, .param .u32 n)
{
    .local .align 16 .b8 depot[32];
    .reg .pred %p<4>;
    .reg .b32 %r<24>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [x_ptr];
    ld.param.u64 %rd2, [out_ptr];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra $DONE;
    mov.u64 %rd3, depot;
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
$ZERO:
    mul.wide.u32 %rd4, %r6, 4;
    add.s64 %rd5, %rd3, %rd4;
    st.local.u32 [%rd5], %r7;
    add.s32 %r6, %r6, 1;
    setp.lt.u32 %p2, %r6, 8;
    @%p2 bra $ZERO;
    mul.wide.u32 %rd6, %r5, 4;
    add.s64 %rd7, %rd1, %rd6;
    ld.global.u32 %r8, [%rd7];
    mov.u32 %r9, 0;
$COUNT:
    mul.lo.s32 %r10, %r9, 3;
    shr.u32 %r11, %r8, %r10;
    and.b32 %r12, %r11, 7;
    mul.wide.u32 %rd8, %r12, 4;
    add.s64 %rd9, %rd3, %rd8;
    ld.local.u32 %r13, [%rd9];
    add.s32 %r14, %r9, 1;
    add.s32 %r13, %r13, %r14;
    st.local.u32 [%rd9], %r13;
    mov.u32 %r9, %r14;
    setp.lt.u32 %p3, %r9, 6;
    @%p3 bra $COUNT;
    ld.local.v4.u32 {%r15, %r16, %r17, %r18}, [depot];
    ld.local.v4.u32 {%r19, %r20, %r21, %r22}, [depot+16];
    mul.wide.u32 %rd10, %r5, 32;
    add.s64 %rd11, %rd2, %rd10;
    st.global.v4.u32 [%rd11], {%r15, %r16, %r17, %r18};
    st.global.v4.u32 [%rd11+16], {%r19, %r20, %r21, %r22};
$DONE:
    ret;
}
"#;

#[test]
fn a_threads_own_local_array_indexed_at_run_time() {
    let module = load(LOCAL_ARRAY);
    let f = module.get_function("local_counts").expect("kernel");
    let stream = ctx().default_stream();
    let mut r = rng("a_threads_own_local_array_indexed_at_run_time");
    let n = 1500;
    let x: Vec<u32> = (0..n).map(|_| r.random()).collect();
    let dx = DeviceBuffer::from_host(&stream, &x).expect("x");
    let out = DeviceBuffer::from_host(&stream, &poisoned::<u32>(8 * n)).expect("out");
    // SAFETY: thread i < n reads x[i] and writes out[8 i .. 8 i + 8].
    unsafe { launch!(f<<<(n as u32).div_ceil(128), 128, 0, stream>>>(&dx, &out, n as u32)) }
        .expect("launch");
    let want: Vec<u32> = x
        .iter()
        .flat_map(|&v| {
            let mut counts = [0u32; 8];
            for j in 0..6 {
                counts[((v >> (3 * j)) & 7) as usize] += j + 1;
            }
            counts
        })
        .collect();
    assert_same(
        "local counts",
        &out.to_host_vec(&stream).expect("out"),
        &want,
    );
}

#[test]
fn what_the_importer_does_not_model_is_a_load_error_naming_the_line() {
    if ctx().backend() != BackendKind::Emulator {
        eprintln!("skipped: the driver compiles this PTX on a GPU");
        return;
    }
    for (ptx, line, what) in [
        (
            ".visible .entry k()\n{\n .reg .b32 %r<2>;\n shfl.sync.bfly.b32 %r1, %r0, 1, 15, -1;\n ret;\n}\n",
            7,
            "segments",
        ),
        (
            ".visible .entry k()\n{\n .local .align 4 .b8 stack[16];\n .reg .b64 %rd<3>;\n mov.u64 %rd1, stack;\n cvta.local.u64 %rd2, %rd1;\n ret;\n}\n",
            9,
            "only global addresses",
        ),
        (".func f()\n{\n ret;\n}\n", 4, ".func"),
        (
            ".visible .entry k(.param .u64 p)\n{\n .reg .f32 %f<2>;\n mul.rz.f32 %f1, %f0, %f0;\n ret;\n}\n",
            7,
            ".rz",
        ),
    ] {
        let full = format!("{HEADER}{ptx}");
        match Module::from_ptx(ctx(), &full) {
            Err(Error::ModuleLoad { message, .. }) => {
                assert!(
                    message.contains(&format!("line {line}")) && message.contains(what),
                    "{message}"
                );
            }
            other => panic!("{what}: expected a load error, got {other:?}"),
        }
    }
}
