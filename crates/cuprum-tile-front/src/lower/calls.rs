//! Calls: the built-in operations of the kernel language, by name (this file's
//! [`BUILTINS`] table is the one list of them, with their signatures), the module's own
//! functions (inlined by `helpers`), and methods, dispatched on what they are called on.
//!
//! A built-in's arguments are lowered first; cutile's mode markers (`ftz::Disabled`,
//! `rounding::Zero`, `None`, ...) are dropped (`ftz::Enabled` noted: `exp2` then flushes
//! subnormals), and the rest must match the signature's count. A closure argument
//! (`reduce`'s combiner) is kept aside unlowered.

use cuprum_ir::{BinaryOp, CmpOp, UnaryOp};
use proc_macro2::Span;
use syn::spanned::Spanned;

use cuprum_tile_ir::TileType;

use super::math::MathFn;
use super::*;

/// A built-in operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    BlockId,
    NumBlocks,
    ProgramId,
    NumPrograms,
    NumTiles,
    CeilDiv,
    LoadTile,
    LoadTileLike,
    LoadTileMut,
    StoreTile,
    Constant,
    BroadcastScalar,
    Iota,
    ScalarToTile,
    TileToScalar,
    Reshape,
    Broadcast,
    Permute,
    Transpose,
    ShapeOf,
    Math(MathFn),
    Binary(BinaryOp),
    Fma,
    /// `mma(a, b, acc)`: a matrix multiply-accumulate.
    Mma,
    Select,
    Compare(CmpOp),
    Convert(Conversion),
    Reduce(Option<Reduction>),
    Assume,
    /// `pointer_to_tile(p)`.
    PointerToTile,
    /// `load_ptr_tko(pointers, ..)`.
    LoadPtr,
    /// `store_ptr_tko(pointers, value, ..)`.
    StorePtr,
    /// `make_tensor_view(pointer, shape, strides, token)`.
    MakeTensorView,
    /// `new_token_unordered()`.
    NewToken,
    /// A cutile operation cuprum does not have yet.
    NotYet,
}

/// Element type conversions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// `convert_tile`, `convert`, `convert_scalar`, `ftof`, `ftoi`, `itof`: Rust's `as`.
    As,
    /// `exti`: an integer to a wider integer.
    Extend,
    /// `trunci`: an integer to a narrower integer.
    Truncate,
    /// `bitcast`: the same bits.
    Bitcast,
}

/// The fixed reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    Sum,
    Max,
    Min,
    Prod,
}

/// Where a name can be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Function,
    Method,
    Both,
}

use Builtin as B;
use Form::{Both, Function, Method};

/// Every built-in: its name, what it is, its signature (which fixes its argument count;
/// `?` marks an optional argument; a method's receiver is the first) and where it can be
/// used.
const BUILTINS: &[(&str, Builtin, &str, Form)] = &[
    (
        "get_tile_block_id",
        B::BlockId,
        "get_tile_block_id()",
        Function,
    ),
    (
        "get_num_tile_blocks",
        B::NumBlocks,
        "get_num_tile_blocks()",
        Function,
    ),
    ("program_id", B::ProgramId, "program_id(axis)", Function),
    (
        "num_programs",
        B::NumPrograms,
        "num_programs(axis)",
        Function,
    ),
    (
        "num_tiles",
        B::NumTiles,
        "num_tiles(partition, axis)",
        Function,
    ),
    ("ceil_div", B::CeilDiv, "ceil_div(a, b)", Function),
    (
        "load_tile",
        B::LoadTile,
        "load_tile(tensor, shape, index)",
        Function,
    ),
    (
        "load_tile_like",
        B::LoadTileLike,
        "load_tile_like(tensor, like)",
        Function,
    ),
    (
        "load_tile_mut",
        B::LoadTileMut,
        "load_tile_mut(output)",
        Function,
    ),
    (
        "store_tile",
        B::StoreTile,
        "store_tile(output, tile)",
        Function,
    ),
    ("constant", B::Constant, "constant(value, shape)", Function),
    (
        "broadcast_scalar",
        B::BroadcastScalar,
        "broadcast_scalar(value, shape)",
        Function,
    ),
    ("iota", B::Iota, "iota(shape)", Function),
    (
        "scalar_to_tile",
        B::ScalarToTile,
        "scalar_to_tile(scalar)",
        Function,
    ),
    (
        "tile_to_scalar",
        B::TileToScalar,
        "tile_to_scalar(tile)",
        Function,
    ),
    ("reshape", B::Reshape, "reshape(tile, shape)", Both),
    ("broadcast", B::Broadcast, "broadcast(tile, shape)", Both),
    (
        "permute",
        B::Permute,
        "permute(tile, permutation, shape?)",
        Both,
    ),
    ("transpose", B::Transpose, "transpose(tile)", Both),
    ("shape", B::ShapeOf, "shape(tile)", Method),
    // Math.
    ("exp", B::Math(MathFn::Unary(UnaryOp::Exp)), "exp(x)", Both),
    (
        "exp2",
        B::Math(MathFn::Unary(UnaryOp::Exp2)),
        "exp2(x)",
        Both,
    ),
    (
        "exp2_ftz",
        B::Math(MathFn::Unary(UnaryOp::Exp2Ftz)),
        "exp2_ftz(x)",
        Function,
    ),
    (
        "log",
        B::Math(MathFn::Unary(UnaryOp::Ln)),
        "log(x)",
        Function,
    ),
    ("ln", B::Math(MathFn::Unary(UnaryOp::Ln)), "ln(x)", Method),
    (
        "log2",
        B::Math(MathFn::Unary(UnaryOp::Log2)),
        "log2(x)",
        Both,
    ),
    (
        "sqrt",
        B::Math(MathFn::Unary(UnaryOp::Sqrt)),
        "sqrt(x)",
        Both,
    ),
    (
        "sqrt_ftz",
        B::Math(MathFn::Unary(UnaryOp::Sqrt)),
        "sqrt_ftz(x)",
        Function,
    ),
    ("rsqrt", B::Math(MathFn::Rsqrt), "rsqrt(x)", Both),
    (
        "rsqrt_ftz",
        B::Math(MathFn::Rsqrt),
        "rsqrt_ftz(x)",
        Function,
    ),
    ("sin", B::Math(MathFn::Unary(UnaryOp::Sin)), "sin(x)", Both),
    ("cos", B::Math(MathFn::Unary(UnaryOp::Cos)), "cos(x)", Both),
    ("tan", B::Math(MathFn::Unary(UnaryOp::Tan)), "tan(x)", Both),
    (
        "sinh",
        B::Math(MathFn::Unary(UnaryOp::Sinh)),
        "sinh(x)",
        Both,
    ),
    (
        "cosh",
        B::Math(MathFn::Unary(UnaryOp::Cosh)),
        "cosh(x)",
        Both,
    ),
    (
        "tanh",
        B::Math(MathFn::Unary(UnaryOp::Tanh)),
        "tanh(x)",
        Both,
    ),
    (
        "ceil",
        B::Math(MathFn::Unary(UnaryOp::Ceil)),
        "ceil(x)",
        Both,
    ),
    (
        "floor",
        B::Math(MathFn::Unary(UnaryOp::Floor)),
        "floor(x)",
        Both,
    ),
    (
        "round",
        B::Math(MathFn::Unary(UnaryOp::Round)),
        "round(x)",
        Method,
    ),
    (
        "trunc",
        B::Math(MathFn::Unary(UnaryOp::Trunc)),
        "trunc(x)",
        Method,
    ),
    (
        "absf",
        B::Math(MathFn::Unary(UnaryOp::Abs)),
        "absf(x)",
        Function,
    ),
    ("absi", B::Math(MathFn::AbsInt), "absi(x)", Function),
    ("abs", B::Math(MathFn::Abs), "abs(x)", Method),
    (
        "negf",
        B::Math(MathFn::Unary(UnaryOp::Neg)),
        "negf(x)",
        Function,
    ),
    (
        "negi",
        B::Math(MathFn::Unary(UnaryOp::Neg)),
        "negi(x)",
        Function,
    ),
    (
        "noti",
        B::Math(MathFn::Unary(UnaryOp::Not)),
        "noti(x)",
        Function,
    ),
    ("pow", B::Math(MathFn::Pow), "pow(base, exponent)", Function),
    ("powf", B::Math(MathFn::Pow), "powf(base, exponent)", Method),
    // Element-wise arithmetic by name.
    ("addf", B::Binary(BinaryOp::Add), "addf(a, b)", Function),
    (
        "addf_ftz",
        B::Binary(BinaryOp::Add),
        "addf_ftz(a, b)",
        Function,
    ),
    ("addi", B::Binary(BinaryOp::Add), "addi(a, b)", Function),
    ("subf", B::Binary(BinaryOp::Sub), "subf(a, b)", Function),
    (
        "subf_ftz",
        B::Binary(BinaryOp::Sub),
        "subf_ftz(a, b)",
        Function,
    ),
    ("subi", B::Binary(BinaryOp::Sub), "subi(a, b)", Function),
    ("mulf", B::Binary(BinaryOp::Mul), "mulf(a, b)", Function),
    (
        "mulf_ftz",
        B::Binary(BinaryOp::Mul),
        "mulf_ftz(a, b)",
        Function,
    ),
    ("muli", B::Binary(BinaryOp::Mul), "muli(a, b)", Function),
    ("divf", B::Binary(BinaryOp::Div), "divf(a, b)", Function),
    (
        "divf_ftz",
        B::Binary(BinaryOp::Div),
        "divf_ftz(a, b)",
        Function,
    ),
    ("divi", B::Binary(BinaryOp::Div), "divi(a, b)", Function),
    (
        "true_div",
        B::Binary(BinaryOp::Div),
        "true_div(a, b)",
        Function,
    ),
    ("remi", B::Binary(BinaryOp::Rem), "remi(a, b)", Function),
    ("remf", B::Binary(BinaryOp::Rem), "remf(a, b)", Function),
    ("maxf", B::Binary(BinaryOp::Max), "maxf(a, b)", Function),
    (
        "maxf_ftz",
        B::Binary(BinaryOp::Max),
        "maxf_ftz(a, b)",
        Function,
    ),
    ("maxi", B::Binary(BinaryOp::Max), "maxi(a, b)", Function),
    (
        "max_tile",
        B::Binary(BinaryOp::Max),
        "max_tile(a, b)",
        Function,
    ),
    ("max", B::Binary(BinaryOp::Max), "max(a, b)", Both),
    ("minf", B::Binary(BinaryOp::Min), "minf(a, b)", Function),
    (
        "minf_ftz",
        B::Binary(BinaryOp::Min),
        "minf_ftz(a, b)",
        Function,
    ),
    ("mini", B::Binary(BinaryOp::Min), "mini(a, b)", Function),
    (
        "min_tile",
        B::Binary(BinaryOp::Min),
        "min_tile(a, b)",
        Function,
    ),
    ("min", B::Binary(BinaryOp::Min), "min(a, b)", Both),
    ("andi", B::Binary(BinaryOp::And), "andi(a, b)", Function),
    ("ori", B::Binary(BinaryOp::Or), "ori(a, b)", Function),
    ("xori", B::Binary(BinaryOp::Xor), "xori(a, b)", Function),
    ("shli", B::Binary(BinaryOp::Shl), "shli(a, b)", Function),
    ("shri", B::Binary(BinaryOp::Shr), "shri(a, b)", Function),
    ("fma", B::Fma, "fma(a, b, c)", Function),
    ("fma_ftz", B::Fma, "fma_ftz(a, b, c)", Function),
    ("mul_add", B::Fma, "mul_add(a, b, c)", Method),
    (
        "select",
        B::Select,
        "select(condition, if_true, if_false)",
        Function,
    ),
    ("eq_tile", B::Compare(CmpOp::Eq), "eq_tile(a, b)", Function),
    ("ne_tile", B::Compare(CmpOp::Ne), "ne_tile(a, b)", Function),
    ("lt_tile", B::Compare(CmpOp::Lt), "lt_tile(a, b)", Function),
    ("le_tile", B::Compare(CmpOp::Le), "le_tile(a, b)", Function),
    ("gt_tile", B::Compare(CmpOp::Gt), "gt_tile(a, b)", Function),
    ("ge_tile", B::Compare(CmpOp::Ge), "ge_tile(a, b)", Function),
    // Conversions.
    (
        "convert_tile",
        B::Convert(Conversion::As),
        "convert_tile(tile)",
        Function,
    ),
    (
        "convert",
        B::Convert(Conversion::As),
        "convert(tile)",
        Method,
    ),
    (
        "convert_scalar",
        B::Convert(Conversion::As),
        "convert_scalar(scalar)",
        Function,
    ),
    ("ftof", B::Convert(Conversion::As), "ftof(tile)", Function),
    ("ftoi", B::Convert(Conversion::As), "ftoi(tile)", Function),
    ("itof", B::Convert(Conversion::As), "itof(tile)", Function),
    (
        "exti",
        B::Convert(Conversion::Extend),
        "exti(tile)",
        Function,
    ),
    (
        "trunci",
        B::Convert(Conversion::Truncate),
        "trunci(tile)",
        Function,
    ),
    (
        "bitcast",
        B::Convert(Conversion::Bitcast),
        "bitcast(tile)",
        Both,
    ),
    // Reductions.
    (
        "reduce_sum",
        B::Reduce(Some(Reduction::Sum)),
        "reduce_sum(tile, axis)",
        Both,
    ),
    (
        "reduce_max",
        B::Reduce(Some(Reduction::Max)),
        "reduce_max(tile, axis)",
        Both,
    ),
    (
        "reduce_min",
        B::Reduce(Some(Reduction::Min)),
        "reduce_min(tile, axis)",
        Both,
    ),
    (
        "reduce_prod",
        B::Reduce(Some(Reduction::Prod)),
        "reduce_prod(tile, axis)",
        Both,
    ),
    (
        "reduce",
        B::Reduce(None),
        "reduce(tile, axis, identity, combine)",
        Function,
    ),
    // Compiler hints: cuprum needs none; the value passes through.
    ("assume_div_by", B::Assume, "assume_div_by(value)", Function),
    ("assume_bounds", B::Assume, "assume_bounds(value)", Function),
    (
        "assume_bounds_lower",
        B::Assume,
        "assume_bounds_lower(value)",
        Function,
    ),
    (
        "assume_bounds_upper",
        B::Assume,
        "assume_bounds_upper(value)",
        Function,
    ),
    (
        "assume_same_elements_1d",
        B::Assume,
        "assume_same_elements_1d(value)",
        Function,
    ),
    (
        "assume_same_elements_2d",
        B::Assume,
        "assume_same_elements_2d(value)",
        Function,
    ),
    (
        "assume_same_elements_3d",
        B::Assume,
        "assume_same_elements_3d(value)",
        Function,
    ),
    (
        "assume_same_elements_4d",
        B::Assume,
        "assume_same_elements_4d(value)",
        Function,
    ),
    ("mma", B::Mma, "mma(a, b, acc)", Function),
    ("mmaf", B::Mma, "mmaf(a, b, acc)", Function),
    // cutile operations cuprum's tile track does not have yet.
    ("mmai", B::NotYet, "mmai(a, b, acc)", Function),
    ("mmaf_scaled", B::NotYet, "mmaf_scaled(..)", Function),
    ("scan", B::NotYet, "scan(..)", Function),
    ("scan_sum", B::NotYet, "scan_sum(..)", Function),
    ("cat", B::NotYet, "cat(a, b, axis)", Function),
    ("extract", B::NotYet, "extract(tile, indices)", Function),
    ("atan2", B::NotYet, "atan2(y, x)", Function),
    ("mulhii", B::NotYet, "mulhii(a, b)", Function),
    ("cmpi", B::NotYet, "cmpi(..)", Function),
    ("cmpf", B::NotYet, "cmpf(..)", Function),
    ("pack", B::NotYet, "pack(..)", Function),
    ("unpack", B::NotYet, "unpack(..)", Function),
    // Raw pointers (`pointers`); mode arguments and tokens are dropped before counting.
    (
        "load_ptr_tko",
        B::LoadPtr,
        "load_ptr_tko(pointers, mask?, padding?)",
        Function,
    ),
    (
        "store_ptr_tko",
        B::StorePtr,
        "store_ptr_tko(pointers, value, mask?)",
        Function,
    ),
    ("atomic_rmw_tko", B::NotYet, "atomic_rmw_tko(..)", Function),
    ("atomic_cas_tko", B::NotYet, "atomic_cas_tko(..)", Function),
    (
        "pointer_to_tile",
        B::PointerToTile,
        "pointer_to_tile(pointer)",
        Function,
    ),
    (
        "tile_to_pointer",
        B::NotYet,
        "tile_to_pointer(..)",
        Function,
    ),
    (
        "make_tensor_view",
        B::MakeTensorView,
        "make_tensor_view(pointer, shape, strides)",
        Function,
    ),
    (
        "make_partition_view",
        B::NotYet,
        "make_partition_view(..)",
        Function,
    ),
    (
        "new_token_unordered",
        B::NewToken,
        "new_token_unordered()",
        Function,
    ),
    ("join_tokens", B::NotYet, "join_tokens(..)", Function),
    ("get_global", B::NotYet, "get_global()", Function),
];

fn lookup(name: &str, method: bool) -> Option<(Builtin, &'static str)> {
    BUILTINS
        .iter()
        .find(|(n, _, _, form)| {
            *n == name
                && match form {
                    Both => true,
                    Function => !method,
                    Method => method,
                }
        })
        .map(|(_, b, sig, _)| (*b, *sig))
}

/// The fewest and most arguments a signature takes.
fn arity(sig: &str) -> (usize, usize) {
    let inner = sig
        .split_once('(')
        .and_then(|(_, r)| r.strip_suffix(')'))
        .unwrap_or("");
    if inner.trim().is_empty() {
        return (0, 0);
    }
    if inner.trim() == ".." {
        return (0, usize::MAX);
    }
    let params: Vec<&str> = inner.split(',').map(str::trim).collect();
    let optional = params.iter().filter(|p| p.ends_with('?')).count();
    (params.len() - optional, params.len())
}

/// The closest built-in or module function to a misspelt name (edit distance at most 2).
fn suggestion<'a>(name: &str, extra: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for candidate in BUILTINS.iter().map(|(n, ..)| *n).chain(extra) {
        let d = edit_distance(name, candidate);
        if d <= 2 && best.as_ref().is_none_or(|(bd, _)| d < *bd) {
            best = Some((d, candidate.to_string()));
        }
    }
    best.map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// What the arguments of a call are expected to be (the types that literals and
/// conversions whose target is inferred take, as rustc infers them).
pub(super) enum ArgHint {
    None,
    /// The `i`th argument is expected to be of the `i`th type.
    Fixed(Vec<Ty>),
    /// The arguments from `from` on are operands of one type: the first tile among them
    /// gives it; before one is seen, `first` is expected.
    Operands {
        from: usize,
        first: Ty,
    },
}

impl Builtin {
    /// What the arguments of this built-in are expected to be, given the call's expected
    /// type and a method's receiver (its first operand).
    fn arg_hint(self, expect: &Ty, receiver: Option<TileType>) -> ArgHint {
        let (from, first) = match self {
            B::Math(_) | B::Binary(_) | B::Fma => (0, expect.clone()),
            B::Compare(_) => (0, Ty::Infer),
            B::Select => (1, expect.clone()),
            _ => return ArgHint::None,
        };
        match receiver {
            Some(t) => ArgHint::Operands {
                from: 0,
                first: Ty::Tile(t.elem, t.shape),
            },
            None => ArgHint::Operands { from, first },
        }
    }
}

/// The lowered arguments of a call.
pub(super) struct Args<'e> {
    /// The operation's name, for messages.
    pub name: String,
    pub vals: Vec<(Val, Span)>,
    /// A closure argument, unlowered.
    pub closure: Option<&'e syn::ExprClosure>,
    /// The type arguments (`::<f32>`).
    pub turbofish: Vec<&'e syn::GenericArgument>,
    /// The whole call.
    pub span: Span,
    /// Whether cutile's `ftz::Enabled` marker was among the arguments.
    pub flush_to_zero: bool,
}

/// cutile's marker that asks for `f32` subnormals flushed to zero, which `exp2` honours
/// (`UnaryOp::Exp2Ftz`); the other functions take it and keep subnormals.
const FLUSH_TO_ZERO: &str = "ftz::Enabled";

impl Args<'_> {
    pub fn val(&self, i: usize) -> Val {
        self.vals
            .get(i)
            .map(|(v, _)| v.clone())
            .unwrap_or(Val::Unit)
    }

    pub fn span_of(&self, i: usize) -> Span {
        self.vals.get(i).map_or(self.span, |(_, s)| *s)
    }
}

impl<'m> Lowerer<'m> {
    pub(super) fn call(&mut self, c: &syn::ExprCall, expect: &Ty) -> Result<Val> {
        let span = c.span();
        let syn::Expr::Path(p) = &*c.func else {
            return err(
                c.func.span(),
                "only named functions can be called in a tile kernel",
            );
        };
        let Some(last) = p.path.segments.last() else {
            return err(span, "an empty path");
        };
        let name = last.ident.to_string();
        // cutile's optional arguments: `Some(x)` is `x` (and `None` a dropped marker).
        if name == "Some" && p.path.segments.len() == 1 && c.args.len() == 1 {
            return self.expr(&c.args[0], expect);
        }
        let turbofish = crate::types::last_generic_args(&p.path);
        // `f32::max(a, b)` is the method `a.max(b)`.
        let type_qualified = p.path.segments.len() == 2
            && p.path.segments.first().is_some_and(|s| {
                cuprum_ir::ScalarType::from_rust_name(&s.ident.to_string()).is_some()
            });
        if !type_qualified && let Some(f) = self.items.functions.get(&name).copied() {
            let args = self.lower_args(&name, c.args.iter(), turbofish, span, ArgHint::None)?;
            return self.inline(f, args, expect);
        }
        match lookup(&name, type_qualified) {
            Some((b, sig)) => {
                let hint = b.arg_hint(expect, None);
                let args = self.lower_args(&name, c.args.iter(), turbofish, span, hint)?;
                self.builtin(b, sig, args, expect)
            }
            None if p.path.segments.len() >= 2
                && p.path.segments[p.path.segments.len() - 2]
                    .ident
                    .to_string()
                    .starts_with(|c: char| c.is_ascii_uppercase()) =>
            {
                let path: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                err(
                    p.path.span(),
                    format!("`{}` is not supported in tile kernels", path.join("::")),
                )
            }
            None => {
                let hint = suggestion(&name, self.items.functions.keys().map(String::as_str))
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                err(
                    last.ident.span(),
                    format!(
                        "unknown operation `{name}`: not a tile operation of `cuprum::tile::core` nor a function of this module{hint}"
                    ),
                )
            }
        }
    }

    pub(super) fn method_call(&mut self, m: &syn::ExprMethodCall, expect: &Ty) -> Result<Val> {
        let span = m.span();
        let name = m.method.to_string();
        let recv = self.expr(&m.receiver, &Ty::Infer)?;
        let turbofish: Vec<&syn::GenericArgument> = m
            .turbofish
            .as_ref()
            .map(|t| t.args.iter().collect())
            .unwrap_or_default();
        let args = m.args.iter();
        match recv {
            Val::Tensor(t) => {
                // A store's value is expected to be the tile stored.
                let hint = match (name.as_str(), self.store_type(t)) {
                    ("store", Some(ty)) => ArgHint::Fixed(vec![ty]),
                    _ => ArgHint::None,
                };
                let args = self.lower_args(&name, args, turbofish, span, hint)?;
                self.tensor_method(t, &name, args, m.method.span())
            }
            Val::Partition {
                tensor,
                tile,
                mutable,
            } => {
                let hint = match (name.as_str(), self.store_type(tensor)) {
                    ("store", Some(Ty::Tile(elem, _))) if mutable => {
                        ArgHint::Fixed(vec![Ty::Tile(elem, tile.clone())])
                    }
                    _ => ArgHint::None,
                };
                let args = self.lower_args(&name, args, turbofish, span, hint)?;
                self.partition_method(tensor, tile, mutable, &name, args, m.method.span())
            }
            Val::PermutedPartition {
                tensor,
                tile,
                dim_map,
            } => {
                let args = self.lower_args(&name, args, turbofish, span, ArgHint::None)?;
                self.permuted_partition_method(tensor, tile, dim_map, &name, args, m.method.span())
            }
            Val::Mapped { tensor, tile, .. } => {
                let hint = match (name.as_str(), self.tensor_param(tensor)) {
                    ("store", Ok((_, tp))) => ArgHint::Fixed(vec![Ty::Tile(tp.elem, tile.clone())]),
                    _ => ArgHint::None,
                };
                let args = self.lower_args(&name, args, turbofish, span, hint)?;
                self.mapped_method(tensor, tile, &name, args, m.method.span())
            }
            Val::TileIndex { coords, .. } => {
                let args = self.lower_args(&name, args, turbofish, span, ArgHint::None)?;
                self.tile_index_method(coords, &name, args, m.method.span())
            }
            Val::PointerTile { tensor, offsets } => {
                let args = self.lower_args(&name, args, turbofish, span, ArgHint::None)?;
                self.pointer_tile_method(tensor, offsets, &name, args, m.method.span())
            }
            Val::RawTensor(view) => {
                let args = self.lower_args(&name, args, turbofish, span, ArgHint::None)?;
                self.raw_tensor_method(*view, &name, args, m.method.span())
            }
            Val::RawPartition {
                view,
                tile,
                mutable,
            } => {
                let hint = match (name.as_str(), self.pointer_elem(view.tensor)) {
                    ("store", Ok(elem)) if mutable => {
                        ArgHint::Fixed(vec![Ty::Tile(elem, tile.clone())])
                    }
                    _ => ArgHint::None,
                };
                let args = self.lower_args(&name, args, turbofish, span, hint)?;
                self.raw_partition_method(*view, tile, mutable, &name, args, m.method.span())
            }
            v @ (Val::Tile(_) | Val::Lit(..)) => {
                // `scalar.broadcast(shape)` repeats a scalar.
                let builtin = match (name.as_str(), &v) {
                    ("broadcast", Val::Lit(..)) => {
                        Some((B::BroadcastScalar, "broadcast(value, shape)"))
                    }
                    _ => lookup(&name, true),
                };
                let Some((b, sig)) = builtin else {
                    let hint = suggestion(&name, std::iter::empty())
                        .map(|s| format!("; did you mean `{s}`?"))
                        .unwrap_or_default();
                    return err(
                        m.method.span(),
                        format!("unknown method `{name}` of a tile{hint}"),
                    );
                };
                let receiver = match &v {
                    Val::Tile(t) => Some(self.ty(*t)),
                    _ => None,
                };
                let hint = b.arg_hint(expect, receiver);
                let mut args = self.lower_args(&name, args, turbofish, span, hint)?;
                args.vals.insert(0, (v, m.receiver.span()));
                self.builtin(b, sig, args, expect)
            }
            Val::Shape(_) => err(
                m.method.span(),
                format!("a shape has no method `{name}`; index it: `shape[0]`"),
            ),
            other => err(
                m.method.span(),
                format!("no method `{name}` on {}", other.kind()),
            ),
        }
    }

    /// The tile type a store to tensor parameter `t` takes, when `t` is an output.
    fn store_type(&self, t: u32) -> Option<Ty> {
        match &self.kernel().params.get(t as usize)?.kind {
            cuprum_tile_ir::ParamKind::Tensor(tp) => {
                tp.partition_tile().map(|tile| Ty::Tile(tp.elem, tile))
            }
            cuprum_tile_ir::ParamKind::Scalar(_) => None,
        }
    }

    fn lower_args<'e>(
        &mut self,
        name: &str,
        exprs: impl Iterator<Item = &'e syn::Expr>,
        turbofish: Vec<&'e syn::GenericArgument>,
        span: Span,
        hint: ArgHint,
    ) -> Result<Args<'e>> {
        let mut vals = Vec::new();
        let mut closure = None;
        let mut operand_type: Option<Ty> = None;
        let mut flush_to_zero = false;
        for (i, e) in exprs.enumerate() {
            if let syn::Expr::Closure(c) = e {
                if closure.is_some() {
                    return err(c.span(), "only one closure argument is supported");
                }
                closure = Some(c);
                continue;
            }
            let expect = match &hint {
                ArgHint::None => Ty::Infer,
                ArgHint::Fixed(tys) => tys.get(i).cloned().unwrap_or(Ty::Infer),
                ArgHint::Operands { from, first } if i >= *from => {
                    operand_type.clone().unwrap_or_else(|| first.clone())
                }
                ArgHint::Operands { .. } => Ty::Infer,
            };
            let v = self.expr(e, &expect)?;
            if let (ArgHint::Operands { from, .. }, Val::Tile(t), None) = (&hint, &v, &operand_type)
                && i >= *from
            {
                let t = self.ty(*t);
                operand_type = Some(Ty::Tile(t.elem, t.shape));
            }
            match v {
                Val::Marker(m) => flush_to_zero |= m == FLUSH_TO_ZERO,
                v => vals.push((v, e.span())),
            }
        }
        Ok(Args {
            name: name.to_string(),
            vals,
            closure,
            turbofish,
            span,
            flush_to_zero,
        })
    }

    /// Checks a built-in's argument count against its signature.
    pub(super) fn check_arity(&self, sig: &str, args: &Args<'_>) -> Result<()> {
        let (min, max) = arity(sig);
        let given = args.vals.len() + usize::from(args.closure.is_some());
        if given < min || given > max {
            let count = if min == max {
                format!("{min}")
            } else {
                format!("{min} or {max}")
            };
            return err(
                args.span,
                format!(
                    "`{}` takes {count} argument{} (`{sig}`), {given} given",
                    args.name,
                    if max == 1 { "" } else { "s" }
                ),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_give_argument_counts_and_names_are_unique() {
        assert_eq!(arity("get_tile_block_id()"), (0, 0));
        assert_eq!(arity("permute(tile, permutation, shape?)"), (2, 3));
        assert_eq!(arity("mmaf_scaled(..)"), (0, usize::MAX));
        for (i, (name, _, sig, form)) in BUILTINS.iter().enumerate() {
            assert!(sig.starts_with(&format!("{name}(")), "{name}: {sig}");
            for (other, _, _, other_form) in &BUILTINS[i + 1..] {
                let clash =
                    name == other && (*form == Both || *other_form == Both || form == other_form);
                assert!(!clash, "`{name}` is listed twice for one form");
            }
        }
        assert_eq!(
            suggestion("reduce_mx", std::iter::empty()).as_deref(),
            Some("reduce_max")
        );
        assert_eq!(suggestion("frobnicate", std::iter::empty()), None);
    }
}
