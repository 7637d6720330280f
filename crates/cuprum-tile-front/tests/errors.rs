//! Compile errors: each class of mistake gives a message a user can act on, at the line and
//! column of the code it is about (the macro turns these into `compile_error!`s there).

mod common;

use common::*;

/// A module whose one entry has `body`, with `y: &mut Tensor<f32, { [BM, BN] }>` and
/// `x: &Tensor<f32, { [-1, -1] }>`. The body starts on line 5, column 9.
fn entry(body: &str) -> String {
    format!(
        "mod m {{
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k<const BM: i32, const BN: i32>(y: &mut Tensor<f32, {{ [BM, BN] }}>, x: &Tensor<f32, {{ [-1, -1] }}>) {{
        {body}
    }}
}}"
    )
}

#[test]
fn an_unknown_operation_is_named_with_the_closest_known_one() {
    assert_error(
        &entry("let t = y.load(); y.store(expp(t));"),
        "unknown operation `expp`: not a tile operation of `cuprum::tile::core` nor a function of this module; did you mean `exp`?",
        5,
        35,
    );
    assert_error(
        &entry("let t = y.load(); y.store(t.sqrtt());"),
        "unknown method `sqrtt` of a tile; did you mean `sqrt`?",
        5,
        37,
    );
    assert_error(
        &entry("let t = y.load(); y.store(frobnicate(t));"),
        "unknown operation `frobnicate`",
        5,
        35,
    );
    assert_error(
        &entry("let d = Dim::new(4);"),
        "`Dim::new` is not supported in tile kernels",
        5,
        17,
    );
    assert_error(
        &entry("let t = y.load(); y.store(mmai(t, t, t));"),
        "`mmai` is not supported by cuprum's tile track yet",
        5,
        35,
    );
}

#[test]
fn unsupported_constructs_are_refused_where_they_are() {
    assert_error(
        &entry("let t = y.load();\n        match 1 { _ => y.store(t) }"),
        "`match` is not supported in tile kernels yet; use `if`/`else`",
        6,
        9,
    );
    assert_error(
        &entry("let v = [1, 2, 3]; let w = x.shape(); let _ = || 1;"),
        "a closure is only allowed as the combiner of `reduce",
        5,
        55,
    );
    assert_error(
        &entry("println!(\"{}\", 1);"),
        "`println!` is host code; a tile kernel prints with `cuda_tile_print!",
        5,
        9,
    );
    assert_error(
        &entry("'outer: for i in 0..4 { }"),
        "labeled loops are not supported",
        5,
        9,
    );
}

#[test]
fn an_annotation_that_disagrees_with_a_reduction_names_the_reduction_and_both_shapes() {
    let src = entry(
        "let t: Tile<f32, { [BM, BN] }> = load_tile_like(x, y);
        let m: Tile<f32, { [BM, BN] }> = reduce_max(t, 1);",
    );
    assert_error(
        &src,
        "`reduce_max` over axis 1 of `[BM, BN]` gives `[BM]`, not `[BM, BN]`",
        6,
        42,
    );
}

#[test]
fn an_annotation_that_disagrees_with_the_inferred_type_shows_both() {
    assert_error(
        &entry("let t: Tile<f16, { [BM, BN] }> = y.load();"),
        "`y.load()` gives `Tile<f32, [BM, BN]>`, not `Tile<f16, [BM, BN]>`",
        5,
        42,
    );
    assert_error(
        &entry("let t = y.load(); let s: Tile<f32, { [BN, BM] }> = t + 1.0;"),
        "gives `[BM, BN]`, not `[BN, BM]`",
        5,
        60,
    );
    assert_error(
        &entry("let n: u8 = 300;"),
        "literal `300` out of range for `u8`",
        5,
        21,
    );
    assert_error(
        &entry("let n: i32 = 1.5;"),
        "a float literal where the integer type `i32` is required",
        5,
        22,
    );
}

#[test]
fn outputs_need_fully_static_shapes_of_rank_one_to_three() {
    let src = "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k<const B: i32>(y: &mut Tensor<f32, { [B, -1] }>) {}
}";
    assert_error(
        src,
        "a `&mut Tensor` is partitioned by the host into tiles of its declared shape, so every dimension must be static",
        4,
        27,
    );
    let src = "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [2, 2, 2, 2] }>) {}
}";
    assert_error(src, "a `&mut Tensor` has rank 1 to 3", 4, 13);
}

#[test]
fn wrong_argument_counts_quote_the_signature() {
    assert_error(
        &entry("let t = y.load(); let s = reduce_sum(t, 0, 1);"),
        "`reduce_sum` takes 2 arguments (`reduce_sum(tile, axis)`), 3 given",
        5,
        35,
    );
    assert_error(
        &entry("let t = y.load(1);"),
        "`load` takes 0 arguments (`load()`), 1 given",
        5,
        17,
    );
    let src = "mod m {
    use cuprum::tile::core::*;
    fn twice<const S: [i32; 2]>(t: Tile<f32, S>) -> Tile<f32, S> { t + t }
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [4, 4] }>) {
        let t = y.load();
        y.store(twice(t, t));
    }
}";
    assert_error(src, "`twice` takes 1 argument, 2 given", 7, 17);
}

#[test]
fn arithmetic_on_a_const_parameter_inside_a_shape_is_not_supported_yet() {
    assert_error(
        &entry("let t = constant(0.0f32, const_shape![BM * 2, BN]);"),
        "arithmetic on the const parameter `BM` inside a shape is not supported yet",
        5,
        47,
    );
    let src = "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k<const B: i32>(y: &mut Tensor<f32, { [B + 1] }>) {}
}";
    assert_error(src, "arithmetic on the const parameter `B`", 4, 47);
    // Arithmetic on known sizes is folded.
    let src = "mod m {
    use cuprum::tile::core::*;
    const W: i32 = 16;
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [W * 2] }>) { y.store(constant(1.0f32, const_shape![2 * W])); }
}";
    let m = compile(src);
    assert_eq!(
        m.kernels[0].params[0].kind,
        cuprum_tile_ir::ParamKind::Tensor(cuprum_tile_ir::TensorParam {
            elem: cuprum_tile_ir::Elem::Known(cuprum_tile_ir::ScalarType::F32),
            dims: vec![cuprum_tile_ir::TensorDim::Static(
                cuprum_tile_ir::Dim::Known(32)
            )],
            access: cuprum_tile_ir::TensorAccess::Partitioned,
        })
    );
}

#[test]
fn entry_options_are_cutiles_and_unknown_ones_are_refused() {
    let with = |attr: &str, unsafety: &str| {
        format!(
            "mod m {{
    use cuprum::tile::core::*;
    #[cuprum::tile::entry({attr})]
    {unsafety}fn k(y: &mut Tensor<f32, {{ [4] }}>) {{}}
}}"
        )
    };
    assert_error(
        &with("print_ir = true, fast_math", ""),
        "unknown entry option `fast_math`; the options are `print_ir`",
        3,
        44,
    );
    assert_error(
        &with("unchecked_accesses", ""),
        "`unchecked_accesses` waives checks, so it needs an `unsafe fn`",
        3,
        5,
    );
    assert_error(
        &with("print_ir = 1", ""),
        "`print_ir` is `true` or `false`",
        3,
        27,
    );
    let ok = with(
        "print_ir = true, unchecked_accesses = true, optimization_hints = (sm_90 = (max_divisibility = 8,),), dump_mlir_dir = \"/tmp/x\"",
        "unsafe ",
    );
    let module: syn::ItemMod = syn::parse_str(&ok).expect("parses");
    let c = cuprum_tile_front::compile_module_with_info(&module).expect("compiles");
    let info = &c.entries[0];
    assert!(info.is_unsafe && info.attrs.print_ir && info.attrs.unchecked_accesses);
    assert_eq!(info.attrs.dump_dir.as_deref(), Some("/tmp/x"));
}

#[test]
fn operands_of_different_shapes_or_types_are_refused_with_both() {
    assert_error(
        &entry("let t = y.load(); let r = reduce_sum(t, 1); y.store(t + r);"),
        "`+` of `[BM, BN]` and `[BM]`: the shapes differ (reshape and `broadcast` one to the other's shape first)",
        5,
        61,
    );
    assert_error(
        &entry(
            "let t = y.load(); let h: Tile<f16, { [BM, BN] }> = convert_tile(t); y.store(t * h);",
        ),
        "`*` of `Tile<f32, [BM, BN]>` and `Tile<f16, [BM, BN]>`: the element types differ",
        5,
        85,
    );
    assert_error(
        &entry("let t = y.load(); let c = lt_tile(t, 1.0); y.store(t & t);"),
        "And of f32: an integer or bool type is required",
        5,
        60,
    );
    assert_error(
        &entry("let t = y.load(); if t < 1.0 { }"),
        "`<` compares scalars; for `Tile<f32, [BM, BN]>` element by element use `lt_tile(a, b)`",
        5,
        30,
    );
}

#[test]
fn tensors_are_read_and_written_only_as_their_kind_allows() {
    assert_error(
        &entry("let t = x.load();"),
        "`x` is an input (`&Tensor`); `load()` reads an output's own tile",
        5,
        19,
    );
    assert_error(
        &entry("let p = y.partition(const_shape![1, BN]);"),
        "`y` is an output: a block reads only its own tile of it",
        5,
        19,
    );
    assert_error(
        &entry("let t = y.load(); y.store(reduce_sum(t, 0));"),
        "`y` stores `Tile<f32, [BM, BN]>` tiles; this is `Tile<f32, [BN]>`",
        5,
        35,
    );
    assert_error(
        &entry("let p = x.partition(const_shape![BM]);"),
        "`x` has rank 2, so its tiles do too, not `[BM]`",
        5,
        29,
    );
    assert_error(
        &entry("let p = x.partition(const_shape![BM, BN]); let t = p.load([0]);"),
        "this index has 1 coordinates; the tensor has rank 2",
        5,
        67,
    );
}

#[test]
fn variables_loops_and_returns_follow_rusts_rules() {
    assert_error(
        &entry("let t = y.load(); t = t + t;"),
        "`t` is not mutable; declare it with `let mut t`",
        5,
        27,
    );
    assert_error(
        &entry("let mut t = y.load(); t = reduce_sum(t, 0);"),
        "mismatched types: `t` is `Tile<f32, [BM, BN]>`, the new value `Tile<f32, [BN]>`",
        5,
        31,
    );
    assert_error(
        &entry("break;"),
        "`break` and `continue` belong inside a loop",
        5,
        9,
    );
    assert_error(
        &entry("let n = get_tile_block_id().0; if n { }"),
        "a condition is a scalar `bool`, not `i32`",
        5,
        43,
    );
    assert_error(
        &entry("let t = y.load(); if reduce_sum(t, 1) == reduce_sum(t, 1) { }"),
        "compares scalars",
        5,
        30,
    );
    assert_error(&entry("return 1;"), "a tile entry returns nothing", 5, 16);
    assert_error(
        &entry("let t = y.load(); let r = reduce(t, 1, 0.0, |a, b| { return a; });"),
        "a `return` cannot leave the combiner of `reduce`",
        5,
        62,
    );
    assert_error(
        &entry("let t = y.load(); for i in 0..4 { let r = reduce(t, 1, 0.0, |a, b| { break; }); }"),
        "`break` and `continue` belong inside a loop",
        5,
        78,
    );
    assert_error(
        &entry("let q = z + 1;"),
        "unknown name `z` in this tile kernel",
        5,
        17,
    );
}

#[test]
fn helpers_are_inlined_and_their_limits_are_explained() {
    let src = "mod m {
    use cuprum::tile::core::*;
    fn again<const S: [i32; 1]>(t: Tile<f32, S>) -> Tile<f32, S> { again(t) }
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [4] }>) { y.store(again(y.load())); }
}";
    assert_error(
        src,
        "`again` calls itself: helpers are inlined, so recursion is not supported",
        3,
        68,
    );
    let src = "mod m {
    use cuprum::tile::core::*;
    fn zeros<const S: [i32; 1]>() -> Tile<f32, S> { constant(0.0f32, const_shape!(S)) }
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [4] }>) { let z = zeros(); y.store(z); }
}";
    assert_error(
        src,
        "cannot tell `S` of `zeros` from its arguments; give it: `zeros::<..>(..)`",
        5,
        50,
    );
    let src = "mod m {
    use cuprum::tile::core::*;
    fn first(t: f32) -> f32 { if t > 0.0 { return t; } 0.0 }
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [4] }>, s: f32) { y.store(constant(first(s), const_shape![4])); }
}";
    assert_error(
        src,
        "`first` is inlined, and a `return` before its end is not supported yet",
        3,
        44,
    );
    let src = "mod m {
    use cuprum::tile::core::*;
    fn half<const S: [i32; 1]>(t: Tile<f32, S>) -> Tile<f32, S> { reduce_sum(t, 0) }
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [4] }>) { y.store(half(y.load())); }
}";
    assert_error(src, "`half` returns `Tile<f32, S>`", 5, 50);
}

#[test]
fn shape_operations_check_ranks_and_axes() {
    assert_error(
        &entry("let t = y.load(); let r = reduce_sum(t, 2);"),
        "`reduce_sum` over axis 2 of `Tile<f32, [BM, BN]>`, which has 2 axes",
        5,
        49,
    );
    assert_error(
        &entry("let t = y.load(); let r = reduce_sum(t, 1).broadcast(y.shape());"),
        "`broadcast` of `[BM]` to `[BM, BN]`: the ranks differ",
        5,
        35,
    );
    // A reshape to another element count is refused when the counts are known.
    assert_error(
        "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn k(y: &mut Tensor<f32, { [4, 8] }>) { let r = y.load().reshape(const_shape![3, 5]); }
}",
        "reshape of tile<f32, [4, 8]> (32 elements) to [3, 5] (15 elements)",
        4,
        53,
    );
    assert_error(
        &entry("let t = y.load(); let r = convert_tile(t);"),
        "cannot tell which element type `convert_tile` converts to",
        5,
        35,
    );
    assert_error(
        &entry("let t = y.load(); let s = x.shape(); let r = constant(0.0f32, s);"),
        "a tile shape must be static, but dimension 0 of `x` is `-1`",
        5,
        71,
    );
    assert_error(
        &entry(
            "let t = y.load(); let r = t.transpose().transpose(); let u = reduce_sum(r, 0).transpose();",
        ),
        "`transpose` swaps the two axes of a rank-2 tile; `Tile<f32, [BN]>` has rank 1",
        5,
        70,
    );
}

#[test]
fn print_and_assert_check_their_arguments() {
    assert_error(
        &entry("cuda_tile_print!(\"{} {}\\n\", 1);"),
        "the format string has more `{}` than `cuda_tile_print!` has arguments",
        5,
        26,
    );
    assert_error(
        &entry("let t = y.load(); cuda_tile_print!(\"{}\\n\", t);"),
        "`cuda_tile_print!` prints scalars, not `Tile<f32, [BM, BN]>`",
        5,
        52,
    );
    assert_error(
        &entry("cuda_tile_assert!(get_tile_block_id().0, \"no\");"),
        "a condition is a scalar `bool`, not `i32`",
        5,
        27,
    );
}

#[test]
fn errors_of_several_entries_are_all_reported() {
    let src = "mod m {
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    fn a(y: &mut Tensor<f32, { [4] }>) { y.store(nope()); }
    #[cuprum::tile::entry()]
    fn b(y: &mut Tensor<f32, { [4] }>) { y.store(1i32); }
}";
    let module: syn::ItemMod = syn::parse_str(src).expect("parses");
    let e = cuprum_tile_front::compile_module(&module).expect_err("two errors");
    let all: Vec<(usize, String)> = e
        .into_iter()
        .map(|e| (e.span().start().line, e.to_string()))
        .collect();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0].0, 4);
    assert!(all[0].1.contains("unknown operation `nope`"), "{all:?}");
    assert_eq!(all[1].0, 6);
    assert!(
        all[1]
            .1
            .contains("mismatched types: expected `f32`, found `i32`"),
        "{all:?}"
    );
}

#[test]
fn a_helpers_error_is_reported_once_for_all_its_callers() {
    let src = "mod m {
    use cuprum::tile::core::*;
    fn bad(t: Tile<f32, { [4] }>) -> Tile<f32, { [4] }> { nope(t) }
    #[cuprum::tile::entry()]
    fn a(y: &mut Tensor<f32, { [4] }>) { y.store(bad(y.load())); }
    #[cuprum::tile::entry()]
    fn b(y: &mut Tensor<f32, { [4] }>) { y.store(bad(y.load())); }
}";
    let module: syn::ItemMod = syn::parse_str(src).expect("parses");
    let e = cuprum_tile_front::compile_module(&module).expect_err("an error");
    let all: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
    assert_eq!(all.len(), 1, "{all:?}");
    assert!(all[0].contains("unknown operation `nope`"), "{all:?}");
}

#[test]
fn module_items_other_than_functions_consts_and_uses_are_refused() {
    let src = "mod m {
    use cuprum::tile::core::*;
    struct S { a: f32 }
    #[cuprum::tile::entry()]
    fn a(y: &mut Tensor<f32, { [4] }>) {}
}";
    assert_error(
        src,
        "only functions, consts and `use` items are supported in a `#[cuprum::tile::module]`",
        3,
        5,
    );
    let src = "mod m {
    const A: i32 = B;
    const B: i32 = A;
    #[cuprum::tile::entry()]
    fn a(y: &mut Tensor<f32, { [4] }>) {}
}";
    let (msg, ..) = compile_err(src);
    assert!(msg.contains("refers to itself"), "{msg}");
}

/// A module whose one entry has the parameters `params` and `body` (on line 5, column 9).
fn entry_with(unsafety: &str, params: &str, body: &str) -> String {
    format!(
        "mod m {{
    use cuprum::tile::core::*;
    #[cuprum::tile::entry()]
    {unsafety}fn k({params}) {{
        {body}
    }}
}}"
    )
}

#[test]
fn raw_pointers_need_an_unsafe_entry_and_are_used_as_pointers() {
    // A `*mut T` parameter in a safe entry: its caller could not promise race freedom.
    let src = entry_with("", "z: *mut f32", "let p = pointer_to_tile(z);");
    assert_error(
        &src,
        "a raw pointer parameter needs an `unsafe fn` entry",
        4,
        13,
    );
    // Loads through a pointer tile take a `bool` mask of the pointers' shape.
    assert_error(
        &entry_with(
            "unsafe ",
            "z: *mut f32",
            "let p = pointer_to_tile(z).reshape(const_shape![1]).broadcast(const_shape![4]);\n        let m: Tile<bool, { [8] }> = constant(true, const_shape![8]);\n        let t = load_ptr_tko(p, Some(m), Some(0.0f32));",
        ),
        "the mask is `Tile<bool, [8]>`; it must be a `bool` tile of the pointers' shape `[4]`",
        7,
        33,
    );
    // A store through a read-only partition of a tensor view.
    assert_error(
        &entry_with(
            "unsafe ",
            "z: *mut f32, n: i32",
            "let v = make_tensor_view(pointer_to_tile(z), Shape::<{ [-1] }> { dims: &[n] }, Array::<{ [-1] }> { dims: &[1i32] }, new_token_unordered());\n        v.partition(const_shape![4]).store(constant(1.0f32, const_shape![4]), [0i32]);",
        ),
        "a `partition` is read-only; store through `partition_mut`",
        6,
        38,
    );
}

#[test]
fn mapped_partitions_store_only_at_their_own_loops_index() {
    let params = "mut z: MappedPartitionMut<f32, { [4, 4] }, { [2, 1] }>, mut w: MappedPartitionMut<f32, { [4, 4] }, { [2, 1] }>";
    let tile = "constant(1.0f32, const_shape![4, 4])";
    // An index of another partition's loop.
    assert_error(
        &entry_with(
            "",
            params,
            &format!("for i in w.iter_indices() {{ z.store({tile}, i); }}"),
        ),
        "a store takes the index of the innermost loop over its own partition",
        5,
        83,
    );
    // Loops over one mapped partition cannot nest (an outer index would name another tile).
    assert_error(
        &entry_with(
            "",
            params,
            &format!(
                "for i in z.iter_indices() {{ for j in z.iter_indices() {{ z.store({tile}, i); }} }}"
            ),
        ),
        "loops over one mapped partition cannot nest",
        5,
        46,
    );
    assert_error(
        &entry_with("", params, "let it = z.iter_indices();"),
        "`iter_indices()` is iterated by a `for` loop",
        5,
        20,
    );
}
