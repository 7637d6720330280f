//! What a launch is given: its shape ([`LaunchConfig`], [`LaunchConfig1D`]) and its arguments
//! ([`KernelArg`]). Plain data, below everything that checks or submits a launch (`limits`,
//! the backends, `launch`), so that none of them needs another to describe one.

use cuprum_ir::ScalarType;

/// Grid and block shape of a launch, and its dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid along `x`, `y` and `z`; each at least 1 and within the device's
    /// [`DeviceLimits::max_grid_dim`](crate::DeviceLimits::max_grid_dim).
    pub grid_dim: (u32, u32, u32),
    /// Threads per block along `x`, `y` and `z`; each at least 1, with a product of at most
    /// the device's `max_threads_per_block` (1024) and the kernel's launch bounds.
    pub block_dim: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// The block size [`for_num_elems`](Self::for_num_elems) uses.
    pub const DEFAULT_BLOCK_SIZE: u32 = 256;

    /// One thread per element for `n` elements, in blocks of 256 threads (cuda-oxide's and
    /// cudarc's name for it): `ceil(n / 256)` blocks, at least 1, no dynamic shared memory.
    ///
    /// ```
    /// use cuprum_runtime::LaunchConfig;
    ///
    /// let c = LaunchConfig::for_num_elems(1000);
    /// assert_eq!((c.grid_dim, c.block_dim, c.shared_mem_bytes), ((4, 1, 1), (256, 1, 1), 0));
    /// assert_eq!(LaunchConfig::for_num_elems(0).grid_dim, (1, 1, 1));
    /// ```
    pub fn for_num_elems(n: u32) -> Self {
        LaunchConfig1D::for_len(n as usize, Self::DEFAULT_BLOCK_SIZE).into()
    }
}

/// A two-dimensional [`LaunchConfig`] (`z` is 1 in both the grid and the block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig2D {
    /// Blocks in the grid along `x` and `y`.
    pub grid: (u32, u32),
    /// Threads per block along `x` and `y`.
    pub block: (u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig2D {
    /// A configuration of `grid` blocks of `block` threads, with `shared_mem_bytes` bytes of
    /// dynamic shared memory per block. Nothing is checked until the launch.
    pub fn new(grid: (u32, u32), block: (u32, u32), shared_mem_bytes: u32) -> Self {
        Self {
            grid,
            block,
            shared_mem_bytes,
        }
    }
}

impl From<LaunchConfig2D> for LaunchConfig {
    fn from(c: LaunchConfig2D) -> Self {
        Self {
            grid_dim: (c.grid.0, c.grid.1, 1),
            block_dim: (c.block.0, c.block.1, 1),
            shared_mem_bytes: c.shared_mem_bytes,
        }
    }
}

/// A three-dimensional [`LaunchConfig`], made with a constructor like the 1-D and 2-D ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig3D {
    /// Blocks in the grid along `x`, `y` and `z`.
    pub grid: (u32, u32, u32),
    /// Threads per block along `x`, `y` and `z`.
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig3D {
    /// A configuration of `grid` blocks of `block` threads, with `shared_mem_bytes` bytes of
    /// dynamic shared memory per block. Nothing is checked until the launch.
    pub fn new(grid: (u32, u32, u32), block: (u32, u32, u32), shared_mem_bytes: u32) -> Self {
        Self {
            grid,
            block,
            shared_mem_bytes,
        }
    }
}

impl From<LaunchConfig3D> for LaunchConfig {
    fn from(c: LaunchConfig3D) -> Self {
        Self {
            grid_dim: c.grid,
            block_dim: c.block,
            shared_mem_bytes: c.shared_mem_bytes,
        }
    }
}

/// A one-dimensional [`LaunchConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig1D {
    /// Blocks in the grid (along `x`).
    pub grid: u32,
    /// Threads per block (along `x`).
    pub block: u32,
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig1D {
    /// A configuration of `grid` blocks of `block` threads, with `shared_mem_bytes` bytes of
    /// dynamic shared memory per block. Nothing is checked until the launch.
    pub fn new(grid: u32, block: u32, shared_mem_bytes: u32) -> Self {
        Self {
            grid,
            block,
            shared_mem_bytes,
        }
    }

    /// Enough blocks of `block` threads to cover `len` elements: `ceil(len / block)`, at
    /// least 1 (so an empty input still makes a valid launch whose threads all fall outside
    /// the data), saturating at `u32::MAX` (which the launch check then rejects by name). No
    /// dynamic shared memory.
    ///
    /// ```
    /// use cuprum_runtime::{LaunchConfig, LaunchConfig1D};
    ///
    /// let c = LaunchConfig1D::for_len(1000, 256);
    /// assert_eq!((c.grid, c.block, c.shared_mem_bytes), (4, 256, 0));
    /// assert_eq!(LaunchConfig1D::for_len(1024, 256).grid, 4);
    /// assert_eq!(LaunchConfig1D::for_len(0, 256).grid, 1);
    ///
    /// // Where a 3-D configuration is expected, a 1-D one converts into it.
    /// let full: LaunchConfig = c.into();
    /// assert_eq!((full.grid_dim, full.block_dim), ((4, 1, 1), (256, 1, 1)));
    /// ```
    pub fn for_len(len: usize, block: u32) -> Self {
        let grid = if block == 0 {
            1
        } else {
            u32::try_from(len.div_ceil(block as usize))
                .unwrap_or(u32::MAX)
                .max(1)
        };
        Self::new(grid, block, 0)
    }
}

impl From<LaunchConfig1D> for LaunchConfig {
    fn from(c: LaunchConfig1D) -> Self {
        Self {
            grid_dim: (c.grid, 1, 1),
            block_dim: (c.block, 1, 1),
            shared_mem_bytes: c.shared_mem_bytes,
        }
    }
}

/// One argument of a raw launch, matching one IR parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelArg {
    /// A scalar: its IR type and its bits, zero-extended to 64.
    Scalar {
        /// The parameter's IR type, which must equal the kernel's.
        ty: ScalarType,
        /// The value's bits in the low `ty.bits()` bits, the rest zero.
        bits: u64,
    },
    /// A slice of device memory: base address and length in elements.
    Slice {
        /// The device address of the first element.
        address: u64,
        /// The number of elements (not bytes).
        len: u64,
    },
    /// A tensor map (`cuprum_ir::ParamKind::TensorMap`): the 128 bytes of the backend's
    /// encoding (the driver's, or the emulator's description), and the device bytes it
    /// reads and writes, for ordering the launch after other streams' work on them.
    TensorMap {
        /// The encoded map.
        map: [u64; 16],
        /// The tensor's first byte.
        address: u64,
        /// Bytes from `address` to the end of the tensor.
        bytes: u64,
    },
}
