//! The tile IR as text, for people: `cargo cuprum emit`, test failures and
//! `CUPRUM_OPT_TRACE`-style debugging. The format is not parsed back.

use std::fmt::{self, Write};

use crate::kernel::*;
use crate::types::{ShapeDisplay, TileType};

/// `module`'s kernels as text.
pub fn print_module(module: &TileModule) -> String {
    module
        .kernels
        .iter()
        .map(print_kernel)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `kernel` as text.
pub fn print_kernel(kernel: &TileKernel) -> String {
    let mut p = Printer {
        kernel,
        out: String::new(),
    };
    // Writing into a String cannot fail.
    let _ = p.kernel();
    p.out
}

struct Printer<'k> {
    kernel: &'k TileKernel,
    out: String,
}

fn v(x: TileValue) -> String {
    format!("%{}", x.index())
}

fn list(xs: &[TileValue]) -> String {
    xs.iter().map(|x| v(*x)).collect::<Vec<_>>().join(", ")
}

impl Printer<'_> {
    fn ty(&self, x: TileValue) -> String {
        self.kernel
            .values
            .try_get(x)
            .map(TileType::to_string)
            .unwrap_or_else(|| "?".into())
    }

    fn typed(&self, xs: &[TileValue]) -> String {
        xs.iter()
            .map(|x| format!("{}: {}", v(*x), self.ty(*x)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn kernel(&mut self) -> fmt::Result {
        let k = self.kernel;
        write!(self.out, "tile kernel {}", k.name)?;
        if !k.consts.is_empty() || !k.types.is_empty() {
            let mut generics: Vec<String> = k
                .consts
                .iter()
                .enumerate()
                .map(|(i, c)| format!("${i} = const {}: {}", c.name, c.ty))
                .collect();
            generics.extend(
                k.types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("%T{i} = {t}")),
            );
            write!(self.out, "<{}>", generics.join(", "))?;
        }
        writeln!(self.out, "(")?;
        for (i, p) in k.params.iter().enumerate() {
            let kind = match &p.kind {
                ParamKind::Scalar(e) => e.to_string(),
                ParamKind::Tensor(t) => {
                    let dims: Vec<String> = t
                        .dims
                        .iter()
                        .map(|d| match d {
                            TensorDim::Dynamic => "?".to_string(),
                            TensorDim::Static(d) => d.to_string(),
                        })
                        .collect();
                    let access = match t.access {
                        TensorAccess::Read => "&tensor",
                        TensorAccess::Partitioned => "&mut tensor (partitioned)",
                        TensorAccess::Raw => "*mut (raw pointer)",
                        TensorAccess::Mapped => "&mut tensor (mapped)",
                    };
                    format!("{access}<{}, [{}]>", t.elem, dims.join(", "))
                }
            };
            writeln!(self.out, "  param {i} {}: {kind},", p.name)?;
        }
        writeln!(self.out, ") {{")?;
        self.block(&k.body, 1)?;
        writeln!(self.out, "}}")
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn block(&mut self, b: &Block, depth: usize) -> fmt::Result {
        for s in &b.stmts {
            self.stmt(s, depth)?;
        }
        if !b.yields.is_empty() {
            self.indent(depth);
            writeln!(self.out, "yield {}", list(&b.yields))?;
        }
        Ok(())
    }

    /// A loop: its results, `head`, its carried values, then its body.
    fn carried_loop(
        &mut self,
        head: &str,
        [args, inits, results]: [&[TileValue]; 3],
        body: &Block,
        depth: usize,
    ) -> fmt::Result {
        if !results.is_empty() {
            write!(self.out, "{} = ", self.typed(results))?;
        }
        write!(self.out, "{head}")?;
        self.carried(args, inits)?;
        writeln!(self.out, " {{")?;
        self.block(body, depth + 1)?;
        self.indent(depth);
        writeln!(self.out, "}}")
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) -> fmt::Result {
        self.indent(depth);
        match s {
            Stmt::Def { value, op } => {
                write!(self.out, "{} : {} = ", v(*value), self.ty(*value))?;
                self.op(op, depth)?;
                writeln!(self.out)
            }
            Stmt::Store { tensor, value } => {
                writeln!(self.out, "store param{tensor}[own tile] = {}", v(*value))
            }
            Stmt::StorePart {
                tensor,
                tile,
                index,
                value,
            } => writeln!(
                self.out,
                "store param{tensor}[own tile] tile {} at [{}] = {}",
                ShapeDisplay(tile),
                list(index),
                v(*value)
            ),
            Stmt::Scatter {
                tensor,
                offsets,
                value,
                mask,
            } => writeln!(
                self.out,
                "scatter param{tensor}[{}]{} = {}",
                v(*offsets),
                mask.map_or(String::new(), |m| format!(" mask {}", v(m))),
                v(*value)
            ),
            Stmt::If {
                cond,
                then,
                otherwise,
                results,
            } => {
                if !results.is_empty() {
                    write!(self.out, "{} = ", self.typed(results))?;
                }
                writeln!(self.out, "if {} {{", v(*cond))?;
                self.block(then, depth + 1)?;
                self.indent(depth);
                writeln!(self.out, "}} else {{")?;
                self.block(otherwise, depth + 1)?;
                self.indent(depth);
                writeln!(self.out, "}}")
            }
            Stmt::For {
                counter,
                start,
                end,
                step,
                args,
                inits,
                body,
                results,
            } => {
                let head = format!(
                    "for {} in {}..{} step {}",
                    v(*counter),
                    v(*start),
                    v(*end),
                    v(*step)
                );
                self.carried_loop(&head, [args, inits, results], body, depth)
            }
            Stmt::Loop {
                args,
                inits,
                body,
                results,
            } => self.carried_loop("loop", [args, inits, results], body, depth),
            Stmt::ForTiles {
                tensor,
                map,
                coords,
                args,
                inits,
                body,
                results,
            } => {
                let head = format!(
                    "for [{}] in tiles of param{tensor} map {}",
                    list(coords),
                    ShapeDisplay(map)
                );
                self.carried_loop(&head, [args, inits, results], body, depth)
            }
            Stmt::StoreMapped { tensor, value } => {
                writeln!(
                    self.out,
                    "store param{tensor}[current tile] = {}",
                    v(*value)
                )
            }
            Stmt::Break { values } => writeln!(self.out, "break {}", list(values)),
            Stmt::Continue { values } => writeln!(self.out, "continue {}", list(values)),
            Stmt::Return => writeln!(self.out, "return"),
            Stmt::Print { format, args } => {
                writeln!(self.out, "print {format:?} {}", list(args))
            }
            Stmt::Assert { cond, message } => {
                writeln!(self.out, "assert {} {message:?}", v(*cond))
            }
            Stmt::SourceLine { file, line, column } => {
                writeln!(self.out, "// {file}:{line}:{column}")
            }
        }
    }

    fn carried(&mut self, args: &[TileValue], inits: &[TileValue]) -> fmt::Result {
        if args.is_empty() {
            return Ok(());
        }
        let pairs: Vec<String> = args
            .iter()
            .zip(inits)
            .map(|(a, i)| format!("{} = {}", v(*a), v(*i)))
            .collect();
        write!(self.out, " with ({})", pairs.join(", "))
    }

    fn op(&mut self, op: &Op, depth: usize) -> fmt::Result {
        match op {
            Op::Const { value, .. } => write!(self.out, "const {value}"),
            Op::ConstParam(i) => write!(self.out, "const_param ${i}"),
            Op::Param(i) => write!(self.out, "param {i}"),
            Op::BlockId(a) => write!(self.out, "block_id {a}"),
            Op::NumBlocks(a) => write!(self.out, "num_blocks {a}"),
            Op::TensorDim { tensor, axis } => write!(self.out, "dim param{tensor} {axis}"),
            Op::Iota { axis, .. } => write!(self.out, "iota axis {axis}"),
            Op::Unary(u, a) => write!(self.out, "{u:?} {}", v(*a)),
            Op::Binary(b, x, y) => write!(self.out, "{b:?} {}, {}", v(*x), v(*y)),
            Op::Ternary(t, a, b, c) => {
                write!(self.out, "{t:?} {}, {}, {}", v(*a), v(*b), v(*c))
            }
            Op::Compare(c, x, y) => write!(self.out, "{c:?} {}, {}", v(*x), v(*y)),
            Op::Mma { a, b, acc } => write!(self.out, "mma {}, {}, {}", v(*a), v(*b), v(*acc)),
            Op::Select {
                cond,
                if_true,
                if_false,
            } => write!(
                self.out,
                "select {}, {}, {}",
                v(*cond),
                v(*if_true),
                v(*if_false)
            ),
            Op::Cast { value, to } => write!(self.out, "cast {} to {to}", v(*value)),
            Op::Bitcast { value, to } => write!(self.out, "bitcast {} to {to}", v(*value)),
            Op::Broadcast { value, shape } => {
                write!(
                    self.out,
                    "broadcast {} to {}",
                    v(*value),
                    ShapeDisplay(shape)
                )
            }
            Op::Reshape { value, shape } => {
                write!(self.out, "reshape {} to {}", v(*value), ShapeDisplay(shape))
            }
            Op::Permute { value, perm } => write!(self.out, "permute {} {perm:?}", v(*value)),
            Op::Reduce {
                value,
                axis,
                combine,
            } => match combine {
                Combine::Closure {
                    a,
                    b,
                    body,
                    identity,
                } => {
                    writeln!(
                        self.out,
                        "reduce {} axis {axis} identity {identity} |{}, {}| {{",
                        v(*value),
                        v(*a),
                        v(*b)
                    )?;
                    self.block(body, depth + 1)?;
                    self.indent(depth);
                    write!(self.out, "}}")
                }
                other => write!(self.out, "reduce {} axis {axis} {other:?}", v(*value)),
            },
            Op::Gather {
                tensor,
                offsets,
                mask,
                padding,
            } => write!(
                self.out,
                "gather param{tensor}[{}]{} pad {padding}",
                v(*offsets),
                mask.map_or(String::new(), |m| format!(" mask {}", v(m)))
            ),
            Op::Load { view, padding } => match view {
                View::Own { tensor } => {
                    write!(self.out, "load param{tensor}[own tile] pad {padding}")
                }
                View::Tiled {
                    tensor,
                    tile,
                    index,
                } => write!(
                    self.out,
                    "load param{tensor} tile {} at [{}] pad {padding}",
                    ShapeDisplay(tile),
                    list(index)
                ),
                View::Permuted {
                    tensor,
                    tile,
                    index,
                    dim_map,
                } => write!(
                    self.out,
                    "load param{tensor} axes [{}] tile {} at [{}] pad {padding}",
                    dim_map
                        .iter()
                        .map(|a| match a {
                            crate::types::Axis::Known(n) => n.to_string(),
                            crate::types::Axis::Param(i) => format!("${i}"),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    ShapeDisplay(tile),
                    list(index)
                ),
            },
        }
    }
}
