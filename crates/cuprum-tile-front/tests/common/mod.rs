//! What the front end's tests share: compiling source text, finding kernels and operations
//! in the IR, and reading an error's message and position.

#![allow(dead_code)]

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
