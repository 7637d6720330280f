//! Shared helpers of the integration tests: a small kernel-building DSL over
//! `cuprum_ir::KernelBuilder`, and writing + assembling a module for both targets (with the
//! `ptxas` policy of `cuprum_testkit::ptxas`).
#![allow(dead_code)]

use cuprum_ir::*;
use cuprum_ptx::{Target, write_module};
use cuprum_testkit::{numbered, ptxas};

pub const TARGETS: [Target; 2] = [Target::Sm80, Target::Sm90];

/// Writes `module` for both targets, checks the header, and assembles each with ptxas (when
/// available, see `cuprum_testkit::ptxas::check`). Returns the `sm_80` text.
pub fn write_and_assemble(module: &Module) -> String {
    let mut first = String::new();
    for target in TARGETS {
        let ptx = write_module(module, target).unwrap_or_else(|e| panic!("{e}"));
        assert!(ptx.contains(".version 8.0\n"), "{ptx}");
        assert!(
            ptx.contains(&format!(".target {}\n", target.name())),
            "{ptx}"
        );
        assert!(ptx.contains(".address_size 64\n"), "{ptx}");
        for k in &module.kernels {
            assert!(
                ptx.contains(&format!(".visible .entry {}(", k.name)),
                "{ptx}"
            );
        }
        if let Err(e) = ptxas::check(&ptx, target.name()) {
            panic!("{e}\n--- PTX ---\n{}", numbered(&ptx));
        }
        if first.is_empty() {
            first = ptx;
        }
    }
    first
}

pub fn one(kernel: Kernel) -> Module {
    Module {
        kernels: vec![kernel],
    }
}

/// A thin layer over `KernelBuilder` that panics on ill-typed operations (tests only).
pub struct K {
    pub b: KernelBuilder,
}

impl K {
    pub fn new(name: &str) -> Self {
        Self {
            b: KernelBuilder::new(name),
        }
    }
    pub fn finish(self) -> Kernel {
        self.b.finish()
    }
    pub fn slice(&mut self, name: &str, elem: ScalarType, access: SliceAccess) -> u32 {
        self.b.param(name, ParamKind::Slice { elem, access })
    }
    pub fn scalar(&mut self, name: &str, ty: ScalarType) -> Value {
        let i = self.b.param(name, ParamKind::Scalar(ty));
        self.op(Op::Param(i))
    }
    pub fn op(&mut self, op: Op) -> Value {
        let dbg = format!("{op:?}");
        self.b.def(op).unwrap_or_else(|e| panic!("{dbg}: {e}"))
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
    pub fn bin(&mut self, op: BinaryOp, l: Value, r: Value) -> Value {
        self.op(Op::Binary(op, l, r))
    }
    pub fn cmp(&mut self, op: CmpOp, l: Value, r: Value) -> Value {
        self.op(Op::Compare(op, l, r))
    }
    pub fn cast(&mut self, value: Value, to: ScalarType) -> Value {
        self.op(Op::Cast { value, to })
    }
    pub fn special(&mut self, s: Special) -> Value {
        self.op(Op::Special(s))
    }
    /// `blockIdx.x * blockDim.x + threadIdx.x` as a `u64`.
    pub fn global_index(&mut self) -> Value {
        let bid = self.special(Special::BlockIdx(Dim::X));
        let bdim = self.special(Special::BlockDim(Dim::X));
        let tid = self.special(Special::ThreadIdx(Dim::X));
        let m = self.bin(BinaryOp::Mul, bid, bdim);
        let i = self.bin(BinaryOp::Add, m, tid);
        self.cast(i, ScalarType::U64)
    }
    /// The address of element `index` (`u64`) of slice parameter `slice`.
    pub fn elem_addr(&mut self, slice: u32, index: Value, elem: ScalarType) -> Value {
        let base = self.op(Op::SliceBase(slice));
        let size = self.u64(elem.size_bytes() as u64);
        let off = self.bin(BinaryOp::Mul, index, size);
        self.bin(BinaryOp::Add, base, off)
    }
    pub fn load(&mut self, space: AddressSpace, ty: ScalarType, addr: Value) -> Value {
        self.op(Op::Load {
            space,
            ty,
            addr,
            eviction: cuprum_ir::Eviction::Normal,
        })
    }
    pub fn store(&mut self, space: AddressSpace, addr: Value, value: Value) {
        self.b.push(Stmt::Store { space, addr, value });
    }
    pub fn if_else(
        &mut self,
        cond: Value,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.b.begin_block();
        then(self);
        let then = self.b.end_block();
        self.b.begin_block();
        otherwise(self);
        let otherwise = self.b.end_block();
        self.b.push(Stmt::If {
            cond,
            then,
            otherwise,
        });
    }
    pub fn if_(&mut self, cond: Value, then: impl FnOnce(&mut Self)) {
        self.if_else(cond, then, |_| {});
    }
    pub fn loop_(&mut self, body: impl FnOnce(&mut Self)) {
        self.b.begin_block();
        body(self);
        let body = self.b.end_block();
        self.b.push(Stmt::Loop { body });
    }
    pub fn read(&mut self, var: Var) -> Value {
        self.op(Op::ReadVar(var))
    }
    pub fn write(&mut self, var: Var, value: Value) {
        self.b.push(Stmt::WriteVar { var, value });
    }
}
