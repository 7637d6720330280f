//! Device `printf` (`Stmt::Print`) as a call of CUDA's `vprintf`, the way nvcc emits it.
//!
//! The CUDA driver provides `vprintf(const char *format, void *args)` to every module that
//! declares it (`.extern .func`); the format string is passed verbatim (the IR's subset of
//! C's `printf` is also valid C, and the driver formats it on the host), and `args` points to
//! a buffer holding the promoted arguments in order, each aligned to its size
//! ([`cuprum_ir::printf::vprintf_layout`]):
//!
//! * the format is a module-scope `.global .align 1 .b8` byte array with a NUL at the end, one
//!   per print statement, named after the kernel; its address is a generic one (`cvta.global`);
//! * the argument buffer is one function-scope `.local .align 8` array per kernel, as large as
//!   the largest print needs; each print fills it and passes its generic address
//!   (`cvta.local`), or a null pointer when it has no arguments;
//! * 8-, 16- and 32-bit integers and `bool` are stored as 32-bit words (their registers are
//!   already sign- or zero-extended, see `regs`), 64-bit integers as 64-bit words, and every
//!   float as an `f64` (16-bit floats widened exactly through `f32`).
//!
//! `vprintf`'s status result is read into a scratch parameter and dropped.

use std::fmt::Write as _;

use cuprum_ir::ScalarType;
use cuprum_ir::printf::{ArgClass, vprintf_layout};

use crate::emit::{KernelWriter, ins};
use crate::regs::{Class, is_half};

/// The module-scope declaration of `vprintf`, written once per module that prints.
pub(crate) const VPRINTF_DECL: &str = "\n.extern .func (.param .b32 func_retval0) vprintf\n(\n\t\
     .param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n;\n";

/// The function-scope symbol of a kernel's `vprintf` argument buffer.
pub(crate) const ARGS_SYMBOL: &str = "$printf_args";

impl KernelWriter<'_> {
    pub(crate) fn print(&mut self, format: &str, args: &[cuprum_ir::Value]) {
        let types: Vec<ScalarType> = args.iter().map(|&v| self.ty(v)).collect();
        let (offsets, size) = vprintf_layout(&types);
        let name = format!("$fmt_{}_{}", self.kernel.name, self.format_strings.len());
        let mut decl = format!(".global .align 1 .b8 {name}[{}] = {{", format.len() + 1);
        for b in format.bytes() {
            let _ = write!(decl, "{b}, ");
        }
        decl.push_str("0};\n");
        self.format_strings.push(decl);
        self.printf_args_size = self.printf_args_size.max(size);

        for ((&v, ty), off) in args.iter().zip(types).zip(offsets) {
            let r = self.reg(v);
            let at = format!("[{ARGS_SYMBOL}+{off}]");
            match ArgClass::of(ty) {
                ArgClass::Int32 if ty == ScalarType::Bool => {
                    let t = self.tmp(Class::B32);
                    ins!(self, "selp.u32 {t}, 1, 0, {r}");
                    ins!(self, "st.local.u32 {at}, {t}");
                }
                ArgClass::Int32 => ins!(self, "st.local.u32 {at}, {r}"),
                ArgClass::Int64 => ins!(self, "st.local.u64 {at}, {r}"),
                ArgClass::Double if ty == ScalarType::F64 => ins!(self, "st.local.f64 {at}, {r}"),
                ArgClass::Double => {
                    let f = if is_half(ty) {
                        self.widen_half(r, ty)
                    } else {
                        r
                    };
                    let d = self.tmp(Class::F64);
                    ins!(self, "cvt.f64.f32 {d}, {f}");
                    ins!(self, "st.local.f64 {at}, {d}");
                }
            }
        }
        let (fmt, buf) = (self.tmp(Class::B64), self.tmp(Class::B64));
        ins!(self, "mov.u64 {fmt}, {name}");
        ins!(self, "cvta.global.u64 {fmt}, {fmt}");
        if size > 0 {
            ins!(self, "mov.u64 {buf}, {ARGS_SYMBOL}");
            ins!(self, "cvta.local.u64 {buf}, {buf}");
        } else {
            ins!(self, "mov.u64 {buf}, 0");
        }
        let _ = write!(
            self.out,
            "\t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], {fmt};\n\t\
             .param .b64 param1;\n\tst.param.b64 [param1], {buf};\n\t\
             .param .b32 retval0;\n\tcall.uni (retval0), vprintf, (param0, param1);\n\t}}\n"
        );
    }
}
