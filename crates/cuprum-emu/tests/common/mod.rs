//! Helpers shared by the emulator's integration tests: a thin layer over `KernelBuilder` that
//! unwraps typing errors (a test kernel that fails to type is a test bug), and host-side
//! helpers to move typed data in and out of the emulator's memory.

#![allow(dead_code)]

use cuprum_emu::{ArgValue, LaunchDims, Memory};
use cuprum_ir::*;
use half::{bf16, f16};

/// A kernel under construction.
pub struct K {
    pub b: KernelBuilder,
}

impl K {
    pub fn new(name: &str) -> Self {
        Self {
            b: KernelBuilder::new(name),
        }
    }

    pub fn slice(&mut self, name: &str, elem: ScalarType, access: SliceAccess) -> u32 {
        self.b.param(name, ParamKind::Slice { elem, access })
    }

    pub fn scalar(&mut self, name: &str, ty: ScalarType) -> u32 {
        self.b.param(name, ParamKind::Scalar(ty))
    }

    pub fn op(&mut self, op: Op) -> Value {
        match self.b.def(op.clone()) {
            Ok(v) => v,
            Err(e) => panic!("test kernel does not type: {op:?}: {e}"),
        }
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
    pub fn bool(&mut self, v: bool) -> Value {
        self.c(Constant::bool(v))
    }

    pub fn special(&mut self, s: Special) -> Value {
        self.op(Op::Special(s))
    }
    pub fn param(&mut self, index: u32) -> Value {
        self.op(Op::Param(index))
    }
    pub fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        self.op(Op::Binary(op, a, b))
    }
    pub fn un(&mut self, op: UnaryOp, a: Value) -> Value {
        self.op(Op::Unary(op, a))
    }
    pub fn add(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Add, a, b)
    }
    pub fn mul(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Mul, a, b)
    }
    pub fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        self.op(Op::Compare(op, a, b))
    }
    pub fn cast(&mut self, value: Value, to: ScalarType) -> Value {
        self.op(Op::Cast { value, to })
    }
    pub fn select(&mut self, cond: Value, if_true: Value, if_false: Value) -> Value {
        self.op(Op::Select {
            cond,
            if_true,
            if_false,
        })
    }
    pub fn read(&mut self, var: Var) -> Value {
        self.op(Op::ReadVar(var))
    }
    pub fn write(&mut self, var: Var, value: Value) {
        self.b.push(Stmt::WriteVar { var, value });
    }
    pub fn var(&mut self, name: &str, ty: ScalarType, init: Value) -> Var {
        let v = self.b.var(name, ty);
        self.write(v, init);
        v
    }
    pub fn push(&mut self, s: Stmt) {
        self.b.push(s);
    }

    /// `threadIdx.x` as u32.
    pub fn tid(&mut self) -> Value {
        self.special(Special::ThreadIdx(Dim::X))
    }

    /// `blockIdx.x * blockDim.x + threadIdx.x` as u64.
    pub fn global_id(&mut self) -> Value {
        let b = self.special(Special::BlockIdx(Dim::X));
        let d = self.special(Special::BlockDim(Dim::X));
        let t = self.tid();
        let bd = self.mul(b, d);
        let i = self.add(bd, t);
        self.cast(i, ScalarType::U64)
    }

    pub fn len(&mut self, param: u32) -> Value {
        self.op(Op::SliceLen(param))
    }

    fn elem_of(&self, param: u32) -> ScalarType {
        match self.b.kernel().params[param as usize].kind {
            ParamKind::Slice { elem, .. } => elem,
            ParamKind::Scalar(t) => panic!("parameter {param} is a {t} scalar"),
            ParamKind::TensorMap { .. } => panic!("parameter {param} is a tensor map"),
        }
    }

    /// Address of element `idx` (u64) of slice parameter `param`.
    pub fn elem_addr(&mut self, param: u32, idx: Value) -> Value {
        let size = self.elem_of(param).size_bytes() as u64;
        let base = self.op(Op::SliceBase(param));
        let s = self.u64(size);
        let off = self.mul(idx, s);
        self.add(base, off)
    }

    pub fn load(&mut self, param: u32, idx: Value) -> Value {
        let ty = self.elem_of(param);
        let addr = self.elem_addr(param, idx);
        self.op(Op::Load {
            space: AddressSpace::Global,
            ty,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }

    pub fn store(&mut self, param: u32, idx: Value, value: Value) {
        let addr = self.elem_addr(param, idx);
        self.push(Stmt::Store {
            space: AddressSpace::Global,
            addr,
            value,
        });
    }

    /// Address of element `idx` (u32) of shared array `array`.
    pub fn shared_addr(&mut self, array: u32, idx: Value) -> Value {
        let size = self.b.kernel().shared[array as usize].elem.size_bytes();
        let base = self.op(Op::SharedAddr(array));
        let s = self.u32(size);
        let off = self.mul(idx, s);
        self.add(base, off)
    }

    pub fn load_shared(&mut self, array: u32, idx: Value) -> Value {
        let ty = self.b.kernel().shared[array as usize].elem;
        let addr = self.shared_addr(array, idx);
        self.op(Op::Load {
            space: AddressSpace::Shared,
            ty,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }

    pub fn store_shared(&mut self, array: u32, idx: Value, value: Value) {
        let addr = self.shared_addr(array, idx);
        self.push(Stmt::Store {
            space: AddressSpace::Shared,
            addr,
            value,
        });
    }

    pub fn barrier(&mut self) {
        self.push(Stmt::Barrier);
    }

    pub fn if_(&mut self, cond: Value, then: impl FnOnce(&mut K)) {
        self.if_else(cond, then, |_| {});
    }

    pub fn if_else(
        &mut self,
        cond: Value,
        then: impl FnOnce(&mut K),
        otherwise: impl FnOnce(&mut K),
    ) {
        self.b.begin_block();
        then(self);
        let then = self.b.end_block();
        self.b.begin_block();
        otherwise(self);
        let otherwise = self.b.end_block();
        self.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }

    pub fn loop_(&mut self, body: impl FnOnce(&mut K)) {
        self.b.begin_block();
        body(self);
        let body = self.b.end_block();
        self.push(Stmt::Loop { body });
    }

    /// `if i < len(param) { body }` with `i` the global thread id.
    pub fn guarded(&mut self, param: u32, body: impl FnOnce(&mut K, Value)) {
        let i = self.global_id();
        let n = self.len(param);
        let ok = self.cmp(CmpOp::Lt, i, n);
        self.if_(ok, |k| body(k, i));
    }

    pub fn finish(self) -> Kernel {
        let k = self.b.finish();
        if let Err(e) = validate_kernel(&k) {
            panic!("test kernel is invalid: {e}\n{}", print_kernel(&k));
        }
        k
    }
}

/// A host element type with its IR type.
pub trait Elem: Copy + std::fmt::Debug + PartialEq {
    const TY: ScalarType;
    fn to_bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
}

macro_rules! elem_int {
    ($($t:ty => $u:ty, $s:ident);*) => {$(
        impl Elem for $t {
            const TY: ScalarType = ScalarType::$s;
            fn to_bits(self) -> u64 { self as $u as u64 }
            fn from_bits(b: u64) -> Self { b as $u as $t }
        }
    )*};
}
elem_int!(u8 => u8, U8; u16 => u16, U16; u32 => u32, U32; u64 => u64, U64;
          i8 => u8, I8; i16 => u16, I16; i32 => u32, I32; i64 => u64, I64);

impl Elem for bool {
    const TY: ScalarType = ScalarType::Bool;
    fn to_bits(self) -> u64 {
        self as u64
    }
    fn from_bits(b: u64) -> Self {
        b != 0
    }
}
impl Elem for f32 {
    const TY: ScalarType = ScalarType::F32;
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}
impl Elem for f64 {
    const TY: ScalarType = ScalarType::F64;
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
}
impl Elem for f16 {
    const TY: ScalarType = ScalarType::F16;
    fn to_bits(self) -> u64 {
        f16::to_bits(self) as u64
    }
    fn from_bits(b: u64) -> Self {
        f16::from_bits(b as u16)
    }
}
impl Elem for bf16 {
    const TY: ScalarType = ScalarType::BF16;
    fn to_bits(self) -> u64 {
        bf16::to_bits(self) as u64
    }
    fn from_bits(b: u64) -> Self {
        bf16::from_bits(b as u16)
    }
}

/// Raw values of type `ty` (as zero-extended bits) to little-endian bytes.
pub fn bits_to_bytes(ty: ScalarType, bits: &[u64]) -> Vec<u8> {
    let size = ty.size_bytes() as usize;
    bits.iter()
        .flat_map(|b| b.to_le_bytes().into_iter().take(size))
        .collect()
}

pub fn bytes_to_bits(ty: ScalarType, bytes: &[u8]) -> Vec<u64> {
    let size = ty.size_bytes() as usize;
    bytes
        .chunks(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// Uploads raw bits of type `ty`; returns the slice argument.
pub fn upload_bits(mem: &Memory, ty: ScalarType, bits: &[u64]) -> ArgValue {
    let bytes = bits_to_bytes(ty, bits);
    let base = mem.alloc(bytes.len()).expect("alloc");
    mem.write(base, &bytes).expect("write");
    ArgValue::Slice {
        base,
        len: bits.len() as u64,
    }
}

pub fn upload<T: Elem>(mem: &Memory, data: &[T]) -> ArgValue {
    let bits: Vec<u64> = data.iter().map(|x| x.to_bits()).collect();
    upload_bits(mem, T::TY, &bits)
}

/// An output buffer of `n` elements of `ty`, poisoned with a byte pattern no kernel writes by
/// accident (`cuprum_testkit::poison::BYTE`).
pub fn output(mem: &Memory, ty: ScalarType, n: usize) -> ArgValue {
    let bytes = n * ty.size_bytes() as usize;
    let base = mem.alloc(bytes).expect("alloc");
    mem.fill(base, bytes, cuprum_testkit::poison::BYTE)
        .expect("fill");
    ArgValue::Slice {
        base,
        len: n as u64,
    }
}

pub fn download_bits(mem: &Memory, ty: ScalarType, arg: ArgValue) -> Vec<u64> {
    let ArgValue::Slice { base, len } = arg else {
        panic!("not a slice")
    };
    let mut bytes = vec![0u8; len as usize * ty.size_bytes() as usize];
    mem.read(base, &mut bytes).expect("read");
    bytes_to_bits(ty, &bytes)
}

pub fn download<T: Elem>(mem: &Memory, arg: ArgValue) -> Vec<T> {
    download_bits(mem, T::TY, arg)
        .into_iter()
        .map(T::from_bits)
        .collect()
}

/// A 1-D launch of at least `n` threads in blocks of `block`.
pub fn dims1(n: u64, block: u32) -> LaunchDims {
    LaunchDims {
        grid: [n.div_ceil(block as u64).max(1) as u32, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

pub fn scalar<T: Elem>(x: T) -> ArgValue {
    ArgValue::Scalar(x.to_bits())
}
