//! What the front end's tests share: compiling source text, finding kernels and operations
//! in the IR, and reading an error's message and position.

#![allow(dead_code)]

pub mod sources;

use cuprum_tile_ir::{Op, Stmt, TileKernel, TileModule, TileType, validate_module};

/// Compiles a module's source text; panics with the error and its position on failure.
/// The module validates.
pub fn compile(src: &str) -> TileModule {
    let module: syn::ItemMod = syn::parse_str(src).expect("the test's source parses");
    match cuprum_tile_front::compile_module(&module) {
        Ok(m) => {
            validate_module(&m).expect("the front end's output validates");
            m
        }
        Err(e) => {
            let s = e.span().start();
            panic!("{}:{}: {e}", s.line, s.column + 1)
        }
    }
}

/// The first error compiling `src` gives: its message, line and column (both from 1).
pub fn compile_err(src: &str) -> (String, usize, usize) {
    let module: syn::ItemMod = syn::parse_str(src).expect("the test's source parses");
    match cuprum_tile_front::compile_module(&module) {
        Ok(m) => panic!(
            "expected an error, but it compiled:\n{}",
            cuprum_tile_ir::print_module(&m)
        ),
        Err(e) => {
            let s = e.span().start();
            (e.to_string(), s.line, s.column + 1)
        }
    }
}

/// Asserts that `src` fails with a message containing `message`, at `line`:`column`.
#[track_caller]
pub fn assert_error(src: &str, message: &str, line: usize, column: usize) {
    let (got, l, c) = compile_err(src);
    assert!(
        got.contains(message),
        "the message\n  {got}\ndoes not contain\n  {message}"
    );
    let caret = |col: usize| format!("{}^", " ".repeat(col.saturating_sub(1)));
    let text = src.lines().nth(l.saturating_sub(1)).unwrap_or("");
    assert_eq!(
        (l, c),
        (line, column),
        "the position of `{got}`:\n{text}\n{}  (found)\n{}  (expected)",
        caret(c),
        caret(column)
    );
}

/// The kernel named `name`.
pub fn kernel<'m>(m: &'m TileModule, name: &str) -> &'m TileKernel {
    m.kernels
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no kernel `{name}`"))
}

/// Every statement of the kernel, nested ones included, parents first.
pub fn stmts(k: &TileKernel) -> Vec<&Stmt> {
    let mut out = Vec::new();
    k.body.visit(&mut |s| out.push(s));
    out
}

/// Every operation of the kernel with its result's type.
pub fn defs(k: &TileKernel) -> Vec<(&Op, TileType)> {
    stmts(k)
        .into_iter()
        .filter_map(|s| match s {
            Stmt::Def { value, op } => Some((op, k.ty(*value).clone())),
            _ => None,
        })
        .collect()
}

/// The types of the operations `pick` selects.
pub fn types_of(k: &TileKernel, pick: impl Fn(&Op) -> bool) -> Vec<TileType> {
    defs(k)
        .into_iter()
        .filter(|(op, _)| pick(op))
        .map(|(_, t)| t)
        .collect()
}

/// The operation defining `v`, if a `Def` does.
pub fn def_of(k: &TileKernel, v: cuprum_tile_ir::TileValue) -> Option<&Op> {
    stmts(k).into_iter().find_map(|s| match s {
        Stmt::Def { value, op } if *value == v => Some(op),
        _ => None,
    })
}

// ---- running compiled kernels on the tile interpreter ------------------------------------

use cuprum_tile_interp::{Arg, Output, launch_grid, run};
use cuprum_tile_ir::{ScalarType, Specialization, specialize};

/// A Rust type held in tensors, as little-endian bytes, with a poison value that no test
/// kernel computes (a NaN with a payload of its own for floats).
pub trait El: Copy {
    const TY: ScalarType;
    const POISON: Self;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! el {
    ($($t:ty => $s:ident, $poison:expr);*) => {$(
        impl El for $t {
            const TY: ScalarType = ScalarType::$s;
            const POISON: Self = $poison;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
el!(
    f32 => F32, <f32 as cuprum_testkit::poison::Poison>::POISON;
    f64 => F64, f64::from_bits(0x7FF8_0000_DEAD_BEEF);
    i32 => I32, 0xA5A5_A5A5u32 as i32;
    i64 => I64, 0xA5A5_A5A5_A5A5_A5A5u64 as i64;
    u32 => U32, <u32 as cuprum_testkit::poison::Poison>::POISON;
    half::f16 => F16, half::f16::from_bits(0x7E5A)
);

/// The bytes of `v`.
pub fn bytes<T: El>(v: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(v));
    for &x in v {
        x.put(&mut out);
    }
    out
}

/// The elements in `b`.
pub fn values<T: El>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(std::mem::size_of::<T>())
        .map(T::get)
        .collect()
}

/// The bytes of `n` poison elements.
pub fn poison<T: El>(n: usize) -> Vec<u8> {
    bytes(&vec![T::POISON; n])
}

/// Kernel `name` of `m` specialized with `consts` and `types`.
pub fn specialized(
    m: &cuprum_tile_ir::TileModule,
    name: &str,
    consts: &[i64],
    types: &[ScalarType],
) -> TileKernel {
    let spec = Specialization {
        consts: consts.to_vec(),
        types: types.to_vec(),
    };
    specialize(kernel(m, name), &spec).unwrap_or_else(|e| panic!("specializing `{name}`: {e}"))
}

/// Runs `k` over the grid its partitioned tensors give (or one block when it has none).
pub fn launch(k: &TileKernel, args: &mut [Arg<'_>]) -> Output {
    let grid = launch_grid(k, args)
        .unwrap_or_else(|e| panic!("the grid of `{}`: {e}", k.name))
        .unwrap_or([1, 1, 1]);
    run(k, args, grid).unwrap_or_else(|e| panic!("running `{}`: {e}", k.name))
}

/// Asserts `|got - want| <= tol * max(1, |want|)` element by element (NaN matching NaN).
#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol * w.abs().max(1.0) || g == w;
        assert!(
            ok,
            "{what}: element {i} of {}: got {g}, want {w}",
            want.len()
        );
    }
}
