//! The warp matrix and asynchronous-copy statements: `mma.sync`, `ldmatrix` and `cp.async`.
//!
//! Each IR statement is one PTX instruction with the same meaning (the IR took its
//! definitions from these instructions), so this module only spells them: operand order,
//! vector braces, qualifiers. The fragment registers are the values' own registers: A and B
//! fragments are `U32` values in `.b32` registers (what `mma` wants for `.f16x2`, `.bf16x2`
//! and `.tf32` operands), C and D fragments are `F32` values in `.f32` registers, and shared
//! addresses are the `U32` shared-window offsets the IR uses everywhere.
//!
//! `.sync.aligned` requires the whole warp to execute the instruction convergently; the IR
//! makes that the program's obligation (the emulator checks it), so nothing is added here.

use cuprum_ir::{CpAsyncCache, MmaShape, Value};

use crate::emit::{KernelWriter, ins};

impl KernelWriter<'_> {
    /// `{%a, %b, ...}` of the registers of `values`.
    pub(crate) fn reg_list(&self, values: &[Value]) -> String {
        let regs: Vec<String> = values.iter().map(|&v| self.reg(v).to_string()).collect();
        format!("{{{}}}", regs.join(", "))
    }

    pub(crate) fn mma(
        &mut self,
        shape: MmaShape,
        a: &[Value; 4],
        b: &[Value; 2],
        c: &[Value; 4],
        d: &[Value; 4],
    ) {
        let t = shape.input_type();
        let (a, b, c, d) = (
            self.reg_list(a),
            self.reg_list(b),
            self.reg_list(c),
            self.reg_list(d),
        );
        ins!(
            self,
            "mma.sync.aligned.{}.row.col.f32.{t}.{t}.f32 {d}, {a}, {b}, {c}",
            shape.ptx_shape()
        );
    }

    pub(crate) fn ldmatrix(&mut self, trans: bool, addr: Value, d: &[Value]) {
        let (a, list) = (self.reg(addr), self.reg_list(d));
        let t = if trans { ".trans" } else { "" };
        ins!(
            self,
            "ldmatrix.sync.aligned.m8n8.x{}{t}.shared.b16 {list}, [{a}]",
            d.len()
        );
    }

    pub(crate) fn cp_async(
        &mut self,
        cache: CpAsyncCache,
        size: u32,
        dst: Value,
        src: Value,
        src_size: Option<Value>,
    ) {
        let (d, s) = (self.reg(dst), self.reg(src));
        let tail = match src_size {
            Some(n) => format!(", {}", self.reg(n)),
            None => String::new(),
        };
        ins!(
            self,
            "cp.async.{}.shared.global [{d}], [{s}], {size}{tail}",
            cache.ptx_name()
        );
    }
}
