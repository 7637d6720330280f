//! Differential test of the whole pipeline: random kernels (integer and float arithmetic of
//! every kind, casts, comparisons, selects, variables, branches, counted loops, a local
//! array read and written at constant and dynamic positions, bounds-checked loads) run on
//! the emulator before and after [`cuprum_opt::PASSES`], on random inputs, and must leave
//! every buffer bit for bit the same. Each pass is also run alone on the same kernels.

mod common;

use common::{K, optimized, run};
use cuprum_ir::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use ScalarType as S;

const THREADS: u32 = 64;
const LEN: u64 = 64;
const INTS: [ScalarType; 6] = [S::U32, S::I32, S::U64, S::I64, S::U8, S::I16];

struct Gen {
    k: K,
    rng: SmallRng,
    /// Visible values, by type (a stack per scope).
    pool: Vec<(ScalarType, Value)>,
    x: u32,
    local: Value,
    acc: Var,
    facc: Var,
    depth: u32,
}

impl Gen {
    fn pick(&mut self, ty: ScalarType) -> Value {
        let matching: Vec<Value> = self
            .pool
            .iter()
            .filter(|(t, _)| *t == ty)
            .map(|&(_, v)| v)
            .collect();
        if matching.is_empty() || self.rng.random_bool(0.15) {
            let bits = common::random_bits(&mut self.rng, ty);
            let v = self.k.c(Constant::new(ty, bits));
            self.pool.push((ty, v));
            return v;
        }
        matching[self.rng.random_range(0..matching.len())]
    }

    fn int_ty(&mut self) -> ScalarType {
        INTS[self.rng.random_range(0..INTS.len())]
    }

    fn push(&mut self, v: Value) -> Value {
        let ty = self.k.b.type_of(v);
        self.pool.push((ty, v));
        v
    }

    /// One random pure definition.
    fn def(&mut self) {
        let ops = [
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::And,
            BinaryOp::Or,
            BinaryOp::Xor,
            BinaryOp::Min,
            BinaryOp::Max,
        ];
        match self.rng.random_range(0..13) {
            0..=3 => {
                let ty = self.int_ty();
                let (a, b) = (self.pick(ty), self.pick(ty));
                let op = ops[self.rng.random_range(0..ops.len())];
                let v = self.k.bin(op, a, b);
                self.push(v);
            }
            4 => {
                // Shifts by anything (taken modulo the width), division by a safe constant.
                let ty = self.int_ty();
                let a = self.pick(ty);
                let v = if self.rng.random_bool(0.5) {
                    let s = self.pick(S::U32);
                    let op = if self.rng.random_bool(0.5) {
                        BinaryOp::Shl
                    } else {
                        BinaryOp::Shr
                    };
                    self.k.bin(op, a, s)
                } else {
                    let d = self.k.c(Constant::new(ty, self.rng.random_range(1..9)));
                    let op = if self.rng.random_bool(0.5) {
                        BinaryOp::Div
                    } else {
                        BinaryOp::Rem
                    };
                    self.k.bin(op, a, d)
                };
                self.push(v);
            }
            5 => {
                let (from, to) = (self.int_ty(), self.int_ty());
                let a = self.pick(from);
                let v = self.k.cast(a, to);
                self.push(v);
                if self.rng.random_bool(0.3) {
                    let back = self.k.cast(v, from);
                    self.push(back);
                }
            }
            6 => {
                let ty = if self.rng.random_bool(0.7) {
                    self.int_ty()
                } else {
                    S::F32
                };
                let (a, b) = (self.pick(ty), self.pick(ty));
                let c = [
                    CmpOp::Eq,
                    CmpOp::Ne,
                    CmpOp::Lt,
                    CmpOp::Le,
                    CmpOp::Gt,
                    CmpOp::Ge,
                ][self.rng.random_range(0..6)];
                let v = self.k.cmp(c, a, b);
                self.push(v);
            }
            7 => {
                let ty = if self.rng.random_bool(0.7) {
                    self.int_ty()
                } else {
                    S::F32
                };
                let cond = self.pick(S::Bool);
                let (t, f) = (self.pick(ty), self.pick(ty));
                let v = self.k.op(Op::Select {
                    cond,
                    if_true: t,
                    if_false: f,
                });
                self.push(v);
            }
            8 => {
                let (a, b) = (self.pick(S::F32), self.pick(S::F32));
                let op = [
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Min,
                    BinaryOp::Max,
                ][self.rng.random_range(0..6)];
                let v = self.k.bin(op, a, b);
                self.push(v);
            }
            9 => {
                let a = self.pick(S::F32);
                let u = [
                    UnaryOp::Neg,
                    UnaryOp::Abs,
                    UnaryOp::Sqrt,
                    UnaryOp::Floor,
                    UnaryOp::Round,
                ][self.rng.random_range(0..5)];
                let v = self.k.op(Op::Unary(u, a));
                self.push(v);
                let (b, c) = (self.pick(S::F32), self.pick(S::F32));
                let m = self.k.op(Op::Ternary(TernaryOp::MulAdd, a, b, c));
                self.push(m);
            }
            10 => {
                // Between ints and floats, both ways (saturating, NaN to 0).
                let ty = self.int_ty();
                if self.rng.random_bool(0.5) {
                    let a = self.pick(ty);
                    let v = self.k.cast(a, S::F32);
                    self.push(v);
                } else {
                    let a = self.pick(S::F32);
                    let v = self.k.cast(a, ty);
                    self.push(v);
                }
            }
            11 => self.bounded(),
            _ => {
                let ty = self.int_ty();
                let a = self.pick(ty);
                let u = if self.rng.random_bool(0.5) {
                    UnaryOp::Neg
                } else {
                    UnaryOp::Not
                };
                let v = self.k.op(Op::Unary(u, a));
                self.push(v);
            }
        }
    }

    /// A small value whose exact range the analysis knows, `((a & m) + b % d) * c` (in `U32`
    /// or widened to `U64`), compared with a constant at or next to its largest value: the
    /// comparison is decided by ranges exactly when it should be, and narrowing applies.
    fn bounded(&mut self) {
        let (a, b) = (self.pick(S::U32), self.pick(S::U32));
        let m = (1u64 << self.rng.random_range(1..3)) - 1;
        let d = self.rng.random_range(1..4u64);
        let c = self.rng.random_range(1..40u64);
        let wide = self.rng.random_bool(0.5);
        let ty = if wide { S::U64 } else { S::U32 };
        let (a, b) = if wide {
            (self.k.cast(a, S::U64), self.k.cast(b, S::U64))
        } else {
            (a, b)
        };
        let mc = self.k.c(Constant::new(ty, m));
        let dc = self.k.c(Constant::new(ty, d));
        let cc = self.k.c(Constant::new(ty, c));
        let am = self.k.bin(BinaryOp::And, a, mc);
        let bd = self.k.bin(BinaryOp::Rem, b, dc);
        let s = self.k.add(am, bd);
        let w = self.k.mul(s, cc);
        self.push(w);
        let max = (m + d - 1) * c;
        let limit = max + self.rng.random_range(0..2);
        let l = self.k.c(Constant::new(ty, limit));
        let op = [CmpOp::Lt, CmpOp::Le, CmpOp::Ge, CmpOp::Gt][self.rng.random_range(0..4)];
        let v = self.k.cmp(op, w, l);
        self.push(v);
    }

    /// The local address of element `e & 3` of the array, for a `U32` `e`.
    fn local_addr(&mut self, constant: bool) -> Value {
        let off = if constant {
            let e = self.rng.random_range(0..4u32);
            self.k.u32(4 * e)
        } else {
            let e = self.pick(S::U32);
            let three = self.k.u32(3);
            let j = self.k.bin(BinaryOp::And, e, three);
            let four = self.k.u32(4);
            self.k.mul(j, four)
        };
        self.k.add(self.local, off)
    }

    fn stmt(&mut self) {
        match self.rng.random_range(0..16) {
            0..=6 => self.def(),
            7 => {
                let v = self.pick(S::U32);
                let a = self.k.op(Op::ReadVar(self.acc));
                let s = self.k.bin(BinaryOp::Xor, a, v);
                let m = self.k.u32(0x9e37_79b9);
                let s = self.k.mul(s, m);
                self.k.b.push(Stmt::WriteVar {
                    var: self.acc,
                    value: s,
                });
            }
            8 => {
                let v = self.pick(S::F32);
                let a = self.k.op(Op::ReadVar(self.facc));
                let s = self.k.add(a, v);
                self.k.b.push(Stmt::WriteVar {
                    var: self.facc,
                    value: s,
                });
            }
            9 => {
                let constant = self.rng.random_bool(0.8);
                let addr = self.local_addr(constant);
                let value = self.pick(S::U32);
                self.k.b.push(Stmt::Store {
                    space: AddressSpace::Local,
                    addr,
                    value,
                });
            }
            10 => {
                let constant = self.rng.random_bool(0.8);
                let addr = self.local_addr(constant);
                let v = self.k.op(Op::Load {
                    space: AddressSpace::Local,
                    ty: S::U32,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                });
                self.push(v);
            }
            11 => {
                // x[v % LEN], bounds-checked as the front end does (twice, sometimes).
                let v = self.pick(S::U32);
                let w = self.k.cast(v, S::U64);
                let len = self.k.u64(LEN);
                let j = self.k.bin(BinaryOp::Rem, w, len);
                for _ in 0..self.rng.random_range(1..3) {
                    self.k.bounds_check(self.x, j);
                }
                let l = self.k.load(self.x, S::U32, j);
                self.push(l);
            }
            12..=13 if self.depth < 3 => {
                let cond = self.pick(S::Bool);
                let mark = self.pool.len();
                self.depth += 1;
                self.k.b.begin_block();
                self.block(3);
                let then = self.k.b.end_block();
                self.pool.truncate(mark);
                self.k.b.begin_block();
                if self.rng.random_bool(0.5) {
                    self.block(2);
                }
                let otherwise = self.k.b.end_block();
                self.pool.truncate(mark);
                self.depth -= 1;
                self.k.b.push(Stmt::If {
                    cond,
                    then,
                    otherwise,
                });
            }
            14..=15 if self.depth < 2 => {
                let trips = self.rng.random_range(0..5);
                let step = self.rng.random_range(1..3);
                let mark = self.pool.len();
                self.depth += 1;
                self.k.counted_loop(0, trips * step, step, |k, j| {
                    let mut g = Gen {
                        k: std::mem::replace(k, K::new("tmp")),
                        rng: SmallRng::seed_from_u64(self.rng.random()),
                        pool: std::mem::take(&mut self.pool),
                        x: self.x,
                        local: self.local,
                        acc: self.acc,
                        facc: self.facc,
                        depth: self.depth,
                    };
                    g.pool.push((S::U32, j));
                    g.block(3);
                    *k = g.k;
                    self.pool = g.pool;
                });
                self.pool.truncate(mark);
                self.depth -= 1;
            }
            _ => self.def(),
        }
    }

    fn block(&mut self, n: usize) {
        for _ in 0..n {
            self.stmt();
        }
    }
}

fn random_kernel(seed: u64) -> Kernel {
    let mut k = K::new("fuzz");
    let x = k.slice("x", S::U32, SliceAccess::ReadOnly);
    let f = k.slice("f", S::F32, SliceAccess::ReadOnly);
    let y = k.slice("y", S::U32, SliceAccess::Disjoint);
    let yf = k.slice("yf", S::F32, SliceAccess::Disjoint);
    let n = k.scalar("n", S::U32);
    let i = k.global_id();
    let t = k.tid();
    let xi = k.load(x, S::U32, i);
    let fi = k.load(f, S::F32, i);
    let arr = k.b.local_array(ArrayDecl {
        name: "a".into(),
        elem: S::U32,
        len: 4,
    });
    let local = k.op(Op::LocalAddr(arr));
    let acc = k.b.var("acc", S::U32);
    let facc = k.b.var("facc", S::F32);
    let mut g = Gen {
        k,
        rng: SmallRng::seed_from_u64(seed),
        pool: vec![
            (S::U32, t),
            (S::U32, xi),
            (S::U32, n),
            (S::U64, i),
            (S::F32, fi),
        ],
        x,
        local,
        acc,
        facc,
        depth: 0,
    };
    // The array is written before anything reads it (its initial contents are unspecified).
    for e in 0..4u32 {
        let off = g.k.u32(4 * e);
        let addr = g.k.add(local, off);
        let v = g.pick(S::U32);
        g.k.b.push(Stmt::Store {
            space: AddressSpace::Local,
            addr,
            value: v,
        });
    }
    let zero = g.k.u32(0);
    g.k.b.push(Stmt::WriteVar {
        var: acc,
        value: zero,
    });
    let fzero = g.k.f32(0.0);
    g.k.b.push(Stmt::WriteVar {
        var: facc,
        value: fzero,
    });
    g.block(24);
    // Everything of each type flows into the outputs.
    let mut out = g.k.op(Op::ReadVar(acc));
    for (ty, v) in g.pool.clone() {
        let w = match ty {
            S::U32 => v,
            S::Bool => {
                let one = g.k.u32(1);
                let zero = g.k.u32(0);
                g.k.op(Op::Select {
                    cond: v,
                    if_true: one,
                    if_false: zero,
                })
            }
            S::F32 => g.k.op(Op::Bitcast {
                value: v,
                to: S::U32,
            }),
            _ => g.k.cast(v, S::U32),
        };
        let m = g.k.u32(31);
        out = g.k.mul(out, m);
        out = g.k.add(out, w);
    }
    for e in 0..4u32 {
        let off = g.k.u32(4 * e);
        let addr = g.k.add(local, off);
        let v = g.k.op(Op::Load {
            space: AddressSpace::Local,
            ty: S::U32,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        });
        out = g.k.bin(BinaryOp::Xor, out, v);
    }
    g.k.store(y, i, out);
    let fa = g.k.op(Op::ReadVar(facc));
    g.k.store(yf, i, fa);
    g.k.finish()
}

#[test]
fn random_kernels_behave_the_same_after_every_pass_and_all_of_them() {
    let mut promoted = 0;
    let mut unrolled = 0;
    for seed in 0..150 {
        let kernel = random_kernel(seed);
        let expected: Vec<_> = (0..3).map(|s| run(&kernel, s, THREADS, 32, LEN)).collect();
        for (s, e) in expected.iter().enumerate() {
            if let Err(err) = e {
                panic!(
                    "seed {seed}/{s}: the random kernel fails: {err}\n{}",
                    print_kernel(&kernel)
                );
            }
        }
        let check = |passes: &[cuprum_opt::Pass], what: &str| {
            let opt = optimized(&kernel, passes);
            for (s, e) in expected.iter().enumerate() {
                let got = run(&opt, s as u64, THREADS, 32, LEN);
                assert!(
                    &got == e,
                    "seed {seed}/{s}: {what} changed the results\nbefore:\n{}\nafter:\n{}",
                    print_kernel(&kernel),
                    print_kernel(&opt)
                );
            }
            opt
        };
        for pass in cuprum_opt::PASSES {
            check(std::slice::from_ref(pass), pass.name);
        }
        let opt = check(cuprum_opt::PASSES, "the pipeline");
        promoted += usize::from(opt.locals.is_empty());
        unrolled += usize::from(!print_kernel(&opt).contains("loop"));
    }
    eprintln!("promoted {promoted}, unrolled {unrolled}");
    // The generator exercises what it is meant to: most kernels lose their array.
    assert!(
        promoted > 30,
        "only {promoted} kernels had their array promoted"
    );
    assert!(unrolled > 30, "only {unrolled} kernels lost their loops");
}
