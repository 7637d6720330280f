//! Lowering of one kernel's body from the syn AST to IR.
//!
//! Types: rustc has already type-checked the body (the macro also emits it as host code), so
//! this pass only needs to *recover* the types, not judge them. Most are known where a value is
//! made; untyped literals stay symbolic ([`Val::Int`], [`Val::Float`]) until they meet a typed
//! value. The one case that needs look-ahead is a binding whose type comes from later use
//! (`let mut acc = 0.0; ... acc += x[i];`, `for k in 0..16 { a[k] }`): the lowering runs twice,
//! the first time only to collect such facts at numbered *sites* (every `let`, `for` and
//! `if`/`else` expression is a site, numbered in visit order, so both runs agree), the second
//! time to emit the IR with the solved types. Unsolved sites default as Rust does: `i32`, `f64`.
//! A generic struct's argument that only later uses tell (`let mut acc = Acc::new();
//! acc.add(x[i]);`) is such a site too, but the first run must lower `Acc::new()` with a guess,
//! and a wrong guess stops it at the first mismatch: the infer run is repeated with what the
//! last one learned until it learns nothing new (`instances`).

mod aggregates;
mod arrays;
mod atomic_cells;
mod calls;
mod closures;
mod cluster;
mod control;
mod disjoint;
mod helpers;
mod infer;
mod instances;
mod intrinsics;
mod local_aggregates;
mod macros;
mod matrix;
mod mbarrier;
mod memory;
mod methods;
mod ops;
mod outputs;
mod packed_halves;
mod phased;
mod places;
mod ranges;
mod references;
mod requires;
mod strided;
mod tiles;
mod tma;
mod views;
mod warp_names;
mod wgmma;

use std::collections::HashMap;

use cuprum_ir::{
    AddressSpace, BinaryOp, Constant, KernelBuilder, Op, ScalarType as S, SliceAccess, Stmt, Value,
    Var,
};
use syn::spanned::Spanned;

use crate::items::{KernelInfo, ModuleInfo};
use crate::types::{ParamType, expect_scalar};
use infer::{Inference, LitKind, Mode};

type Result<T> = syn::Result<T>;

/// Type parameters in scope (a kernel's or the current helper's) and their scalar types.
type TypeParams = HashMap<String, S>;

/// Const parameters in scope (a kernel's or the current helper's): type and value.
type ConstParams = HashMap<String, (S, i128)>;

fn err<T>(span: proc_macro2::Span, msg: impl std::fmt::Display) -> Result<T> {
    Err(syn::Error::new(span, msg))
}

/// The types and values a generic kernel's parameters take in one specialization.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Specialization {
    /// Each type parameter's name and the scalar type it stands for.
    pub types: Vec<(String, S)>,
    /// Each const parameter's name and its value (wide enough for any integer type).
    pub consts: Vec<(String, i128)>,
}

impl Specialization {
    /// The PTX entry name of `kernel` specialized so: `scale__f32_16` (`m` marks a minus).
    pub fn mangle(&self, kernel: &str) -> String {
        if self.types.is_empty() && self.consts.is_empty() {
            return kernel.to_string();
        }
        let mut parts: Vec<String> = self
            .types
            .iter()
            .map(|(_, t)| t.rust_name().to_string())
            .collect();
        parts.extend(self.consts.iter().map(|(_, v)| {
            if *v < 0 {
                format!("m{}", -v)
            } else {
                v.to_string()
            }
        }));
        format!("{kernel}__{}", parts.join("_"))
    }
}

pub fn lower_kernel(
    info: &ModuleInfo,
    kernel: &KernelInfo,
    spec: &Specialization,
) -> Result<cuprum_ir::Kernel> {
    let mut inference = Inference::default();
    // The first run only collects typing facts; its errors reappear in the second run.
    let _ = Lowerer::new(info, kernel, spec, Mode::Infer(&mut inference)).run();
    let mut solved = inference.solve();
    // A generic struct's argument left open for later uses (`let mut acc = Acc::new();
    // acc.add(x[i]);`) was lowered with a guess, which may have stopped the run at a
    // mismatch: run again with what was learned, until nothing new is (each run learns at
    // least the open argument it stopped at).
    let mut open = inference.opened_struct_params;
    // The wgmma accumulators' `let`s, as the last infer run found them.
    let mut register_lets = std::mem::take(&mut inference.register_lets);
    for _ in 0..MAX_OPEN_STRUCT_RUNS {
        if !open {
            break;
        }
        let mut again = Inference::default();
        let mut lowerer = Lowerer::new(info, kernel, spec, Mode::Infer(&mut again));
        lowerer.open_guesses = solved.clone();
        let _ = lowerer.run();
        let next = again.solve();
        open = next != solved;
        solved = next;
        register_lets = std::mem::take(&mut again.register_lets);
    }
    let mut emit = Lowerer::new(info, kernel, spec, Mode::Emit(&solved));
    emit.register_lets = register_lets;
    let mut lowered = emit.run()?;
    atomic_cells::mark_atomic_writes(&mut lowered);
    Ok(lowered)
}

/// How many more infer runs may type generic structs' open arguments (see `lower_kernel`).
const MAX_OPEN_STRUCT_RUNS: usize = 8;

/// The value of a constant expression.
#[derive(Clone, Copy, Debug)]
enum ConstVal {
    Int(i128),
    Float(f64),
    Bool(bool),
}

/// What an expression evaluates to.
#[derive(Clone, Debug)]
enum Val {
    Scalar(Value),
    Int(i128),
    Float(f64),
    /// Infer run only: a value whose type is being inferred at a site.
    Infer(u32, LitKind),
    Unit,
    /// The expression does not complete (return, break, continue).
    Never,
    /// `thread::index_1d()`: the global x index, a `U64`.
    Index1(Value),
    /// A closure bound by `let` (see `closures`).
    Closure(std::rc::Rc<closures::Closure>),
    /// What `if let Some(w) = thread::warp_index()` binds in lane 0 of each warp of a 1-D
    /// launch: the warp's global index (`blockIdx.x * warps per block + warp`), a `U64`.
    WarpIndex(Value),
    /// `thread::index_2d()`: global (x, y), `U64`s.
    Index2(Value, Value),
    /// `thread::index_3d()`: global (x, y, z), `U64`s.
    Index3(Value, Value, Value),
    /// A slice parameter.
    Slice(u32),
    /// An `AtomicSlice<T>` parameter.
    Atomic(u32),
    /// A shared-memory array: static (`array` is its index in the kernel's shared
    /// declarations, `len` its length) or the dynamic region (`array` is `None`).
    Shared {
        array: Option<u32>,
        elem: S,
        len: u32,
    },
    /// A per-thread array in local memory, or a row of a nested one.
    Array(arrays::LocalArray),
    /// A phased (safe) shared array, in the phase the value's type says.
    Phased(phased::Phased),
    /// A tuple, taken apart.
    Tuple(Vec<Val>),
    /// A struct of the module, taken apart: its fields in declaration order.
    Struct(String, Vec<Val>),
    /// A raw device pointer: a `*const T` / `*mut T` parameter of an `unsafe` kernel (a `U64`
    /// global address), or cuda-oxide's `DynamicSharedArray::<T>::get()` (a `U32` address in
    /// dynamic shared memory). Dereferencing it is `unsafe` in Rust.
    Ptr {
        addr: Value,
        elem: S,
        mutable: bool,
        space: AddressSpace,
    },
    /// cuda-oxide's `map_shared_rank{,_mut}(p, rank)`: the `U32` shared address `addr` (of
    /// this block's window) mapped to the shared memory of the cluster's block `rank` (a
    /// `U32`), read and written through distributed shared memory (`cluster`).
    ClusterPtr {
        addr: Value,
        rank: Value,
        elem: S,
        mutable: bool,
    },
    /// A reference to an aggregate element of global memory (`get_mut` of a
    /// `DisjointSlice<[f32; 4]>`).
    AggRef(memory::MemRef),
    /// A static shared array of aggregates (`SharedArray<[f32; 17], 16>`): an IR shared array
    /// of bytes, `len` elements of `elem`.
    SharedElems {
        array: u32,
        elem: crate::layout::ElemType,
        len: u32,
    },
    /// A per-thread array of aggregates (`[Body::new(); 4]`): an IR local array of bytes,
    /// `len` elements of `elem` (see `local_aggregates`).
    LocalElems {
        array: u32,
        elem: crate::layout::ElemType,
        len: u32,
    },
    /// A reference to one element of memory: of global memory (a slice element), of shared
    /// memory (`SharedArray::get_mut`) or of a local array (`&mut keys[i]` passed to a helper).
    ElemRef {
        space: AddressSpace,
        addr: Value,
        elem: S,
        mutable: bool,
    },
    /// An `Option` computed in every thread: `some` (a `Bool`) says whether it holds
    /// `inner`, which is read only where `some` is known to hold (`if let`, `unwrap_or`; see
    /// `views.rs`).
    Opt {
        some: Value,
        inner: Box<Val>,
    },
    /// The launch context `#[kernel(launch_context = name)]` binds: what
    /// `thread::index_1d_u32` and `thread::coord_2d_u32` take.
    LaunchContext,
    /// `thread::index_1d_u32(lc)`: the global x index, exact (a `U64`); `.get()` gives its
    /// `u32`.
    Index32(Value),
    /// `thread::coord_2d_u32(lc)`: the global (column, row), exact (`U64`s); `.col()` and
    /// `.row()` give their `u32`s.
    Coord32(Value, Value),
    /// `MatrixView32::new(slice, stride)`: a read-only slice parameter seen as rows of
    /// `stride` (a `U32`) elements.
    Matrix {
        param: u32,
        stride: Value,
    },
    /// A read view checked once where it was made (`views.rs`).
    View(views::View),
    /// `row.zip_exact(col)`: two views of one length, read in step.
    Zip(views::View, views::View),
    /// `view.get(i)`'s element: an address proven inside its slice where the enclosing
    /// `Opt` holds, loaded only there (`elem` is `None` for an empty view, which never
    /// holds one).
    ViewLoad {
        addr: Value,
        elem: Option<S>,
    },
    /// A thread's own output tile of a tiled `DisjointSlice` (`tiles.rs`).
    OutTile(tiles::OutTile),
    /// cuda-oxide's typed atomic cell at `addr` (`&DeviceAtomicU32`, ..; see
    /// `atomic_cells`), or a raw pointer to one (`ptr`).
    AtomicCell {
        addr: Value,
        elem: S,
        scope: cuprum_ir::Scope,
        space: AddressSpace,
        ptr: bool,
    },
    /// A tensor map (`tma`): a `TensorMap<T, RANK>` parameter, its `as_ptr()`, or a
    /// `*const TmaDescriptor` parameter (a map in global memory).
    TensorMap(cuprum_ir::TensorMapRef),
    /// A compare-exchange's `Result`: `ok` (a `Bool`) says which; either way `value` is what
    /// memory held.
    CasResult {
        ok: Value,
        value: Value,
    },
}

#[derive(Clone, Debug)]
enum Binding {
    Val(Val),
    Var {
        var: Var,
        ty: S,
        mutable: bool,
    },
    /// Infer run only.
    InferVar {
        site: u32,
        kind: LitKind,
    },
    /// A `let mut` tuple: one binding per element.
    Tuple(Vec<Binding>),
    /// A `let mut` struct: one binding per field, in declaration order.
    Struct(String, Vec<Binding>),
    /// A raw pointer chosen by a branch: its address in `var`, the rest as the branches
    /// gave it.
    Ptr {
        var: Var,
        elem: S,
        mutable: bool,
        space: AddressSpace,
    },
}

#[derive(Clone, Debug)]
enum Place {
    Var(Var, S),
    InferVar(u32, LitKind),
    Mem {
        space: AddressSpace,
        addr: Value,
        elem: S,
    },
    /// An element of another block's shared memory (`*p = v` through `map_shared_rank_mut`):
    /// the `U32` shared address `addr` in the cluster's block `rank`.
    Cluster {
        addr: Value,
        rank: Value,
        elem: S,
    },
    /// An element at a run-time position of an array kept in variables
    /// (`arrays::Registers`): the variable `index` (a `U32`) picks.
    Reg {
        vars: std::rc::Rc<[Var]>,
        index: Value,
        elem: S,
    },
}

struct Lowerer<'a> {
    info: &'a ModuleInfo,
    kernel: &'a KernelInfo,
    b: KernelBuilder,
    mode: Mode<'a>,
    scopes: Vec<Vec<(String, Binding)>>,
    /// The line the last `Stmt::SourceLine` named (`mark_line`).
    last_line: Option<usize>,
    next_site: u32,
    loop_depth: u32,
    /// Special registers and derived indices already read at kernel entry, reused.
    index_1d: Option<Value>,
    /// The helper calls being inlined, innermost last.
    frames: Vec<helpers::HelperFrame>,
    /// The type parameters in scope: the kernel's, or the current helper's.
    type_params: TypeParams,
    /// `match` arms whose else-block is still open: (condition, then-block).
    pending_ifs: Vec<(Value, cuprum_ir::Block)>,
    /// The const parameters in scope, with type and value: the kernel's in this
    /// specialization, or the current helper's while one is inlined (`call_helper` swaps them).
    const_params: ConstParams,
    /// The kernel's type parameters in this specialization (helpers swap `type_params`).
    kernel_types: HashMap<String, S>,
    /// Upper bounds of non-negative integer values (see `ranges.rs`).
    ranges: HashMap<Value, u128>,
    /// Values defined by constants.
    constants: std::collections::HashSet<Value>,
    /// `fn` items declared inside kernel and helper bodies: helpers too, found before the
    /// module's by name.
    local_fns: Vec<std::rc::Rc<syn::ItemFn>>,
    /// Values made by `warp::active_mask()`: a member mask the `_sync` warp operations accept
    /// (see `warp_names`).
    active_masks: std::collections::HashSet<Value>,
    /// Launch-uniform values (the same in every thread of a launch), by a key that equal
    /// values share (see `disjoint.rs`).
    uniform: HashMap<Value, u32>,
    /// The keys of `uniform`, interned.
    uniform_keys: HashMap<String, u32>,
    /// How each `DisjointSlice` parameter was first written in this kernel.
    disjoint_mappings: HashMap<u32, disjoint::DisjointMapping>,
    /// For each local array of the kernel: the source span and what it is, for errors.
    local_origins: Vec<(proc_macro2::Span, String)>,
    /// The element types of slice parameters of aggregates (IR slices of bytes), by parameter.
    elem_slices: HashMap<u32, crate::layout::ElemType>,
    /// Per `DisjointSlice<T, Runtime2DIndex>` (and `RuntimeRowMajorTiles`) parameter, its
    /// row width (a `U64` parameter).
    row_widths: HashMap<u32, Value>,
    /// Per tiled `DisjointSlice` parameter, its tile shape (see `tiles.rs`).
    tile_spaces: HashMap<u32, tiles::TileSpace>,
    /// While a handle method of `tiles.rs` is checked: how it is written, for messages.
    spelling: Option<disjoint::Spelling>,
    /// How many `unsafe` blocks enclose the code being lowered.
    unsafe_depth: u32,
    /// Whether the kernel declares a phased shared array (its barriers are then checked).
    uses_phased: bool,
    /// Where each block barrier came from, in program order.
    barrier_spans: Vec<proc_macro2::Span>,
    /// The element types of phased shared arrays of aggregates, by IR shared array.
    phased_aggregates: HashMap<u32, crate::layout::ElemType>,
    /// Per phased array that enters a split phase, the variable holding its boundary.
    split_boundaries: HashMap<u32, cuprum_ir::Var>,
    /// Per phased array in a split phase, its boundary when the last `sync_split` set a
    /// constant, with where ([`cuprum_ir::KernelBuilder::position`] and `loop_depth` then).
    split_constants: HashMap<u32, (u64, Vec<usize>, u32)>,
    /// Each split boundary a `sync_split(s)` set, and where: checked block-uniform once the
    /// kernel is lowered.
    split_boundary_values: Vec<(Value, proc_macro2::Span)>,
    /// The phased arrays whose `mine_below()` loop is being lowered.
    mine_below_open: Vec<u32>,
    /// The type the value being lowered goes into, where a `let` annotation or a struct
    /// field names a struct: what a generic struct's arguments are inferred from when
    /// nothing else names them (`let acc: Acc<f32> = Acc::new();`). Taken by the first call
    /// or struct expression that needs it.
    expected: Option<syn::Type>,
    /// What the previous infer run solved, for the arguments of generic structs left open
    /// (`instances::open_struct_param`); empty in the first.
    open_guesses: HashMap<u32, S>,
    /// The open arguments (struct argument position, site) the last call left, for the
    /// `let` binding its result.
    opened: Vec<(usize, u32)>,
    /// Per `let mut` struct holding an open instance (by its first variable), its open
    /// arguments.
    open_vars: HashMap<Var, Vec<(usize, u32)>>,
    /// The open arguments of the receiver of the method call being inferred.
    open_receiver: Option<Vec<(usize, u32)>>,
    /// The kernel's launch contract in this specialization (block dimensions named by const
    /// parameters resolved): what every rule that relies on the contract reads.
    contract: Option<crate::items::ContractInfo>,
    /// Each local array a `let` bound, by its index: the `let`'s site (what the infer run
    /// reports a wgmma accumulator by, `wgmma`).
    array_lets: HashMap<u32, u32>,
    /// Emit run: the `let` sites whose arrays live in variables (`arrays::Registers`), as the
    /// infer run found them.
    register_lets: std::collections::HashSet<u32>,
}

impl<'a> Lowerer<'a> {
    fn new(
        info: &'a ModuleInfo,
        kernel: &'a KernelInfo,
        spec: &Specialization,
        mode: Mode<'a>,
    ) -> Self {
        let kernel_types: HashMap<String, S> = spec.types.iter().cloned().collect();
        let const_params = kernel
            .const_params
            .iter()
            .filter_map(|(name, ty)| {
                let v = spec.consts.iter().find(|(n, _)| n == name)?.1;
                Some((name.clone(), (*ty, v)))
            })
            .collect();
        Self {
            info,
            kernel,
            b: KernelBuilder::new(spec.mangle(&kernel.name)),
            mode,
            scopes: vec![Vec::new()],
            last_line: None,
            next_site: 0,
            loop_depth: 0,
            index_1d: None,
            frames: Vec::new(),
            pending_ifs: Vec::new(),
            type_params: kernel_types.clone(),
            kernel_types,
            const_params,
            ranges: HashMap::new(),
            constants: std::collections::HashSet::new(),
            active_masks: std::collections::HashSet::new(),
            local_fns: Vec::new(),
            uniform: HashMap::new(),
            uniform_keys: HashMap::new(),
            disjoint_mappings: HashMap::new(),
            local_origins: Vec::new(),
            elem_slices: HashMap::new(),
            row_widths: HashMap::new(),
            tile_spaces: HashMap::new(),
            spelling: None,
            unsafe_depth: 0,
            uses_phased: false,
            barrier_spans: Vec::new(),
            phased_aggregates: HashMap::new(),
            split_boundaries: HashMap::new(),
            split_constants: HashMap::new(),
            split_boundary_values: Vec::new(),
            mine_below_open: Vec::new(),
            expected: None,
            open_guesses: HashMap::new(),
            opened: Vec::new(),
            open_vars: HashMap::new(),
            open_receiver: None,
            contract: None,
            array_lets: HashMap::new(),
            register_lets: std::collections::HashSet::new(),
        }
    }

    fn run(mut self) -> Result<cuprum_ir::Kernel> {
        let k = self.kernel;
        self.b.set_launch_bounds(k.launch_bounds);
        self.b.set_max_registers(k.max_registers);
        self.b.set_cluster(k.cluster);
        self.contract = match k.contract {
            Some(c) => Some(
                c.resolved(&k.const_params, |name| {
                    self.const_params.get(name).map(|&(_, v)| v)
                })
                .map_err(|m| {
                    syn::Error::new(k.item.sig.ident.span(), format!("launch contract: {m}"))
                })?,
            ),
            None => None,
        };
        self.b.set_block(self.contract.map(|c| c.block));
        for (name, _) in &k.const_params {
            if !self.const_params.contains_key(name) {
                return err(
                    k.item.sig.ident.span(),
                    format!("no value for the const parameter `{name}`"),
                );
            }
        }
        for t in &k.type_params {
            if !self.kernel_types.contains_key(t) {
                return err(
                    k.item.sig.ident.span(),
                    format!("no type for the type parameter `{t}`"),
                );
            }
        }
        // The parameters a `requires` relation may read, by name: integer scalars and plain
        // slices (whose IR length is the user's `len()`).
        let mut requirement_params = HashMap::new();
        for p in &k.params {
            let name = p.name.to_string();
            let ty = crate::types::param_type_in(
                &p.rust_type,
                k.is_unsafe,
                &self.kernel_types,
                &self.info.structs,
                &self.info.consts,
            )?;
            let binding = match ty {
                ParamType::Struct {
                    name: sname,
                    fields,
                } => {
                    let mut leaves = Vec::with_capacity(fields.len());
                    for (field, fty) in fields {
                        let index = self
                            .b
                            .param(format!("{name}.{field}"), cuprum_ir::ParamKind::Scalar(fty));
                        leaves.push(Val::Scalar(self.def(Op::Param(index), p.name.span())?));
                    }
                    let mut leaves = leaves.into_iter();
                    self.assemble_struct(&sname, &mut leaves, p.name.span())?
                }
                ParamType::Pointer { elem, mutable } => {
                    let index = self
                        .b
                        .param(name.clone(), cuprum_ir::ParamKind::Scalar(S::U64));
                    let addr = self.def(Op::Param(index), p.name.span())?;
                    Val::Ptr {
                        addr,
                        elem,
                        mutable,
                        space: AddressSpace::Global,
                    }
                }
                ParamType::Scalar(ty) => {
                    let index = self.b.param(name.clone(), cuprum_ir::ParamKind::Scalar(ty));
                    if ty.is_int() {
                        requirement_params.insert(name.clone(), requires::Read::Scalar(index));
                    }
                    Val::Scalar(self.def(Op::Param(index), p.name.span())?)
                }
                ParamType::TensorMap { elem, rank } => {
                    let kind = cuprum_ir::ParamKind::TensorMap { elem, rank };
                    Val::TensorMap(cuprum_ir::TensorMapRef::Param(
                        self.b.param(name.clone(), kind),
                    ))
                }
                ParamType::TensorMapPtr => {
                    let index = self
                        .b
                        .param(name.clone(), cuprum_ir::ParamKind::Scalar(S::U64));
                    let addr = self.def(Op::Param(index), p.name.span())?;
                    Val::TensorMap(cuprum_ir::TensorMapRef::Global(addr))
                }
                ParamType::Slice { elem, access } => {
                    let index = self
                        .b
                        .param(name.clone(), cuprum_ir::ParamKind::Slice { elem, access });
                    requirement_params.insert(name.clone(), requires::Read::Slice(index));
                    Val::Slice(index)
                }
                ParamType::Elements { elem, access } => {
                    let kind = cuprum_ir::ParamKind::Slice {
                        elem: S::U8,
                        access,
                    };
                    let index = self.b.param(name.clone(), kind);
                    self.elem_slices.insert(index, elem);
                    Val::Slice(index)
                }
                ParamType::RowWidthSlice { elem } => {
                    let access = SliceAccess::Disjoint;
                    let kind = cuprum_ir::ParamKind::Slice { elem, access };
                    let index = self.b.param(name.clone(), kind);
                    let width = self.b.param(
                        format!("{name}_row_width"),
                        cuprum_ir::ParamKind::Scalar(S::U64),
                    );
                    let width = self.def(Op::Param(width), p.name.span())?;
                    self.row_widths.insert(index, width);
                    Val::Slice(index)
                }
                ParamType::Atomic { elem } => {
                    let access = SliceAccess::ReadWrite;
                    let kind = cuprum_ir::ParamKind::Slice { elem, access };
                    Val::Atomic(self.b.param(name.clone(), kind))
                }
            };
            if let Val::Slice(index) = binding
                && let Some(space) = self.tile_space(&p.rust_type)?
            {
                self.tile_spaces.insert(index, space);
            }
            // `mut x: u32` (and a `mut` struct) may be reassigned in the body, as a `let mut`.
            let binding = match binding {
                Val::Scalar(x) if param_is_mut(&k.item.sig, &p.name) => {
                    let ty = self.ty(x);
                    let var = self.b.var(name.clone(), ty);
                    self.b.push(Stmt::WriteVar { var, value: x });
                    Binding::Var {
                        var,
                        ty,
                        mutable: true,
                    }
                }
                Val::Struct(sname, items) if param_is_mut(&k.item.sig, &p.name) => {
                    self.mutable_struct(&name, sname, items, p.name.span())?
                }
                other => Binding::Val(other),
            };
            self.bind(name, binding);
        }
        for relation in &k.requires {
            if let Some(r) = requires::requirement(relation, &requirement_params) {
                self.b.require(r);
            }
        }
        if let Some(name) = &k.launch_context {
            self.bind(name.clone(), Binding::Val(Val::LaunchContext));
        }
        let body = &k.item.block;
        let v = self.block_stmts(&body.stmts)?;
        if !matches!(v, Val::Unit | Val::Never) {
            return err(
                body.span(),
                "kernels return nothing; this block has a value",
            );
        }
        self.check_local_memory()?;
        let check_barriers = self.uses_phased && !self.inferring();
        let kernel = self.b.finish();
        if check_barriers {
            phased::check_barriers(&kernel, &self.barrier_spans, k.item.sig.ident.span())?;
            phased::check_split_boundaries(&kernel, &self.split_boundary_values)?;
        }
        Ok(kernel)
    }

    // ----- helpers ------------------------------------------------------------------------

    fn def(&mut self, op: Op, span: proc_macro2::Span) -> Result<Value> {
        let v = self
            .b
            .def(op.clone())
            .or_else(|msg| err(span, format!("internal compiler error: {msg}")))?;
        self.note_range(v, &op);
        self.note_uniform(v, &op);
        Ok(v)
    }

    fn constant(&mut self, c: Constant) -> Value {
        let v = self.b.constant(c);
        self.constants.insert(v);
        self.note_range(v, &Op::Const(c));
        self.note_uniform(v, &Op::Const(c));
        v
    }

    fn ty(&self, v: Value) -> S {
        self.b.type_of(v)
    }

    fn site(&mut self) -> u32 {
        self.next_site += 1;
        self.next_site
    }

    fn solved(&self, site: u32) -> Option<S> {
        match &self.mode {
            Mode::Emit(m) => m.get(&site).copied(),
            Mode::Infer(_) => None,
        }
    }

    fn inferring(&self) -> bool {
        matches!(self.mode, Mode::Infer(_))
    }

    fn note_type(&mut self, site: u32, ty: S) {
        if let Mode::Infer(inf) = &mut self.mode {
            inf.set_type(site, ty);
        }
    }

    fn note_kind(&mut self, site: u32, kind: LitKind) {
        if let Mode::Infer(inf) = &mut self.mode {
            inf.set_kind(site, kind);
        }
    }

    fn note_union(&mut self, a: u32, b: u32) {
        if let Mode::Infer(inf) = &mut self.mode {
            inf.union(a, b);
        }
    }

    fn bind(&mut self, name: String, binding: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name, binding));
        }
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
    }

    /// Turns `v` into an IR value of type `ty`, typing literals and checking the rest.
    fn materialize(&mut self, v: Val, ty: S, span: proc_macro2::Span) -> Result<Value> {
        // Auto-deref: rustc accepted a `&T` where a `T` is used (`a < b`, `a + 1`).
        let v = self.deref_elem(v, span)?;
        match v {
            Val::Scalar(x) => {
                let actual = self.ty(x);
                if actual != ty {
                    return err(
                        span,
                        format!("mismatched types: expected `{ty}`, found `{actual}`"),
                    );
                }
                Ok(x)
            }
            Val::Int(i) => {
                if ty.is_float() {
                    return err(
                        span,
                        format!("expected `{ty}`, found an integer literal (write `{i}.0`)"),
                    );
                }
                if ty == S::Bool {
                    return err(span, "expected `bool`, found an integer");
                }
                Ok(self.constant(int_constant(ty, i, span)?))
            }
            Val::Float(f) => {
                if !ty.is_float() {
                    return err(
                        span,
                        format!("expected `{ty}`, found a floating-point literal"),
                    );
                }
                Ok(self.constant(float_constant(ty, f)))
            }
            Val::Infer(site, _) => {
                self.note_type(site, ty);
                Ok(self.constant(Constant::new(ty, 0)))
            }
            other => err(
                span,
                format!(
                    "expected a value of type `{ty}`, found {}",
                    describe(&other)
                ),
            ),
        }
    }

    /// Turns `v` into an IR value, giving untyped literals Rust's default types.
    fn scalar(&mut self, v: Val, span: proc_macro2::Span) -> Result<Value> {
        let v = self.deref_elem(v, span)?;
        match v {
            Val::Scalar(x) => Ok(x),
            Val::Int(_) => self.materialize(v, S::I32, span),
            Val::Float(_) => self.materialize(v, S::F64, span),
            Val::Infer(site, kind) => {
                let ty = self.solved(site).unwrap_or(kind.default_type());
                self.materialize(Val::Infer(site, kind), ty, span)
            }
            Val::Index1(_) => err(
                span,
                "a thread index is not a number here: call `.get()` to get its `usize` value",
            ),
            other => err(
                span,
                format!("expected a number, found {}", describe(&other)),
            ),
        }
    }

    fn boolean(&mut self, e: &syn::Expr) -> Result<Value> {
        let v = self.expr(e)?;
        self.materialize(v, S::Bool, e.span())
    }

    // ----- statements ---------------------------------------------------------------------

    /// Marks the statements that follow as coming from `span`'s line, when the module
    /// carries line information and the line changed.
    fn mark_line(&mut self, span: proc_macro2::Span) {
        let Some(file) = &self.info.line_info else {
            return;
        };
        let start = span.start();
        if start.line == 0 || self.last_line == Some(start.line) {
            return;
        }
        self.last_line = Some(start.line);
        // The module's text keeps the file's lines but not its columns: column 0, unknown.
        self.b.push(Stmt::SourceLine {
            file: file.clone(),
            line: start.line as u32,
            column: 0,
        });
    }

    fn block(&mut self, block: &syn::Block) -> Result<Val> {
        self.scopes.push(Vec::new());
        let r = self.block_stmts(&block.stmts);
        self.scopes.pop();
        r
    }

    fn block_stmts(&mut self, stmts: &[syn::Stmt]) -> Result<Val> {
        let mut last = Val::Unit;
        for (i, stmt) in stmts.iter().enumerate() {
            if matches!(last, Val::Never) || self.b.block_terminated() {
                // Unreachable code after return/break/continue: rustc warns; emit nothing.
                return Ok(Val::Never);
            }
            let is_last = i + 1 == stmts.len();
            self.mark_line(stmt.span());
            last = match stmt {
                syn::Stmt::Local(local) => {
                    self.local(local)?;
                    Val::Unit
                }
                syn::Stmt::Expr(e, semi) => {
                    // A helper's value goes where its result type says (`-> Acc<T>`).
                    let tail = is_last && semi.is_none();
                    if tail {
                        self.expect_result(e, self.scopes.len());
                    }
                    let v = self.expr(e);
                    if tail {
                        self.expected = None;
                    }
                    let v = v?;
                    match (semi, v) {
                        (_, Val::Never) => Val::Never,
                        (None, v) if is_last => v,
                        _ => Val::Unit,
                    }
                }
                syn::Stmt::Item(syn::Item::Static(item)) => {
                    self.static_shared(item)?;
                    Val::Unit
                }
                // A nested `fn` is a helper like the module's (it cannot see the body's
                // locals, as in Rust).
                syn::Stmt::Item(syn::Item::Fn(item)) => {
                    self.local_fns.push(std::rc::Rc::new(item.clone()));
                    Val::Unit
                }
                // Device code names functions by their paths' last segments, as the module's
                // own `use` items are read: an import in a body needs nothing more.
                syn::Stmt::Item(syn::Item::Use(_)) => Val::Unit,
                // A scalar `const` in a body: its value, named from here on (the body's
                // earlier statements cannot use it; write it first).
                syn::Stmt::Item(syn::Item::Const(c)) => {
                    let ty = self.resolve_scalar(&c.ty)?;
                    let v = self.expr(&c.expr)?;
                    let x = self.materialize(v, ty, c.expr.span())?;
                    self.bind(c.ident.to_string(), Binding::Val(Val::Scalar(x)));
                    Val::Unit
                }
                syn::Stmt::Item(item) => {
                    return err(
                        item.span(),
                        "items inside kernel bodies are not supported (except `fn` helpers, \
                         scalar `const`s, `use` and `static mut` shared arrays): move them to \
                         the module",
                    );
                }
                syn::Stmt::Macro(m) => match self.device_macro(&m.mac)? {
                    Val::Never => Val::Never,
                    _ => Val::Unit,
                },
            };
        }
        Ok(last)
    }

    fn local(&mut self, local: &syn::Local) -> Result<()> {
        let Some(init) = &local.init else {
            return err(
                local.span(),
                "declare device variables with an initial value: `let x = ...;`",
            );
        };
        if let Some((_, diverge)) = &init.diverge {
            return err(
                diverge.span(),
                "`let ... else` is not supported in device code",
            );
        }
        self.let_binding(&local.pat, &init.expr)
    }

    /// `let pat = expr`, where `pat` is a name, `_`, a typed name, or a tuple of those matched
    /// against a tuple expression.
    fn let_binding(&mut self, pat: &syn::Pat, init: &syn::Expr) -> Result<()> {
        if let (syn::Pat::Tuple(pt), syn::Expr::Tuple(te)) = (pat, init) {
            if pt.elems.len() != te.elems.len() {
                return err(
                    pat.span(),
                    "the tuple pattern and the tuple have different lengths",
                );
            }
            for (p, e) in pt.elems.iter().zip(&te.elems) {
                self.let_binding(p, e)?;
            }
            return Ok(());
        }
        // `let [a, b, ..] = array;`: each name takes its element (see `let_array_pattern`).
        if let syn::Pat::Slice(ps) = strip_type(pat) {
            return self.let_array_pattern(ps, init);
        }
        // `let r = &mut place;`: `r` names the place (see `references`).
        if let (syn::Pat::Ident(id), syn::Expr::Reference(r)) = (strip_type(pat), init)
            && id.mutability.is_none()
            && id.by_ref.is_none()
            && id.subpat.is_none()
        {
            let binding = self.place_binding(&r.expr)?;
            self.bind(id.ident.to_string(), binding);
            return Ok(());
        }
        let site = self.site();
        if let Some(v) = self.phased_declaration(pat, init)? {
            if let syn::Pat::Ident(id) = strip_type(pat) {
                self.bind(id.ident.to_string(), Binding::Val(v));
            }
            return Ok(());
        }
        if let Some(shape) = self.shared_declaration(pat, init)? {
            let syn::Pat::Ident(id) = strip_type(pat) else {
                return err(
                    pat.span(),
                    "bind a shared array to a name: `let tile = SharedArray::<f32, 256>::uninit();`",
                );
            };
            let v = self.declare_shared(&id.ident.to_string(), shape, init.span())?;
            self.bind(id.ident.to_string(), Binding::Val(v));
            return Ok(());
        }
        let annotation = match pat {
            syn::Pat::Type(pt) => Some(&*pt.ty),
            _ => None,
        };
        // Array expressions are built in place, typed by the annotation or by later uses.
        let (value, fresh) = match init {
            syn::Expr::Array(_) | syn::Expr::Repeat(_) => {
                let hint = match annotation {
                    // `[Particle; 4]`: an array of aggregates, typed by its elements.
                    Some(t) if self.aggregate_array_type(t) => None,
                    Some(t) => self.array_type(t)?.map(|(elem, _)| elem),
                    None => None,
                };
                (self.array_expr(init, hint, Some(site))?, true)
            }
            _ => {
                // `let acc: Acc<f32> = Acc::new();`: the annotation names the instance.
                self.expected = annotation
                    .filter(|t| {
                        crate::generic_structs::declaration(t, &self.info.structs).is_some()
                    })
                    .map(|t| self.concrete_type(t));
                self.opened.clear();
                let v = self.expr(init);
                self.expected = None;
                (v?, false)
            }
        };
        let opened = std::mem::take(&mut self.opened);
        self.bind_pattern(strip_type(pat), annotation, value, site, init.span(), fresh)?;
        // `let mut acc = Acc::new();` with `T` left for later uses to tell.
        if let syn::Pat::Ident(id) = strip_type(pat) {
            self.register_open_binding(&id.ident.to_string(), opened);
        }
        Ok(())
    }

    /// `let [a, b, c] = init;`: `a = init[0]`, `b = init[1]`, ... An `init` that names a place
    /// (a variable, an element, a field) is indexed where it is, reading each element once;
    /// any other is evaluated once into a hidden binding first. Sub-patterns are those `let`
    /// takes; `..` is refused, as the array's length is then not checked here.
    fn let_array_pattern(&mut self, ps: &syn::PatSlice, init: &syn::Expr) -> Result<()> {
        if let Some(rest) = ps.elems.iter().find(|p| matches!(p, syn::Pat::Rest(_))) {
            return err(
                rest.span(),
                "`..` in an array pattern is not supported in device code: name every element \
                 (`_` for those not needed), or index the array",
            );
        }
        fn is_place(e: &syn::Expr) -> bool {
            match e {
                syn::Expr::Path(_) => true,
                syn::Expr::Index(i) => is_place(&i.expr),
                syn::Expr::Field(f) => is_place(&f.base),
                syn::Expr::Paren(p) => is_place(&p.expr),
                _ => false,
            }
        }
        let source: syn::Expr = if is_place(init) {
            init.clone()
        } else {
            let hidden = quote::format_ident!("__cuprum_array_pattern_{}", self.site());
            self.let_binding(&syn::parse_quote!(#hidden), init)?;
            syn::parse_quote!(#hidden)
        };
        for (i, p) in ps.elems.iter().enumerate() {
            let element: syn::Expr = syn::parse_quote_spanned!(p.span()=> (#source)[#i]);
            self.let_binding(p, &element)?;
        }
        Ok(())
    }

    /// Binds `value` to `pat` (a name, `_`, or a tuple of those). Arrays are copied unless
    /// `fresh` (Rust arrays are values); mutable scalars become variables.
    fn bind_pattern(
        &mut self,
        pat: &syn::Pat,
        annotation: Option<&syn::Type>,
        value: Val,
        site: u32,
        span: proc_macro2::Span,
        fresh: bool,
    ) -> Result<()> {
        if let syn::Pat::Tuple(pt) = pat {
            let Val::Tuple(items) = value else {
                return err(
                    pat.span(),
                    format!("expected a tuple, found {}", describe(&value)),
                );
            };
            if items.len() != pt.elems.len() {
                return err(
                    pat.span(),
                    "the tuple pattern and the tuple have different lengths",
                );
            }
            let types: Vec<Option<&syn::Type>> = match annotation {
                Some(syn::Type::Tuple(t)) => t.elems.iter().map(Some).collect(),
                _ => vec![None; items.len()],
            };
            for ((p, v), ty) in pt.elems.iter().zip(items).zip(types) {
                let inner_site = self.site();
                self.bind_pattern(strip_type(p), ty, v, inner_site, span, fresh)?;
            }
            return Ok(());
        }
        let (name, mutable) = match pat {
            syn::Pat::Ident(id) if id.by_ref.is_none() && id.subpat.is_none() => {
                (Some(id.ident.to_string()), id.mutability.is_some())
            }
            syn::Pat::Wild(_) => (None, false),
            other => {
                return err(
                    other.span(),
                    "only `let name`, `let mut name`, `let _` and tuples of those are supported in device code",
                );
            }
        };
        let Some(name) = name else { return Ok(()) };
        if let (Val::Array(a), Some(t)) = (&value, annotation)
            && let Some((elem, dims)) = self.array_type(t)?
        {
            // `let b: [[f32; 4]; 2] = a;` and array parameters of helpers: the declared
            // type decides an open array's elements, and must match a typed one.
            match a.infer {
                Some((open, _)) => self.note_type(open, elem),
                None if a.elem != elem || a.dims != dims => {
                    return err(
                        span,
                        format!(
                            "mismatched types: expected `{}`, found `{}`",
                            quote::ToTokens::to_token_stream(t),
                            a.type_name()
                        ),
                    );
                }
                None => {}
            }
        }
        let value = match value {
            // An array that goes into registers is copied there (`registers_for_let`).
            Val::Array(_) if !fresh && !self.register_lets.contains(&site) => {
                self.copy_array(&value, span)?
            }
            // A struct's array fields are copied too (`let w2 = w;` of a `Window<N>`).
            Val::Struct(..) if !fresh => self.copy_array_fields(value, span)?,
            Val::LocalElems { array, elem, len } if !fresh => {
                self.copy_aggregate_array(array, &elem, len, span)?
            }
            other => other,
        };
        if let Val::Array(a) = &value
            && let Some(origin) = self.local_origins.get_mut(a.array as usize)
        {
            origin.1 = format!("`{name}: {}`", a.type_name());
        }
        if let Val::Array(a) = &value
            && a.regs.is_none()
        {
            self.array_lets.insert(a.array, site);
        }
        let value = self.registers_for_let(value, site, fresh, span)?;
        let value = match value {
            Val::Tuple(items) if mutable => {
                let binding = self.mutable_tuple(&name, items, span)?;
                self.bind(name, binding);
                return Ok(());
            }
            Val::Struct(sname, items) if mutable => {
                let binding = self.mutable_struct(&name, sname, items, span)?;
                self.bind(name, binding);
                return Ok(());
            }
            other => other,
        };
        if matches!(
            value,
            Val::Array(_)
                | Val::LocalElems { .. }
                | Val::Tuple(_)
                | Val::Struct(..)
                | Val::AggRef(_)
                | Val::SharedElems { .. }
                | Val::Ptr { .. }
                | Val::Shared { .. }
                | Val::Phased(_)
                | Val::Slice(_)
                | Val::Atomic(_)
                | Val::Index1(_)
                | Val::Index2(..)
                | Val::Index3(..)
        ) {
            self.bind(name, Binding::Val(value));
            return Ok(());
        }
        let annotated = match annotation {
            Some(t) => Some(self.resolve_scalar(t)?),
            None => None,
        };
        if !mutable {
            let bound = match annotated {
                Some(ty) => Val::Scalar(self.materialize(value, ty, span)?),
                None => value,
            };
            self.bind(name, Binding::Val(bound));
            return Ok(());
        }
        // A mutable binding needs a type now: from the annotation, the value, or the site.
        let ty = match (&value, annotated) {
            (_, Some(ty)) => Some(ty),
            (Val::Scalar(x), None) => Some(self.ty(*x)),
            (Val::Int(_), None) => {
                self.note_kind(site, LitKind::Int);
                self.solved(site)
            }
            (Val::Float(_), None) => {
                self.note_kind(site, LitKind::Float);
                self.solved(site)
            }
            (Val::Infer(other, kind), None) => {
                self.note_kind(site, *kind);
                self.note_union(site, *other);
                self.solved(site)
            }
            (other, None) => {
                return err(
                    span,
                    format!(
                        "`let mut` of {} is not supported in device code",
                        describe(other)
                    ),
                );
            }
        };
        let kind = match value {
            Val::Infer(_, k) => k,
            Val::Float(_) => LitKind::Float,
            _ => LitKind::Int,
        };
        // The emit run always decides (Rust's default when no use said anything), so that no
        // variable of the emitted kernel stays open and drops its writes.
        let ty = ty.or_else(|| (!self.inferring()).then(|| kind.default_type()));
        match ty {
            Some(ty) => {
                let var = self.b.var(name.clone(), ty);
                let x = self.materialize(value, ty, span)?;
                self.b.push(Stmt::WriteVar { var, value: x });
                self.bind(
                    name,
                    Binding::Var {
                        var,
                        ty,
                        mutable: true,
                    },
                );
            }
            None => {
                // Infer run: the type is decided by later uses.
                self.bind(name, Binding::InferVar { site, kind });
            }
        }
        Ok(())
    }

    // ----- expressions --------------------------------------------------------------------

    fn expr(&mut self, e: &syn::Expr) -> Result<Val> {
        // Elements (or parts of them) of aggregates in memory: `x[i].pos`, `tile[r][c]`.
        if matches!(
            e,
            syn::Expr::Index(_) | syn::Expr::Field(_) | syn::Expr::Unary(_)
        ) && let Some(m) = self.mem_path(e)?
        {
            return self.load_mem(&m, e.span());
        }
        match e {
            syn::Expr::Lit(l) => self.literal(&l.lit),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Block(b) if b.label.is_none() => self.block(&b.block),
            syn::Expr::Unsafe(u) => {
                self.unsafe_depth += 1;
                let r = self.block(&u.block);
                self.unsafe_depth -= 1;
                r
            }

            syn::Expr::Path(p) => self.path_value(p),
            syn::Expr::Binary(b) => self.binary_expr(b),
            syn::Expr::Unary(u) => self.unary(u),
            syn::Expr::Cast(c) => self.cast(c),
            syn::Expr::Assign(a) => {
                // `tile = read.sync()`: the same phased array, in its next phase.
                if let Some(v) = self.assign_phased(a)? {
                    return Ok(v);
                }
                // Elements (or parts of them) of aggregates in memory.
                if let Some(m) = self.mem_path(&a.left)? {
                    let v = self.expr(&a.right)?;
                    self.store_mem(&m, v, a.right.span())?;
                    return Ok(Val::Unit);
                }
                // Whole tuples and arrays are written element by element.
                if let Some(target) = self.aggregate_target(&a.left)? {
                    if let Binding::Val(Val::Array(t)) = &target
                        && self.fill_registers(t, &a.right)?
                    {
                        return Ok(Val::Unit);
                    }
                    let v = self.expr(&a.right)?;
                    self.assign_binding(&target, v, a.right.span())?;
                    return Ok(Val::Unit);
                }
                // `a[i] = ..` writes an element, or a whole row of an array of arrays.
                if let syn::Expr::Index(i) = &*a.left {
                    match self.indexed(i)? {
                        arrays::Indexed::Element(place) => {
                            let v = self.expr(&a.right)?;
                            self.write_place(place, v, a.right.span())?;
                        }
                        arrays::Indexed::Row(row) => {
                            let v = self.expr(&a.right)?;
                            self.assign_array(&row, v, a.right.span())?;
                        }
                    }
                    return Ok(Val::Unit);
                }
                let place = self.place(&a.left)?;
                let v = self.expr(&a.right)?;
                self.write_place(place, v, a.right.span())?;
                Ok(Val::Unit)
            }
            syn::Expr::If(i) => self.if_expr(i),
            syn::Expr::While(w) => self.while_loop(w),
            syn::Expr::Loop(l) => self.plain_loop(l),
            syn::Expr::ForLoop(f) => self.for_loop(f),
            syn::Expr::Break(b) => {
                if b.label.is_some() {
                    return err(b.span(), control::LABEL_HELP);
                }
                if b.expr.is_some() {
                    return err(
                        b.span(),
                        "`break` with a value is not supported in device code yet: assign the \
                         value to a `let mut` declared before the `loop`, then `break`",
                    );
                }
                self.jump(Stmt::Break, b.span())
            }
            syn::Expr::Continue(c) => {
                if c.label.is_some() {
                    return err(c.span(), control::LABEL_HELP);
                }
                self.jump(Stmt::Continue, c.span())
            }
            syn::Expr::Return(r) => self.return_expr(r),
            syn::Expr::Index(i) => match self.indexed(i)? {
                arrays::Indexed::Element(place) => self.read_place(place, i.span()),
                arrays::Indexed::Row(row) => Ok(Val::Array(row)),
            },
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::Macro(m) => self.device_macro(&m.mac),
            // `&raw mut TILE` / `&raw const BAR`: as `addr_of_mut!` / `addr_of!`.
            syn::Expr::RawAddr(r) => self.raw_address(
                &r.expr,
                matches!(r.mutability, syn::PointerMutability::Mut(_)),
                r.span(),
            ),
            syn::Expr::Reference(r) => match self.expr(&r.expr)? {
                // References to device data pass through; they are addresses already.
                v @ (Val::Shared { .. }
                | Val::Slice(_)
                | Val::Atomic(_)
                | Val::Array(_)
                | Val::TensorMap(_)) => Ok(v),
                v @ Val::AtomicCell { ptr: false, .. } => Ok(v),
                _ => err(r.span(), references::WHERE_REFERENCES),
            },
            syn::Expr::Closure(c) => self.closure(c),
            syn::Expr::Match(m) => self.match_expr(m),
            syn::Expr::Array(_) | syn::Expr::Repeat(_) => self.array_expr(e, None, None),
            syn::Expr::Tuple(t) if t.elems.is_empty() => Ok(Val::Unit),
            syn::Expr::Tuple(t) => {
                let items = t
                    .elems
                    .iter()
                    .map(|x| self.expr(x))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Val::Tuple(items))
            }
            syn::Expr::Field(f) => self.field(f),
            syn::Expr::Struct(st) => self.struct_expr(st),
            syn::Expr::Async(a) => err(a.span(), "`async` is not supported in device code"),
            syn::Expr::Await(a) => err(a.span(), "`.await` is not supported in device code"),
            syn::Expr::Try(t) => err(t.span(), "the `?` operator is not supported in device code"),
            other => err(
                other.span(),
                "this expression is not supported in device code",
            ),
        }
    }

    /// The binding an assignment writes when it is a whole tuple or array.
    fn aggregate_target(&self, e: &syn::Expr) -> Result<Option<Binding>> {
        let b = match e {
            syn::Expr::Path(p) => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                self.lookup(&name).cloned()
            }
            syn::Expr::Field(f) => Some(self.field_binding(f)?),
            // `*r = value` through a reference to a whole struct, tuple or array.
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            })
            | syn::Expr::Paren(syn::ExprParen { expr, .. }) => return self.aggregate_target(expr),
            _ => None,
        };
        Ok(b.filter(|b| {
            matches!(
                b,
                Binding::Tuple(_) | Binding::Struct(..) | Binding::Val(Val::Array(_))
            )
        }))
    }

    /// `return` ends the thread in a kernel, and the call in a helper.
    fn return_expr(&mut self, r: &syn::ExprReturn) -> Result<Val> {
        let Some(frame) = self.frames.last() else {
            if let Some(v) = &r.expr {
                return err(v.span(), "kernels return nothing: write `return;`");
            }
            self.b.push(Stmt::Return);
            return Ok(Val::Never);
        };
        let from_loop = frame.loop_depth != self.loop_depth;
        let returned = frame.returned;
        let result = frame.result.clone();
        match (result, &r.expr) {
            (Some(slot), Some(e)) => {
                self.expect_result(e, 0);
                let v = self.expr(e);
                self.expected = None;
                let v = v?;
                self.assign_binding(&slot, v, e.span())?;
            }
            (None, None) => {}
            (None, Some(e)) => {
                let _ = self.expr(e)?;
            }
            (Some(_), None) => return err(r.span(), "this helper returns a value"),
        }
        if from_loop {
            // Leave the loops up to the call's own: the flag tells each loop's end.
            let Some(flag) = returned else {
                return err(
                    r.span(),
                    "internal compiler error: no flag for this `return`",
                );
            };
            let yes = self.constant(Constant::bool(true));
            self.b.push(Stmt::WriteVar {
                var: flag,
                value: yes,
            });
            if let Some(frame) = self.frames.last_mut() {
                frame.loop_returns += 1;
            }
        }
        self.b.push(Stmt::Break);
        Ok(Val::Never)
    }

    fn jump(&mut self, stmt: Stmt, span: proc_macro2::Span) -> Result<Val> {
        if self.loop_depth == 0 {
            return err(span, "`break` and `continue` must be inside a loop");
        }
        self.b.push(stmt);
        Ok(Val::Never)
    }

    fn literal(&mut self, lit: &syn::Lit) -> Result<Val> {
        match lit {
            syn::Lit::Int(i) => {
                let value: i128 = i.base10_parse()?;
                match i.suffix() {
                    "" => Ok(Val::Int(value)),
                    suffix => {
                        let ty = S::from_rust_name(suffix).filter(|t| t.is_int() || t.is_float());
                        let Some(ty) = ty else {
                            return err(i.span(), format!("unknown literal suffix `{suffix}`"));
                        };
                        if ty.is_float() {
                            return Ok(Val::Scalar(self.constant(int_as_float(ty, value))));
                        }
                        Ok(Val::Scalar(self.constant(int_constant(
                            ty,
                            value,
                            i.span(),
                        )?)))
                    }
                }
            }
            syn::Lit::Float(f) => {
                match f.suffix() {
                    "" => Ok(Val::Float(f.base10_parse()?)),
                    // Parsed in its own type, as rustc does (through `f64` it could round
                    // twice).
                    "f32" => Ok(Val::Scalar(self.constant(Constant::f32(f.base10_parse()?)))),
                    "f64" => Ok(Val::Scalar(self.constant(Constant::f64(f.base10_parse()?)))),
                    s => err(f.span(), format!("unknown float suffix `{s}`")),
                }
            }
            syn::Lit::Bool(b) => Ok(Val::Scalar(self.constant(Constant::bool(b.value)))),
            other => err(
                other.span(),
                "only numeric and boolean literals are supported in device code",
            ),
        }
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> Result<Val> {
        if let [.., ty, name] = Vec::from_iter(&p.path.segments)[..]
            && let Some(ty) = self.scalar_named(&ty.ident.to_string())
        {
            let Some(c) = associated_constant(ty, &name.ident.to_string()) else {
                return err(
                    p.span(),
                    format!(
                        "`{}` is not a constant device code knows: the scalar types' `MIN`, \
                         `MAX`, `BITS`, the floats' `INFINITY`, `NEG_INFINITY`, `NAN`, \
                         `EPSILON`, and `ZERO` and `ONE` of `cuprum::simt::Num`",
                        path_string(&p.path)
                    ),
                );
            };
            return Ok(Val::Scalar(self.constant(c)));
        }
        if let Some(name) = parent_const_name(&p.path)
            && let Some(c) = self.info.consts.iter().find(|c| c.ident == name)
        {
            return self.module_const(c);
        }
        let Some(ident) = p.path.get_ident() else {
            if wgmma::names_flags(&p.path) {
                return err(p.span(), wgmma::FLAGS_FORM);
            }
            return err(
                p.span(),
                format!(
                    "`{}` is not a value known in device code",
                    path_string(&p.path)
                ),
            );
        };
        let name = ident.to_string();
        match self.lookup(&name).cloned() {
            Some(b) => self.read_binding(&b, p.span()),
            None if self.const_params.contains_key(&name) => {
                let (ty, v) = self.const_params[&name];
                Ok(Val::Scalar(self.constant(int_constant(
                    ty,
                    v,
                    ident.span(),
                )?)))
            }
            None => match self.info.consts.iter().find(|c| c.ident == name) {
                Some(c) => self.module_const(c),
                None => err(
                    ident.span(),
                    format!(
                        "cannot find `{name}` in device code: kernels read their parameters, \
                         locals, and `const` items of the module or of its parent module in \
                         the same file (statics are not supported: use a `const`, or pass \
                         the value as a parameter)"
                    ),
                ),
            },
        }
    }

    /// `static mut TILE: SharedArray<T, N> = SharedArray::UNINIT;` in a kernel body: CUDA's
    /// `__shared__` array as cuda-oxide spells it, one per block, the same as
    /// `let tile = SharedArray::<T, N>::uninit();` (Rust makes every access `unsafe`).
    ///
    /// `static mut BAR: Barrier = Barrier::UNINIT;` declares an mbarrier (`mbarrier`): one
    /// shared `u64`, 8-byte aligned, that the barrier functions take through `&raw mut BAR`.
    fn static_shared(&mut self, item: &syn::ItemStatic) -> Result<()> {
        let usage = "a `static` in a kernel body must be a shared array or an mbarrier: \
                     `static mut TILE: SharedArray<f32, 256> = SharedArray::UNINIT;`, \
                     `static mut BAR: Barrier = Barrier::UNINIT;`";
        let syn::Type::Path(tp) = &*item.ty else {
            return err(item.ty.span(), usage);
        };
        let Some(array) = tp
            .path
            .segments
            .last()
            .filter(|s| s.ident == "SharedArray" || s.ident == "Barrier")
        else {
            return err(item.ty.span(), usage);
        };
        let uninit = matches!(&*item.expr, syn::Expr::Path(p)
            if p.path.segments.last().is_some_and(|s| s.ident == "UNINIT"));
        if !uninit || matches!(item.mutability, syn::StaticMutability::None) {
            return err(item.span(), usage);
        }
        let shape = if array.ident == "Barrier" {
            intrinsics::SharedShape {
                elem: S::U64,
                len: Some(1),
                agg: None,
                align: 0,
            }
        } else {
            self.shared_shape(&array.arguments, false, item.ty.span())?
        };
        let name = item.ident.to_string();
        let v = self.declare_shared(&name, shape, item.span())?;
        self.bind(name, Binding::Val(v));
        Ok(())
    }

    /// Recognises `SharedArray::<T, N>::uninit()` and `dynamic_shared::<T>()` initializers,
    /// taking the element type and length from the turbofish or the `let`'s annotation.
    fn shared_declaration(
        &self,
        pat: &syn::Pat,
        init: &syn::Expr,
    ) -> Result<Option<intrinsics::SharedShape>> {
        let syn::Expr::Call(c) = init else {
            return Ok(None);
        };
        let syn::Expr::Path(p) = &*c.func else {
            return Ok(None);
        };
        let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
        let annotation = match pat {
            syn::Pat::Type(pt) => match &*pt.ty {
                syn::Type::Path(tp) => tp.path.segments.last().map(|s| &s.arguments),
                _ => None,
            },
            _ => None,
        };
        let (dynamic, turbofish) = match segs[..] {
            [.., array, f] if array.ident == "SharedArray" && f.ident == "uninit" => {
                (false, &array.arguments)
            }
            [.., f] if f.ident == "dynamic_shared" => (true, &f.arguments),
            _ => return Ok(None),
        };
        let args = match (turbofish, annotation) {
            (syn::PathArguments::None, Some(a)) => a,
            (t, _) => t,
        };
        self.shared_shape(args, dynamic, init.span()).map(Some)
    }

    /// The value of a module `const` item, as a constant of its declared type.
    fn module_const(&mut self, c: &syn::ItemConst) -> Result<Val> {
        let ty = expect_scalar(&c.ty)?;
        let value = self.eval_const(&c.expr, 0)?;
        let span = c.expr.span();
        Ok(Val::Scalar(match value {
            ConstVal::Int(i) if ty.is_float() => self.constant(int_as_float(ty, i)),
            ConstVal::Int(i) => self.constant(int_constant(ty, i, span)?),
            ConstVal::Float(f) if ty.is_float() => self.constant(float_constant(ty, f)),
            ConstVal::Bool(b) if ty == S::Bool => self.constant(Constant::bool(b)),
            _ => {
                return err(
                    span,
                    format!("this constant's value does not fit its type `{ty}`"),
                );
            }
        }))
    }

    /// Evaluates a constant expression: literals, module constants, arithmetic, `as` casts.
    /// Used for `const` items and for array lengths such as `SharedArray<f32, { 32 * 33 }>`.
    fn eval_const(&self, e: &syn::Expr, depth: u32) -> Result<ConstVal> {
        if depth > 32 {
            return err(e.span(), "constant expression nests too deeply (a cycle?)");
        }
        let int = |v: ConstVal, span| match v {
            ConstVal::Int(i) => Ok(i),
            _ => err(span, "expected an integer constant"),
        };
        match e {
            syn::Expr::Lit(l) => match &l.lit {
                syn::Lit::Int(i) => Ok(ConstVal::Int(i.base10_parse()?)),
                syn::Lit::Float(f) => Ok(ConstVal::Float(f.base10_parse()?)),
                syn::Lit::Bool(b) => Ok(ConstVal::Bool(b.value)),
                other => err(other.span(), "expected a numeric constant"),
            },
            syn::Expr::Paren(p) => self.eval_const(&p.expr, depth + 1),
            syn::Expr::Group(g) => self.eval_const(&g.expr, depth + 1),
            syn::Expr::Block(b) => match b.block.stmts.as_slice() {
                [syn::Stmt::Expr(inner, None)] => self.eval_const(inner, depth + 1),
                _ => err(b.span(), "expected a constant expression"),
            },
            syn::Expr::Cast(c) => {
                let v = self.eval_const(&c.expr, depth + 1)?;
                let to = expect_scalar(&c.ty)?;
                Ok(match v {
                    ConstVal::Int(i) if to.is_float() => ConstVal::Float(i as f64),
                    ConstVal::Float(f) if to.is_int() => ConstVal::Int(f as i128),
                    other => other,
                })
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => {
                match self.eval_const(&u.expr, depth + 1)? {
                    ConstVal::Int(i) => Ok(ConstVal::Int(-i)),
                    ConstVal::Float(f) => Ok(ConstVal::Float(-f)),
                    ConstVal::Bool(_) => err(u.span(), "cannot negate a bool"),
                }
            }
            syn::Expr::Path(p) => {
                if let Some(name) = parent_const_name(&p.path) {
                    return match self.info.consts.iter().find(|c| c.ident == name) {
                        Some(c) => self.eval_const(&c.expr, depth + 1),
                        None => err(
                            p.span(),
                            format!("`{name}` is not a constant of the parent module in this file"),
                        ),
                    };
                }
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                if let Some(&(_, v)) = self.const_params.get(&name) {
                    return Ok(ConstVal::Int(v)); // a const parameter of a generic kernel
                }
                match self.info.consts.iter().find(|c| c.ident == name) {
                    Some(c) => self.eval_const(&c.expr, depth + 1),
                    None => err(
                        p.span(),
                        format!(
                            "`{name}` is not a constant of this module or of its parent \
                             module in the same file"
                        ),
                    ),
                }
            }
            syn::Expr::Binary(b) => {
                let (l, r) = (
                    self.eval_const(&b.left, depth + 1)?,
                    self.eval_const(&b.right, depth + 1)?,
                );
                let op = match b.op {
                    syn::BinOp::Add(_) => BinaryOp::Add,
                    syn::BinOp::Sub(_) => BinaryOp::Sub,
                    syn::BinOp::Mul(_) => BinaryOp::Mul,
                    syn::BinOp::Div(_) => BinaryOp::Div,
                    syn::BinOp::Rem(_) => BinaryOp::Rem,
                    syn::BinOp::BitAnd(_) => BinaryOp::And,
                    syn::BinOp::BitOr(_) => BinaryOp::Or,
                    syn::BinOp::BitXor(_) => BinaryOp::Xor,
                    syn::BinOp::Shl(_) => {
                        return Ok(ConstVal::Int(int(l, b.span())? << int(r, b.span())?));
                    }
                    syn::BinOp::Shr(_) => {
                        return Ok(ConstVal::Int(int(l, b.span())? >> int(r, b.span())?));
                    }
                    _ => return err(b.span(), "unsupported operator in a constant"),
                };
                match (l, r) {
                    (ConstVal::Int(a), ConstVal::Int(c)) => {
                        Ok(ConstVal::Int(ops::fold_int(op, a, c, b.span())?))
                    }
                    (ConstVal::Float(a), ConstVal::Float(c)) => {
                        Ok(ConstVal::Float(ops::fold_float(op, a, c, b.span())?))
                    }
                    _ => err(b.span(), "mixed constant types"),
                }
            }
            other => err(other.span(), "expected a constant expression"),
        }
    }
}

fn int_constant(ty: S, value: i128, span: proc_macro2::Span) -> Result<Constant> {
    let bits = ty.bits();
    let (min, max): (i128, i128) = if ty.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if value < min || value > max {
        return err(span, format!("literal `{value}` out of range for `{ty}`"));
    }
    Ok(Constant::new(ty, value as u64))
}

/// A float literal's value (`f64`, as parsed) in type `ty`: the IR's `as` from `F64`, the
/// one definition the emulator and the optimizer also use (round to nearest even, for the
/// half types without double rounding).
pub(super) fn float_constant(ty: S, value: f64) -> Constant {
    cuprum_ir::scalar::cast_constant(Constant::f64(value), ty)
}

/// An integer literal's value in float type `ty`, rounded once, as `as` from its integer
/// type rounds it (not through `f64`, which would round twice above 2^53).
pub(super) fn int_as_float(ty: S, value: i128) -> Constant {
    let integer = if let Ok(v) = i64::try_from(value) {
        Constant::i64(v)
    } else if let Ok(v) = u64::try_from(value) {
        Constant::u64(v)
    } else {
        return float_constant(ty, value as f64);
    };
    cuprum_ir::scalar::cast_constant(integer, ty)
}

/// `NAME` of `super::NAME` or `self::NAME`: a `const` of the parent module or of this one,
/// which the module's compiled copy includes (see the macro's `outer_consts`).
fn parent_const_name(path: &syn::Path) -> Option<String> {
    match Vec::from_iter(&path.segments)[..] {
        [first, name] if first.ident == "super" || first.ident == "self" => {
            Some(name.ident.to_string())
        }
        _ => None,
    }
}

fn describe(v: &Val) -> String {
    match v {
        Val::Scalar(_) => "a number".into(),
        Val::Int(_) => "an integer literal".into(),
        Val::Float(_) => "a float literal".into(),
        Val::Infer(..) => "a number".into(),
        Val::Unit => "`()`".into(),
        Val::Never => "a diverging expression".into(),
        Val::Index1(_) => "a thread index".into(),
        Val::WarpIndex(_) => "a warp index".into(),
        Val::Closure(_) => "a closure".into(),
        Val::Slice(_) => "a slice".into(),
        Val::Array(a) => format!("an array `{}`", a.type_name()),
        Val::Ptr { .. } => "a raw pointer".into(),
        Val::ClusterPtr { .. } => "a pointer into another block's shared memory".into(),
        Val::Tuple(_) => "a tuple".into(),
        Val::Struct(name, _) => format!("a `{name}`"),
        Val::Atomic(_) => "an atomic slice".into(),
        Val::Index2(..) | Val::Index3(..) => "a thread index".into(),
        Val::Shared { .. } => "a shared-memory array".into(),
        Val::Phased(p) => format!("a `{}`", p.type_name()),
        Val::ElemRef { .. } => "an element reference".into(),
        Val::AggRef(m) => format!("a reference to a `{}` element", m.ty.rust_name()),
        Val::SharedElems { elem, len, .. } => {
            format!("a shared array of `{}` ({len} elements)", elem.rust_name())
        }
        Val::LocalElems { elem, len, .. } => format!("an array `[{}; {len}]`", elem.rust_name()),
        Val::Opt { .. } => "an `Option`".into(),
        Val::AtomicCell { ptr: true, .. } => "a raw pointer to an atomic cell".into(),
        Val::AtomicCell { .. } => "an atomic cell".into(),
        Val::CasResult { .. } => "a compare-exchange's `Result`".into(),
        Val::TensorMap(_) => "a tensor map".into(),
        Val::LaunchContext => "the launch context".into(),
        Val::Index32(_) | Val::Coord32(..) => "a thread index".into(),
        Val::Matrix { .. } => "a `MatrixView32`".into(),
        Val::View(_) => "a read view".into(),
        Val::Zip(..) => "a zipped pair of views".into(),
        Val::ViewLoad { .. } => "a view's element".into(),
        Val::OutTile(_) => "an output tile".into(),
    }
}

/// The source of an expression as a person would write it, for error messages
/// (`x[i.get()]`, not the token stream's `x [i . get ()]`).
fn source_text(e: &impl quote::ToTokens) -> String {
    let raw = e.to_token_stream().to_string();
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let tight_after = matches!(prev, Some('[' | '(' | '.' | '!'));
            let tight_before = matches!(next, Some('[' | ']' | '(' | ')' | '.' | ',' | ';'));
            if tight_after || tight_before {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// `MAX`, `INFINITY`, `ONE`, ... of scalar type `ty` (`f32::MAX`, `u32::MAX`, `f16::ONE`, and
/// `T::ZERO` of `cuprum::simt::Num`), as IR constants.
fn associated_constant(ty: S, name: &str) -> Option<Constant> {
    let float = |v: f64| match ty {
        S::F32 => Some(Constant::f32(v as f32)),
        S::F64 => Some(Constant::f64(v)),
        S::F16 | S::BF16 => Some(float_constant(ty, v)),
        _ => None,
    };
    if ty.is_float() {
        return match name {
            "INFINITY" => float(f64::INFINITY),
            "NEG_INFINITY" => float(f64::NEG_INFINITY),
            "NAN" => float(f64::NAN),
            "ZERO" => float(0.0),
            "ONE" => float(1.0),
            "MAX" => match ty {
                S::F32 => Some(Constant::f32(f32::MAX)),
                S::F64 => Some(Constant::f64(f64::MAX)),
                S::F16 => Some(Constant::new(S::F16, 0x7bff)),
                _ => Some(Constant::new(S::BF16, 0x7f7f)),
            },
            "MIN" => match ty {
                S::F32 => Some(Constant::f32(f32::MIN)),
                S::F64 => Some(Constant::f64(f64::MIN)),
                S::F16 => Some(Constant::new(S::F16, 0xfbff)),
                _ => Some(Constant::new(S::BF16, 0xff7f)),
            },
            "EPSILON" => match ty {
                S::F32 => Some(Constant::f32(f32::EPSILON)),
                S::F64 => Some(Constant::f64(f64::EPSILON)),
                S::F16 => Some(Constant::new(S::F16, 0x1400)),
                _ => Some(Constant::new(S::BF16, 0x3c00)),
            },
            _ => None,
        };
    }
    if !ty.is_int() {
        return None;
    }
    let bits = ty.bits();
    match name {
        "ZERO" => Some(Constant::new(ty, 0)),
        "ONE" => Some(Constant::new(ty, 1)),
        "MAX" if ty.is_signed_int() => Some(Constant::new(ty, (1u64 << (bits - 1)) - 1)),
        "MAX" => Some(Constant::new(ty, u64::MAX)),
        "MIN" if ty.is_signed_int() => Some(Constant::new(ty, 1u64 << (bits - 1))),
        "MIN" => Some(Constant::new(ty, 0)),
        "BITS" => Some(Constant::u32(bits)),
        _ => None,
    }
}

/// ` at line N` where the span knows its line (always, with `span-locations`), else nothing.
fn at_line(span: proc_macro2::Span) -> String {
    match span.start().line {
        0 => String::new(),
        line => format!(" at line {line}"),
    }
}

/// Whether the parameter `name` of `sig` is declared `mut name: T`.
fn param_is_mut(sig: &syn::Signature, name: &syn::Ident) -> bool {
    sig.inputs.iter().any(|input| match input {
        syn::FnArg::Typed(pt) => {
            matches!(&*pt.pat, syn::Pat::Ident(id) if id.ident == *name && id.mutability.is_some())
        }
        syn::FnArg::Receiver(_) => false,
    })
}

/// The pattern without its type annotation.
fn strip_type(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Type(pt) => &pt.pat,
        other => other,
    }
}

fn path_string(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}
