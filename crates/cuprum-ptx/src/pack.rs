//! Two 16-bit floats packed into one 32-bit word, as the IR spells it (tensor-core fragments,
//! `f16x2` arithmetic): each half's bits zero-extended (`bitcast` to `u16`, `cast` to `u32`),
//! the second shifted left by 16, the two or-ed. Written as PTX's vector move
//! `mov.b32 d, {lo, hi}` instead of the four instructions, so that ptxas sees the pair: where
//! the halves are conversions from `f32` (attention's probabilities, a GEMM's epilogue) it
//! makes them one `F2FP.PACK_AB` rather than two conversions, a shift and an or.

use std::collections::HashMap;

use cuprum_ir::{BinaryOp, Constant, Kernel, Op, ScalarType, Stmt, Value};

/// The `U32`/`I32` values of `kernel` that are a pair of 16-bit floats packed as the module
/// docs say, each with its low and high half (the `F16`/`BF16` values).
pub(crate) fn half_pairs(kernel: &Kernel) -> HashMap<Value, (Value, Value)> {
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    kernel.body.visit(&mut |s| {
        if let Stmt::Def { value, op } = s
            && matches!(
                op,
                Op::Cast { .. } | Op::Bitcast { .. } | Op::Const(_) | Op::Binary(..)
            )
        {
            defs.insert(*value, op);
        }
    });
    let ty = |v: Value| kernel.values[v].ty;
    let word = |t: ScalarType| matches!(t, ScalarType::U32 | ScalarType::I32);
    // The half whose bits `v` is, zero-extended to a word.
    let widened_half = |v: Value| -> Option<Value> {
        let Op::Cast { value: bits, to } = defs.get(&v)? else {
            return None;
        };
        if !word(*to) || ty(*bits) != ScalarType::U16 {
            return None;
        }
        let Op::Bitcast { value: half, .. } = defs.get(bits)? else {
            return None;
        };
        matches!(ty(*half), ScalarType::F16 | ScalarType::BF16).then_some(*half)
    };
    let sixteen = |v: Value| {
        matches!(defs.get(&v), Some(Op::Const(c))
            if *c == Constant::u32(16) || *c == Constant::i32(16))
    };
    // The half `v` is, shifted into the high 16 bits of a word.
    let raised_half = |v: Value| -> Option<Value> {
        match defs.get(&v)? {
            Op::Binary(BinaryOp::Shl, x, k) if sixteen(*k) => widened_half(*x),
            _ => None,
        }
    };
    let mut pairs = HashMap::new();
    for (&v, op) in &defs {
        let Op::Binary(BinaryOp::Or, l, r) = op else {
            continue;
        };
        if !word(ty(v)) {
            continue;
        }
        let pair = match (widened_half(*l), raised_half(*r)) {
            (Some(lo), Some(hi)) => Some((lo, hi)),
            _ => match (widened_half(*r), raised_half(*l)) {
                (Some(lo), Some(hi)) => Some((lo, hi)),
                _ => None,
            },
        };
        if let Some(pair) = pair {
            pairs.insert(v, pair);
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use cuprum_ir::{KernelBuilder, ParamKind};

    use super::*;

    /// A kernel packing two scalar parameters of type `half` as the IR does, the high one
    /// shifted by `shift`, the or's first operand the widened low half when `low_first`
    /// (16-bit floats reach `u16` by a bitcast, integers are widened as they are); the
    /// packed word and the two halves.
    fn packing(half: ScalarType, shift: u32, low_first: bool) -> (Kernel, Value, [Value; 2]) {
        let mut b = KernelBuilder::new("pack");
        let mut halves = [None, None];
        let mut words = Vec::new();
        for (i, name) in ["lo", "hi"].into_iter().enumerate() {
            let p = b.param(name, ParamKind::Scalar(half));
            let h = b.def(Op::Param(p)).expect("a parameter");
            halves[i] = Some(h);
            let bits = if half.size_bytes() == 2 && half.is_float() {
                b.def(Op::Bitcast {
                    value: h,
                    to: ScalarType::U16,
                })
                .expect("a bitcast")
            } else {
                h
            };
            words.push(
                b.def(Op::Cast {
                    value: bits,
                    to: ScalarType::U32,
                })
                .expect("a cast"),
            );
        }
        let k = b.def(Op::Const(Constant::u32(shift))).expect("a constant");
        let raised = b
            .def(Op::Binary(BinaryOp::Shl, words[1], k))
            .expect("a shift");
        let (l, r) = if low_first {
            (words[0], raised)
        } else {
            (raised, words[0])
        };
        let word = b.def(Op::Binary(BinaryOp::Or, l, r)).expect("an or");
        let halves = halves.map(|h| h.expect("both halves"));
        (b.finish(), word, halves)
    }

    #[test]
    fn float_halves_packed_either_way_round_are_found() {
        for half in [ScalarType::F16, ScalarType::BF16] {
            for low_first in [true, false] {
                let (kernel, word, [lo, hi]) = packing(half, 16, low_first);
                assert_eq!(
                    half_pairs(&kernel).get(&word),
                    Some(&(lo, hi)),
                    "{half} {low_first}"
                );
            }
        }
    }

    #[test]
    fn other_shifts_and_integer_halves_are_not_pairs() {
        let (kernel, _, _) = packing(ScalarType::F16, 8, true);
        assert!(half_pairs(&kernel).is_empty());
        let (kernel, _, _) = packing(ScalarType::U16, 16, true);
        assert!(half_pairs(&kernel).is_empty());
    }
}
