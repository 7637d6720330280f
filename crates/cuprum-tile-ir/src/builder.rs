//! Building tile IR: the tile front end, the random program generator of the tests and
//! hand-written test kernels all build kernels through [`TileBuilder`], which types every
//! operation with the validator's own rules ([`crate::validate::result_type`]).

use crate::kernel::*;
use crate::types::TileType;
use crate::validate::{TileValidationError, result_type};

use cuprum_ir::{Arena, ScalarType};

/// Builds one [`TileKernel`]: parameters, then statements into the innermost open block.
pub struct TileBuilder {
    kernel: TileKernel,
    /// The open blocks, outermost (the body) first.
    open: Vec<Block>,
}

impl TileBuilder {
    /// A kernel named `name` without parameters or statements.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            kernel: TileKernel {
                name: name.into(),
                consts: Vec::new(),
                types: Vec::new(),
                params: Vec::new(),
                values: Arena::new(),
                body: Block::default(),
            },
            open: vec![Block::default()],
        }
    }

    /// Declares const generic parameter `name` of type `ty`; returns its index.
    pub fn const_param(&mut self, name: impl Into<String>, ty: ScalarType) -> u32 {
        self.kernel.consts.push(ConstParam {
            name: name.into(),
            ty,
        });
        (self.kernel.consts.len() - 1) as u32
    }

    /// Declares element-type parameter `name`; returns its index.
    pub fn type_param(&mut self, name: impl Into<String>) -> u32 {
        self.kernel.types.push(name.into());
        (self.kernel.types.len() - 1) as u32
    }

    /// Declares a value parameter; returns its index.
    pub fn param(&mut self, name: impl Into<String>, kind: ParamKind) -> u32 {
        self.kernel.params.push(TileParam {
            name: name.into(),
            kind,
        });
        (self.kernel.params.len() - 1) as u32
    }

    /// The kernel as built so far (its parameters and value types).
    pub fn kernel(&self) -> &TileKernel {
        &self.kernel
    }

    /// The type of `value`.
    pub fn ty(&self, value: TileValue) -> &TileType {
        &self.kernel.values[value]
    }

    /// A new value of type `ty` with no definition yet: a loop's counter, arguments or
    /// results, an `If`'s results, a reduce closure's operands.
    pub fn value(&mut self, ty: TileType) -> TileValue {
        self.kernel.values.append(ty)
    }

    /// Appends `value = op` to the open block, typed by the validator's rules; an operation
    /// whose operands do not fit is an error and appends nothing.
    pub fn def(&mut self, op: Op) -> Result<TileValue, TileValidationError> {
        let ty = result_type(&self.kernel, &op)?;
        let value = self.kernel.values.append(ty);
        self.push(Stmt::Def { value, op });
        Ok(value)
    }

    /// Appends a statement to the open block.
    pub fn push(&mut self, stmt: Stmt) {
        if let Some(b) = self.open.last_mut() {
            b.stmts.push(stmt);
        }
    }

    /// Opens a nested block: statements go there until [`end_block`](Self::end_block).
    pub fn begin_block(&mut self) {
        self.open.push(Block::default());
    }

    /// Closes the innermost nested block with `yields` and returns it, for the statement
    /// that holds it.
    pub fn end_block(&mut self, yields: Vec<TileValue>) -> Block {
        if self.open.len() <= 1 {
            return Block {
                stmts: Vec::new(),
                yields,
            };
        }
        let mut b = self.open.pop().unwrap_or_default();
        b.yields = yields;
        b
    }

    /// Whether the open block ends in a break, continue or return.
    pub fn block_ended(&self) -> bool {
        self.open
            .last()
            .and_then(|b| b.stmts.last())
            .is_some_and(Stmt::is_terminator)
    }

    /// The kernel (its body is the outermost block; nested blocks left open are dropped).
    pub fn finish(mut self) -> TileKernel {
        self.open.truncate(1);
        self.kernel.body = self.open.pop().unwrap_or_default();
        self.kernel
    }
}
