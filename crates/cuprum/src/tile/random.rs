//! Seeded random tensors for `api::rand` and `api::randn`: a counter-based generator,
//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011),
//! written as tile kernels of our own, so that it runs wherever tile kernels run (the GPU
//! and the emulator) and needs no cuRAND.
//!
//! Element `i` of a tensor of `n` elements is made from the Philox block of counter
//! `(i, 0, 0, 0)` under the key `(seed as u32, (seed >> 32) as u32)`: the same seed gives
//! the same tensor on every run, whatever the launch's tiling, and tensors of different
//! lengths with one seed share their common prefix. From the block's four 32-bit words:
//!
//! * uniform `f32`: `(w0 >> 8) * 2^-24`, in `[0, 1)` (no 16-bit uniform: rounding would
//!   reach 1);
//! * uniform `f64`: the 53 bits `(w0 << 21) | (w1 >> 11)` times `2^-53`, in `[0, 1)`;
//! * normal: Box–Muller, `sqrt(-2 ln u1) * cos(2 pi u2)` with `u1 = ((w0 >> 8) + 1) * 2^-24`
//!   in `(0, 1]` and `u2 = (w1 >> 8) * 2^-24`, computed in `f32` (the GPU has `ln` and `cos`
//!   for `f32` only) and then scaled by `std` and shifted by `mean` (in `f32` for `f32`,
//!   `f16` and `bf16`, rounded once at the end; in `f64` for `f64`).
//!
//! The logarithm and cosine are approximate on the GPU (see the kernel IR's `UnaryOp`), so
//! normal samples may differ between the GPU and the emulator in the last bits; uniform
//! samples are exact integer arithmetic and agree bit for bit.

use std::sync::atomic::{AtomicU64, Ordering};

use half::{bf16, f16};

use crate::tile::cuda_core::DType;
use crate::tile::op::{BoxedDeviceOp, DeviceOp, Unzippable3, Unzippable5, from_context};
use crate::tile::tensor::{IntoPartition, Reshape, Tensor, Unpartition};

#[cuprum::tile::module]
mod philox {
    use cuprum::tile::core::*;

    /// Philox4x32's multipliers (as 64-bit factors, for the high halves of the products).
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    /// The Weyl sequence the key advances by after each round.
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    /// `2^-24` and `2^-53`: a 24-bit or 53-bit integer times this is a float in `[0, 1)`.
    const F32_UNIT: f32 = 5.960_464_5e-8;
    const F64_UNIT: f64 = 1.110_223_024_625_156_5e-16;
    /// `2 pi`, rounded to `f32`.
    const TWO_PI: f32 = 6.2831855;

    /// The high 32 bits of `c * m`.
    fn mul_hi<const S: [i32; 1]>(c: Tile<u32, S>, m: u64) -> Tile<u32, S> {
        let wide: Tile<u64, S> = convert_tile(c);
        let high: Tile<u64, S> = (wide * m) >> 32;
        let h: Tile<u32, S> = convert_tile(high);
        h
    }

    /// Word `word` (0 to 3) of the Philox4x32-10 block of counter `(counter, 0, 0, 0)` under
    /// the key `(k0, k1)`.
    fn philox_word<const S: [i32; 1]>(
        counter: Tile<u32, S>,
        k0: u32,
        k1: u32,
        word: i32,
    ) -> Tile<u32, S> {
        let zero: Tile<u32, S> = constant(0u32, counter.shape());
        let mut c0 = counter;
        let mut c1 = zero;
        let mut c2 = zero;
        let mut c3 = zero;
        let mut key0 = k0;
        let mut key1 = k1;
        for _round in 0i32..10i32 {
            let hi0 = mul_hi(c0, M0);
            let lo0 = c0 * (M0 as u32);
            let hi1 = mul_hi(c2, M1);
            let lo1 = c2 * (M1 as u32);
            let next0 = hi1 ^ c1 ^ key0;
            let next2 = hi0 ^ c3 ^ key1;
            c0 = next0;
            c1 = lo1;
            c2 = next2;
            c3 = lo0;
            key0 = key0 + W0;
            key1 = key1 + W1;
        }
        if word == 0 {
            c0
        } else if word == 1 {
            c1
        } else if word == 2 {
            c2
        } else {
            c3
        }
    }

    /// The Philox counters of this block's tile: the elements' positions in the tensor.
    fn counters<const S: [i32; 1]>(shape: Shape<S>) -> Tile<u32, S> {
        let pid: (i32, i32, i32) = get_tile_block_id();
        let lanes: Tile<i32, S> = iota(shape);
        let first: i32 = pid.0 * S[0];
        let c: Tile<u32, S> = convert_tile(lanes + first);
        c
    }

    /// A uniform `f32` in `[0, 1)` from a word.
    fn unit_f32<const S: [i32; 1]>(w: Tile<u32, S>) -> Tile<f32, S> {
        let bits: Tile<u32, S> = w >> 8;
        let f: Tile<f32, S> = convert_tile(bits);
        f * F32_UNIT
    }

    /// A standard normal `f32` from two words (Box–Muller).
    fn normal_f32<const S: [i32; 1]>(w0: Tile<u32, S>, w1: Tile<u32, S>) -> Tile<f32, S> {
        let low: Tile<u32, S> = w0 >> 8;
        let u1: Tile<f32, S> = convert_tile(low + 1u32);
        let u1 = u1 * F32_UNIT;
        let u2 = unit_f32(w1);
        let r = sqrt(log(u1) * -2.0f32);
        r * cos(u2 * TWO_PI)
    }

    /// Uniform samples in `[0, 1)`, computed in `f32` and converted to `T`.
    #[cuprum::tile::entry()]
    fn uniform<const B: i32, T: ElementType>(out: &mut Tensor<T, { [B] }>, k0: u32, k1: u32) {
        let c = counters(out.shape());
        let u = unit_f32(philox_word(c, k0, k1, 0));
        out.store(convert_tile(u));
    }

    /// Uniform `f64` samples in `[0, 1)`, with 53 random bits each.
    #[cuprum::tile::entry()]
    fn uniform_f64<const B: i32>(out: &mut Tensor<f64, { [B] }>, k0: u32, k1: u32) {
        let c = counters(out.shape());
        let high: Tile<u64, { [B] }> = convert_tile(philox_word(c, k0, k1, 0));
        let low: Tile<u64, { [B] }> = convert_tile(philox_word(c, k0, k1, 1));
        let bits: Tile<u64, { [B] }> = (high << 21) | (low >> 11);
        let f: Tile<f64, { [B] }> = convert_tile(bits);
        out.store(f * F64_UNIT);
    }

    /// Normal samples of mean `mean` and standard deviation `std`, computed in `f32` and
    /// converted to `T`.
    #[cuprum::tile::entry()]
    fn normal<const B: i32, T: ElementType>(
        out: &mut Tensor<T, { [B] }>,
        k0: u32,
        k1: u32,
        mean: f32,
        std: f32,
    ) {
        let c = counters(out.shape());
        let z = normal_f32(philox_word(c, k0, k1, 0), philox_word(c, k0, k1, 1));
        out.store(convert_tile(z * std + mean));
    }

    /// Normal `f64` samples of mean `mean` and standard deviation `std` (the standard normal
    /// computed in `f32`, scaled and shifted in `f64`).
    #[cuprum::tile::entry()]
    fn normal_f64<const B: i32>(
        out: &mut Tensor<f64, { [B] }>,
        k0: u32,
        k1: u32,
        mean: f64,
        std: f64,
    ) {
        let c = counters(out.shape());
        let z = normal_f32(philox_word(c, k0, k1, 0), philox_word(c, k0, k1, 1));
        let z: Tile<f64, { [B] }> = convert_tile(z);
        out.store(z * std + mean);
    }
}

/// Elements per tile block of the generator's launches.
const BLOCK: usize = 1024;

/// The Philox key of `seed`; without one, a seed of its own from the clock and a counter
/// (different in every call).
fn key(seed: Option<u64>) -> (u32, u32) {
    let seed = seed.unwrap_or_else(|| {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        nanos ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    });
    (seed as u32, (seed >> 32) as u32)
}

/// A launch of the generator filling a rank-1 tensor of `len` elements.
type Fill<T> = fn(Tensor<T>, (u32, u32)) -> BoxedDeviceOp<Tensor<T>>;

/// A tensor of `shape` filled by `fill` (nothing to launch when it is empty).
fn generated<T, F, const RANK: usize>(
    shape: [usize; RANK],
    seed: Option<u64>,
    fill: F,
) -> impl DeviceOp<Output = Tensor<T>> + use<T, F, RANK>
where
    T: DType,
    F: FnOnce(Tensor<T>, (u32, u32)) -> BoxedDeviceOp<Tensor<T>> + Send + 'static,
{
    let key = key(seed);
    from_context(move |ctx| {
        let len = Tensor::<T>::checked_count(&shape)?;
        let flat = Tensor::<T>::zeroed(ctx.stream(), vec![len])?;
        let filled = if len == 0 {
            flat
        } else {
            // SAFETY: the fill is kernel launches on the stream; their output is a device
            // tensor, whose later uses the runtime orders after them.
            unsafe { fill(flat, key).execute(ctx) }?
        };
        filled.reshape(&shape)
    })
}

/// Element types `api::rand` makes: uniform samples in `[0, 1)`.
pub trait RandUniform: DType {
    /// The launch filling `t` with uniform samples under `key`.
    #[doc(hidden)]
    fn uniform_fill() -> Fill<Self>;
}

/// Element types `api::randn` makes: normal samples.
pub trait RandNormal: DType {
    /// The launch filling `t` with normal samples of `mean` and `std` under `key`.
    #[doc(hidden)]
    fn normal_fill(mean: Self, std: Self) -> NormalFill<Self>;
}

/// A launch of the normal generator, its mean and deviation bound.
#[doc(hidden)]
pub type NormalFill<T> =
    Box<dyn FnOnce(Tensor<T>, (u32, u32)) -> BoxedDeviceOp<Tensor<T>> + Send + 'static>;

impl RandUniform for f32 {
    fn uniform_fill() -> Fill<Self> {
        |t, (k0, k1)| {
            philox::uniform(t.partition([BLOCK]), k0, k1)
                .first()
                .unpartition()
                .boxed()
        }
    }
}

macro_rules! normal_in_f32 {
    ($($t:ty => $to_f32:expr;)*) => { $(
        impl RandNormal for $t {
            fn normal_fill(mean: Self, std: Self) -> NormalFill<Self> {
                let to_f32 = $to_f32;
                let (mean, std) = (to_f32(mean), to_f32(std));
                Box::new(move |t, (k0, k1)| {
                    philox::normal(t.partition([BLOCK]), k0, k1, mean, std)
                        .first()
                        .unpartition()
                        .boxed()
                })
            }
        }
    )* };
}

normal_in_f32! {
    f32 => |v: f32| v;
    f16 => |v: f16| v.to_f32();
    bf16 => |v: bf16| v.to_f32();
}

impl RandUniform for f64 {
    fn uniform_fill() -> Fill<Self> {
        |t, (k0, k1)| {
            philox::uniform_f64(t.partition([BLOCK]), k0, k1)
                .first()
                .unpartition()
                .boxed()
        }
    }
}

impl RandNormal for f64 {
    fn normal_fill(mean: Self, std: Self) -> NormalFill<Self> {
        Box::new(move |t, (k0, k1)| {
            philox::normal_f64(t.partition([BLOCK]), k0, k1, mean, std)
                .first()
                .unpartition()
                .boxed()
        })
    }
}

/// See `api::rand`.
pub(crate) fn rand<T: RandUniform, const RANK: usize>(
    shape: [usize; RANK],
    seed: Option<u64>,
) -> impl DeviceOp<Output = Tensor<T>> + use<T, RANK> {
    generated(shape, seed, T::uniform_fill())
}

/// See `api::randn`.
pub(crate) fn randn<T: RandNormal, const RANK: usize>(
    mean: T,
    std: T,
    shape: [usize; RANK],
    seed: Option<u64>,
) -> impl DeviceOp<Output = Tensor<T>> + use<T, RANK> {
    generated(shape, seed, T::normal_fill(mean, std))
}
