//! Comparing two outcomes of one case, element by element over every tensor's whole
//! allocation (so an element written outside the view, or one left as poison, shows too).
//!
//! Integers and `bool` compare bit for bit. Floats compare bit for bit too, except that any
//! NaN equals any NaN (the IR leaves NaN payloads unspecified: the GPU's differ from the
//! CPU's) and, where a case states a [`Tolerance`] (transcendental functions, which the GPU
//! approximates), within that many units in the last place.

use std::fmt;

use cuprum_ir::ScalarType;

use crate::tensor::{Tensor, element_bits};
use crate::{ArgData, Case, Fault, Outcome};

/// How far apart two float results may be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tolerance {
    /// Bit for bit (NaN equals NaN).
    #[default]
    Exact,
    /// Within this many units in the last place of the element type (NaN equals NaN; an
    /// infinity counts as the float after the largest finite one, so an approximation that
    /// overflows an ulp early is an ulp off).
    Ulps(u32),
}

/// One element that differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// Its index in the allocation.
    pub index: u64,
    /// Its coordinate in the view, when the view reaches it.
    pub coord: Option<Vec<u64>>,
    /// The expected bits.
    pub want: u64,
    /// The bits found.
    pub got: u64,
}

/// Where two outcomes differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// One failed and the other did not, or they failed differently.
    Fault {
        /// The expected outcome's fault (`None`: it succeeded).
        want: Option<Fault>,
        /// The other's.
        got: Option<Fault>,
    },
    /// Tensor argument `param` differs.
    Data {
        /// Its parameter index.
        param: usize,
        /// Its name.
        name: String,
        /// Its element type.
        elem: ScalarType,
        /// How many elements differ.
        count: usize,
        /// The first few.
        first: Vec<Difference>,
    },
}

/// The value of `bits` of `ty` for people.
pub fn show(ty: ScalarType, bits: u64) -> String {
    let c = cuprum_ir::Constant::new(ty, bits);
    if ty.is_float() {
        format!("{c} ({bits:#x})")
    } else {
        c.to_string()
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Fault { want, got } => {
                let side = |x: &Option<Fault>| match x {
                    Some(f) => f.to_string(),
                    None => "success".to_string(),
                };
                write!(f, "expected {}, got {}", side(want), side(got))
            }
            Mismatch::Data {
                param,
                name,
                elem,
                count,
                first,
            } => {
                writeln!(
                    f,
                    "tensor `{name}` (parameter {param}, {elem}): {count} element(s) differ; the first:"
                )?;
                for d in first {
                    let at = match &d.coord {
                        Some(c) => format!("coordinate {c:?}"),
                        None => "outside the view".to_string(),
                    };
                    writeln!(
                        f,
                        "  element {} ({at}): expected {}, got {}",
                        d.index,
                        show(*elem, d.want),
                        show(*elem, d.got)
                    )?;
                }
                Ok(())
            }
        }
    }
}

/// Whether float bits `a` and `b` of `ty` agree within `tolerance`.
pub fn floats_agree(ty: ScalarType, a: u64, b: u64, tolerance: Tolerance) -> bool {
    if a == b {
        return true;
    }
    let bits = ty.bits();
    let sign = 1u64 << (bits - 1);
    let magnitude = sign - 1;
    let exp_mask = match ty {
        ScalarType::F16 => 0x7C00,
        ScalarType::BF16 => 0x7F80,
        ScalarType::F32 => 0x7F80_0000,
        _ => 0x7FF0_0000_0000_0000,
    };
    let is_nan = |x: u64| x & exp_mask == exp_mask && x & magnitude != exp_mask;
    if is_nan(a) && is_nan(b) {
        return true;
    }
    let Tolerance::Ulps(ulps) = tolerance else {
        return false;
    };
    if is_nan(a) || is_nan(b) {
        return false;
    }
    // Map to a line where adjacent floats are adjacent integers (both zeros at 0).
    let line = |x: u64| -> i128 {
        let m = i128::from(x & magnitude);
        if x & sign != 0 { -m } else { m }
    };
    (line(a) - line(b)).unsigned_abs() <= u128::from(ulps)
}

/// Compares `got` with `want`, the outcomes of `case` (see the module docs).
pub fn compare(case: &Case, want: &Outcome, got: &Outcome) -> Result<(), Mismatch> {
    let (w, g) = match (want, got) {
        (Ok(w), Ok(g)) => (w, g),
        (Err(Fault::Trap(a)), Err(Fault::Trap(b))) if a.matches(*b) => return Ok(()),
        _ => {
            return Err(Mismatch::Fault {
                want: want.as_ref().err().cloned(),
                got: got.as_ref().err().cloned(),
            });
        }
    };
    for (param, ((a, b), arg)) in w.iter().zip(g).zip(&case.args).enumerate() {
        let ArgData::Tensor(t) = arg else {
            continue;
        };
        if a == b {
            continue;
        }
        let differing = differing(t, a, b, case.tolerance);
        if differing.is_empty() && a.len() == b.len() {
            continue;
        }
        let first = differing
            .iter()
            .take(6)
            .map(|&i| Difference {
                index: i as u64,
                coord: t.coord_of(i as u64),
                want: element_bits(a, t.elem, i),
                got: element_bits(b, t.elem, i),
            })
            .collect();
        return Err(Mismatch::Data {
            param,
            name: case.kernel.params[param].name.clone(),
            elem: t.elem,
            count: differing.len().max(1),
            first,
        });
    }
    Ok(())
}

/// The indices of the elements of `t`'s allocation where `a` and `b` disagree.
fn differing(t: &Tensor, a: &[u8], b: &[u8], tolerance: Tolerance) -> Vec<usize> {
    let n = a.len().max(b.len()) / t.elem.size_bytes() as usize;
    (0..n)
        .filter(|&i| {
            let (x, y) = (element_bits(a, t.elem, i), element_bits(b, t.elem, i));
            if t.elem.is_float() {
                !floats_agree(t.elem, x, y, tolerance)
            } else {
                x != y
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{ViewKind, set_element};
    use crate::{CaseBuilder, TrapClass};
    use cuprum_tile_ir::{Literal, Op, Stmt, View};
    use cuprum_tile_lower::LowerOptions;
    use rand::SeedableRng;

    /// A case storing a constant to a `u16` output of `[3, 5]` in a view with gaps.
    fn case() -> Case {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let mut cb = CaseBuilder::new("k", 3, 0xA5);
        let o = cb.output(
            &mut rng,
            "o",
            ScalarType::U16,
            &[2, 4],
            &[3, 5],
            ViewKind::Injective,
        );
        let v = cb
            .def(Op::Load {
                view: View::Own { tensor: o },
                padding: Literal::Int(1),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        cb.b.push(Stmt::Store {
            tensor: o,
            value: v,
        });
        cb.finish(Tolerance::Exact, LowerOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_element_of_the_allocation_is_compared() {
        let case = case();
        let ArgData::Tensor(t) = &case.args[0] else {
            panic!("a tensor")
        };
        let want: Outcome = Ok(vec![t.bytes.clone()]);
        assert_eq!(compare(&case, &want, &want), Ok(()));
        // An element in the view, and one outside it (a gap or the padding at the end).
        let inside = t.address(&[2, 3]) as usize;
        let outside = (0..t.len() as usize)
            .find(|&i| t.coord_of(i as u64).is_none())
            .unwrap_or(t.len() as usize);
        for (index, coord) in [(inside, Some(vec![2, 3])), (outside, None)] {
            if index >= t.len() as usize {
                continue;
            }
            let mut bytes = t.bytes.clone();
            set_element(&mut bytes, ScalarType::U16, index, 7);
            match compare(&case, &want, &Ok(vec![bytes])) {
                Err(Mismatch::Data { count, first, .. }) => {
                    assert_eq!(count, 1);
                    assert_eq!(first[0].index, index as u64);
                    assert_eq!(first[0].coord, coord);
                    assert_eq!(first[0].got, 7);
                }
                other => panic!("{other:?}"),
            }
        }
        // Traps compare by class; a GPU's trap matches any.
        let trap = |c| -> Outcome { Err(Fault::Trap(c)) };
        assert!(compare(&case, &trap(TrapClass::Assert), &trap(TrapClass::Unknown)).is_ok());
        assert!(
            compare(
                &case,
                &trap(TrapClass::Assert),
                &trap(TrapClass::DivideByZero)
            )
            .is_err()
        );
        assert!(compare(&case, &want, &trap(TrapClass::Assert)).is_err());
    }

    #[test]
    fn floats_agree_on_nans_and_within_ulps() {
        let f = |x: f32| u64::from(x.to_bits());
        let t = ScalarType::F32;
        assert!(floats_agree(t, f(f32::NAN), 0xFFC0_0000, Tolerance::Exact));
        assert!(!floats_agree(t, f(0.0), f(-0.0), Tolerance::Exact));
        assert!(floats_agree(t, f(0.0), f(-0.0), Tolerance::Ulps(0)));
        let one = f(1.0);
        assert!(floats_agree(t, one, one + 2, Tolerance::Ulps(2)));
        assert!(!floats_agree(t, one, one + 3, Tolerance::Ulps(2)));
        assert!(!floats_agree(t, one, one + 1, Tolerance::Exact));
        assert!(floats_agree(
            t,
            f(f32::INFINITY),
            f(f32::MAX),
            Tolerance::Ulps(1)
        ));
        assert!(!floats_agree(
            t,
            f(f32::INFINITY),
            f(f32::MAX),
            Tolerance::Exact
        ));
        assert!(!floats_agree(
            t,
            f(f32::INFINITY),
            f(f32::NEG_INFINITY),
            Tolerance::Ulps(4)
        ));
        assert!(!floats_agree(t, f(f32::NAN), one, Tolerance::Ulps(4)));
        // Across zero: the smallest subnormals of both signs are two apart.
        assert!(floats_agree(t, 1, 0x8000_0001, Tolerance::Ulps(2)));
        let h = ScalarType::F16;
        assert!(floats_agree(h, 0x7E00, 0xFE01, Tolerance::Exact));
        assert!(!floats_agree(h, 0x7C00, 0x7BFE, Tolerance::Ulps(1)));
    }
}
