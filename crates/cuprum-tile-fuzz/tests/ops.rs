//! Directed three-way tests: every tile IR operation and statement alone on fresh random
//! data (the seed is printed), on every element type it allows, run by the interpreter and
//! by the lowered kernel on the device `CudaContext::new(0)` picks (on the emulator also
//! before the optimizer), every element compared. One kernel per element type holds one
//! output per operation, named after it, so a failure says which.
//!
//! Tiles are ragged on every axis, inputs come in random views (padded, transposed,
//! reversed, repeated, offset), outputs start poisoned. What the GPU computes only
//! approximately (transcendental functions) is compared within the bounds the PTX writer
//! documents; what only the emulator reports (traps by class, prints) runs on a fresh
//! emulator.

mod common;

use common::{check_all, on_gpu};
use cuprum_ir::scalar::cast_constant;
use cuprum_ir::{BinaryOp, CmpOp, Constant, ScalarType, TernaryOp, UnaryOp};
use cuprum_runtime::CudaContext;
use cuprum_testkit::poison;
use cuprum_tile_fuzz::tensor::{ViewKind, random_tensor, set_element};
use cuprum_tile_fuzz::{Case, CaseBuilder, Fault, Tolerance, TrapClass, device, interp};
use cuprum_tile_ir::{
    Block, Combine, Dim, Elem, Literal, Op, ParamKind, Stmt, TensorAccess, TensorDim, TensorParam,
    TileType, TileValue, View, shape_of,
};
use cuprum_tile_lower::LowerOptions;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ScalarType as S;

/// Ragged tile shapes and tensors: each a tile and a tensor shape that cuts it unevenly.
const SHAPES: [(&[u32], &[u64]); 4] = [
    (&[16], &[37]),
    (&[3, 8], &[7, 13]),
    (&[5, 33], &[9, 40]),
    (&[2, 3, 4], &[3, 5, 6]),
];

/// A fresh seed for `test`, printed (the testkit's generator, so `seeded` replays it).
fn seed(test: &str) -> u64 {
    cuprum_testkit::random::rng(test).random()
}

/// One kernel under test: tiles of one shape, inputs loaded at the block's own tile, and
/// one output per operation.
struct Ops {
    cb: CaseBuilder,
    rng: SmallRng,
    tile: Vec<u32>,
    shape: Vec<u64>,
}

impl Ops {
    /// A kernel named `name`, its tile and tensor shape picked by `seed`.
    fn new(name: &str, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (tile, shape) = SHAPES[rng.random_range(0..SHAPES.len())];
        Self::with_shape(name, seed, rng, tile, shape)
    }

    fn with_shape(name: &str, seed: u64, rng: SmallRng, tile: &[u32], shape: &[u64]) -> Self {
        Self {
            cb: CaseBuilder::new(name, seed, poison::BYTE),
            rng,
            tile: tile.to_vec(),
            shape: shape.to_vec(),
        }
    }

    fn def(&mut self, op: Op) -> TileValue {
        self.cb.def(op).unwrap_or_else(|e| panic!("{e}"))
    }

    fn konst(&mut self, elem: ScalarType, value: Literal, shape: &[u32]) -> TileValue {
        self.def(Op::Const {
            value,
            elem: Elem::Known(elem),
            shape: shape_of(shape),
        })
    }

    /// The block's tile index along every axis of the tile.
    fn block_index(&mut self) -> Vec<TileValue> {
        (0..self.tile.len() as u32)
            .map(|a| self.def(Op::BlockId(a)))
            .collect()
    }

    /// An input of `elem` (random elements, each passed through `fix`, in a random view),
    /// loaded at the block's tile.
    fn input_with(
        &mut self,
        elem: ScalarType,
        fix: impl Fn(&mut SmallRng, u64) -> u64,
    ) -> TileValue {
        let pad = self.padding(elem);
        self.input_padded_with(elem, fix, pad)
    }

    /// [`Ops::input_with`] with the given padding outside the tensor.
    fn input_padded_with(
        &mut self,
        elem: ScalarType,
        fix: impl Fn(&mut SmallRng, u64) -> u64,
        pad: Literal,
    ) -> TileValue {
        let mut t = random_tensor(&mut self.rng, elem, &self.shape, ViewKind::Any);
        for i in 0..t.len() as usize {
            let bits = t.element(i as u64);
            let fixed = Constant::new(elem, fix(&mut self.rng, bits)).bits;
            set_element(&mut t.bytes, elem, i, fixed);
        }
        let name = format!("in{}", self.cb.args.len());
        let p = self.cb.input_tensor(&name, t, None);
        let index = self.block_index();
        self.def(Op::Load {
            view: View::Tiled {
                tensor: p,
                tile: shape_of(&self.tile),
                index,
            },
            padding: pad,
        })
    }

    fn input(&mut self, elem: ScalarType) -> TileValue {
        self.input_with(elem, |_, b| b)
    }

    fn padding(&mut self, elem: ScalarType) -> Literal {
        if elem == S::Bool {
            Literal::Bool(true)
        } else {
            Literal::Int(self.rng.random_range(-3..=3))
        }
    }

    /// An output named `name` storing `v` (a tile of the kernel's tile shape).
    fn out(&mut self, name: &str, v: TileValue) {
        let elem = self.cb.b.ty(v).elem.known().unwrap_or(S::U8);
        let kind = if self.rng.random_bool(0.5) {
            ViewKind::Contiguous
        } else {
            ViewKind::Injective
        };
        let (tile, shape) = (self.tile.clone(), self.shape.clone());
        let o = self
            .cb
            .output(&mut self.rng, name, elem, &tile, &shape, kind);
        self.cb.b.push(Stmt::Store {
            tensor: o,
            value: v,
        });
    }

    /// Rank-0 `v` repeated to the tile.
    fn splat(&mut self, v: TileValue) -> TileValue {
        let ones = vec![1; self.tile.len()];
        let r = self.def(Op::Reshape {
            value: v,
            shape: shape_of(&ones),
        });
        let tile = self.tile.clone();
        self.def(Op::Broadcast {
            value: r,
            shape: shape_of(&tile),
        })
    }

    fn case(self, tolerance: Tolerance) -> Case {
        self.cb
            .finish(tolerance, LowerOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

const ALL: [ScalarType; 14] = ScalarType::ALL;

/// The types with arithmetic, comparisons and reductions: every one but `tf32`, which only
/// feeds `mma` and conversions (its casts and bitcasts are tested with every type's).
fn computed() -> impl Iterator<Item = ScalarType> {
    ALL.into_iter().filter(|t| t.has_arithmetic())
}

fn ints() -> impl Iterator<Item = ScalarType> {
    ALL.into_iter().filter(|t| t.is_int())
}

/// The exact unary operations (the transcendental ones have their own test).
const EXACT_UNARY: [UnaryOp; 8] = [
    UnaryOp::Neg,
    UnaryOp::Not,
    UnaryOp::Abs,
    UnaryOp::Sqrt,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Round,
    UnaryOp::Trunc,
];

fn unary_allowed(u: UnaryOp, t: ScalarType) -> bool {
    match u {
        UnaryOp::Neg => t != S::Bool,
        UnaryOp::Not => !t.is_float(),
        _ => t.is_float(),
    }
}

#[test]
fn unary_operations_on_every_type() {
    let seed = seed("unary");
    let cases: Vec<Case> = computed()
        .enumerate()
        .map(|(i, ty)| {
            let mut k = Ops::new(&format!("unary_{ty}"), seed + i as u64);
            let x = k.input(ty);
            for u in EXACT_UNARY.into_iter().filter(|&u| unary_allowed(u, ty)) {
                let r = k.def(Op::Unary(u, x));
                k.out(&format!("{u:?}"), r);
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("unary operations", &cases);
}

#[test]
fn transcendental_functions_within_their_stated_bounds() {
    let seed = seed("transcendental");
    // The PTX writer's f32 sequences are within 2 ulp of the correctly rounded result
    // (`cuprum_ptx::math`), the host's (the emulator's and the interpreter's) within 2 more;
    // f16 and bf16 round such f32 results once, so within 1 ulp of their own. f64 has none
    // on the GPU.
    let cases: Vec<Case> = [(S::F32, 4), (S::F16, 1), (S::BF16, 1)]
        .into_iter()
        .enumerate()
        .map(|(i, (ty, ulps))| {
            let mut k = Ops::new(&format!("transcendental_{ty}"), seed + i as u64);
            let x = k.input(ty);
            for u in [
                UnaryOp::Exp,
                UnaryOp::Exp2,
                UnaryOp::Exp2Ftz,
                UnaryOp::Ln,
                UnaryOp::Log2,
                UnaryOp::Sin,
                UnaryOp::Cos,
                UnaryOp::Tanh,
            ] {
                let r = k.def(Op::Unary(u, x));
                k.out(&format!("{u:?}"), r);
            }
            k.case(Tolerance::Ulps(ulps))
        })
        .collect();
    check_all("transcendental functions", &cases);
}

const BINARY: [BinaryOp; 12] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
    BinaryOp::Shl,
    BinaryOp::Shr,
    BinaryOp::Min,
    BinaryOp::Max,
];

fn binary_allowed(b: BinaryOp, t: ScalarType) -> bool {
    let logical = matches!(b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
    let shift = matches!(b, BinaryOp::Shl | BinaryOp::Shr);
    if t == S::Bool {
        logical
    } else if t.is_float() {
        !logical && !shift
    } else {
        true
    }
}

#[test]
fn binary_operations_on_every_type() {
    let seed = seed("binary");
    let cases: Vec<Case> = computed()
        .enumerate()
        .map(|(i, ty)| {
            let mut k = Ops::new(&format!("binary_{ty}"), seed + i as u64);
            let x = k.input(ty);
            let y = k.input(ty);
            // Integer divisors are never 0 or -1 (a zero traps, as does MIN / -1: the
            // trap test covers both).
            let d = k.input_with(ty, |rng, b| {
                let minus_one = Constant::new(ty, u64::MAX).bits;
                if ty.is_int() && (b == 0 || b == minus_one) {
                    rng.random_range(1..=9)
                } else {
                    b
                }
            });
            // Edge tiles read padding (zero) outside the tensor: those elements get a
            // divisor of 1 too, since a trap ends a GPU context (and every test after it).
            let d = if ty.is_int() {
                let tile = k.tile.clone();
                let zero = k.konst(ty, Literal::Int(0), &tile);
                let one = k.konst(ty, Literal::Int(1), &tile);
                let is_zero = k.def(Op::Compare(CmpOp::Eq, d, zero));
                k.def(Op::Select {
                    cond: is_zero,
                    if_true: one,
                    if_false: d,
                })
            } else {
                d
            };
            let amount = k.input(S::U32);
            for b in BINARY.into_iter().filter(|&b| binary_allowed(b, ty)) {
                // The sign of a zero from float min/max of +0 and -0 is unspecified: a GPU
                // may differ from the CPU there, so it gets only the normalized ones below.
                let raw_float_min_max = ty.is_float() && matches!(b, BinaryOp::Min | BinaryOp::Max);
                if raw_float_min_max && on_gpu() {
                    continue;
                }
                let r = match b {
                    BinaryOp::Shl | BinaryOp::Shr => k.def(Op::Binary(b, x, amount)),
                    BinaryOp::Div | BinaryOp::Rem => k.def(Op::Binary(b, x, d)),
                    _ => k.def(Op::Binary(b, x, y)),
                };
                k.out(&format!("{b:?}"), r);
            }
            if ty.is_float() {
                let zero = k.konst(ty, Literal::Float(0.0), &k.tile.clone());
                for b in [BinaryOp::Min, BinaryOp::Max] {
                    let m = k.def(Op::Binary(b, x, y));
                    let r = k.def(Op::Binary(BinaryOp::Add, m, zero));
                    k.out(&format!("{b:?} plus zero"), r);
                }
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("binary operations", &cases);
}

#[test]
fn fused_multiply_add_and_select_on_every_type() {
    let seed = seed("ternary");
    let cases: Vec<Case> = computed()
        .enumerate()
        .map(|(i, ty)| {
            let mut k = Ops::new(&format!("ternary_{ty}"), seed + i as u64);
            let (a, b, c) = (k.input(ty), k.input(ty), k.input(ty));
            let cond = k.input(S::Bool);
            let s = k.def(Op::Select {
                cond,
                if_true: a,
                if_false: b,
            });
            k.out("select", s);
            if ty.is_float() {
                let f = k.def(Op::Ternary(TernaryOp::MulAdd, a, b, c));
                k.out("mul_add", f);
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("fused multiply-add and select", &cases);
}

#[test]
fn comparisons_on_every_type() {
    let seed = seed("compare");
    let cases: Vec<Case> = computed()
        .enumerate()
        .map(|(i, ty)| {
            let mut k = Ops::new(&format!("compare_{ty}"), seed + i as u64);
            let x = k.input(ty);
            // Some equal elements: `y` is `x` where a coin says so.
            let other = k.input(ty);
            let coin = k.input(S::Bool);
            let y = k.def(Op::Select {
                cond: coin,
                if_true: x,
                if_false: other,
            });
            for c in [
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::Lt,
                CmpOp::Le,
                CmpOp::Gt,
                CmpOp::Ge,
            ] {
                let r = k.def(Op::Compare(c, x, y));
                k.out(&format!("{c:?}"), r);
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("comparisons", &cases);
}

#[test]
fn casts_between_every_pair_of_types() {
    let seed = seed("casts");
    let cases: Vec<Case> = ALL
        .into_iter()
        .enumerate()
        .map(|(i, from)| {
            let mut k = Ops::new(&format!("cast_from_{from}"), seed + i as u64);
            let x = k.input(from);
            for to in ALL.into_iter().filter(|&t| t != S::Bool) {
                let r = k.def(Op::Cast {
                    value: x,
                    to: Elem::Known(to),
                });
                k.out(&format!("to_{to}"), r);
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("casts", &cases);
}

#[test]
fn bitcasts_between_types_of_one_size() {
    let seed = seed("bitcasts");
    let sized: Vec<ScalarType> = ALL.into_iter().filter(|&t| t != S::Bool).collect();
    let cases: Vec<Case> = sized
        .iter()
        .enumerate()
        .map(|(i, &from)| {
            let mut k = Ops::new(&format!("bitcast_from_{from}"), seed + i as u64);
            // Loaded bits only: no arithmetic changes a NaN's payload on the way.
            let x = k.input(from);
            // Nothing bitcasts to `tf32` (its low bits are zero): values convert to it.
            let to_types = sized.iter().filter(|t| {
                t.size_bytes() == from.size_bytes() && (**t != S::Tf32 || from == S::Tf32)
            });
            for &to in to_types {
                let r = k.def(Op::Bitcast {
                    value: x,
                    to: Elem::Known(to),
                });
                k.out(&format!("to_{to}"), r);
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("bitcasts", &cases);
}

/// Literals each type takes: integers, floats (special ones too), exact constants.
fn literals(ty: ScalarType, rng: &mut SmallRng) -> Vec<Literal> {
    if ty == S::Bool {
        return vec![Literal::Bool(true), Literal::Bool(false)];
    }
    let mut v = vec![
        Literal::Int(0),
        Literal::Int(-1),
        Literal::Int(i64::MAX),
        Literal::Int(300),
        Literal::Float(2.75),
        Literal::Float(-1e10),
        Literal::Float(f64::INFINITY),
        Literal::Float(-0.0),
        Literal::Exact(cuprum_tile_fuzz::tensor::random_element(rng, ty)),
    ];
    if !ty.is_float() {
        v.push(Literal::Float(f64::NAN));
    }
    v
}

#[test]
fn constants_iotas_and_launch_scalars_of_every_type() {
    let seed = seed("sources");
    let cases: Vec<Case> = ALL
        .into_iter()
        .enumerate()
        .map(|(i, ty)| {
            let mut rng = SmallRng::seed_from_u64(seed + i as u64);
            // A 3-D tile on a 3-D grid, so every block index and count is exercised.
            let mut k = Ops::with_shape(
                &format!("sources_{ty}"),
                seed + i as u64,
                SmallRng::seed_from_u64(seed ^ i as u64),
                &[2, 3, 4],
                &[3, 7, 6],
            );
            let tile = k.tile.clone();
            for (j, lit) in literals(ty, &mut rng).into_iter().enumerate() {
                let c = k.konst(ty, lit, &tile);
                k.out(&format!("const{j}"), c);
            }
            if ty.is_int() {
                for axis in 0..3 {
                    let v = k.def(Op::Iota {
                        elem: Elem::Known(ty),
                        shape: shape_of(&tile),
                        axis,
                    });
                    k.out(&format!("iota{axis}"), v);
                }
            }
            let value = cuprum_tile_fuzz::tensor::random_element(&mut rng, ty);
            let p =
                k.cb.scalar("param", value)
                    .unwrap_or_else(|e| panic!("{e}"));
            let p = k.splat(p);
            k.out("param", p);
            if ty != S::Bool {
                for axis in 0..3 {
                    for (what, op) in [
                        ("block", Op::BlockId(axis)),
                        ("blocks", Op::NumBlocks(axis)),
                    ] {
                        let v = k.def(op);
                        let v = k.def(Op::Cast {
                            value: v,
                            to: Elem::Known(ty),
                        });
                        let v = k.splat(v);
                        k.out(&format!("{what}{axis}"), v);
                    }
                }
                // Sizes of an input with a dynamic and a static axis, and of an output.
                let t = random_tensor(&mut k.rng, S::U8, &[5, 11], ViewKind::Any);
                let inp = k.cb.input_tensor(
                    "sized",
                    t,
                    Some(vec![TensorDim::Dynamic, TensorDim::Static(Dim::Known(11))]),
                );
                for (tensor, axis) in [(inp, 0), (inp, 1), (0, 2)] {
                    let d = k.def(Op::TensorDim { tensor, axis });
                    let d = k.def(Op::Cast {
                        value: d,
                        to: Elem::Known(ty),
                    });
                    let d = k.splat(d);
                    k.out(&format!("dim{tensor}_{axis}"), d);
                }
            }
            k.case(Tolerance::Exact)
        })
        .collect();
    check_all("constants, iotas and launch scalars", &cases);
}

#[test]
fn broadcasts_reshapes_and_permutations() {
    let seed = seed("shapes");
    let mut cases = Vec::new();
    for (i, ty) in [S::F32, S::F16, S::I64, S::U8, S::Bool, S::F64]
        .into_iter()
        .enumerate()
    {
        let mut k = Ops::with_shape(
            &format!("shapes_{ty}"),
            seed + i as u64,
            SmallRng::seed_from_u64(seed + 100 + i as u64),
            &[4, 6, 10],
            &[7, 6, 19],
        );
        let x = k.input(ty);
        let tile = k.tile.clone();
        // Every permutation, and back.
        for perm in [[0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            let p = k.def(Op::Permute {
                value: x,
                perm: perm.to_vec(),
            });
            let mut back = [0u32; 3];
            for (i, &q) in perm.iter().enumerate() {
                back[q as usize] = i as u32;
            }
            let b = k.def(Op::Permute {
                value: p,
                perm: back.to_vec(),
            });
            k.out(&format!("permute{perm:?}"), b);
            // A permuted tile reshaped straight back to the tile's shape: a new order.
            let r = k.def(Op::Reshape {
                value: p,
                shape: shape_of(&tile),
            });
            k.out(&format!("permute{perm:?}_reshaped"), r);
        }
        for shape in [
            vec![240u32],
            vec![24, 10],
            vec![4, 60],
            vec![2, 2, 60],
            vec![1, 240, 1],
        ] {
            let r = k.def(Op::Reshape {
                value: x,
                shape: shape_of(&shape),
            });
            let b = k.def(Op::Reshape {
                value: r,
                shape: shape_of(&tile),
            });
            k.out(&format!("reshape{shape:?}"), b);
        }
        // Broadcasts of planes, lines and a scalar along every axis.
        for kept in [
            [1, 6, 10],
            [4, 1, 10],
            [4, 6, 1],
            [1, 1, 10],
            [4, 1, 1],
            [1, 1, 1],
        ] {
            let small = k.input_tile(ty, &kept);
            let b = k.def(Op::Broadcast {
                value: small,
                shape: shape_of(&tile),
            });
            k.out(&format!("broadcast{kept:?}"), b);
        }
        cases.push(k.case(Tolerance::Exact));
    }
    check_all("broadcasts, reshapes and permutations", &cases);
}

impl Ops {
    /// An input of `elem` loaded as a tile of `tile` (each block its own), from a tensor
    /// sized for that tile on the kernel's grid.
    fn input_tile(&mut self, elem: ScalarType, tile: &[u32]) -> TileValue {
        let shape: Vec<u64> = tile
            .iter()
            .zip(&self.tile)
            .zip(&self.shape)
            .map(|((&t, &kt), &n)| (n.div_ceil(u64::from(kt)) * u64::from(t)).max(1))
            .collect();
        let t = random_tensor(&mut self.rng, elem, &shape, ViewKind::Any);
        let name = format!("in{}", self.cb.args.len());
        let p = self.cb.input_tensor(&name, t, None);
        let index = self.block_index();
        let pad = self.padding(elem);
        self.def(Op::Load {
            view: View::Tiled {
                tensor: p,
                tile: shape_of(tile),
                index,
            },
            padding: pad,
        })
    }

    /// A reduce closure `|a, b| a op b` on `ty`, with `identity`.
    fn closure(&mut self, ty: ScalarType, op: BinaryOp, identity: Literal) -> Combine {
        let a = self.cb.b.value(TileType::scalar(ty));
        let b = self.cb.b.value(TileType::scalar(ty));
        self.cb.b.begin_block();
        let r = self.def(Op::Binary(op, a, b));
        let body = self.cb.b.end_block(vec![r]);
        Combine::Closure {
            a,
            b,
            body,
            identity,
        }
    }

    /// `v` (reduced along `axis` of the tile) broadcast back to the tile.
    fn broadcast_back(&mut self, v: TileValue, axis: usize) -> TileValue {
        let mut kept = self.tile.clone();
        kept[axis] = 1;
        let r = self.def(Op::Reshape {
            value: v,
            shape: shape_of(&kept),
        });
        let tile = self.tile.clone();
        self.def(Op::Broadcast {
            value: r,
            shape: shape_of(&tile),
        })
    }
}

#[test]
fn reductions_along_every_axis_of_every_type() {
    let seed = seed("reductions");
    let mut cases = Vec::new();
    for (i, ty) in computed().enumerate() {
        let mut k = Ops::with_shape(
            &format!("reduce_{ty}"),
            seed + i as u64,
            SmallRng::seed_from_u64(seed + 200 + i as u64),
            &[3, 40, 5],
            &[5, 70, 9],
        );
        // Float data small integers (every partial sum and product exact, in any order),
        // with zeros of both signs and a NaN now and then. The padding of edge tiles joins
        // the reduction, so for floats it is small too: ten padded 3s make 3^10, which f16
        // rounds differently in the interpreter's order and the lowering's tree.
        let pad = if ty.is_float() {
            Literal::Int(k.rng.random_range(-1..=1))
        } else {
            k.padding(ty)
        };
        let x = k.input_padded_with(
            ty,
            |rng, b| {
                if !ty.is_float() {
                    return b;
                }
                let v = match rng.random_range(0..12) {
                    0 => -0.0,
                    1 => f64::NAN,
                    _ => f64::from(rng.random_range(-1i32..=1)),
                };
                cast_constant(Constant::f64(v), ty).bits
            },
            pad,
        );
        for axis in 0..3usize {
            let combines: Vec<(&str, Combine, bool)> = if ty == S::Bool {
                vec![
                    (
                        "or",
                        k.closure(ty, BinaryOp::Or, Literal::Bool(false)),
                        false,
                    ),
                    (
                        "and",
                        k.closure(ty, BinaryOp::And, Literal::Bool(true)),
                        false,
                    ),
                    (
                        "xor",
                        k.closure(ty, BinaryOp::Xor, Literal::Bool(false)),
                        false,
                    ),
                ]
            } else if ty.is_int() {
                vec![
                    ("sum", Combine::Sum, false),
                    ("prod", Combine::Prod, false),
                    ("min", Combine::Min, false),
                    ("max", Combine::Max, false),
                    ("xor", k.closure(ty, BinaryOp::Xor, Literal::Int(0)), false),
                    ("and", k.closure(ty, BinaryOp::And, Literal::Int(-1)), false),
                ]
            } else {
                vec![
                    ("sum", Combine::Sum, false),
                    ("prod", Combine::Prod, false),
                    ("min", Combine::Min, true),
                    ("max", Combine::Max, true),
                    (
                        "add",
                        k.closure(ty, BinaryOp::Add, Literal::Float(-0.0)),
                        false,
                    ),
                    (
                        "maximum",
                        k.closure(ty, BinaryOp::Max, Literal::Float(f64::NAN)),
                        true,
                    ),
                ]
            };
            for (name, combine, zero_fix) in combines {
                let r = k.def(Op::Reduce {
                    value: x,
                    axis: axis as u32,
                    combine,
                });
                let r = if zero_fix {
                    let shape =
                        cuprum_tile_ir::known_sizes(&k.cb.b.ty(r).shape).unwrap_or_default();
                    let z = k.konst(ty, Literal::Float(0.0), &shape);
                    k.def(Op::Binary(BinaryOp::Add, r, z))
                } else {
                    r
                };
                let b = k.broadcast_back(r, axis);
                k.out(&format!("{name}_axis{axis}"), b);
            }
        }
        cases.push(k.case(Tolerance::Exact));
    }
    check_all("reductions", &cases);
}

#[test]
fn loads_inside_on_the_edge_and_outside() {
    let seed = seed("loads");
    let mut cases = Vec::new();
    for (i, ty) in [S::F32, S::U8, S::F64, S::I16, S::Bool, S::BF16]
        .into_iter()
        .enumerate()
    {
        let mut k = Ops::with_shape(
            &format!("loads_{ty}"),
            seed + i as u64,
            SmallRng::seed_from_u64(seed + 300 + i as u64),
            &[4, 8],
            &[10, 20],
        );
        let t = random_tensor(&mut k.rng, ty, &[9, 21], ViewKind::Any);
        let p = k.cb.input_tensor("x", t, None);
        let (bx, by) = (k.def(Op::BlockId(0)), k.def(Op::BlockId(1)));
        // The block's tile, the ones before and after it (outside at the edges), a far
        // one, and tile indices of other integer types.
        let offsets: [(i64, i64, ScalarType); 5] = [
            (0, 0, S::I32),
            (-1, 0, S::I32),
            (1, 1, S::I64),
            (0, -3, S::I16),
            (5, 9, S::U32),
        ];
        for (j, (dx, dy, ity)) in offsets.into_iter().enumerate() {
            let mut index = Vec::new();
            for (b, d) in [(bx, dx), (by, dy)] {
                let c = k.konst(S::I32, Literal::Int(d), &[]);
                let s = k.def(Op::Binary(BinaryOp::Add, b, c));
                index.push(k.def(Op::Cast {
                    value: s,
                    to: Elem::Known(ity),
                }));
            }
            let pad = if ty == S::Bool {
                Literal::Bool(j % 2 == 0)
            } else if ty.is_float() {
                [
                    Literal::Int(7),
                    Literal::Float(-0.0),
                    Literal::Float(f64::NAN),
                ][j % 3]
            } else {
                Literal::Int(7)
            };
            let v = k.def(Op::Load {
                view: View::Tiled {
                    tensor: p,
                    tile: shape_of(&[4, 8]),
                    index,
                },
                padding: pad,
            });
            k.out(&format!("load{j}"), v);
        }
        // Tiles so far out that `index * tile` would not fit in 64 bits.
        for (j, (ity, bits)) in [
            (S::I64, 1u64 << 62),
            (S::U64, (1 << 63) + 5),
            (S::I64, 1 << 63),
        ]
        .into_iter()
        .enumerate()
        {
            let far = k.konst(ity, Literal::Exact(Constant::new(ity, bits)), &[]);
            let near = k.konst(ity, Literal::Int(0), &[]);
            let index = if j % 2 == 0 {
                vec![far, near]
            } else {
                vec![near, far]
            };
            let padding = k.padding(ty);
            let v = k.def(Op::Load {
                view: View::Tiled {
                    tensor: p,
                    tile: shape_of(&[4, 8]),
                    index,
                },
                padding,
            });
            k.out(&format!("far{j}"), v);
        }
        // A rank-0 tensor.
        let t0 = random_tensor(&mut k.rng, ty, &[], ViewKind::Any);
        let p0 = k.cb.input_tensor("scalar", t0, None);
        let padding = k.padding(ty);
        let s = k.def(Op::Load {
            view: View::Tiled {
                tensor: p0,
                tile: Vec::new(),
                index: Vec::new(),
            },
            padding,
        });
        let s = k.splat(s);
        k.out("rank0", s);
        // Its own tile of an output: poison first, then what it stored (a block's loads
        // see its own stores).
        let (tile, shape) = (k.tile.clone(), k.shape.clone());
        let o =
            k.cb.output(&mut k.rng, "own", ty, &tile, &shape, ViewKind::Injective);
        let padding = k.padding(ty);
        let before = k.def(Op::Load {
            view: View::Own { tensor: o },
            padding,
        });
        k.out("own_before", before);
        let y = k.input(ty);
        k.cb.b.push(Stmt::Store {
            tensor: o,
            value: y,
        });
        let padding = k.padding(ty);
        let after = k.def(Op::Load {
            view: View::Own { tensor: o },
            padding,
        });
        k.out("own_after", after);
        cases.push(k.case(Tolerance::Exact));
    }
    check_all("loads", &cases);
}

/// Each element's row-major position (`i64`) among the tiles of the whole grid: distinct for
/// every element of every block, so scatters to them do not race. With `reverse_last`, the
/// position of the element mirrored along the tile's last axis (another thread's, mostly).
fn grid_positions(k: &mut Ops, grid: &[u64], reverse_last: bool) -> TileValue {
    let tile = k.tile.clone();
    let rank = tile.len();
    let extents: Vec<i64> = grid
        .iter()
        .zip(&tile)
        .map(|(&g, &t)| (g * u64::from(t)) as i64)
        .collect();
    let mut pos: Option<TileValue> = None;
    for axis in 0..rank {
        let b = k.def(Op::BlockId(axis as u32));
        let b = k.def(Op::Cast {
            value: b,
            to: Elem::Known(S::I64),
        });
        let t = k.konst(S::I64, Literal::Int(i64::from(tile[axis])), &[]);
        let first = k.def(Op::Binary(BinaryOp::Mul, b, t));
        let first = k.splat(first);
        let mut along = k.def(Op::Iota {
            elem: Elem::Known(S::I64),
            shape: shape_of(&tile),
            axis: axis as u32,
        });
        if reverse_last && axis == rank - 1 {
            let last = k.konst(S::I64, Literal::Int(i64::from(tile[axis]) - 1), &tile);
            along = k.def(Op::Binary(BinaryOp::Sub, last, along));
        }
        let coord = k.def(Op::Binary(BinaryOp::Add, first, along));
        let weight: i64 = extents[axis + 1..].iter().product();
        let w = k.konst(S::I64, Literal::Int(weight), &tile);
        let term = k.def(Op::Binary(BinaryOp::Mul, coord, w));
        pos = Some(match pos {
            Some(p) => k.def(Op::Binary(BinaryOp::Add, p, term)),
            None => term,
        });
    }
    pos.unwrap_or_else(|| panic!("a rank-0 tile"))
}

#[test]
fn gathers_and_scatters_through_raw_pointers() {
    let seed = seed("gathers_and_scatters_through_raw_pointers");
    let mut cases = Vec::new();
    for (i, ty) in ALL.into_iter().enumerate() {
        let mut k = Ops::new(&format!("raw_{ty}"), seed ^ (i as u64 + 1));
        let tile = k.tile.clone();
        let grid: Vec<u64> = tile
            .iter()
            .zip(&k.shape)
            .map(|(&t, &n)| n.div_ceil(u64::from(t)))
            .collect();
        let total: u64 = grid
            .iter()
            .zip(&tile)
            .map(|(&g, &t)| g * u64::from(t))
            .product();
        let blocks: u64 = grid.iter().product();
        // Gathers at random offsets, some before or past the pointer's elements, under a
        // random mask: padding there.
        let src_len = k.rng.random_range(8..64u64);
        let src_offset = k.rng.random_range(0..4u64);
        let src = k.cb.raw_pointer(
            &mut k.rng,
            "src",
            ty,
            src_offset + src_len,
            src_offset,
            None,
        );
        let n = src_len as i32;
        let offsets = k.input_with(S::I32, move |r, _| {
            u64::from(r.random_range(-3..n + 3) as u32)
        });
        let mask = k.input(S::Bool);
        let padding = k.padding(ty);
        let g = k.def(Op::Gather {
            tensor: src,
            offsets,
            mask: Some(mask),
            padding,
        });
        k.out("gather", g);
        // Unsigned offsets, no mask: a `u64` past `i64::MAX` is outside too.
        let wide = k.input_with(S::U64, move |r, _| match r.random_range(0..4) {
            0 => u64::MAX - r.random_range(0..3u64),
            _ => r.random_range(0..u64::try_from(n + 2).unwrap_or(0)),
        });
        let padding = k.padding(ty);
        let g = k.def(Op::Gather {
            tensor: src,
            offsets: wide,
            mask: None,
            padding,
        });
        k.out("gather_unsigned", g);
        // Scatters: every element to its own place (shifted, so some fall before the
        // pointer), under a random mask; the rest of the allocation keeps its poison.
        let dst_offset = k.rng.random_range(0..4u64);
        let dst_len = dst_offset + total + 4 + blocks;
        let dst = k.cb.raw_pointer(
            &mut k.rng,
            "dst",
            ty,
            dst_len,
            dst_offset,
            Some(poison::BYTE),
        );
        let shift = k.rng.random_range(-2..=2i64);
        let shift_tile = k.konst(S::I64, Literal::Int(shift), &tile);
        let pos = grid_positions(&mut k, &grid, false);
        let at = k.def(Op::Binary(BinaryOp::Add, pos, shift_tile));
        let value = k.input(ty);
        let write_mask = k.input(S::Bool);
        k.cb.b.push(Stmt::Scatter {
            tensor: dst,
            offsets: at,
            value,
            mask: Some(write_mask),
        });
        // The block reads back what it wrote, each element from its mirror image along the
        // last axis: its own writes, in program order, whichever thread made them.
        let mirrored = grid_positions(&mut k, &grid, true);
        let back_at = k.def(Op::Binary(BinaryOp::Add, mirrored, shift_tile));
        let padding = k.padding(ty);
        let back = k.def(Op::Gather {
            tensor: dst,
            offsets: back_at,
            mask: None,
            padding,
        });
        k.out("gather_after_scatter", back);
        // A rank-0 scatter (one element standing for the tile): the block's linear index,
        // converted, past the tiles' places.
        if ty != S::Bool {
            let mut linear = k.def(Op::BlockId(0));
            let mut scale = grid[0] as i64;
            for (axis, &g) in grid.iter().enumerate().skip(1) {
                let b = k.def(Op::BlockId(axis as u32));
                let w = k.konst(S::I32, Literal::Int(scale), &[]);
                let term = k.def(Op::Binary(BinaryOp::Mul, b, w));
                linear = k.def(Op::Binary(BinaryOp::Add, linear, term));
                scale *= g as i64;
            }
            let past = k.konst(S::I32, Literal::Int(total as i64 + 4), &[]);
            let at = k.def(Op::Binary(BinaryOp::Add, linear, past));
            let v = k.def(Op::Cast {
                value: linear,
                to: Elem::Known(ty),
            });
            k.cb.b.push(Stmt::Scatter {
                tensor: dst,
                offsets: at,
                value: v,
                mask: None,
            });
        }
        cases.push(k.case(Tolerance::Exact));
    }
    check_all("raw pointers", &cases);
}

#[test]
fn mapped_outputs_are_written_tile_by_tile_in_the_schedule() {
    let seed = seed("mapped_outputs_are_written_tile_by_tile_in_the_schedule");
    let mut cases = Vec::new();
    // Many tiles each, so that blocks visit several in turn.
    let shapes: [(&[u32], &[u64]); 5] = [
        (&[4], &[30]),
        (&[2, 3], &[11, 10]),
        (&[3, 2], &[10, 11]),
        (&[1, 2, 2], &[3, 5, 3]),
        (&[8, 8], &[40, 33]),
    ];
    for (i, (ty, (tile, shape))) in [S::F32, S::I32, S::F16, S::U8, S::F64]
        .into_iter()
        .zip(shapes)
        .enumerate()
    {
        let case_seed = seed ^ (i as u64 + 7);
        let rng = SmallRng::seed_from_u64(case_seed);
        let mut k = Ops::with_shape(&format!("mapped_{ty}"), case_seed, rng, tile, shape);
        let (tile, shape) = (k.tile.clone(), k.shape.clone());
        let rank = tile.len();
        let tiles: u64 = tile
            .iter()
            .zip(&shape)
            .map(|(&t, &n)| n.div_ceil(u64::from(t)))
            .product();
        let out =
            k.cb.mapped_output(&mut k.rng, "z", ty, &tile, &shape, ViewKind::Injective);
        let x = random_tensor(&mut k.rng, ty, &shape, ViewKind::Any);
        let x = k.cb.input_tensor("x", x, None);
        // Bands of 1 to 3 rows of tiles.
        let mut map = vec![1u32; rank];
        if rank >= 2 {
            map[rank - 2] = k.rng.random_range(1..=3);
        }
        let i32_scalar = TileType {
            elem: Elem::Known(S::I32),
            shape: Vec::new(),
        };
        let coords: Vec<TileValue> = (0..rank)
            .map(|_| k.cb.b.value(i32_scalar.clone()))
            .collect();
        // The loop carries a count of the tiles this block visited, stored with each tile.
        let zero = k.konst(S::I32, Literal::Int(0), &[]);
        let count = k.cb.b.value(i32_scalar.clone());
        let result = k.cb.b.value(i32_scalar);
        k.cb.b.begin_block();
        let padding = k.padding(ty);
        let loaded = k.def(Op::Load {
            view: View::Tiled {
                tensor: x,
                tile: shape_of(&tile),
                index: coords.clone(),
            },
            padding,
        });
        // Each element plus its tile's first coordinate and the visit count.
        let one = k.konst(S::I32, Literal::Int(1), &[]);
        let next = k.def(Op::Binary(BinaryOp::Add, count, one));
        let mark = k.def(Op::Binary(BinaryOp::Add, coords[0], next));
        let mark = k.def(Op::Cast {
            value: mark,
            to: Elem::Known(ty),
        });
        let mark = k.splat(mark);
        let value = if ty == S::U8 {
            k.def(Op::Binary(BinaryOp::Xor, loaded, mark))
        } else {
            k.def(Op::Binary(BinaryOp::Add, loaded, mark))
        };
        k.cb.b.push(Stmt::StoreMapped { tensor: out, value });
        let body = k.cb.b.end_block(vec![next]);
        k.cb.b.push(Stmt::ForTiles {
            tensor: out,
            map: shape_of(&map),
            coords,
            args: vec![count],
            inits: vec![zero],
            body,
            results: vec![result],
        });
        // Fewer blocks than tiles (each visits several, in the schedule's order), and now
        // and then more (idle blocks).
        let blocks = if k.rng.random_bool(0.8) {
            k.rng.random_range(1..=tiles.div_ceil(3))
        } else {
            tiles + 2
        } as u32;
        let mut case = k.case(Tolerance::Exact);
        case.grid = [blocks, 1, 1];
        cases.push(case);
    }
    check_all("mapped outputs", &cases);
}

/// A `for` loop over `counter` of `ty` from `start` to `end` by `step`, summing the counter
/// into an `i64` tile; the tile stored.
fn for_case(seed: u64, ty: ScalarType, (start, end, step): (i128, i128, i128)) -> Case {
    // (A kernel's name must be an identifier: no minus signs.)
    let name = format!("for_{ty}_{start}_{end}_{step}").replace('-', "m");
    let mut k = Ops::new(&name, seed);
    let tile = k.tile.clone();
    let int = |k: &mut Ops, v: i128| k.konst(ty, Literal::Exact(Constant::new(ty, v as u64)), &[]);
    let (s, e, st) = (int(&mut k, start), int(&mut k, end), int(&mut k, step));
    let zero = k.konst(S::I64, Literal::Int(0), &tile);
    let counter = k.cb.b.value(TileType::scalar(ty));
    let acc = k.cb.b.value(TileType::new(S::I64, shape_of(&tile)));
    k.cb.b.begin_block();
    let c = k.def(Op::Cast {
        value: counter,
        to: Elem::Known(S::I64),
    });
    let c = k.splat(c);
    let x = k.def(Op::Binary(BinaryOp::Add, acc, c));
    let body = k.cb.b.end_block(vec![x]);
    let result = k.cb.b.value(TileType::new(S::I64, shape_of(&tile)));
    k.cb.b.push(Stmt::For {
        counter,
        start: s,
        end: e,
        step: st,
        args: vec![acc],
        inits: vec![zero],
        body,
        results: vec![result],
    });
    k.out("sum", result);
    k.case(Tolerance::Exact)
}

#[test]
fn for_loops_with_counters_of_every_integer_type() {
    let seed = seed("for");
    let mut cases = Vec::new();
    for (i, ty) in ints().enumerate() {
        let bits = ty.bits();
        let (lo, hi): (i128, i128) = if ty.is_signed_int() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        for (j, bounds) in [
            (0, 5, 1),
            (2, 9, 3),
            (5, 5, 1),
            (7, 3, 2),
            // The counter would pass the type's range: the loop ends there.
            (hi - 10, hi, 4),
            (lo, lo + 3, 1),
        ]
        .into_iter()
        .enumerate()
        {
            cases.push(for_case(seed + (i * 10 + j) as u64, ty, bounds));
        }
    }
    check_all("for loops", &cases);
}

/// `loop` carrying a counter and a tile: `continue` on odd counters (advancing), `break`
/// at `limit` with the tile, an `if` with results in between; then an early `return` for
/// block 0 after a store, and an assertion that holds.
fn control_case(seed: u64, ty: ScalarType, limit: i64) -> Case {
    let mut k = Ops::new(&format!("control_{ty}_{limit}"), seed);
    let tile = k.tile.clone();
    let x = k.input(ty);
    let y = k.input(ty);
    let zero = k.konst(S::I32, Literal::Int(0), &[]);
    let one = k.konst(S::I32, Literal::Int(1), &[]);
    let lim = k.konst(S::I32, Literal::Int(limit), &[]);
    let counter = k.cb.b.value(TileType::scalar(S::I32));
    let carried = k.cb.b.value(TileType::new(ty, shape_of(&tile)));
    k.cb.b.begin_block();
    let done = k.def(Op::Compare(CmpOp::Ge, counter, lim));
    k.cb.b.begin_block();
    k.cb.b.push(Stmt::Break {
        values: vec![counter, carried],
    });
    let then = k.cb.b.end_block(Vec::new());
    k.cb.b.push(Stmt::If {
        cond: done,
        then,
        otherwise: Block::default(),
        results: Vec::new(),
    });
    let next = k.def(Op::Binary(BinaryOp::Add, counter, one));
    let bit = k.def(Op::Binary(BinaryOp::And, counter, one));
    let odd = k.def(Op::Compare(CmpOp::Ne, bit, zero));
    // if odd { swap in y } else { keep }: a result of either branch.
    let picked = k.cb.b.value(TileType::new(ty, shape_of(&tile)));
    k.cb.b.begin_block();
    let then = k.cb.b.end_block(vec![y]);
    k.cb.b.begin_block();
    let otherwise = k.cb.b.end_block(vec![carried]);
    k.cb.b.push(Stmt::If {
        cond: odd,
        then,
        otherwise,
        results: vec![picked],
    });
    k.cb.b.begin_block();
    k.cb.b.push(Stmt::Continue {
        values: vec![next, picked],
    });
    let then = k.cb.b.end_block(Vec::new());
    k.cb.b.push(Stmt::If {
        cond: odd,
        then,
        otherwise: Block::default(),
        results: Vec::new(),
    });
    let mixed = if ty == S::Bool {
        k.def(Op::Binary(BinaryOp::Xor, carried, x))
    } else if ty.is_float() {
        k.def(Op::Binary(BinaryOp::Sub, carried, x))
    } else {
        k.def(Op::Binary(BinaryOp::Add, carried, x))
    };
    let body = k.cb.b.end_block(vec![next, mixed]);
    let results = vec![
        k.cb.b.value(TileType::scalar(S::I32)),
        k.cb.b.value(TileType::new(ty, shape_of(&tile))),
    ];
    k.cb.b.push(Stmt::Loop {
        args: vec![counter, carried],
        inits: vec![zero, x],
        body,
        results: results.clone(),
    });
    let n = k.splat(results[0]);
    k.out("iterations", n);
    // Block 0 stores the loop's tile and returns; the others store `y`.
    let o = {
        let (tile, shape) = (k.tile.clone(), k.shape.clone());
        k.cb.output(&mut k.rng, "early", ty, &tile, &shape, ViewKind::Contiguous)
    };
    let b0 = k.def(Op::BlockId(0));
    let first = k.def(Op::Compare(CmpOp::Eq, b0, zero));
    k.cb.b.begin_block();
    k.cb.b.push(Stmt::Store {
        tensor: o,
        value: results[1],
    });
    k.cb.b.push(Stmt::Return);
    let then = k.cb.b.end_block(Vec::new());
    k.cb.b.push(Stmt::If {
        cond: first,
        then,
        otherwise: Block::default(),
        results: Vec::new(),
    });
    let holds = k.def(Op::Compare(CmpOp::Eq, b0, b0));
    k.cb.b.push(Stmt::Assert {
        cond: holds,
        message: "a block index equals itself".into(),
    });
    k.cb.b.push(Stmt::Store {
        tensor: o,
        value: y,
    });
    k.case(Tolerance::Exact)
}

#[test]
fn loops_ifs_breaks_continues_and_returns() {
    let seed = seed("control");
    let mut cases = Vec::new();
    for (i, ty) in [S::F32, S::I8, S::Bool, S::U64, S::F16]
        .into_iter()
        .enumerate()
    {
        for limit in [0, 1, 4] {
            cases.push(control_case(
                seed + (i * 10) as u64 + limit as u64,
                ty,
                limit,
            ));
        }
    }
    check_all("control flow", &cases);
}

/// A generic kernel: `out[i] = x[i] * K + i` for `const K`, tile `[B]`, elements `T`;
/// specialized for each type before it runs.
#[test]
fn generic_kernels_once_specialized() {
    let seed = seed("generic");
    let mut cases = Vec::new();
    for (i, ty) in [S::F32, S::I32, S::U8, S::F64].into_iter().enumerate() {
        let mut rng = SmallRng::seed_from_u64(seed + i as u64);
        let mut cb = CaseBuilder::new(format!("generic_{ty}"), seed, poison::BYTE);
        let b_param = cb.b.const_param("B", S::I32);
        let k_param = cb.b.const_param("K", S::I64);
        let t = cb.b.type_param("T");
        let tile = vec![Dim::Param(b_param)];
        let out = cb.b.param(
            "out",
            ParamKind::Tensor(TensorParam {
                elem: Elem::Param(t),
                dims: vec![TensorDim::Static(Dim::Param(b_param))],
                access: TensorAccess::Partitioned,
            }),
        );
        let x = cb.b.param(
            "x",
            ParamKind::Tensor(TensorParam {
                elem: Elem::Param(t),
                dims: vec![TensorDim::Dynamic],
                access: TensorAccess::Read,
            }),
        );
        let pid = cb.def(Op::BlockId(0)).unwrap_or_else(|e| panic!("{e}"));
        let tx = cb
            .def(Op::Load {
                view: View::Tiled {
                    tensor: x,
                    tile: tile.clone(),
                    index: vec![pid],
                },
                padding: Literal::Int(0),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let kv = cb
            .def(Op::ConstParam(k_param))
            .unwrap_or_else(|e| panic!("{e}"));
        let kt = cb
            .def(Op::Cast {
                value: kv,
                to: Elem::Param(t),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let kt = cb
            .def(Op::Reshape {
                value: kt,
                shape: vec![Dim::Known(1)],
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let kt = cb
            .def(Op::Broadcast {
                value: kt,
                shape: tile.clone(),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let prod = cb
            .def(Op::Binary(BinaryOp::Mul, tx, kt))
            .unwrap_or_else(|e| panic!("{e}"));
        let iota = cb
            .def(Op::Iota {
                elem: Elem::Known(S::I32),
                shape: tile.clone(),
                axis: 0,
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let iota = cb
            .def(Op::Cast {
                value: iota,
                to: Elem::Param(t),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let r = cb
            .def(Op::Binary(BinaryOp::Add, prod, iota))
            .unwrap_or_else(|e| panic!("{e}"));
        cb.b.push(Stmt::Store {
            tensor: out,
            value: r,
        });
        let generic = cb.b.finish();
        let block = rng.random_range(1..=40u32);
        let kernel = cuprum_tile_ir::specialize(
            &generic,
            &cuprum_tile_ir::Specialization {
                consts: vec![i64::from(block), rng.random_range(-5..=5)],
                types: vec![ty],
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // The specialized kernel and its arguments, through a builder of its own.
        let n = u64::from(block) * 3 - rng.random_range(0..u64::from(block));
        let mut sb = CaseBuilder::new(kernel.name.clone(), seed, poison::BYTE);
        sb.output(&mut rng, "out", ty, &[block], &[n], ViewKind::Injective);
        sb.input(&mut rng, "x", ty, &[n + 3], ViewKind::Any);
        let mut case = sb
            .finish(Tolerance::Exact, LowerOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        case.kernel = kernel;
        cases.push(case);
    }
    check_all("generic kernels", &cases);
}

/// Prints: the emulator prints what the interpreter does, once per tile block (the order of
/// blocks is free): a value of every type (from a rank-0 tensor) in every conversion that
/// takes it, and a reduction, in a `for` loop and under an `if`. A GPU's prints go to its
/// stdout, where a test cannot read them.
#[test]
fn prints_match_the_interpreter() {
    let seed = seed("prints");
    let mut k = Ops::new("printer", seed);
    let pid = k.def(Op::BlockId(0));
    for ty in ALL {
        let mut format = format!("block %d {ty}:");
        let mut args = vec![pid];
        let t = random_tensor(&mut k.rng, ty, &[], ViewKind::Any);
        let p = k.cb.input_tensor(&format!("{ty}_value"), t, None);
        let padding = k.padding(ty);
        let v = k.def(Op::Load {
            view: View::Tiled {
                tensor: p,
                tile: Vec::new(),
                index: Vec::new(),
            },
            padding,
        });
        let convs: &[&str] = if ty.is_float() || ty == S::Tf32 {
            &["%f", "%e", "%g", "%.3f", "%+12.4e"]
        } else if matches!(ty, S::I64 | S::U64) {
            &["%lld", "%llu", "%llx"]
        } else {
            &["%d", "%u", "%x", "%08X", "%o"]
        };
        for c in convs {
            format.push(' ');
            format.push_str(c);
            args.push(v);
        }
        format.push('\n');
        k.cb.b.push(Stmt::Print { format, args });
    }
    // A reduction printed in each iteration of a loop, under a condition.
    let x = k.input(S::I32);
    let mut m = x;
    while !k.cb.b.ty(m).is_scalar() {
        m = k.def(Op::Reduce {
            value: m,
            axis: 0,
            combine: Combine::Max,
        });
    }
    let (s, e, st) = (
        k.konst(S::I32, Literal::Int(0), &[]),
        k.konst(S::I32, Literal::Int(3), &[]),
        k.konst(S::I32, Literal::Int(1), &[]),
    );
    let counter = k.cb.b.value(TileType::scalar(S::I32));
    k.cb.b.begin_block();
    let odd = {
        let one = k.konst(S::I32, Literal::Int(1), &[]);
        let bit = k.def(Op::Binary(BinaryOp::And, counter, one));
        k.def(Op::Compare(CmpOp::Eq, bit, one))
    };
    k.cb.b.begin_block();
    k.cb.b.push(Stmt::Print {
        format: "block %d iteration %d: max %d\n".into(),
        args: vec![pid, counter, m],
    });
    let then = k.cb.b.end_block(Vec::new());
    k.cb.b.push(Stmt::If {
        cond: odd,
        then,
        otherwise: Block::default(),
        results: Vec::new(),
    });
    let body = k.cb.b.end_block(Vec::new());
    k.cb.b.push(Stmt::For {
        counter,
        start: s,
        end: e,
        step: st,
        args: Vec::new(),
        inits: Vec::new(),
        body,
        results: Vec::new(),
    });
    k.out("x", x);
    let case = k.case(Tolerance::Exact);
    let (want, want_text) = interp::interpret(&case);
    let ctx = CudaContext::emulator();
    let compiled = device::compile(&case, &case.options).unwrap_or_else(|e| panic!("{e}"));
    let (got, got_text) =
        cuprum_emu::capture_prints(|| device::run_batch(&ctx, &[(&case, &compiled)], true));
    let got = got
        .into_iter()
        .next()
        .unwrap_or_else(|| Err(Fault::Failed("no outcome".into())));
    cuprum_tile_fuzz::compare::compare(&case, &want, &got)
        .unwrap_or_else(|m| panic!("{}", case.report(&m)));
    let sorted = |t: &str| {
        let mut l: Vec<String> = t.lines().map(str::to_owned).collect();
        l.sort();
        l
    };
    assert_eq!(
        sorted(&got_text),
        sorted(&want_text),
        "{}",
        case.report(&"prints")
    );
    let blocks = case.grid.iter().product::<u32>() as usize;
    assert_eq!(
        want_text.lines().count(),
        blocks * (ALL.len() + 1),
        "{want_text}"
    );
}

/// Each trap the tile IR defines stops the launch on the emulator as in the interpreter: an
/// integer division by zero, a signed `MIN / -1`, a failed assertion and a `for` step that is
/// not positive. (A GPU trap ends its context: these stay on the emulator.)
#[test]
fn traps_agree_with_the_interpreter() {
    let seed = seed("traps");
    let mut checked = 0;
    for (i, (what, class)) in [
        ("zero", TrapClass::DivideByZero),
        ("overflow", TrapClass::DivideOverflow),
        ("assert", TrapClass::Assert),
        ("step", TrapClass::Assert),
    ]
    .into_iter()
    .enumerate()
    {
        let mut k = Ops::new(&format!("trap_{what}"), seed + i as u64);
        let tile = k.tile.clone();
        let x = k.input(S::I32);
        match what {
            "zero" | "overflow" => {
                let (a, d) = if what == "zero" {
                    (Literal::Int(5), Literal::Int(0))
                } else {
                    (Literal::Int(i64::from(i32::MIN)), Literal::Int(-1))
                };
                let a = k.konst(S::I32, a, &tile);
                let d = k.konst(S::I32, d, &tile);
                let q = k.def(Op::Binary(BinaryOp::Div, a, d));
                let r = k.def(Op::Binary(BinaryOp::Add, q, x));
                k.out("q", r);
            }
            "assert" => {
                let b = k.def(Op::BlockId(0));
                let c = k.konst(S::I32, Literal::Int(0), &[]);
                let never = k.def(Op::Compare(CmpOp::Lt, b, c));
                k.cb.b.push(Stmt::Assert {
                    cond: never,
                    message: "a block index below zero".into(),
                });
                k.out("x", x);
            }
            _ => {
                let step =
                    k.cb.scalar("step", Constant::i32(0))
                        .unwrap_or_else(|e| panic!("{e}"));
                let (s, e) = (
                    k.konst(S::I32, Literal::Int(0), &[]),
                    k.konst(S::I32, Literal::Int(4), &[]),
                );
                let counter = k.cb.b.value(TileType::scalar(S::I32));
                k.cb.b.begin_block();
                let body = k.cb.b.end_block(Vec::new());
                k.cb.b.push(Stmt::For {
                    counter,
                    start: s,
                    end: e,
                    step,
                    args: Vec::new(),
                    inits: Vec::new(),
                    body,
                    results: Vec::new(),
                });
                k.out("x", x);
            }
        }
        let case = k.case(Tolerance::Exact);
        let want = case.reference();
        assert_eq!(want, Err(Fault::Trap(class)), "{}", case.report(&what));
        let compiled = device::compile(&case, &case.options).unwrap_or_else(|e| panic!("{e}"));
        for optimized in [true, false] {
            // A fresh emulator each time: a trap leaves a context unusable, as on a GPU.
            let ctx = CudaContext::emulator();
            let got = device::run_batch(&ctx, &[(&case, &compiled)], optimized)
                .pop()
                .unwrap_or_else(|| Err(Fault::Failed("no outcome".into())));
            cuprum_tile_fuzz::compare::compare(&case, &want, &got)
                .unwrap_or_else(|m| panic!("{}", case.report(&m)));
        }
        checked += 1;
    }
    assert_eq!(checked, 4);
}
