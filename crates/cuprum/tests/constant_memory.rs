//! cuda-oxide's constant memory (issue 14): `#[constant] static NAME: ConstantMemory<T> =
//! ConstantMemory::UNINIT;` read in kernels with `get()` and `get_ref()`, set from the host
//! with the module's `set_<name>` / `set_<name>_blocking`. Scalars, arrays (destructured,
//! and tables indexed at run time), structs; a value that starts zeroed; sets ordered with
//! launches on one stream and across streams. Every kernel runs against plain Rust on fresh
//! random inputs, over outputs poisoned first.

mod common;

use common::{assert_same, ctx};
use cuprum::simt::{ConstantMemory, DisjointSlice, constant, cuda_module, kernel, thread};
use cuprum::{DeviceBuffer, DeviceCopy, LaunchConfig};
use cuprum_testkit::poison::poisoned;
use cuprum_testkit::random::{random, rng};

/// The table's length, a constant of the parent module.
const TABLE_LEN: usize = 64;

#[cuda_module]
mod kernels {
    use super::*;

    /// A struct as a constant's value.
    #[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
    #[repr(C)]
    pub struct Affine {
        pub scale: f32,
        pub shift: i32,
    }

    #[constant]
    static SCALE: ConstantMemory<f32> = ConstantMemory::UNINIT;

    #[constant]
    static COEFFS: ConstantMemory<[f32; 4]> = ConstantMemory::UNINIT;

    #[constant]
    static TABLE: ConstantMemory<[f32; TABLE_LEN]> = ConstantMemory::UNINIT;

    #[constant]
    static AFFINE: ConstantMemory<Affine> = ConstantMemory::UNINIT;

    #[constant]
    static NEVER_READ: ConstantMemory<u32> = ConstantMemory::UNINIT;

    #[kernel]
    pub fn multiply(x: &[f32], mut out: DisjointSlice<f32>) {
        let s = SCALE.get();
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(e) = out.get_mut(idx) {
            *e = x[i] * s;
        }
    }

    /// A polynomial with the coefficients taken apart, and again read in place.
    #[kernel]
    pub fn poly(x: &[f32], mut out: DisjointSlice<f32>) {
        let [c0, c1, c2, c3] = COEFFS.get();
        let c = COEFFS.get_ref();
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(e) = out.get_mut(idx) {
            let v = x[i];
            *e = c0 + c1 * v + c2 * v * v + c3 * v * v * v + c[1];
        }
    }

    /// A table indexed at run time, in place and through a copy (its length named as the
    /// parent's constant both ways).
    #[kernel]
    pub fn lookup(keys: &[u32], mut out: DisjointSlice<f32>) {
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(e) = out.get_mut(idx) {
            let k = keys[i] as usize;
            *e = TABLE.get_ref()[k % TABLE_LEN] - TABLE.get()[(k / 7) % super::TABLE_LEN];
        }
    }

    #[kernel]
    pub fn affine(x: &[f32], mut out: DisjointSlice<f32>) {
        let a = AFFINE.get();
        let idx = thread::index_1d();
        let i = idx.get();
        if let Some(e) = out.get_mut(idx) {
            *e = x[i] * a.scale + AFFINE.get_ref().shift as f32;
        }
    }
}

#[test]
fn scalars_are_set_per_launch_in_stream_order_and_start_zeroed() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("constant_scalars");
    let n = 1000;
    let x: Vec<f32> = random(&mut rng, n, -100.0, 100.0);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();
    let module = kernels::load(ctx).unwrap();
    let config = LaunchConfig::for_num_elems(n as u32);
    let run = |out: &mut DeviceBuffer<f32>| unsafe { module.multiply(&stream, config, &dx, out) };

    // Never set: zero, as CUDA's constant memory starts.
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    run(&mut out).unwrap();
    let zeros: Vec<f32> = x.iter().map(|v| v * 0.0).collect();
    assert_same("unset", &out.to_host_vec(&stream).unwrap(), &zeros);

    // Two sets, each followed by a launch on the same stream, before anything is read
    // back: each launch sees the value set before it.
    let (s1, s2): (f32, f32) = (random(&mut rng, 1, 0.5, 4.0)[0], -3.25);
    let mut out1 = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    let mut out2 = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    module.set_scale(&stream, &s1).unwrap();
    run(&mut out1).unwrap();
    module.set_scale(&stream, &s2).unwrap();
    run(&mut out2).unwrap();
    let want = |s: f32| x.iter().map(|v| v * s).collect::<Vec<f32>>();
    assert_same("first set", &out1.to_host_vec(&stream).unwrap(), &want(s1));
    assert_same("second set", &out2.to_host_vec(&stream).unwrap(), &want(s2));

    // Another stream: its set waits for the launch on the first that reads the old value.
    let other = ctx.new_stream().unwrap();
    let mut out3 = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    module.set_scale(&stream, &s1).unwrap();
    run(&mut out3).unwrap();
    module.set_scale(&other, &s2).unwrap();
    assert_same(
        "across streams",
        &out3.to_host_vec(&stream).unwrap(),
        &want(s1),
    );
    module.set_scale_blocking(&7.5).unwrap();
    let mut out4 = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    run(&mut out4).unwrap();
    assert_same(
        "blocking set",
        &out4.to_host_vec(&stream).unwrap(),
        &want(7.5),
    );

    // Each loaded module has its own constants.
    let fresh = kernels::load(ctx).unwrap();
    let mut out5 = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    unsafe { fresh.multiply(&stream, config, &dx, &mut out5) }.unwrap();
    assert_same(
        "another module",
        &out5.to_host_vec(&stream).unwrap(),
        &zeros,
    );
}

#[test]
fn arrays_tables_and_structs_as_constants() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut rng = rng("constant_aggregates");
    let n = 777;
    let config = LaunchConfig::for_num_elems(n as u32);
    let module = kernels::load(ctx).unwrap();
    let x: Vec<f32> = random(&mut rng, n, -2.0, 2.0);
    let dx = DeviceBuffer::from_host(&stream, &x).unwrap();

    let c: Vec<f32> = random(&mut rng, 4, -1.0, 1.0);
    let coeffs = [c[0], c[1], c[2], c[3]];
    module.set_coeffs(&stream, &coeffs).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    unsafe { module.poly(&stream, config, &dx, &mut out) }.unwrap();
    let want: Vec<f32> = x
        .iter()
        .map(|&v| c[0] + c[1] * v + c[2] * v * v + c[3] * v * v * v + c[1])
        .collect();
    assert_same("poly", &out.to_host_vec(&stream).unwrap(), &want);

    let t: Vec<f32> = random(&mut rng, TABLE_LEN, -50.0, 50.0);
    let mut table = [0.0f32; TABLE_LEN];
    table.copy_from_slice(&t);
    module.set_table(&stream, &table).unwrap();
    let keys: Vec<u32> = random(&mut rng, n, 0, 100_000);
    let dkeys = DeviceBuffer::from_host(&stream, &keys).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    unsafe { module.lookup(&stream, config, &dkeys, &mut out) }.unwrap();
    let want: Vec<f32> = keys
        .iter()
        .map(|&k| {
            let k = k as usize;
            table[k % TABLE_LEN] - table[(k / 7) % TABLE_LEN]
        })
        .collect();
    assert_same("lookup", &out.to_host_vec(&stream).unwrap(), &want);

    let a = kernels::Affine {
        scale: random(&mut rng, 1, -3.0, 3.0)[0],
        shift: random(&mut rng, 1, -1000, 1000)[0],
    };
    module.set_affine(&stream, &a).unwrap();
    let mut out = DeviceBuffer::from_host(&stream, &poisoned::<f32>(n)).unwrap();
    unsafe { module.affine(&stream, config, &dx, &mut out) }.unwrap();
    let want: Vec<f32> = x.iter().map(|&v| v * a.scale + a.shift as f32).collect();
    assert_same("affine", &out.to_host_vec(&stream).unwrap(), &want);
    // A constant no kernel reads can still be set.
    module.set_never_read(&stream, &7).unwrap();
}
