//! Checks the PTX text [`super::Ptx`] writes against the host model: a small interpreter of
//! exactly the instructions the math sequences use (with PTX's semantics: `.rn` arithmetic,
//! `selp`'s operand order, `copysign`'s, clamped shifts, saturating conversions, branches)
//! runs the written kernel for an input, and its result must be the model's, bit for bit.
//! So a slip between the two implementations of [`super::Arith`] (an operand order, an
//! opcode, a branch) shows up without a GPU.

use std::collections::HashMap;

use cuprum_ir::{BinaryOp, KernelBuilder, Module, Op, ParamKind, ScalarType, UnaryOp, Value};

use super::Table;
use super::model::{Model, samples};
use crate::{Target, write_module};

/// Registers by name, as bits; predicates as 0 or 1.
struct Machine {
    regs: HashMap<String, u64>,
}

fn f64_imm(s: &str) -> Option<u64> {
    s.strip_prefix("0d")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
}

fn f32_imm(s: &str) -> Option<u64> {
    s.strip_prefix("0f")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
}

impl Machine {
    fn get(&self, op: &str) -> u64 {
        if let Some(b) = f64_imm(op).or_else(|| f32_imm(op)) {
            return b;
        }
        if let Some(h) = op.strip_prefix("0x") {
            return u64::from_str_radix(h, 16).unwrap_or_else(|_| panic!("hex {op}"));
        }
        if let Ok(v) = op.parse::<i64>() {
            return v as u64;
        }
        if let Some(i) = Table::ALL.iter().position(|t| t.symbol() == op) {
            return (i as u64 + 1) << 40;
        }
        *self
            .regs
            .get(op)
            .unwrap_or_else(|| panic!("register {op} read before written"))
    }
    fn f(&self, op: &str) -> f64 {
        f64::from_bits(self.get(op))
    }
    fn f32(&self, op: &str) -> f32 {
        f32::from_bits(self.get(op) as u32)
    }
    fn set(&mut self, d: &str, v: u64) {
        self.regs.insert(d.to_string(), v);
    }
    fn setf(&mut self, d: &str, v: f64) {
        self.set(d, v.to_bits());
    }
}

/// Runs the body of the only entry in `ptx` with `inputs` as its parameters' bits; returns
/// the machine when it reaches `ret` or the end.
fn run(ptx: &str, inputs: &[u64]) -> Machine {
    let body: Vec<&str> = ptx
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with(".visible .entry") && !l.starts_with(".entry"))
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('.'))
        .filter(|l| *l != "{" && *l != "}" && *l != ")" && !l.starts_with('('))
        .collect();
    let labels: HashMap<&str, usize> = body
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.strip_suffix(':').map(|n| (n, i)))
        .collect();
    let mut m = Machine {
        regs: HashMap::new(),
    };
    let mut pc = 0;
    let mut steps = 0;
    while pc < body.len() {
        steps += 1;
        assert!(steps < 100_000, "runaway");
        let line = body[pc];
        pc += 1;
        if line.ends_with(':') {
            continue;
        }
        let line = line.trim_end_matches(';');
        let (guard, line) = match line.strip_prefix('@') {
            Some(rest) => {
                let (g, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                (Some(g), rest.trim())
            }
            None => (None, line),
        };
        if let Some(g) = guard {
            let (neg, r) = g.strip_prefix('!').map_or((false, g), |r| (true, r));
            if (m.get(r) != 0) == neg {
                continue;
            }
        }
        let (opc, rest) = line.split_once(' ').unwrap_or((line, ""));
        let ops: Vec<&str> = rest
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let d = ops.first().copied().unwrap_or("");
        let a = |i: usize| ops[i];
        match opc {
            "ret" => break,
            "bra" | "bra.uni" => pc = labels[d],
            "ld.param.f64" | "ld.param.f32" => {
                let idx: usize = a(1)
                    .trim_matches(|c| c == '[' || c == ']')
                    .rsplit('_')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                m.set(d, inputs[idx]);
            }
            "mov.f64" | "mov.b64" | "mov.u64" | "mov.f32" | "mov.b32" | "mov.pred" => {
                let v = m.get(a(1));
                m.set(d, v);
            }
            "add.rn.f64" => m.setf(d, m.f(a(1)) + m.f(a(2))),
            "sub.rn.f64" => m.setf(d, m.f(a(1)) - m.f(a(2))),
            "mul.rn.f64" => m.setf(d, m.f(a(1)) * m.f(a(2))),
            "div.rn.f64" => m.setf(d, m.f(a(1)) / m.f(a(2))),
            "min.f64" => m.setf(d, m.f(a(1)).min(m.f(a(2)))),
            "max.f64" => m.setf(d, m.f(a(1)).max(m.f(a(2)))),
            "fma.rn.f64" => m.setf(d, m.f(a(1)).mul_add(m.f(a(2)), m.f(a(3)))),
            "neg.f64" => m.setf(d, -m.f(a(1))),
            "abs.f64" => m.setf(d, m.f(a(1)).abs()),
            "sqrt.rn.f64" => m.setf(d, m.f(a(1)).sqrt()),
            "cvt.rni.f64.f64" => m.setf(d, m.f(a(1)).round_ties_even()),
            // d = |b| with the sign of a.
            "copysign.f64" => m.setf(d, m.f(a(2)).copysign(m.f(a(1)))),
            "setp.lt.f64" => m.set(d, u64::from(m.f(a(1)) < m.f(a(2)))),
            "setp.gt.f64" => m.set(d, u64::from(m.f(a(1)) > m.f(a(2)))),
            "setp.ge.f64" => m.set(d, u64::from(m.f(a(1)) >= m.f(a(2)))),
            "setp.eq.f64" => m.set(d, u64::from(m.f(a(1)) == m.f(a(2)))),
            "setp.nan.f64" => m.set(d, u64::from(m.f(a(1)).is_nan() || m.f(a(2)).is_nan())),
            "setp.eq.s64" => m.set(d, u64::from(m.get(a(1)) == m.get(a(2)))),
            "setp.lt.s64" => m.set(d, u64::from((m.get(a(1)) as i64) < (m.get(a(2)) as i64))),
            "setp.lt.u64" => m.set(d, u64::from(m.get(a(1)) < m.get(a(2)))),
            // d = p ? a : b.
            "selp.f64" | "selp.b64" => {
                let v = if m.get(a(3)) != 0 {
                    m.get(a(1))
                } else {
                    m.get(a(2))
                };
                m.set(d, v);
            }
            "and.pred" => m.set(d, m.get(a(1)) & m.get(a(2))),
            "or.pred" => m.set(d, m.get(a(1)) | m.get(a(2))),
            "xor.pred" => m.set(d, m.get(a(1)) ^ m.get(a(2))),
            "add.s64" => m.set(d, m.get(a(1)).wrapping_add(m.get(a(2)))),
            "sub.s64" => m.set(d, m.get(a(1)).wrapping_sub(m.get(a(2)))),
            "and.b64" => m.set(d, m.get(a(1)) & m.get(a(2))),
            "or.b64" => m.set(d, m.get(a(1)) | m.get(a(2))),
            "mul.lo.u64" => m.set(d, m.get(a(1)).wrapping_mul(m.get(a(2)))),
            "mul.hi.u64" => {
                let p = u128::from(m.get(a(1))) * u128::from(m.get(a(2)));
                m.set(d, (p >> 64) as u64);
            }
            "shl.b64" | "shr.u64" | "shr.s64" => {
                let s = (m.get(a(2)) as u32).min(64);
                let x = m.get(a(1));
                let v = match opc {
                    "shl.b64" => x.checked_shl(s).unwrap_or(0),
                    "shr.u64" => x.checked_shr(s).unwrap_or(0),
                    _ => ((x as i64) >> s.min(63)) as u64,
                };
                m.set(d, v);
            }
            "cvt.u32.u64" => m.set(d, m.get(a(1)) & 0xFFFF_FFFF),
            "cvt.u64.u32" => m.set(d, m.get(a(1)) & 0xFFFF_FFFF),
            "clz.b64" => m.set(d, u64::from(m.get(a(1)).leading_zeros())),
            "cvt.rn.f64.s64" => m.setf(d, m.get(a(1)) as i64 as f64),
            "cvt.rn.f64.u64" => m.setf(d, m.get(a(1)) as f64),
            "cvt.rzi.s64.f64" => m.set(d, m.f(a(1)) as i64 as u64),
            "cvt.f64.f32" => m.setf(d, f64::from(m.f32(a(1)))),
            "cvt.rn.f32.f64" => m.set(d, u64::from((m.f(a(1)) as f32).to_bits())),
            "ld.const.u64" => {
                let addr = m.get(a(1).trim_matches(|c| c == '[' || c == ']'));
                let table = Table::ALL[((addr >> 40) - 1) as usize];
                let word = ((addr & ((1 << 40) - 1)) / 8) as usize;
                m.set(d, table.words()[word]);
            }
            other => panic!("the checker does not know `{other}` ({line})"),
        }
    }
    m
}

/// A kernel with scalar parameters of `tys` and one operation of them, made by `op`.
fn kernel(tys: &[ScalarType], op: impl Fn(&[Value]) -> Op) -> Module {
    let mut b = KernelBuilder::new("f");
    let args: Vec<Value> = tys
        .iter()
        .enumerate()
        .map(|(i, &ty)| {
            let p = b.param(format!("p{i}"), ParamKind::Scalar(ty));
            b.def(Op::Param(p)).expect("a parameter")
        })
        .collect();
    b.def(op(&args)).expect("the operation");
    Module {
        kernels: vec![b.finish()],
    }
}

/// The register of the last value: the operation's result (values are numbered in order,
/// one register class each).
fn result(m: &Machine, ty: ScalarType, params: usize) -> u64 {
    let prefix = if ty == ScalarType::F64 { "%fd" } else { "%f" };
    m.get(&format!("{prefix}{params}"))
}

fn same(a: u64, b: u64, ty: ScalarType) -> bool {
    if ty == ScalarType::F64 {
        a == b || (f64::from_bits(a).is_nan() && f64::from_bits(b).is_nan())
    } else {
        let (a, b) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }
}

const UNARY: [UnaryOp; 16] = [
    UnaryOp::Exp,
    UnaryOp::Exp2,
    UnaryOp::ExpM1,
    UnaryOp::Ln,
    UnaryOp::Log2,
    UnaryOp::Ln1p,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tan,
    UnaryOp::Atan,
    UnaryOp::Sinh,
    UnaryOp::Cosh,
    UnaryOp::Tanh,
    UnaryOp::Asinh,
    UnaryOp::Acosh,
    UnaryOp::Atanh,
];

fn inputs() -> Vec<f64> {
    let mut v = samples(-f64::MAX, f64::MAX, 300);
    v.extend(samples(-3.0, 3.0, 100));
    v.extend([
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
        1e10,
    ]);
    v
}

#[test]
fn written_ptx_computes_what_the_model_computes() {
    let xs = inputs();
    for u in UNARY {
        let ptx = write_module(
            &kernel(&[ScalarType::F64], |a| Op::Unary(u, a[0])),
            Target::Sm90,
        )
        .expect("PTX");
        for &x in &xs {
            let got = result(&run(&ptx, &[x.to_bits()]), ScalarType::F64, 1);
            let want = super::unary(&mut Model::default(), u, x).expect("an f64 function");
            assert!(
                same(got, want.to_bits(), ScalarType::F64),
                "{u:?}({x:e}): PTX {:e}, model {want:e}",
                f64::from_bits(got)
            );
        }
        if matches!(
            u,
            UnaryOp::Exp
                | UnaryOp::Exp2
                | UnaryOp::Ln
                | UnaryOp::Log2
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Tanh
        ) {
            continue;
        }
        // The f32 function: widened, the f64 sequence, rounded once.
        let ptx = write_module(
            &kernel(&[ScalarType::F32], |a| Op::Unary(u, a[0])),
            Target::Sm90,
        )
        .expect("PTX");
        for &x in xs.iter().step_by(7) {
            let x = x as f32;
            let got = result(&run(&ptx, &[u64::from(x.to_bits())]), ScalarType::F32, 1);
            let want = super::unary(&mut Model::default(), u, f64::from(x))
                .expect("an f64 function") as f32;
            assert!(
                same(got, u64::from(want.to_bits()), ScalarType::F32),
                "{u:?}({x:e}) f32: PTX {:e}, model {want:e}",
                f32::from_bits(got as u32)
            );
        }
    }
    for op in [BinaryOp::Atan2, BinaryOp::Hypot] {
        let ptx = write_module(
            &kernel(&[ScalarType::F64, ScalarType::F64], |a| {
                Op::Binary(op, a[0], a[1])
            }),
            Target::Sm90,
        )
        .expect("PTX");
        for &y in xs.iter().step_by(5) {
            for &x in xs.iter().step_by(11) {
                let got = result(&run(&ptx, &[y.to_bits(), x.to_bits()]), ScalarType::F64, 2);
                let mut model = Model::default();
                let want = if op == BinaryOp::Atan2 {
                    super::atan::atan2(&mut model, y, x)
                } else {
                    super::hypot::hypot(&mut model, y, x)
                };
                assert!(
                    same(got, want.to_bits(), ScalarType::F64),
                    "{op:?}({y:e}, {x:e}): PTX {:e}, model {want:e}",
                    f64::from_bits(got)
                );
            }
        }
    }
}
