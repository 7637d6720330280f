//! What a launch is given and what it leaves: random arguments for a [`Program`]
//! ([`Inputs`]), and the final bytes of every buffer or the reason there are none
//! ([`Outcome`]), which is what every comparison compares.

use cuprum_ir::{Constant, ScalarType};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::program::{Param, Program, Role};
use crate::scalar;

use ScalarType as S;

/// The arguments of one launch, one entry per parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// The bits of each scalar parameter (0 for buffers).
    pub scalars: Vec<u64>,
    /// The initial bytes of each buffer parameter, little-endian elements (empty for
    /// scalars). Outputs are poisoned with a nonzero byte pattern.
    pub buffers: Vec<Vec<u8>>,
}

/// Why a launch left no buffers to compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A thread trapped (a failed check, or a division by zero).
    Trap(TrapClass),
    /// The program broke a rule the generator should have kept (a race, a shuffle from an
    /// inactive lane, an uninitialized read...), or a backend failed: a bug somewhere.
    Invalid(String),
}

/// The kinds of trap, as far as a host can tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapClass {
    /// A bounds check failed.
    Bounds,
    /// An integer division by zero (checked, or the operation itself).
    DivideByZero,
}

/// The final bytes of every parameter (empty for scalars), or why there are none.
pub type Outcome = Result<Vec<Vec<u8>>, Fault>;

/// Random bits of a float format with `exp` exponent and `man` mantissa bits, from every
/// class: zeros, infinities, NaNs, subnormals, values near one, small integers and halves,
/// ordinary numbers, and arbitrary bits.
fn float_bits(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    let (exp, man) = match ty {
        S::F16 => (5, 10),
        S::BF16 => (8, 7),
        S::F32 => (8, 23),
        _ => (11, 52),
    };
    let sign = u64::from(rng.random_bool(0.5)) << (exp + man);
    let all_exp = ((1u64 << exp) - 1) << man;
    let mantissa = |rng: &mut SmallRng| rng.random::<u64>() & ((1 << man) - 1);
    let from_f64 = |x: f64| scalar::cast(S::F64, ty, x.to_bits());
    match rng.random_range(0..20) {
        0 => sign,
        1 => sign | all_exp,
        2 => sign | all_exp | mantissa(rng).max(1),
        3 => sign | mantissa(rng).max(1),
        4 => scalar::canonical(ty, rng.random()),
        5 => {
            // Near one: exponent within a few binades of the bias.
            let bias = (1u64 << (exp - 1)) - 1;
            let e = bias + rng.random_range(0..4) - 2;
            sign | e << man | mantissa(rng)
        }
        6..=9 => from_f64(f64::from(rng.random_range(-8i32..9))),
        10..=11 => from_f64(f64::from(rng.random_range(-20i32..20)) + 0.5),
        _ => from_f64(rng.random_range(-1000.0..1000.0)),
    }
}

/// Random bits of type `ty`: integers mostly small or extreme, floats from every class.
pub fn random_bits(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    if ty == S::Bool {
        return rng.random_range(0..2);
    }
    if ty.is_float() {
        return float_bits(rng, ty);
    }
    let bits = match rng.random_range(0..12) {
        0 => 0,
        1 => 1,
        2 => u64::MAX,
        // The largest and smallest values of the type.
        3 => (1u64 << (ty.bits() - 1)) - u64::from(ty.is_signed_int()),
        4 => 1u64 << (ty.bits() - 1),
        5..=7 => rng.random_range(0..40),
        8 => rng.random_range(0..40u64).wrapping_neg(),
        _ => rng.random(),
    };
    Constant::new(ty, bits).bits
}

/// A finite float of magnitude in `[2^-60, 2^60]`, or zero.
pub fn moderate_float(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    if rng.random_range(0..8) == 0 {
        return 0;
    }
    let x = (1.0 + rng.random::<f64>()) * 2f64.powi(rng.random_range(-60..60));
    let x = if rng.random_bool(0.5) { -x } else { x };
    scalar::cast(S::F64, ty, x.to_bits())
}

/// A small integer in `[-16, 16]` as `ty` (exact in every float type).
pub fn small_int(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    let v = rng.random_range(-16i64..17);
    scalar::cast(S::I64, ty, v as u64)
}

fn push_elem(bytes: &mut Vec<u8>, ty: ScalarType, bits: u64) {
    bytes.extend_from_slice(&bits.to_le_bytes()[..ty.size_bytes() as usize]);
}

impl Inputs {
    /// Random arguments for `program` from `seed`.
    pub fn random(program: &Program, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed_1a7a_0000_0000);
        let poison = rng.random_range(1..=255u8);
        let mut scalars = Vec::with_capacity(program.params.len());
        let mut buffers = Vec::with_capacity(program.params.len());
        for (i, p) in program.params.iter().enumerate() {
            match *p {
                Param::Scalar(ty) => {
                    scalars.push(random_bits(&mut rng, ty));
                    buffers.push(Vec::new());
                }
                Param::Buffer { elem, role } => {
                    scalars.push(0);
                    let len = program.buffer_len(i as u32) as usize;
                    let mut bytes = Vec::with_capacity(len * elem.size_bytes() as usize);
                    for _ in 0..len {
                        let bits = match role {
                            Role::Input { .. } => random_bits(&mut rng, elem),
                            // A `bool` in memory is 0 or 1: its poison is 1.
                            Role::Output { .. } if elem == S::Bool => 1,
                            Role::Output { .. } => {
                                u64::from_le_bytes([poison; 8]) & (u64::MAX >> (64 - elem.bits()))
                            }
                            Role::Counters { .. } if elem.is_float() => small_int(&mut rng, elem),
                            Role::Private if elem.is_float() => moderate_float(&mut rng, elem),
                            Role::Counters { .. } | Role::Private => random_bits(&mut rng, elem),
                        };
                        push_elem(&mut bytes, elem, bits);
                    }
                    buffers.push(bytes);
                }
            }
        }
        Self { scalars, buffers }
    }
}
