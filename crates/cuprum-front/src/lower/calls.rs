//! Calls: device intrinsics (thread indices, barriers, atomics, warp operations, shared
//! memory) and methods on values (float math, slice lengths).

use cuprum_ir::{
    BinaryOp, CmpOp, Constant, Dim, Op, ScalarType as S, Scope, Special, Stmt, TernaryOp, UnaryOp,
    Value,
};
use syn::spanned::Spanned;

use super::*;

impl Lowerer<'_> {
    // ----- calls --------------------------------------------------------------------------

    pub(super) fn method_call(&mut self, m: &syn::ExprMethodCall) -> Result<Val> {
        // A method's receiver names its generic struct's arguments, not where its result goes.
        self.expected = None;
        // Methods of the module's structs take their receiver as a place.
        let receiver = match self.struct_method_call(m)? {
            methods::MethodCall::Done(v) => return Ok(v),
            methods::MethodCall::NotOurs(Some(v)) => v,
            methods::MethodCall::NotOurs(None) => self.expr(&m.receiver)?,
        };
        self.value_method_call(m, receiver)
    }

    /// `m` on the receiver's value, already evaluated.
    pub(super) fn value_method_call(
        &mut self,
        m: &syn::ExprMethodCall,
        receiver: Val,
    ) -> Result<Val> {
        let span = m.span();
        let method = m.method.to_string();
        if let Some(v) = self.view_method(m, &receiver)? {
            return Ok(v);
        }
        // Auto-deref, as Rust does for `out.wrapping_add(1)` on an `&mut u32`.
        let receiver = self.deref_elem(receiver, m.receiver.span())?;
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (&receiver, method.as_str()) {
            // `map.as_ptr()` of a `TensorMap<T, RANK>` parameter: the map (`tma`).
            (Val::TensorMap(_), "as_ptr") if args.is_empty() => return Ok(receiver),
            (Val::Index1(x) | Val::WarpIndex(x), "get") if args.is_empty() => {
                return Ok(Val::Scalar(*x));
            }
            // cuda-oxide's `idx.in_bounds(len)`: `idx.get() < len`.
            (Val::Index1(x), "in_bounds") if args.len() == 1 => {
                let x = *x;
                let len = self.expr(args[0])?;
                let len = self.materialize(len, S::U64, args[0].span())?;
                return Ok(Val::Scalar(self.def(Op::Compare(CmpOp::Lt, x, len), span)?));
            }
            // `col()` and `row()`: a `ThreadIndex<Runtime2DIndex>`'s names for them.
            (Val::Index2(x, _) | Val::Index3(x, _, _), "x" | "col") if args.is_empty() => {
                return Ok(Val::Scalar(*x));
            }
            (Val::Index2(_, y) | Val::Index3(_, y, _), "y" | "row") if args.is_empty() => {
                return Ok(Val::Scalar(*y));
            }
            (Val::Index3(_, _, z), "z") if args.is_empty() => return Ok(Val::Scalar(*z)),
            (Val::Shared { array, elem, len }, _) => {
                let (array, elem, len) = (*array, *elem, *len);
                return self.shared_method(m, array, elem, len);
            }
            (Val::Phased(p), _) => {
                let p = *p;
                return self.phased_method(m, p);
            }
            (Val::Tuple(items), "sync") if args.is_empty() => {
                let items = items.clone();
                return self.sync_tuple(&items, span);
            }
            (Val::SharedElems { array, elem, len }, _) => {
                let (array, elem, len) = (*array, elem.clone(), *len);
                return self.shared_elements_method(m, array, elem, len);
            }
            (Val::Atomic(p), _) => {
                let p = *p;
                return self.atomic_method_call(m, p);
            }
            (Val::Ptr { .. }, _) => {
                let v = receiver.clone();
                return self.pointer_method(m, v);
            }
            (Val::ClusterPtr { .. }, _) => {
                let v = receiver.clone();
                return self.cluster_pointer_method(m, v);
            }
            (Val::AtomicCell { .. }, _) => {
                let v = receiver.clone();
                return self.atomic_cell_method(m, v);
            }
            (&Val::CasResult { ok, value }, _) => {
                return self.cas_result_method(m, ok, value);
            }
            (Val::LocalElems { len, .. }, "len") if args.is_empty() => {
                let len = u64::from(*len);
                return Ok(Val::Scalar(self.constant(Constant::u64(len))));
            }
            (Val::Array(a), "len") if args.is_empty() => {
                let len = u64::from(a.len());
                return Ok(Val::Scalar(self.constant(Constant::u64(len))));
            }
            // `x.as_ptr()`: a raw pointer to a slice's first element (dereferenced, or passed
            // to `cp.async`, inside `unsafe`, as Rust requires).
            (Val::Slice(p), "as_ptr" | "as_mut_ptr") if args.is_empty() => {
                let p = *p;
                let (elem, access) = self.slice_param(p);
                let mutable = m.method == "as_mut_ptr";
                if mutable && access != SliceAccess::ReadWrite {
                    return err(
                        m.method.span(),
                        "`as_mut_ptr` needs a `&mut [T]` parameter of an `unsafe` kernel",
                    );
                }
                let addr = self.def(Op::SliceBase(p), span)?;
                return Ok(Val::Ptr {
                    addr,
                    elem,
                    mutable,
                    space: cuprum_ir::AddressSpace::Global,
                });
            }
            (Val::Slice(p), "len") if args.is_empty() => {
                let p = *p;
                return Ok(Val::Scalar(self.slice_len(p, span)?));
            }
            (Val::Slice(p), "is_empty") if args.is_empty() => {
                let p = *p;
                let len = self.slice_len(p, span)?;
                let zero = self.constant(Constant::u64(0));
                return Ok(Val::Scalar(
                    self.def(Op::Compare(CmpOp::Eq, len, zero), span)?,
                ));
            }
            // cuda-oxide's `row_width()` of a `DisjointSlice<T, Runtime2DIndex>`: the width
            // the host bound, as the `u32` it gave.
            (Val::Slice(p), "row_width") if args.is_empty() && self.row_widths.contains_key(p) => {
                let width = self.row_widths[p];
                return Ok(Val::Scalar(self.cast_value(width, S::U32, span)?));
            }
            (Val::Slice(p), "update") => {
                let p = *p;
                return self.disjoint_update(p, m);
            }
            (Val::Slice(_), "chunk_mut" | "tile_mut" | "grid_stride_mut" | "block_result_mut") => {
                let form = match method.as_str() {
                    "block_result_mut" => "if let Some(out) = slice.block_result_mut() { .. }",
                    "tile_mut" => {
                        "for (r, c, out) in slice.tile_mut::<TM, TN>(index, width) { .. }"
                    }
                    _ => "for (i, out) in slice.METHOD { .. }",
                };
                return err(
                    span,
                    format!(
                        "use `{method}` as `{}` in device code: the elements it hands out are \
                         reachable only inside it",
                        form.replace("METHOD", &format!("{method}(..)"))
                    ),
                );
            }
            (Val::Slice(p), "get_unchecked_mut" | "get_unchecked") => {
                return self.unchecked_element(*p, &method, &args, span);
            }
            (Val::Slice(_), "get_mut" | "get") => {
                return err(
                    span,
                    format!(
                        "use `{method}` as `if let Some(x) = slice.{method}(i) {{ .. }}` in device code"
                    ),
                );
            }
            _ => {}
        }
        match method.as_str() {
            "to_f32" | "to_f64" if args.is_empty() => {
                let x = self.scalar(receiver, span)?;
                let to = if method == "to_f32" { S::F32 } else { S::F64 };
                return Ok(Val::Scalar(self.cast_value(x, to, span)?));
            }
            "count_ones" | "leading_zeros" | "trailing_zeros" if args.is_empty() => {
                let x = self.scalar(receiver, span)?;
                if !self.ty(x).is_int() {
                    return err(span, format!("`{method}` counts the bits of an integer"));
                }
                let op = match method.as_str() {
                    "count_ones" => UnaryOp::CountOnes,
                    "leading_zeros" => UnaryOp::LeadingZeros,
                    _ => UnaryOp::TrailingZeros,
                };
                let n = self.def(Op::Unary(op, x), span)?;
                return Ok(Val::Scalar(self.cast_value(n, S::U32, span)?));
            }
            "to_bits" if args.is_empty() => {
                let x = self.scalar(receiver, span)?;
                let to = match self.ty(x) {
                    S::F16 | S::BF16 => S::U16,
                    S::F32 => S::U32,
                    S::F64 => S::U64,
                    other => return err(span, format!("`to_bits` on `{other}`")),
                };
                return Ok(Val::Scalar(self.def(Op::Bitcast { value: x, to }, span)?));
            }
            _ => {}
        }
        let unary = match method.as_str() {
            "sqrt" => Some(UnaryOp::Sqrt),
            "abs" => Some(UnaryOp::Abs),
            "floor" => Some(UnaryOp::Floor),
            "ceil" => Some(UnaryOp::Ceil),
            "round" => Some(UnaryOp::Round),
            "trunc" => Some(UnaryOp::Trunc),
            "exp" => Some(UnaryOp::Exp),
            "exp2" => Some(UnaryOp::Exp2),
            "ln" => Some(UnaryOp::Ln),
            "log2" => Some(UnaryOp::Log2),
            "sin" => Some(UnaryOp::Sin),
            "cos" => Some(UnaryOp::Cos),
            "tanh" => Some(UnaryOp::Tanh),
            "tan" => Some(UnaryOp::Tan),
            "atan" => Some(UnaryOp::Atan),
            "sinh" => Some(UnaryOp::Sinh),
            "cosh" => Some(UnaryOp::Cosh),
            "asinh" => Some(UnaryOp::Asinh),
            "acosh" => Some(UnaryOp::Acosh),
            "atanh" => Some(UnaryOp::Atanh),
            "exp_m1" => Some(UnaryOp::ExpM1),
            "ln_1p" => Some(UnaryOp::Ln1p),
            _ => None,
        };
        if let Some(op) = unary {
            if !args.is_empty() {
                return err(span, format!("`{method}` takes no arguments"));
            }
            if let Val::Infer(..) = receiver {
                return Ok(receiver);
            }
            let x = self.scalar(receiver, span)?;
            let ty = self.ty(x);
            if op == UnaryOp::Abs && ty.is_signed_int() {
                // Wrapping abs, as `i32::wrapping_abs`; release-mode `abs` of MIN also wraps.
                let zero = self.constant(Constant::new(ty, 0));
                let neg = self.def(Op::Compare(CmpOp::Lt, x, zero), span)?;
                let negated = self.def(Op::Unary(UnaryOp::Neg, x), span)?;
                return Ok(Val::Scalar(self.def(
                    Op::Select {
                        cond: neg,
                        if_true: negated,
                        if_false: x,
                    },
                    span,
                )?));
            }
            if !ty.is_float() {
                return err(span, format!("`{method}` needs a float, found `{ty}`"));
            }
            return Ok(Val::Scalar(self.def(Op::Unary(op, x), span)?));
        }
        let binary = match method.as_str() {
            "min" => Some(BinaryOp::Min),
            "max" => Some(BinaryOp::Max),
            "wrapping_add" => Some(BinaryOp::Add),
            "wrapping_sub" => Some(BinaryOp::Sub),
            "wrapping_mul" => Some(BinaryOp::Mul),
            // `y.atan2(x)`: floats only (`arith` refuses integers).
            "atan2" => Some(BinaryOp::Atan2),
            "hypot" => Some(BinaryOp::Hypot),
            _ => None,
        };
        if let Some(op) = binary {
            let [arg] = args[..] else {
                return err(span, format!("`{method}` takes one argument"));
            };
            let r = self.expr(arg)?;
            return self.arith(op, receiver, r, span, m);
        }
        // Unsigned `a.is_multiple_of(b)`: `a % b == 0`, and for `b == 0` whether `a == 0`
        // (no division by zero: the divisor is 1 there).
        if method == "is_multiple_of" {
            let [arg] = args[..] else {
                return err(span, "`is_multiple_of` takes one argument");
            };
            let r = self.expr(arg)?;
            let ty = self.unify(&receiver, &r, span)?.unwrap_or(S::U32);
            if !ty.is_int() || ty.is_signed_int() {
                return err(
                    span,
                    format!("`is_multiple_of` needs an unsigned integer, found `{ty}`"),
                );
            }
            let a = self.materialize(receiver, ty, span)?;
            let b = self.materialize(r, ty, span)?;
            let zero = self.constant(Constant::new(ty, 0));
            let one = self.constant(Constant::new(ty, 1));
            let b_zero = self.def(Op::Compare(CmpOp::Eq, b, zero), span)?;
            let divisor = self.def(
                Op::Select {
                    cond: b_zero,
                    if_true: one,
                    if_false: b,
                },
                span,
            )?;
            let rem = self.def(Op::Binary(BinaryOp::Rem, a, divisor), span)?;
            let rem_zero = self.def(Op::Compare(CmpOp::Eq, rem, zero), span)?;
            let a_zero = self.def(Op::Compare(CmpOp::Eq, a, zero), span)?;
            return Ok(Val::Scalar(self.def(
                Op::Select {
                    cond: b_zero,
                    if_true: a_zero,
                    if_false: rem_zero,
                },
                span,
            )?));
        }
        if method == "div_ceil" {
            let [arg] = args[..] else {
                return err(span, "`div_ceil` takes one argument");
            };
            let r = self.expr(arg)?;
            if let (Val::Int(a), Val::Int(b)) = (&receiver, &r) {
                if *b == 0 {
                    return err(span, "division by zero");
                }
                return Ok(Val::Int(
                    a.div_euclid(*b) + i128::from(a.rem_euclid(*b) != 0),
                ));
            }
            // `x / y` rounded up: the quotient, plus one where a remainder is left (the
            // division's own zero check applies).
            let q = self.arith(BinaryOp::Div, receiver.clone(), r.clone(), span, m)?;
            let rem = self.arith(BinaryOp::Rem, receiver, r, span, m)?;
            let (q, rem) = (self.scalar(q, span)?, self.scalar(rem, span)?);
            let ty = self.ty(q);
            if !ty.is_int() || ty.is_signed_int() {
                return err(
                    span,
                    format!("`div_ceil` needs an unsigned integer, found `{ty}`"),
                );
            }
            let zero = self.constant(Constant::new(ty, 0));
            let one = self.constant(Constant::new(ty, 1));
            let left = self.def(Op::Compare(CmpOp::Ne, rem, zero), span)?;
            let bump = self.def(
                Op::Select {
                    cond: left,
                    if_true: one,
                    if_false: zero,
                },
                span,
            )?;
            return Ok(Val::Scalar(
                self.def(Op::Binary(BinaryOp::Add, q, bump), span)?,
            ));
        }
        if let Some(v) = self.float_extras(&method, &receiver, &args, span)? {
            return Ok(v);
        }
        if method == "mul_add" {
            let [a, c] = args[..] else {
                return err(span, "`mul_add` takes two arguments");
            };
            let (a, c) = (self.expr(a)?, self.expr(c)?);
            let x = self.scalar(receiver, span)?;
            let ty = self.ty(x);
            if !ty.is_float() {
                return err(span, "`mul_add` needs floats");
            }
            let a = self.materialize(a, ty, span)?;
            let c = self.materialize(c, ty, span)?;
            return Ok(Val::Scalar(
                self.def(Op::Ternary(TernaryOp::MulAdd, x, a, c), span)?,
            ));
        }
        if let Val::Struct(name, _) = &receiver {
            return err(
                m.method.span(),
                format!(
                    "`.{method}()` on a `{name}`: `{name}` has no method `{method}` in this \
                     module; write it in an `impl {name} {{ .. }}` block of the module"
                ),
            );
        }
        err(
            m.method.span(),
            format!("method `{method}` is not supported in device code"),
        )
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> Result<Val> {
        let span = c.span();
        let syn::Expr::Path(p) = &*c.func else {
            return err(
                c.func.span(),
                "only calls of named functions are supported in device code",
            );
        };
        // A local closure shadows a module function of its name, as in Rust.
        if let Some(name) = p.path.get_ident()
            && let Some(Binding::Val(Val::Closure(f))) = self.lookup(&name.to_string()).cloned()
        {
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            return self.call_closure(&f, &args, span);
        }
        if let [segment] = Vec::from_iter(&p.path.segments)[..]
            && let Some(f) = self
                .local_fns
                .iter()
                .rev()
                .find(|f| f.sig.ident == segment.ident)
                .cloned()
        {
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            return self.call_helper(&f, &p.path, &args, span);
        }
        if let Some(f) = self
            .find_helper(&p.path)
            .or_else(|| self.find_associated(&p.path))
        {
            let f = f.clone();
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            return self.call_helper(&f, &p.path, &args, span);
        }
        if let Some(v) = self.default_call(p, c.args.len(), span)? {
            return Ok(v);
        }
        let path = path_string(&p.path);
        let last = p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let first = p
            .path
            .segments
            .first()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if matches!(
            first.as_str(),
            "Vec" | "Box" | "String" | "Rc" | "Arc" | "HashMap" | "BTreeMap" | "VecDeque"
        ) {
            return err(
                span,
                format!("`{path}` allocates on the heap, which device code cannot do"),
            );
        }
        if let Some(f) = mem_function(&p.path) {
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            let [a, b] = args[..] else {
                return err(
                    span,
                    format!("`mem::{f}` takes two arguments: `mem::{f}(&mut a, b)`"),
                );
            };
            return match f {
                "swap" => self.mem_swap(a, b, span),
                _ => self.mem_replace(a, b, span),
            };
        }
        if matches!(first.as_str(), "core" | "std")
            && p.path.segments.iter().any(|s| s.ident == "nvptx")
        {
            return err(
                span,
                format!(
                    "`{path}` exists only on the nightly `nvptx64` target: call \
                     `cuprum::simt::nvptx::{last}` (the same intrinsics, on stable Rust: \
                     `use cuprum::simt::nvptx;`, then `nvptx::{last}()`)"
                ),
            );
        }
        // `core::ptr::null()` / `null_mut()`: address 0, which a branch choosing between it
        // and a pointer stores as the pointer's address.
        if matches!(last.as_str(), "null" | "null_mut")
            && c.args.is_empty()
            && p.path.segments.iter().any(|s| s.ident == "ptr")
        {
            return Ok(Val::Scalar(self.constant(Constant::u64(0))));
        }
        if first == "std" || first == "core" || first == "alloc" {
            return err(
                span,
                format!("`{path}`: the standard library is not available in device code"),
            );
        }
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        // `u64::from(x)` on a concrete scalar type: a conversion rustc accepted, so a
        // lossless one, a cast. (`T::from` of a type parameter stays refused: its
        // specializations could make it lossy.)
        if let [.., ty, f] = Vec::from_iter(&p.path.segments)[..]
            && f.ident == "from"
            && let Some(to) = S::from_rust_name(&ty.ident.to_string())
            && let [arg] = args[..]
        {
            let v = self.expr(arg)?;
            return Ok(Val::Scalar(match v {
                Val::Scalar(x) => self.cast_value(x, to, span)?,
                other => self.materialize(other, to, span)?,
            }));
        }
        if let Some(v) = self.float_conversion(&p.path, &args, span)? {
            return Ok(v);
        }
        if let [ty, _] = Vec::from_iter(&p.path.segments)[..]
            && self.scalar_named(&ty.ident.to_string()).is_some()
        {
            return err(
                span,
                format!(
                    "`{path}` is not a device function known to cuprum: call the methods of \
                     numbers as methods (`x.sqrt()`, `a.max(b)`); on a scalar type or a type \
                     parameter `T`, device code knows `T::default()`, `T::ZERO`, `T::ONE`, \
                     `T::MIN`, `T::MAX` (`cuprum::simt::Num`), and converts with `x as T`"
                ),
            );
        }
        if let Some(v) = self.nvptx_call(&last, &path, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.dynamic_shared_array_call(&p.path, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.packed_half_call(&last, &args, span)? {
            return Ok(v);
        }
        if p.path.segments.iter().any(|s| s.ident == "nvptx") {
            return err(
                span,
                format!(
                    "`{path}` is not one of the intrinsics of `cuprum::simt::nvptx`: \
                     `_thread_idx_x/y/z`, `_block_idx_x/y/z`, `_block_dim_x/y/z`, \
                     `_grid_dim_x/y/z` and `_syncthreads` (for `printf`, write `println!`)"
                ),
            );
        }
        if let Some(v) = self.view_call(&p.path, &last, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.warp_call(&last, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.mbarrier_call(&last, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.matrix_call(&last, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.tma_call(&last, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.cluster_call(&last, &args, span)? {
            return Ok(v);
        }
        if let Some(v) = self.wgmma_call(&p.path, &last, &args, span)? {
            return Ok(v);
        }
        match (last.as_str(), args.len()) {
            ("sync_threads", 0) => {
                self.barrier(span);
                return Ok(Val::Unit);
            }
            ("fence_block", 0) => return self.fence(Scope::Block),
            ("fence_device", 0) => return self.fence(Scope::Device),
            ("fence_system", 0) => return self.fence(Scope::System),
            ("fence_proxy_async", 0) => {
                self.b.push(Stmt::FenceProxyAsync {
                    space: cuprum_ir::ProxyFenceSpace::All,
                });
                return Ok(Val::Unit);
            }
            ("index_2d", 0) => {
                let v = self.global_index(&[Dim::X, Dim::Y], span)?;
                return Ok(Val::Index2(v[0], v[1]));
            }
            // cuda-oxide's names for the coordinates of `index_2d()`.
            ("index_2d_row", 0) => {
                let v = self.global_index(&[Dim::Y], span)?;
                return Ok(Val::Scalar(v[0]));
            }
            ("index_2d_col", 0) => {
                let v = self.global_index(&[Dim::X], span)?;
                return Ok(Val::Scalar(v[0]));
            }
            // `Some` where the thread's column is below the slice's row width: an `Option`
            // made in every thread, which may be bound, put in tuples and chosen between.
            ("index_2d_runtime", 1) => {
                let (some, index) = self.index_2d_runtime(args[0], span)?;
                return Ok(Val::Opt {
                    some,
                    inner: Box::new(index),
                });
            }
            ("index_3d", 0) => {
                let v = self.global_index(&[Dim::X, Dim::Y, Dim::Z], span)?;
                return Ok(Val::Index3(v[0], v[1], v[2]));
            }
            ("warp_id", 0) => return Ok(Val::Scalar(self.warp_id(span)?)),
            ("uninit" | "dynamic_shared", 0) => {
                return err(
                    span,
                    "declare shared memory with `let`: `let tile = SharedArray::<f32, 256>::uninit();` \
                     or `let smem = dynamic_shared::<f32>();`",
                );
            }
            _ => {}
        }
        if !c.args.is_empty() {
            return err(
                span,
                format!(
                    "`{path}` is not a device function known to cuprum: call a device intrinsic or a `fn` of this module"
                ),
            );
        }
        if last == "index_1d" {
            let x = self.global_index_x()?;
            return Ok(Val::Index1(x));
        }
        if let Some(reg) = special_register(&last) {
            return Ok(Val::Scalar(self.def(Op::Special(reg), span)?));
        }
        err(
            span,
            format!("`{path}` is not a device function known to cuprum"),
        )
    }

    /// `T::default()`, `f32::default()`, `<T as Default>::default()`, `Name::default()` of a
    /// struct of the module (every field's default), and `Default::default()`, whose type comes
    /// from where its value goes: the infer run leaves it open at a site of its own, which
    /// the emit run types. `None` when the call is none of these.
    fn default_call(
        &mut self,
        p: &syn::ExprPath,
        arg_count: usize,
        span: proc_macro2::Span,
    ) -> Result<Option<Val>> {
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        if segs.last().map(String::as_str) != Some("default") {
            return Ok(None);
        }
        let named: Option<syn::Type> = match (&p.qself, &segs[..]) {
            (Some(q), _) => Some((*q.ty).clone()),
            (None, [.., trait_name, _]) if trait_name == "Default" => None,
            (None, [.., ty, _]) => Some(
                syn::parse_str(ty)
                    .map_err(|e| syn::Error::new(span, format!("internal compiler error: {e}")))?,
            ),
            (None, _) => return Ok(None),
        };
        if arg_count != 0 {
            return err(span, "`default()` takes no arguments");
        }
        if let Some(ty) = &named {
            let known = self.struct_instance(ty).is_some() || self.resolve_scalar(ty).is_ok();
            return if known {
                self.zero_value(ty, 0, span).map(Some)
            } else {
                Ok(None)
            };
        }
        let site = self.site();
        if self.inferring() {
            return Ok(Some(Val::Infer(site, super::infer::LitKind::Int)));
        }
        match self.solved(site) {
            Some(ty) => Ok(Some(Val::Scalar(self.constant(Constant::new(ty, 0))))),
            None => err(
                span,
                "cannot tell the type of this `Default::default()`: write `T::default()` with \
                 its type (`f32::default()`, `T::default()`), or annotate the `let`",
            ),
        }
    }

    /// The default (zero) value of a scalar type or a struct of the module, field by field.
    fn zero_value(&mut self, ty: &syn::Type, depth: u32, span: proc_macro2::Span) -> Result<Val> {
        let Some(def) = self.struct_instance(ty) else {
            let s = self.resolve_scalar(ty)?;
            return Ok(Val::Scalar(self.constant(Constant::new(s, 0))));
        };
        if depth > 16 {
            return err(span, format!("`{}` contains itself", def.name));
        }
        let mut items = Vec::with_capacity(def.def.fields.len());
        for field in &def.def.fields {
            items.push(self.zero_value(&field.ty, depth + 1, span)?);
        }
        Ok(Val::Struct(def.name, items))
    }

    /// `nvptx::_thread_idx_x()` and the other intrinsics of `cuprum::simt::nvptx`
    /// (`core::arch::nvptx`'s names): the registers as `i32`, and `_syncthreads()`. `None`
    /// when `name` is not one of them.
    fn nvptx_call(
        &mut self,
        name: &str,
        path: &str,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<Option<Val>> {
        let Some(register) = name.strip_prefix('_') else {
            return Ok(None);
        };
        let register = match special_register(register) {
            Some(Special::LaneId) => return Ok(None),
            Some(reg) => Some(reg),
            None if register == "syncthreads" => None,
            None => return Ok(None),
        };
        if !args.is_empty() {
            return err(span, format!("`{path}` takes no arguments"));
        }
        let Some(register) = register else {
            self.barrier(span);
            return Ok(Some(Val::Unit));
        };
        let x = self.def(Op::Special(register), span)?;
        Ok(Some(Val::Scalar(self.cast_value(x, S::I32, span)?)))
    }

    /// cuda-oxide's `DynamicSharedArray::<T, ALIGN>::get()` (a `*mut T` to the start of
    /// dynamic shared memory), `::offset(bytes)` (`bytes` past it) and `::get_raw()` (a
    /// `*mut u8`). `ALIGN` (16 unless given, a power of two) becomes the kernel's alignment of
    /// dynamic shared memory, the largest that any call asks. The pointer is dereferenced
    /// inside `unsafe`, which rustc requires: the launch's `shared_mem_bytes` must cover what
    /// the kernel touches, and threads must meet at barriers between writes and reads.
    fn dynamic_shared_array_call(
        &mut self,
        path: &syn::Path,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<Option<Val>> {
        let segs: Vec<&syn::PathSegment> = path.segments.iter().collect();
        let [.., array, f] = segs[..] else {
            return Ok(None);
        };
        if array.ident != "DynamicSharedArray" {
            return Ok(None);
        }
        let generics: Vec<&syn::GenericArgument> = match &array.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().collect(),
            _ => Vec::new(),
        };
        let elem = match generics.first() {
            Some(syn::GenericArgument::Type(t)) => self.resolve_scalar(t)?,
            _ => {
                return err(
                    array.span(),
                    "name the element type: `DynamicSharedArray::<f32>::get()`",
                );
            }
        };
        let align = match generics.get(1) {
            None => cuprum_ir::DYN_SHARED_MIN_ALIGN,
            Some(syn::GenericArgument::Const(e)) => self.alignment_const(e)?,
            Some(syn::GenericArgument::Type(syn::Type::Path(tp))) => {
                let e: syn::Expr = syn::Expr::Path(syn::ExprPath {
                    attrs: Vec::new(),
                    qself: None,
                    path: tp.path.clone(),
                });
                self.alignment_const(&e)?
            }
            Some(other) => return err(other.span(), "expected the alignment in bytes"),
        };
        if !align.is_power_of_two() || align > cuprum_ir::DYN_SHARED_MAX_ALIGN {
            return err(
                array.span(),
                format!(
                    "the alignment of dynamic shared memory is a power of two up to {}",
                    cuprum_ir::DYN_SHARED_MAX_ALIGN
                ),
            );
        }
        self.b.align_dyn_shared(align);
        let base = self.def(Op::DynSharedAddr, span)?;
        let (addr, elem) = match (f.ident.to_string().as_str(), args) {
            ("get", []) => (base, elem),
            ("get_raw", []) => (base, S::U8),
            ("offset", [bytes]) => {
                let n = self.expr(bytes)?;
                let n = self.materialize(n, S::U64, span)?;
                let n = self.cast_value(n, S::U32, span)?;
                (self.def(Op::Binary(BinaryOp::Add, base, n), span)?, elem)
            }
            (other, _) => {
                return err(
                    f.span(),
                    format!(
                        "`DynamicSharedArray::{other}` is not supported: `get()`, \
                         `offset(bytes)` and `get_raw()` are"
                    ),
                );
            }
        };
        Ok(Some(Val::Ptr {
            addr,
            elem,
            mutable: true,
            space: cuprum_ir::AddressSpace::Shared,
        }))
    }

    /// An alignment given as a constant expression.
    fn alignment_const(&self, e: &syn::Expr) -> Result<u32> {
        match self.eval_const(e, 0)? {
            super::ConstVal::Int(n) if (1..=i128::from(u32::MAX)).contains(&n) => Ok(n as u32),
            _ => err(
                e.span(),
                "expected the alignment in bytes, a positive constant",
            ),
        }
    }

    /// `p.add(i)`, `p.offset(i)`, `p.sub(i)`, `p.read()`, `p.write(v)` on raw device pointers.
    /// `addr` stepped by `method` (`add`, `sub`, `offset` or their `wrapping_` forms) and
    /// `n` elements of `elem`, wrapping in the address's own width (shared addresses are 32
    /// bits): what a pointer's `p.add(n)` and a cluster pointer's compute.
    pub(super) fn stepped_address(
        &mut self,
        method: &str,
        addr: Value,
        n: &syn::Expr,
        elem: S,
        span: proc_macro2::Span,
    ) -> Result<Value> {
        let signed = method.contains("offset");
        let n = self.expr(n)?;
        let n = self.materialize(n, if signed { S::I64 } else { S::U64 }, span)?;
        let width = self.ty(addr);
        let n = self.cast_value(n, width, span)?;
        let size = self.constant(Constant::new(width, u64::from(elem.size_bytes())));
        let bytes = self.def(Op::Binary(BinaryOp::Mul, n, size), span)?;
        let op = if method.ends_with("sub") {
            BinaryOp::Sub
        } else {
            BinaryOp::Add
        };
        self.def(Op::Binary(op, addr, bytes), span)
    }

    pub(super) fn pointer_method(&mut self, m: &syn::ExprMethodCall, p: Val) -> Result<Val> {
        let Val::Ptr {
            addr,
            elem,
            mutable,
            space,
        } = p
        else {
            return err(m.span(), "expected a pointer");
        };
        let span = m.span();
        let method = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (method.as_str(), &args[..]) {
            (
                "add" | "sub" | "offset" | "wrapping_add" | "wrapping_sub" | "wrapping_offset",
                [n],
            ) => {
                let addr = self.stepped_address(&method, addr, n, elem, span)?;
                Ok(Val::Ptr {
                    addr,
                    elem,
                    mutable,
                    space,
                })
            }
            ("read", []) => Ok(Val::Scalar(self.def(
                Op::Load {
                    space,
                    ty: elem,
                    addr,
                    eviction: cuprum_ir::Eviction::Normal,
                },
                span,
            )?)),
            ("write", [v]) if mutable => {
                let v = self.expr(v)?;
                let v = self.materialize(v, elem, span)?;
                self.b.push(Stmt::Store {
                    space,
                    addr,
                    value: v,
                });
                Ok(Val::Unit)
            }
            ("write", _) => err(span, "cannot write through a `*const` pointer"),
            _ => err(
                m.method.span(),
                format!(
                    "`{method}` is not supported on device pointers (add, sub, offset, read, write)"
                ),
            ),
        }
    }

    /// Float methods built from others: `is_nan`, `is_infinite`, `is_finite`, `signum`,
    /// `powi` (repeated multiplication, as LLVM expands it for constant exponents; a loop of
    /// squarings otherwise) and `powf` (as `exp2(y * log2(x))`, with Rust's special cases for
    /// `y == 0` and `x == 1`).
    fn float_extras(
        &mut self,
        method: &str,
        receiver: &Val,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<Option<Val>> {
        if !matches!(
            method,
            "is_nan" | "is_infinite" | "is_finite" | "signum" | "powi" | "powf"
        ) {
            return Ok(None);
        }
        let x = self.scalar(receiver.clone(), span)?;
        let ty = self.ty(x);
        if !ty.is_float() {
            return err(span, format!("`{method}` needs a float, found `{ty}`"));
        }
        if ty == S::F64 && method == "powf"
            || (ty == S::F64
                && method == "powi"
                && !matches!(
                    args.first().map(|a| self.eval_const(a, 0)),
                    Some(Ok(ConstVal::Int(_)))
                ))
        {
            return err(span, f64_transcendental(method));
        }
        let c = |this: &mut Self, v: f64| this.constant(float_constant(ty, v));
        let v = match (method, args) {
            ("is_nan", []) => self.def(Op::Compare(CmpOp::Ne, x, x), span)?,
            ("is_infinite" | "is_finite", []) => {
                let a = self.def(Op::Unary(UnaryOp::Abs, x), span)?;
                let inf = c(self, f64::INFINITY);
                let op = if method == "is_infinite" {
                    CmpOp::Eq
                } else {
                    CmpOp::Lt
                };
                self.def(Op::Compare(op, a, inf), span)?
            }
            ("signum", []) => {
                // 1.0 or -1.0 by the sign bit (zeros included); NaN stays NaN.
                let zero = c(self, 0.0);
                let (one, minus) = (c(self, 1.0), c(self, -1.0));
                let neg = self.def(Op::Compare(CmpOp::Lt, x, zero), span)?;
                let neg_zero = {
                    let bits_ty = if ty == S::F64 {
                        S::U64
                    } else if ty == S::F32 {
                        S::U32
                    } else {
                        S::U16
                    };
                    let b = self.def(
                        Op::Bitcast {
                            value: x,
                            to: bits_ty,
                        },
                        span,
                    )?;
                    let sign = self.constant(Constant::new(bits_ty, 1u64 << (bits_ty.bits() - 1)));
                    let s = self.def(Op::Binary(BinaryOp::And, b, sign), span)?;
                    let z = self.constant(Constant::new(bits_ty, 0));
                    self.def(Op::Compare(CmpOp::Ne, s, z), span)?
                };
                let neg = self.def(Op::Binary(BinaryOp::Or, neg, neg_zero), span)?;
                let r = self.def(
                    Op::Select {
                        cond: neg,
                        if_true: minus,
                        if_false: one,
                    },
                    span,
                )?;
                let nan = self.def(Op::Compare(CmpOp::Ne, x, x), span)?;
                self.def(
                    Op::Select {
                        cond: nan,
                        if_true: x,
                        if_false: r,
                    },
                    span,
                )?
            }
            ("powi", [n]) => {
                let n_val = self.expr(n)?;
                match (&n_val, self.eval_const(n, 0)) {
                    (_, Ok(ConstVal::Int(k))) if k.abs() <= 64 => {
                        let mut acc = c(self, 1.0);
                        for _ in 0..k.abs() {
                            acc = self.def(Op::Binary(BinaryOp::Mul, acc, x), span)?;
                        }
                        if k < 0 {
                            let one = c(self, 1.0);
                            acc = self.def(Op::Binary(BinaryOp::Div, one, acc), span)?;
                        }
                        acc
                    }
                    _ => {
                        let n = self.materialize(n_val, S::I32, n.span())?;
                        let nf = self.cast_value(n, ty, span)?;
                        self.pow_exp2(x, nf, ty, span)?
                    }
                }
            }
            ("powf", [y]) => {
                let y = self.expr(y)?;
                let y = self.materialize(y, ty, span)?;
                self.pow_exp2(x, y, ty, span)?
            }
            _ => return err(span, format!("wrong arguments for `{method}`")),
        };
        Ok(Some(Val::Scalar(v)))
    }

    /// `x^y` as `exp2(y * log2(|x|))`, with the sign for negative `x` and odd integer `y`,
    /// NaN for negative `x` and non-integer `y`, and 1 for `y == 0` or `x == 1`.
    fn pow_exp2(
        &mut self,
        x: cuprum_ir::Value,
        y: cuprum_ir::Value,
        ty: S,
        span: proc_macro2::Span,
    ) -> Result<cuprum_ir::Value> {
        let c = |this: &mut Self, v: f64| this.constant(float_constant(ty, v));
        let ax = self.def(Op::Unary(UnaryOp::Abs, x), span)?;
        let l = self.def(Op::Unary(UnaryOp::Log2, ax), span)?;
        let p = self.def(Op::Binary(BinaryOp::Mul, y, l), span)?;
        let mag = self.def(Op::Unary(UnaryOp::Exp2, p), span)?;
        let zero = c(self, 0.0);
        let x_neg = self.def(Op::Compare(CmpOp::Lt, x, zero), span)?;
        let y_int = {
            let t = self.def(Op::Unary(UnaryOp::Trunc, y), span)?;
            self.def(Op::Compare(CmpOp::Eq, t, y), span)?
        };
        let y_odd = {
            let half = c(self, 0.5);
            let h = self.def(Op::Binary(BinaryOp::Mul, y, half), span)?;
            let t = self.def(Op::Unary(UnaryOp::Trunc, h), span)?;
            let ne = self.def(Op::Compare(CmpOp::Ne, t, h), span)?;
            self.def(Op::Binary(BinaryOp::And, ne, y_int), span)?
        };
        let neg_mag = self.def(Op::Unary(UnaryOp::Neg, mag), span)?;
        let flip = self.def(Op::Binary(BinaryOp::And, x_neg, y_odd), span)?;
        let signed = self.def(
            Op::Select {
                cond: flip,
                if_true: neg_mag,
                if_false: mag,
            },
            span,
        )?;
        let nan = c(self, f64::NAN);
        let not_int = self.def(Op::Unary(UnaryOp::Not, y_int), span)?;
        let bad = self.def(Op::Binary(BinaryOp::And, x_neg, not_int), span)?;
        let r = self.def(
            Op::Select {
                cond: bad,
                if_true: nan,
                if_false: signed,
            },
            span,
        )?;
        let one = c(self, 1.0);
        let y_zero = self.def(Op::Compare(CmpOp::Eq, y, zero), span)?;
        let x_one = self.def(Op::Compare(CmpOp::Eq, x, one), span)?;
        let unit = self.def(Op::Binary(BinaryOp::Or, y_zero, x_one), span)?;
        self.def(
            Op::Select {
                cond: unit,
                if_true: one,
                if_false: r,
            },
            span,
        )
    }

    /// `f16::from_f32(x)`, `bf16::from_f64(x)`, `f32::from_bits(u)`, ...
    fn float_conversion(
        &mut self,
        path: &syn::Path,
        args: &[&syn::Expr],
        span: proc_macro2::Span,
    ) -> Result<Option<Val>> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let [.., ty, f] = segs.as_slice() else {
            return Ok(None);
        };
        let Some(ty) = S::from_rust_name(ty).filter(|t| t.is_float()) else {
            return Ok(None);
        };
        let [arg] = args else { return Ok(None) };
        let from = match f.as_str() {
            "from_f32" => S::F32,
            "from_f64" => S::F64,
            "from_bits" => {
                let bits = match ty {
                    S::F16 | S::BF16 => S::U16,
                    S::F32 => S::U32,
                    _ => S::U64,
                };
                let v = self.expr(arg)?;
                let x = self.materialize(v, bits, span)?;
                return Ok(Some(Val::Scalar(
                    self.def(Op::Bitcast { value: x, to: ty }, span)?,
                )));
            }
            _ => return Ok(None),
        };
        let v = self.expr(arg)?;
        let x = self.materialize(v, from, span)?;
        Ok(Some(Val::Scalar(self.cast_value(x, ty, span)?)))
    }

    fn fence(&mut self, scope: Scope) -> Result<Val> {
        self.b.push(Stmt::Fence { scope });
        Ok(Val::Unit)
    }

    /// `blockIdx.x * blockDim.x + threadIdx.x` as a `u64`, computed once per kernel at entry.
    pub(super) fn global_index_x(&mut self) -> Result<Value> {
        if let Some(x) = self.index_1d {
            // Cached only when defined in the kernel's top-level block, so visible everywhere.
            return Ok(x);
        }
        let span = proc_macro2::Span::call_site();
        let block = self.def(Op::Special(Special::BlockIdx(Dim::X)), span)?;
        let dim = self.def(Op::Special(Special::BlockDim(Dim::X)), span)?;
        let tid = self.def(Op::Special(Special::ThreadIdx(Dim::X)), span)?;
        let block = self.cast_value(block, S::U64, span)?;
        let dim = self.cast_value(dim, S::U64, span)?;
        let tid = self.cast_value(tid, S::U64, span)?;
        let base = self.def(Op::Binary(BinaryOp::Mul, block, dim), span)?;
        let x = self.def(Op::Binary(BinaryOp::Add, base, tid), span)?;
        if self.b.depth() == 0 {
            self.index_1d = Some(x);
        }
        Ok(x)
    }
}

/// Why `powf` (and `powi` with a run-time exponent) is refused on `f64`: the `exp2(y log2 x)`
/// composition the `f32` versions use loses up to a thousand ulp in `f64`.
fn f64_transcendental(method: &str) -> String {
    format!(
        "`{method}` on `f64` is not supported in device code yet (an accurate `f64` power needs \
         a double-length `log2`, which cuprum does not have): compute in `f32`, use `exp`/`ln` \
         where their error is fine, or a constant integer exponent with `powi`"
    )
}

/// The hardware register a `cuprum::simt::thread` function reads (`threadIdx_x`, ...,
/// `lane_id`): the one table of them. The snake-case spellings (`thread_idx_x`) are
/// `core::arch::nvptx`'s, reached through `nvptx::_thread_idx_x()` and the like.
fn special_register(name: &str) -> Option<Special> {
    Some(match name {
        "thread_idx_x" | "threadIdx_x" => Special::ThreadIdx(Dim::X),
        "thread_idx_y" | "threadIdx_y" => Special::ThreadIdx(Dim::Y),
        "thread_idx_z" | "threadIdx_z" => Special::ThreadIdx(Dim::Z),
        "block_idx_x" | "blockIdx_x" => Special::BlockIdx(Dim::X),
        "block_idx_y" | "blockIdx_y" => Special::BlockIdx(Dim::Y),
        "block_idx_z" | "blockIdx_z" => Special::BlockIdx(Dim::Z),
        "block_dim_x" | "blockDim_x" => Special::BlockDim(Dim::X),
        "block_dim_y" | "blockDim_y" => Special::BlockDim(Dim::Y),
        "block_dim_z" | "blockDim_z" => Special::BlockDim(Dim::Z),
        "grid_dim_x" | "gridDim_x" => Special::GridDim(Dim::X),
        "grid_dim_y" | "gridDim_y" => Special::GridDim(Dim::Y),
        "grid_dim_z" | "gridDim_z" => Special::GridDim(Dim::Z),
        "lane_id" => Special::LaneId,
        _ => return None,
    })
}

/// `swap` or `replace` for `core::mem::swap`, `std::mem::swap`, `mem::swap` or `swap`
/// (imported; a helper of that name is found before this is asked), and the same paths of
/// `replace` (not a bare `replace`: too common a name).
fn mem_function(path: &syn::Path) -> Option<&'static str> {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match names.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["swap"] | ["mem", "swap"] | ["core" | "std", "mem", "swap"] => Some("swap"),
        ["mem", "replace"] | ["core" | "std", "mem", "replace"] => Some("replace"),
        _ => None,
    }
}
