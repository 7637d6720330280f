//! Shared helpers of the optimizer's tests: a terse kernel builder, and the semantic check
//! that every test ends with: run the kernel on the emulator before and after the passes, on
//! random inputs, and compare every byte of every buffer (or the errors).

#![allow(dead_code)]

use cuprum_emu::{ArgValue, LaunchDims, Memory, launch};
use cuprum_ir::*;
use cuprum_opt::Pass;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// `KernelBuilder` with one short method per operation; panics on ill-typed IR (a test bug).
pub struct K {
    pub b: KernelBuilder,
}

impl K {
    pub fn new(name: &str) -> Self {
        Self {
            b: KernelBuilder::new(name),
        }
    }
    pub fn op(&mut self, op: Op) -> Value {
        match self.b.def(op) {
            Ok(v) => v,
            Err(e) => panic!("test kernel is ill-typed: {e}"),
        }
    }
    pub fn slice(&mut self, name: &str, elem: ScalarType, access: SliceAccess) -> u32 {
        self.b.param(name, ParamKind::Slice { elem, access })
    }
    pub fn scalar(&mut self, name: &str, ty: ScalarType) -> Value {
        let i = self.b.param(name, ParamKind::Scalar(ty));
        self.op(Op::Param(i))
    }
    pub fn c(&mut self, c: Constant) -> Value {
        self.b.constant(c)
    }
    pub fn u32(&mut self, v: u32) -> Value {
        self.c(Constant::u32(v))
    }
    pub fn u64(&mut self, v: u64) -> Value {
        self.c(Constant::u64(v))
    }
    pub fn i32(&mut self, v: i32) -> Value {
        self.c(Constant::i32(v))
    }
    pub fn f32(&mut self, v: f32) -> Value {
        self.c(Constant::f32(v))
    }
    pub fn bin(&mut self, b: BinaryOp, l: Value, r: Value) -> Value {
        self.op(Op::Binary(b, l, r))
    }
    pub fn add(&mut self, l: Value, r: Value) -> Value {
        self.bin(BinaryOp::Add, l, r)
    }
    pub fn mul(&mut self, l: Value, r: Value) -> Value {
        self.bin(BinaryOp::Mul, l, r)
    }
    pub fn cmp(&mut self, c: CmpOp, l: Value, r: Value) -> Value {
        self.op(Op::Compare(c, l, r))
    }
    pub fn cast(&mut self, value: Value, to: ScalarType) -> Value {
        self.op(Op::Cast { value, to })
    }
    pub fn tid(&mut self) -> Value {
        self.op(Op::Special(Special::ThreadIdx(Dim::X)))
    }
    /// `blockIdx.x * blockDim.x + threadIdx.x` as `U64`.
    pub fn global_id(&mut self) -> Value {
        let b = self.op(Op::Special(Special::BlockIdx(Dim::X)));
        let d = self.op(Op::Special(Special::BlockDim(Dim::X)));
        let t = self.tid();
        let bd = self.mul(b, d);
        let i = self.add(bd, t);
        self.cast(i, ScalarType::U64)
    }
    /// The global address of element `index` (`U64`) of slice `slice`.
    pub fn elem_addr(&mut self, slice: u32, elem: ScalarType, index: Value) -> Value {
        let base = self.op(Op::SliceBase(slice));
        let size = self.u64(u64::from(elem.size_bytes()));
        let off = self.mul(index, size);
        self.add(base, off)
    }
    pub fn load(&mut self, slice: u32, elem: ScalarType, index: Value) -> Value {
        let addr = self.elem_addr(slice, elem, index);
        self.op(Op::Load {
            space: AddressSpace::Global,
            ty: elem,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }
    pub fn store(&mut self, slice: u32, index: Value, value: Value) {
        let elem = self.b.type_of(value);
        let addr = self.elem_addr(slice, elem, index);
        self.b.push(Stmt::Store {
            space: AddressSpace::Global,
            addr,
            value,
        });
    }
    /// `if index < len {} else { trap }`, as the front end checks slice accesses.
    pub fn bounds_check(&mut self, slice: u32, index: Value) {
        let len = self.op(Op::SliceLen(slice));
        let ok = self.cmp(CmpOp::Lt, index, len);
        self.b.begin_block();
        let then = self.b.end_block();
        self.b.begin_block();
        self.b.push(Stmt::Trap(TrapKind::BoundsCheck {
            index,
            len,
            site: "x[i]".into(),
        }));
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond: ok,
            then,
            otherwise,
        });
    }
    /// Pushes `if cond { then } else { otherwise }` with the two bodies built by closures.
    pub fn if_else(
        &mut self,
        cond: Value,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.b.begin_block();
        then(self);
        let t = self.b.end_block();
        self.b.begin_block();
        otherwise(self);
        let o = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then: t,
            otherwise: o,
        });
    }
    /// `$k = start; loop { k = $k; if k < end {} else break; $k = k + step; body(k) }`.
    pub fn counted_loop(
        &mut self,
        start: u32,
        end: u32,
        step: u32,
        body: impl FnOnce(&mut Self, Value),
    ) {
        let var = self.b.var("k", ScalarType::U32);
        let s = self.u32(start);
        self.b.push(Stmt::WriteVar { var, value: s });
        let e = self.u32(end);
        let st = self.u32(step);
        self.b.begin_block();
        let k = self.op(Op::ReadVar(var));
        let more = self.cmp(CmpOp::Lt, k, e);
        self.if_else(more, |_| {}, |s| s.b.push(Stmt::Break));
        let next = self.add(k, st);
        self.b.push(Stmt::WriteVar { var, value: next });
        body(self, k);
        let body = self.b.end_block();
        self.b.push(Stmt::Loop { body });
    }
    pub fn finish(self) -> Kernel {
        let k = self.b.finish();
        if let Err(e) = validate_kernel(&k) {
            panic!("test kernel is invalid: {e}\n{}", print_kernel(&k));
        }
        k
    }
}

/// The kernel after `passes` (validated after each one, as the library does in tests).
pub fn optimized(kernel: &Kernel, passes: &[Pass]) -> Kernel {
    let mut k = kernel.clone();
    cuprum_opt::run_passes(&mut k, passes);
    if let Err(e) = validate_kernel(&k) {
        panic!("optimized kernel is invalid: {e}\n{}", print_kernel(&k));
    }
    k
}

/// The passes called `names`, in order.
pub fn passes(names: &[&str]) -> Vec<Pass> {
    names
        .iter()
        .map(|n| match cuprum_opt::PASSES.iter().find(|p| p.name == *n) {
            Some(p) => *p,
            None => panic!("no pass {n}"),
        })
        .collect()
}

/// Random bits for an element of type `ty`: integers uniform, floats mostly ordinary
/// numbers with the odd zero, infinity and NaN.
pub fn random_bits(rng: &mut SmallRng, ty: ScalarType) -> u64 {
    match ty {
        ScalarType::F32 => {
            let f: f32 = match rng.random_range(0..20) {
                0 => 0.0,
                1 => -0.0,
                2 => f32::INFINITY,
                3 => f32::NAN,
                4 => rng.random_range(-4i32..5) as f32,
                _ => rng.random_range(-1000.0f32..1000.0),
            };
            u64::from(f.to_bits())
        }
        ScalarType::F64 => rng.random_range(-1e6f64..1e6).to_bits(),
        ScalarType::Bool => rng.random_range(0..2),
        t => {
            // Small values half of the time, so that comparisons go both ways.
            let bits = if rng.random_bool(0.5) {
                rng.random_range(0..64u64)
            } else {
                rng.random::<u64>()
            };
            Constant::new(t, bits).bits
        }
    }
}

/// What a launch did: every buffer's bytes afterwards, or the error.
pub type Outcome = Result<Vec<Vec<u8>>, String>;

/// Runs `kernel` on the emulator with `threads` threads in blocks of `block`, every slice
/// parameter `len` elements of random bits from `seed`, scalars random too.
pub fn run(kernel: &Kernel, seed: u64, threads: u32, block: u32, len: u64) -> Outcome {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mem = Memory::new();
    let mut args = Vec::new();
    let mut buffers = Vec::new();
    for p in &kernel.params {
        match p.kind {
            ParamKind::Scalar(ty) => args.push(ArgValue::Scalar(random_bits(&mut rng, ty))),
            ParamKind::Slice { elem, .. } => {
                let size = elem.size_bytes() as usize;
                let mut bytes = Vec::with_capacity(size * len as usize);
                for _ in 0..len {
                    let b = random_bits(&mut rng, elem).to_le_bytes();
                    bytes.extend_from_slice(&b[..size]);
                }
                let base = mem.alloc(bytes.len().max(1)).map_err(|e| e.to_string())?;
                mem.write(base, &bytes).map_err(|e| e.to_string())?;
                buffers.push((base, bytes.len()));
                args.push(ArgValue::Slice { base, len });
            }
            ParamKind::TensorMap { .. } => {
                return Err("the optimizer's tests build no tensor maps".into());
            }
        }
    }
    let dims = LaunchDims {
        grid: [threads.div_ceil(block), 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
    };
    launch(&mem, kernel, dims, &args).map_err(|e| e.to_string())?;
    buffers
        .into_iter()
        .map(|(base, n)| {
            let mut out = vec![0u8; n];
            mem.read(base, &mut out).map_err(|e| e.to_string())?;
            Ok(out)
        })
        .collect()
}

/// Runs `kernel` before and after `passes` on several random inputs and asserts that every
/// buffer ends bit for bit the same, the launches succeeding. Returns the optimized kernel.
pub fn same_behaviour(
    kernel: &Kernel,
    passes: &[Pass],
    threads: u32,
    block: u32,
    len: u64,
) -> Kernel {
    compare(kernel, passes, threads, block, len, true)
}

/// As [`same_behaviour`], for kernels whose launches may fail: they must fail the same way.
pub fn same_outcome(
    kernel: &Kernel,
    passes: &[Pass],
    threads: u32,
    block: u32,
    len: u64,
) -> Kernel {
    compare(kernel, passes, threads, block, len, false)
}

fn compare(
    kernel: &Kernel,
    passes: &[Pass],
    threads: u32,
    block: u32,
    len: u64,
    must_succeed: bool,
) -> Kernel {
    let opt = optimized(kernel, passes);
    for seed in 0..4 {
        let a = run(kernel, seed, threads, block, len);
        if must_succeed && let Err(e) = &a {
            panic!("the test kernel fails: {e}\n{}", print_kernel(kernel));
        }
        let b = run(&opt, seed, threads, block, len);
        // Error messages name IR values (`%12`), which the passes renumber.
        let (a, b) = (a.map_err(|e| unnumbered(&e)), b.map_err(|e| unnumbered(&e)));
        assert_eq!(
            a,
            b,
            "behaviour changed (seed {seed})\nbefore:\n{}\nafter:\n{}",
            print_kernel(kernel),
            print_kernel(&opt)
        );
    }
    opt
}

/// `text` with every value number (`%12`) replaced by `%_`.
fn unnumbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            let mut digits = false;
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
                digits = true;
            }
            if digits {
                out.push('_');
            }
        }
    }
    out
}

/// Whether the printed kernel contains `needle`.
pub fn has(kernel: &Kernel, needle: &str) -> bool {
    print_kernel(kernel).contains(needle)
}

/// How many statements (nested ones included) `kernel` has.
pub fn size(kernel: &Kernel) -> usize {
    print_kernel(kernel).lines().count()
}
